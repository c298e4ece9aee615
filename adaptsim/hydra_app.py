"""Run a task function under Hydra with adaptsim's configs, and reject bad overrides up front.

Hydra itself reports a bad override with exit code 1 and a hint about HYDRA_FULL_ERROR; we check the
overrides first (composing once per sweep value) so the user gets a short usage line and exit code 2.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import signal
import socket
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Callable

import hydra
from hydra import compose as hydra_compose
from hydra import initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser

from adaptsim import CONFIG_DIR
from adaptsim.errors import Terminated, UserError
from adaptsim.outputs import JobSummary, alive, check_run_dir, recorded_process, write_json_atomic
from adaptsim.resume import check as resume_check

log = logging.getLogger("adaptsim")

# Hydra's own flags that take a value as the next argument.
_FLAGS_WITH_VALUE = {"--cfg", "-c", "--package", "-p", "--config-path", "-cp", "--config-name", "-cn",
                     "--config-dir", "-cd", "--experimental-rerun"}
_INFO_VALUES = {"all", "config", "defaults", "defaults-tree", "plugins", "searchpath"}


def split_overrides(argv: list[str]) -> list[str]:
    """The key=value arguments of a Hydra command line (flags and their values left out)."""
    out, skip = [], False
    for i, arg in enumerate(argv):
        if skip:
            skip = False
        elif arg.startswith("-"):
            skip = arg in _FLAGS_WITH_VALUE or (arg in ("--info", "-i") and i + 1 < len(argv)
                                                 and argv[i + 1] in _INFO_VALUES)
        else:
            out.append(arg)
    return out


@contextlib.contextmanager
def _configs():
    """Hydra initialised on adaptsim's configs for the block, and cleared after it (Hydra keeps one global
    instance; leaving it set breaks the next initialisation)."""
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
            yield
    finally:
        GlobalHydra.instance().clear()


def compose(config_name: str, overrides: list[str] = (), hydra_node: bool = False):
    """One of adaptsim's configs ("run", "bench", "train", …) with command-line overrides, as a command
    would get it (with Hydra's own node if `hydra_node`)."""
    with _configs():
        return hydra_compose(config_name, overrides=list(overrides), return_hydra_config=hydra_node)


def check_overrides(config_name: str, argv: list[str]) -> str | None:
    """Return an error message if the overrides do not compose, else None."""
    return compose_variants(config_name, argv)[0]


def compose_variants(config_name: str, argv: list[str]) -> tuple[str | None, list]:
    """(error message or None, the composed configs with Hydra's node: the first value of every sweep, then
    each other sweep value once)."""
    try:
        parsed = OverridesParser.create().parse_overrides(split_overrides(argv))
    except Exception as e:  # OverrideParseException: bad syntax
        return str(e).splitlines()[0], []
    base, sweeps = [], []
    for o in parsed:
        key = o.get_key_element()
        if o.is_sweep_override():
            values = list(o.sweep_string_iterator())
            base.append(f"{key}={values[0]}")
            sweeps.append((len(base) - 1, key, values[1:]))
        else:
            base.append(o.input_line)
    variants = [base] + [base[:i] + [f"{k}={v}"] + base[i + 1:] for i, k, vs in sweeps for v in vs]
    cfgs = []
    try:
        with _configs():
            for overrides in variants:
                cfgs.append(hydra_compose(config_name, overrides=overrides, return_hydra_config=True))
    except Exception as e:  # ConfigCompositionException, MissingConfigException, …
        msg = " ".join(str(e).split())
        return msg.split(" Config search path")[0][:400], []
    return None, cfgs


def _output_dir(cfg, multirun: bool) -> Path | None:
    """The run (or sweep) directory a composed config names, or None where only Hydra's runtime can resolve it."""
    try:
        return Path(str(cfg.hydra.sweep.dir if multirun else cfg.hydra.run.dir)).absolute()
    except Exception:  # an interpolation only Hydra's runtime can resolve: the job checks for itself
        return None


_BASIC_SWEEPER = "hydra._internal.core_plugins.basic_sweeper.BasicSweeper"
SWEEP_CLAIM = ".adaptsim-sweep.json"  # in a sweep directory: the process of the sweep that claimed it
FAILED_JOBS = "failed.jsonl"          # in a sweep directory: jobs that failed before they had a summary.json


def claim_sweep_dir(path: Path, resume: bool) -> None:
    """Claim a sweep directory before Hydra writes into it (its multirun.yaml, each job's .hydra/): two sweeps
    started at once into one directory once both ran, one's runs recorded under the other's settings. The claim
    is created exclusively; with `resume=true` a claim whose process is gone is taken over."""
    check_run_dir(path, resume=resume, create=True)
    claim = path / SWEEP_CLAIM
    try:
        os.close(os.open(claim, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
    except FileExistsError:
        if not resume:
            raise UserError(f"{path}: holds another sweep ({SWEEP_CLAIM}); choose another hydra.sweep.dir") from None
        pid = recorded_process(_read_json(claim))
        if pid is not None and pid != os.getpid() and alive(pid):
            raise UserError(f"{path}: the sweep is still going (process {pid}); cannot resume it") from None
    else:
        if not resume and (path / "multirun.yaml").exists():  # a sweep from before claims
            claim.unlink()
            raise UserError(f"{path}: holds another sweep (multirun.yaml); choose another hydra.sweep.dir")
    write_json_atomic(claim, {"status": "running", "process": {"pid": os.getpid(), "host": socket.gethostname()}})


def _changed_since(path: Path, since: float) -> bool:
    try:
        return path.stat().st_mtime >= since
    except OSError:  # gone since it was claimed: nothing says it finished
        return True


def _read_json(path: Path) -> dict:
    """A summary (or a sweep's claim) as a dict; {} where it is missing or unreadable."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def claim_output_dir(cfgs: list, multirun: bool, command: str,
                     overrides: list[str] = ()) -> tuple[Path | None, JobSummary | None]:
    """Claim the command's output directory before Hydra writes anything into it, and say which it is (so
    Hydra is given that same directory, not a second reading of ${now:…}). A single run's directory is
    claimed by creating its job's summary.json (returned); a sweep's by `claim_sweep_dir`. With resume=true the
    runs there are checked first (`resume.check`; a sweep's with its command line's `overrides`)."""
    cfg = cfgs[0]
    path = _output_dir(cfg, multirun)
    if path is None:
        return None, None
    resume = bool(cfg.get("resume", False))
    if multirun:
        if resume:
            check_sweep_resume(path, cfg, command, overrides)
        claim_sweep_dir(path, resume)
        return path, None
    if resume:
        resume_check(path, _read_json(path / "summary.json"), cfg, command)
    return path, JobSummary(path, job_fields(command, cfg, cfg.hydra.overrides.task), resume=resume)


def check_sweep_resume(path: Path, cfg, command: str, overrides: list[str]) -> None:
    """`resume.check` for every job of a resumed sweep that has a run directory, before Hydra writes anything (its
    multirun.yaml, each job's .hydra/): the jobs recomputed as Hydra's basic sweeper expands them and numbered as its
    launchers (and lockstep) number them. (Another sweeper chooses its jobs itself: each job is checked as it
    starts, `claim_job`.)"""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from omegaconf import OmegaConf, open_dict

    if not path.is_dir() or OmegaConf.select(cfg, "hydra.sweeper._target_") != _BASIC_SWEEPER:
        return
    params = [f"{k}={v}" for k, v in (OmegaConf.select(cfg, "hydra.sweeper.params") or {}).items()]
    hydra = [o for o in overrides if o.lstrip("+~").startswith("hydra")]
    task = [o for o in overrides if o not in hydra]
    parsed = OverridesParser.create().parse_overrides(params + task)
    jobs = [job for batch in BasicSweeper.split_arguments(parsed, None) for job in batch]
    with _configs():
        composed = [hydra_compose(cfg.hydra.job.config_name, overrides=[*hydra, *job], return_hydra_config=True)
                    for job in jobs]
    computed = {}  # fingerprints, computed once for the jobs that share a model, data and method
    for num, job in enumerate(composed):
        with open_dict(job):
            job.hydra.job.num = num
        out = path / str(OmegaConf.select(job, "hydra.sweep.subdir"))
        resume_check(out, _read_json(out / "summary.json"), job, command, computed)


def failed_jobs(path: Path | None, multirun: bool, since: float) -> list[str]:
    """The failures of the jobs a command ran, as their summaries (and a sweep's failed.jsonl) on disk say:
    summaries written since `since` (resumed jobs that were finished already are not touched) that say
    failed."""
    if path is None:
        return []
    summaries = list(path.glob("**/summary.json")) if multirun else [path / "summary.json"]
    out = [str(s.parent) for s in summaries if _changed_since(s, since)
           and _read_json(s).get("status") in ("failed", None)]  # (None: missing or unreadable)
    failed = path / FAILED_JOBS
    if multirun and failed.is_file():
        out += [r["job"] for r in map(json.loads, failed.read_text(encoding="utf-8").splitlines())
                if r.get("time", 0) >= since]
    return out


def _raise_terminated(signum, frame):
    raise Terminated()


# Launchers whose jobs run in child processes of the sweep's main process, on this machine.
_LOCAL_LAUNCHERS = ("joblib_launcher.JoblibLauncher", "submitit_launcher.LocalLauncher")


def _watch_main(main_pid: int, job_done: threading.Event, poll_s: float = 0.5, grace_s: float = 10.0) -> None:
    """Stop this worker once the sweep's main process is gone. Killing the main process of a joblib sweep
    (even with SIGKILL, which it cannot react to) left its loky workers running, re-parented to PID 1, to
    finish their jobs unobserved. The job is stopped as if by SIGTERM, so it unwinds and records that it
    was interrupted; then (or after `grace_s` at most) the process exits, as a loky worker would
    otherwise wait for a parent that no longer exists."""
    while alive(main_pid):
        time.sleep(poll_s)
    if not job_done.is_set():
        os.kill(os.getpid(), signal.SIGTERM)
        job_done.wait(grace_s)
    os._exit(Terminated.exit_code)


@functools.cache
def _main_watcher(main_pid: int) -> threading.Event:
    """In a local launcher's worker process: watch the sweep's main process (one thread per worker, started by
    its first job); the event says whether no job is running (set between jobs)."""
    job_done = threading.Event()
    job_done.set()
    threading.Thread(target=_watch_main, args=(main_pid, job_done), daemon=True, name="adaptsim-watch-main").start()
    return job_done


def _in_local_worker() -> bool:
    from hydra.core.hydra_config import HydraConfig

    return str(HydraConfig.get().launcher.get("_target_", "")).endswith(_LOCAL_LAUNCHERS)


def _one_thread_per_worker() -> None:
    """`threads: null` in a parallel launcher's worker means one torch thread: torch's default (all physical
    cores) in each of n_jobs workers oversubscribes the machine (docs/performance.md). An explicit `threads`
    still wins (adaptsim.session.load sets it)."""
    import torch

    torch.set_num_threads(1)


@contextlib.contextmanager
def job_context(main_pid: int):
    """Around each job: SIGTERM unwinds it like SIGINT (as errors.Terminated), and in a local launcher's
    worker the sweep's main process is watched."""
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _raise_terminated) if in_main_thread else None
    job_done = None
    if os.getpid() != main_pid:
        if _in_local_worker():
            job_done = _main_watcher(main_pid)
            job_done.clear()
        _one_thread_per_worker()
    try:
        yield
    finally:
        if job_done is not None:
            job_done.set()
        if in_main_thread:
            signal.signal(signal.SIGTERM, previous)


def job_fields(command: str, cfg, overrides) -> dict:
    """What a job is, as its summary.json names it from the start: the command, whichever of method, model and
    data the command's config has, its command-line `overrides` and every setting resolved (`config`, without
    Hydra's node), so that reports need no file another process could overwrite."""
    from omegaconf import OmegaConf

    keys = {"method": "method.name", "model": "model.name", "model_path": "model.path", "dataset": "dataset.name"}
    found = {k: OmegaConf.select(cfg, key, default=None) for k, key in keys.items()}
    raw = OmegaConf.to_container(cfg, resolve=False)
    settings = {}
    for key in (k for k in raw if k != "hydra"):
        try:
            settings[key] = OmegaConf.to_container(cfg[key], resolve=True) if OmegaConf.is_config(cfg[key]) \
                else OmegaConf.select(cfg, key)
        except Exception:  # an interpolation only Hydra's runtime resolves (this config is a composed one)
            settings[key] = raw[key]
    return {"command": command, **{k: str(v) for k, v in found.items() if v is not None},
            "overrides": [str(o) for o in overrides], "config": settings}


@contextlib.contextmanager
def closing(jobs: list[JobSummary]):
    """The one way a job ends, for the job of `run_task` and for the jobs of a lockstep sweep: on leaving the
    block every job of `jobs` (it may grow inside the block) that is still `running` is closed as finished, as
    failed (with the one-line error, or the traceback of a bug) or as interrupted (SIGINT, SIGTERM); a job closed
    inside the block as failed (a lockstep run that failed alone) keeps its error; on an exception, a job the
    block finished is closed with the exception too (its command failed), one finished before it (resume) is not.
    """
    def close(status: str, error: str | None = None) -> None:
        for job in jobs:
            current = job.data.get("status")
            if current == "running" or (status != "finished" and current == "finished" and not job.finished):
                job.close(status, error)

    try:
        yield
    except UserError as e:
        close("failed", str(e))
        raise
    except KeyboardInterrupt as e:  # SIGINT, or SIGTERM as Terminated
        close("interrupted", f"interrupted by {getattr(e, 'signal_name', 'SIGINT')}")
        raise
    except Exception:
        close("failed", traceback.format_exc())
        raise
    close("finished")


def claim_job(run_dir: Path, command: str, cfg, job: JobSummary | None = None) -> JobSummary:
    """The job's summary.json, claimed (or `job`, claimed already by `claim_output_dir`), and what a resume
    finds said in the job's log."""
    from hydra.core.hydra_config import HydraConfig

    if job is None:
        fields = job_fields(command, cfg, HydraConfig.get().overrides.task)
        if cfg.get("resume", False):
            resume_check(run_dir, _read_json(run_dir / "summary.json"), cfg, command)
        job = JobSummary(run_dir, fields, resume=bool(cfg.get("resume", False)))
    if job.finished:
        log.info("%s: finished already; nothing to resume", run_dir)
    elif job.nothing_to_resume:
        log.warning("%s: resume=true, but no run to resume here: starting a new one", run_dir)
    return job


def run_task(task: Callable, cfg, command: str, job: JobSummary | None = None) -> None:
    """One job of any command, the same way (the task wrapper): claim the job's directory (`claim_job`),
    run `task(cfg, job)` unless it finished already, and close the summary (`closing`)."""
    from hydra.core.hydra_config import HydraConfig

    job = claim_job(Path(HydraConfig.get().runtime.output_dir), command, cfg, job)
    if not job.finished:
        with closing([job]):
            task(cfg, job)


def record_failed_job(sweep_dir: Path | None, job: Path, error: str) -> None:
    """In a sweep, a job that failed without a summary.json of its own saying so (its directory could not be
    claimed, or a lockstep sweep could not start) goes to the sweep's failed.jsonl, which the command's exit
    code reads with the summaries."""
    if sweep_dir is None or _read_json(job / "summary.json").get("status") == "failed":
        return
    line = json.dumps({"job": str(job), "error": error, "time": time.time()}, ensure_ascii=False)
    with open(sweep_dir / FAILED_JOBS, "a", encoding="utf-8") as f:
        f.write(line + "\n")


def _job_dirs() -> tuple[Path | None, Path]:
    """(the sweep's directory in a multirun, else None; the job's directory) of the job Hydra is running."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    hydra = HydraConfig.get()
    return (Path(str(hydra.sweep.dir)) if hydra.mode == RunMode.MULTIRUN else None), Path(hydra.runtime.output_dir)


def launch(task: Callable, config_name: str, argv: list[str], command: str) -> int:
    """Run `task(cfg, job)` through `run_task` as a Hydra app (single run or `-m` multirun) with `argv` as
    its command line.

    The output directory is claimed first and given to Hydra (`claim_output_dir`). A job's UserError is printed
    as one line, not Hydra's traceback, and the other jobs of a sweep go on. Returns the exit code: 1 if a job
    failed, as the jobs' summaries on disk say (`failed_jobs`). In a parallel launcher's worker process
    (joblib, submitit) the error is raised again after printing: that is how such a launcher learns of it.
    """
    error, cfgs = compose_variants(config_name, argv)
    if not error and any(a in ("--help", "-h") for a in argv):
        print(help_text(command, cfgs[0]))
        return 0
    if error:
        print(f"usage: adaptsim {command} [-m] [key=value …]   (--help lists config groups)", file=sys.stderr)
        print(f"adaptsim {command}: error: {error}", file=sys.stderr)
        sys.exit(2)
    multirun = any(a in ("-m", "--multirun") for a in argv)
    out_dir, claimed = None, None
    if not any(a in ("--cfg", "-c", "--help", "-h", "--hydra-help", "--info", "-i") for a in argv):
        out_dir, claimed = claim_output_dir(cfgs, multirun, command, split_overrides(argv))
        if claimed is not None and claimed.finished:
            print(f"adaptsim {command}: {out_dir}: finished already; nothing to resume", file=sys.stderr)
            return 0
        if out_dir is not None:
            argv = [*argv, f"hydra.{'sweep' if multirun else 'run'}.dir={_quoted(out_dir)}"]
    since = time.time()
    main_pid = os.getpid()
    refused = []  # a single run's error that left no trace on disk (a resume refused by its replay: records given back)

    @functools.wraps(task)
    def job(cfg):
        # (only module-level names in here besides the closure: a parallel launcher pickles this function)
        try:
            with job_context(main_pid):
                return run_task(task, cfg, command, claimed if os.getpid() == main_pid else None)
        except UserError as e:
            print(f"adaptsim {command}: error: {e}", file=sys.stderr)
            record_failed_job(*_job_dirs(), str(e))
            refused.append(str(e))
            if os.getpid() != main_pid:
                raise

    app = hydra.main(config_path=str(CONFIG_DIR), config_name=config_name, version_base="1.3")(job)
    saved = sys.argv
    sys.argv = [f"adaptsim {command}", *argv]
    try:
        app()
    finally:
        sys.argv = saved
        if multirun and out_dir is not None:  # the sweep's claim says it ended (a resume may take it over)
            write_json_atomic(out_dir / SWEEP_CLAIM, {"status": "ended"})
    failed = failed_jobs(out_dir, multirun, since)
    if multirun and out_dir is not None and command in ("run", "bench"):  # the README's next step needs the path
        print(f"adaptsim {command}: the sweep's outputs are in {out_dir} (python -m adaptsim table {out_dir})",
              file=sys.stderr)
    return 1 if failed or (refused and not multirun) else 0


# configs/ folders that are not groups a run composes: files code reads itself (method=fixed's lists, LitTER's
# resources) and Hydra's own groups (`--hydra-help` lists those)
NOT_GROUPS = {"fixed_lists", "litter", "hydra"}


def help_text(command: str, cfg) -> str:
    """`adaptsim COMMAND --help`: the groups a run composes, with their options (the `_common` files every option
    of a group includes are none), then the composed config with the command line's overrides."""
    lines = [f"usage: adaptsim {command} [-m] [group=option …] [key=value …]", "",
             "Configuration groups (group=option; -m and comma-separated options: a sweep):"]
    for group in sorted(p for p in CONFIG_DIR.iterdir() if p.is_dir() and p.name not in NOT_GROUPS):
        options = sorted(f.stem for f in group.glob("*.yaml") if not f.stem.startswith("_"))
        lines.append(f"  {group.name}: {', '.join(options)}")
    from omegaconf import OmegaConf

    body = OmegaConf.to_yaml(OmegaConf.masked_copy(cfg, [k for k in cfg if k != "hydra"]))
    return "\n".join(lines + ["", "Config (override anything: key=value):", "", body.rstrip(),
                              "", "Hydra's own options: --hydra-help"])


def _quoted(path: Path) -> str:
    """A path as the value of a Hydra override (quoted where its characters would be read as grammar)."""
    text = str(path)
    return text if all(c.isalnum() or c in "/._-+~" for c in text) else "'" + text.replace("'", "\\'") + "'"
