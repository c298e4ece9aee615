"""Run a task function under Hydra with adaptsim's configs, and reject bad overrides up front.

Hydra itself reports a bad override with exit code 1 and a hint about HYDRA_FULL_ERROR; we check the
overrides first (composing once per sweep value) so the user gets a short usage line and exit code 2.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import signal
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
from adaptsim.outputs import JobSummary, alive, check_run_dir

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


def check_output_dirs(cfgs: list, multirun: bool) -> None:
    """Refuse an output directory that cannot be written or holds another run, before Hydra writes its
    .hydra/ files there (which would overwrite that run's recorded config). A sweep directory that holds
    another sweep (its multirun.yaml) is refused the same way; each job's own directory is checked again
    by the job (adaptsim.outputs.RunWriter)."""
    for cfg in cfgs:
        resume = bool(cfg.get("resume", False))
        try:
            path = Path(str(cfg.hydra.sweep.dir if multirun else cfg.hydra.run.dir))
        except Exception:  # an interpolation only Hydra's runtime can resolve: the job checks for itself
            continue
        check_run_dir(path, resume=resume, create=False)
        if multirun and not resume and (path / "multirun.yaml").exists():
            raise UserError(f"{path}: holds another sweep (multirun.yaml); choose another hydra.sweep.dir")
        if multirun:
            return  # one sweep directory for all the variants


def _raise_terminated(signum, frame):
    raise Terminated()


# Launchers whose jobs run in child processes of the sweep's main process, on this machine.
_LOCAL_LAUNCHERS = ("joblib_launcher.JoblibLauncher", "submitit_launcher.LocalLauncher")
_job_done = threading.Event()
_watching = False


def _watch_main(main_pid: int, poll_s: float = 0.5, grace_s: float = 10.0) -> None:
    """Stop this worker once the sweep's main process is gone. Killing the main process of a joblib sweep
    (even with SIGKILL, which it cannot react to) left its loky workers running, re-parented to PID 1, to
    finish their jobs unobserved. The job is stopped as if by SIGTERM, so it unwinds and records that it
    was interrupted; then (or after `grace_s` at most) the process exits, as a loky worker would
    otherwise wait for a parent that no longer exists."""
    while alive(main_pid):
        time.sleep(poll_s)
    if not _job_done.is_set():
        os.kill(os.getpid(), signal.SIGTERM)
        _job_done.wait(grace_s)
    os._exit(Terminated.exit_code)


def _watch_main_process(main_pid: int) -> None:
    """In a local launcher's worker process: watch the sweep's main process (once per worker)."""
    global _watching
    from hydra.core.hydra_config import HydraConfig

    if _watching or not str(HydraConfig.get().launcher.get("_target_", "")).endswith(_LOCAL_LAUNCHERS):
        return
    _watching = True
    threading.Thread(target=_watch_main, args=(main_pid,), daemon=True, name="adaptsim-watch-main").start()


def _one_thread_per_worker() -> None:
    """`threads: null` in a parallel launcher's worker means one torch thread: torch's default (all physical
    cores) in each of n_jobs workers oversubscribes the machine (a demo sweep on a busy 2-core machine once
    took 907 s instead of 41 s). An explicit `threads` still wins (adaptsim.session.load sets it)."""
    import torch

    torch.set_num_threads(1)


@contextlib.contextmanager
def job_context(main_pid: int):
    """Around each job: SIGTERM unwinds it like SIGINT (as errors.Terminated), and in a local launcher's
    worker the sweep's main process is watched."""
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _raise_terminated) if in_main_thread else None
    _job_done.clear()
    try:
        if os.getpid() != main_pid:
            _watch_main_process(main_pid)
            _one_thread_per_worker()
        yield
    finally:
        _job_done.set()
        if in_main_thread:
            signal.signal(signal.SIGTERM, previous)


def job_fields(command: str, cfg) -> dict:
    """What a job is, as its summary.json names it from the start: the command and whichever of method,
    model and data the command's config has."""
    from omegaconf import OmegaConf

    keys = {"method": "method.name", "model": "model.name", "model_path": "model.path", "dataset": "dataset.name"}
    found = {k: OmegaConf.select(cfg, key, default=None) for k, key in keys.items()}
    return {"command": command, **{k: str(v) for k, v in found.items() if v is not None}}


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


def run_task(task: Callable, cfg, command: str) -> None:
    """One job of any command, the same way (the task wrapper): claim the job's directory with a
    summary.json saying `running`, run `task(cfg, job)`, and close the summary (`closing`). A directory holding
    another job is refused before anything is written into it; with `resume=true` a finished job is left
    alone."""
    from hydra.core.hydra_config import HydraConfig

    run_dir = Path(HydraConfig.get().runtime.output_dir)
    job = JobSummary(run_dir, job_fields(command, cfg), resume=bool(cfg.get("resume", False)))
    if job.finished:
        log.info("%s: finished already; nothing to resume", run_dir)
        return
    with closing([job]):
        task(cfg, job)


_failures: list[str] = []  # the failures of the jobs this process ran (launch's exit code)


def report_failure(command: str, error: str) -> None:
    """A job failed with a one-line error: say so, and make the command's exit code 1. (The lockstep launcher,
    adaptsim/lockstep.py, runs its jobs outside `launch`'s job wrapper and reports them here.)"""
    print(f"adaptsim {command}: error: {error}", file=sys.stderr)
    _failures.append(error)


def launch(task: Callable, config_name: str, argv: list[str], command: str) -> int:
    """Run `task(cfg, job)` through `run_task` as a Hydra app (single run or `-m` multirun) with `argv` as
    its command line.

    A job's UserError is printed as one line, not Hydra's traceback, and the other jobs of a sweep go on.
    Returns the exit code: 1 if any job in this process failed so. In a parallel launcher's worker process
    (joblib, submitit) the error is raised again after printing: that is how such a launcher learns of it.
    """
    error, cfgs = compose_variants(config_name, argv)
    if error:
        print(f"usage: adaptsim {command} [-m] [key=value …]   (--help lists config groups)", file=sys.stderr)
        print(f"adaptsim {command}: error: {error}", file=sys.stderr)
        sys.exit(2)
    if not any(a in ("--cfg", "-c", "--help", "-h", "--hydra-help", "--info", "-i") for a in argv):
        check_output_dirs(cfgs, multirun=any(a in ("-m", "--multirun") for a in argv))
    _failures.clear()
    main_pid = os.getpid()

    @functools.wraps(task)
    def job(cfg):
        # (only module-level names in here besides the closure: a parallel launcher pickles this function)
        try:
            with job_context(main_pid):
                return run_task(task, cfg, command)
        except UserError as e:
            report_failure(command, str(e))
            if os.getpid() != main_pid:
                raise

    app = hydra.main(config_path=str(CONFIG_DIR), config_name=config_name, version_base="1.3")(job)
    saved = sys.argv
    sys.argv = [f"adaptsim {command}", *argv]
    try:
        app()
    finally:
        sys.argv = saved
    return 1 if _failures else 0
