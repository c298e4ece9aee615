"""Run a command's task under Hydra with adaptsim's configs: the checks before Hydra starts, then `hydra.main`.

Before Hydra writes anything: the overrides composed (`hydra.compose`, each sweep value once; a bad one is a usage line
and exit code 2, where Hydra's would be exit code 1 after it had written multirun.yaml), the output directory claimed
and, with resume=true, every run there checked (`claim_output_dir`). Then `hydra.main` runs the command line as it
would (a single run, a sweep with its sweeper and launcher, --cfg/--info/--hydra-help), given the claimed directory.
Only Hydra's public API. `--help` is adaptsim/launch/help.py; the job bookkeeping every launcher shares (claims, a
job's end, failed jobs, what runs around a job) adaptsim/launch/jobs.py.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import re
import sys
import time
from pathlib import Path
from typing import Callable

from hydra import compose as hydra_compose
from hydra import initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import OmegaConf

from adaptsim import CONFIG_DIR
from adaptsim.errors import UserError
from adaptsim.launch.help import help_text
from adaptsim.launch.jobs import (
    SWEEP_CLAIM,
    basic_sweep_jobs,
    claim_job,
    claim_sweep_dir,
    closing,
    failed_jobs,
    job_context,
    record_failed_job,
)
from adaptsim.launch.resume import check as resume_check
from adaptsim.records import JobSummary, job_fields, read_summary, write_bytes_atomic, write_json_atomic

# Hydra's flags that choose other configs than the command's: adaptsim's commands compose their own
_OTHER_CONFIGS = ("config_path", "config_name", "config_dir", "experimental_rerun")


def _usage(command: str) -> str:
    return f"usage: adaptsim {command} [-m] [key=value …]   (--help lists config groups)"


def arguments(command: str, argv: list[str]) -> argparse.Namespace:
    """The command line read with Hydra's flags (overrides, -m, --cfg, …; hydra.main reads it again); a bad one is the
    usage line and exit code 2."""
    class Parser(argparse.ArgumentParser):
        def error(self, message):
            print(_usage(command), file=sys.stderr)
            self.exit(2, f"adaptsim {command}: error: {message}\n")

    parser = Parser(add_help=False, prog=f"adaptsim {command}")
    parser.add_argument("overrides", nargs="*")
    for flags in ("--help -h", "--hydra-help", "--version", "--resolve", "--run -r", "--multirun -m",
                  "--shell-completion -sc"):
        parser.add_argument(*flags.split(), action="store_true")
    parser.add_argument("--cfg", "-c", choices=["job", "hydra", "all"])
    parser.add_argument("--package", "-p")
    parser.add_argument("--info", "-i", nargs="?", const="all",
                        choices=["all", "config", "defaults", "defaults-tree", "plugins", "searchpath"])
    for flags in ("--config-path -cp", "--config-name -cn", "--config-dir -cd", "--experimental-rerun"):
        parser.add_argument(*flags.split())
    args = parser.parse_args(argv)
    if sum([args.run, bool(args.cfg), args.multirun, args.info is not None]) > 1:  # as hydra.main refuses them
        parser.error("only one of --run, --multirun, --cfg and --info")
    if args.resolve and not args.cfg:
        parser.error("--resolve goes with --cfg")
    if any(o.lstrip("+~").startswith("hydra.mode=") for o in args.overrides):
        parser.error("hydra.mode: a sweep is -m, a single run its absence")
    chosen = [name for name in _OTHER_CONFIGS if getattr(args, name, None)]
    if chosen or args.shell_completion:
        parser.error(f"--{(chosen or ['shell_completion'])[0].replace('_', '-')} is not supported: adaptsim's "
                     "commands compose their own configs (override any key with key=value)")
    return args


@contextlib.contextmanager
def _configs():
    """Hydra initialised on adaptsim's configs for the block, and cleared after it (Hydra keeps one global instance;
    leaving it set breaks the next initialisation)."""
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


def check_overrides(config_name: str, overrides: list[str]) -> str | None:
    """Return an error message if the overrides of a single run do not compose, else None."""
    return checked_config(config_name, overrides, multirun=False)[0]


def checked_config(config_name: str, overrides: list[str], multirun: bool = True) -> tuple[str | None, object]:
    """(error message or None, the config of every sweep's first value, with Hydra's node), each other sweep value
    composed once too. Without `multirun` a sweep is an error, as Hydra's run makes it."""
    try:
        parsed = OverridesParser.create().parse_overrides(list(overrides))
    except Exception as e:  # OverrideParseException: bad syntax
        return str(e).splitlines()[0], None
    sweeps = [o for o in parsed if o.is_sweep_override()]
    if sweeps and not multirun:
        key = sweeps[0].get_key_element()
        return (f"{sweeps[0].input_line}: a sweep needs -m (a list is {key}=[…]; a text with commas is quoted: "
                f"{key}='…')"), None
    values = {id(o): list(o.sweep_string_iterator()) for o in sweeps}
    first = [f"{o.get_key_element()}={values[id(o)][0]}" if id(o) in values else o.input_line for o in parsed]
    variants = [first] + [first[:i] + [f"{o.get_key_element()}={v}"] + first[i + 1:]
                          for i, o in enumerate(parsed) for v in values.get(id(o), [])[1:]]
    try:
        with _configs():
            return None, [hydra_compose(config_name, overrides=v, return_hydra_config=True) for v in variants][0]
    except Exception as e:  # ConfigCompositionException, MissingConfigException, …
        return composition_error(e, config_name), None


def composition_error(e: Exception, config_name: str) -> str:
    """Hydra's composition error (a bad override, an unknown option) as one line in adaptsim's words (`explain`)."""
    return explain(" ".join(str(e).split()).split(" Config search path")[0][:400], config_name)


def explain(message: str, config_name: str) -> str:
    """Hydra's composition error in adaptsim's words: no `_common` among a group's options (every option's shared
    keys, not an option), the nearest option named, and for a key the config lacks not Hydra's advice to add it with
    `+` (which the settings check then refuses) but the keys its block has."""
    import difflib

    missing = re.search(r"Could not find '([\w-]+)/([^']+)' Available options in '[^']+': (.*)", message)
    if missing:
        group, wrong = missing.group(1), missing.group(2)
        options = [o for o in missing.group(3).split() if not o.startswith("_")]
        near = difflib.get_close_matches(wrong, options, n=1)
        return (f"{group}={wrong}: no such option" + (f" (did you mean {group}={near[0]}?)" if near else "")
                + f"; {group}= is one of {', '.join(options)}")
    new = re.match(r"Could not override '([\w.]+)'\. To append to your config use \+(\S+)", message)
    if new:
        key = new.group(1)
        block, _, leaf = key.rpartition(".")
        try:
            with _configs():
                node = hydra_compose(config_name, overrides=[])
            found = OmegaConf.select(node, block) if block else node
            if block and not OmegaConf.is_dict(found):  # no such block: the top level's keys
                block, leaf, found = "", key.split(".")[0], node
            keys = sorted(k for k in found if k != "hydra")
        except Exception:  # the plain message then
            return message
        near = difflib.get_close_matches(leaf, keys, n=1)
        return (f"{new.group(2)}: unknown setting" + (f" (did you mean {block + '.' if block else ''}{near[0]}?)"
                                                      if near else "")
                + f"; {block + '.*' if block else 'the settings'} are: {', '.join(keys)}")
    return message


def _output_dir(cfg, multirun: bool) -> Path | None:
    """The run (or sweep) directory a composed config names, or None where only Hydra's runtime can resolve it."""
    try:
        return Path(str(cfg.hydra.sweep.dir if multirun else cfg.hydra.run.dir)).absolute()
    except Exception:  # an interpolation only Hydra's runtime can resolve: the job checks for itself
        return None


def claim_output_dir(cfg, multirun: bool, command: str,
                     overrides: list[str] = ()) -> tuple[Path | None, JobSummary | None, list[Path], dict]:
    """Claim the command's output directory before Hydra writes anything into it, and say which it is (so
    Hydra is given that same directory, not a second reading of ${now:…}). A single run's directory is
    claimed by creating its job's summary.json (returned); a sweep's by `jobs.claim_sweep_dir`. With resume=true the
    runs there are checked first (`resume.check`; a sweep's with its command line's `overrides`), and a resumed sweep
    whose every job has finished names them (the third value; else it is empty): there is nothing to run. The fourth
    holds a sweep's records as each job's check found them, by job directory (what a job gives back where its replay
    refuses; a single run's job keeps its own)."""
    path = _output_dir(cfg, multirun)
    if path is None:
        return None, None, [], {}
    resume = bool(cfg.get("resume", False))
    if multirun:
        finished, found = check_sweep_resume(path, cfg, command, overrides) if resume else ([], {})
        claim_sweep_dir(path, resume)
        return path, None, finished, found
    if command != "train":  # a bad setting refused before the directory is claimed, so that it stays usable
        from omegaconf import OmegaConf

        from adaptsim.loop.settings import validate

        validate(OmegaConf.masked_copy(cfg, [k for k in cfg if k != "hydra"]), cfg.hydra.job.config_name, warn=False)
    found = resume_check(path, read_summary(path), cfg, command) if resume else {}
    return path, JobSummary(path, job_fields(command, cfg, cfg.hydra.overrides.task), resume, found, alone=True), [], {}


def check_sweep_resume(path: Path, cfg, command: str, overrides: list[str]) -> tuple[list[Path], dict[str, dict]]:
    """`resume.check` for every job of a resumed sweep that has a run directory, before Hydra writes anything (its
    multirun.yaml, each job's .hydra/): the jobs recomputed as Hydra's basic sweeper expands them and numbered as its
    launchers (and lockstep) number them. Returns their directories where every one has finished (else []), and the
    records each check found, by job directory. (Another sweeper chooses its jobs itself: each job is checked as it
    starts, `claim_job`.)"""
    from omegaconf import OmegaConf, open_dict

    if not path.is_dir():
        return [], {}
    check_same_sweep(path, overrides)
    hydra = [o for o in overrides if o.lstrip("+~").startswith("hydra")]
    jobs = basic_sweep_jobs(OmegaConf.select(cfg, "hydra.sweeper._target_"),
                            OmegaConf.select(cfg, "hydra.sweeper.params"), [o for o in overrides if o not in hydra])
    if jobs is None:
        return [], {}
    with _configs():
        composed = [hydra_compose(cfg.hydra.job.config_name, overrides=[*hydra, *job], return_hydra_config=True)
                    for job in jobs]
    computed = {}  # fingerprints, computed once for the jobs that share a model, data and method
    finished, found = [], {}
    for num, job in enumerate(composed):
        with open_dict(job):
            job.hydra.job.num = num
        out = path / str(OmegaConf.select(job, "hydra.sweep.subdir"))
        previous = read_summary(out)
        found[str(out)] = resume_check(out, previous, job, command, computed)
        if previous.get("status") == "finished":
            finished.append(out)
    return (finished if len(finished) == len(composed) else []), found


def _swept(overrides) -> dict[str, set[str]]:
    """The values each swept setting of a command line takes (Hydra's own parser; Hydra's settings left out)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parsed = OverridesParser.create().parse_overrides([o for o in overrides if not o.lstrip("+~").startswith("hydra")])
    return {o.get_key_element(): set(o.sweep_string_iterator()) for o in parsed if o.is_sweep_override()}


def _recorded_overrides(record: bytes) -> list[str] | None:
    """The command line's overrides a sweep's multirun.yaml records (None where it is not Hydra's record)."""
    from omegaconf import OmegaConf

    try:
        return [str(o) for o in OmegaConf.create(record.decode("utf-8")).hydra.overrides.task]
    except Exception:
        return None


def check_same_sweep(path: Path, overrides: list[str]) -> None:
    """Refuse a resumed sweep that would run other jobs into the sweep in `path` than its multirun.yaml records: one
    that replaces a swept setting's values (method=none,full resumed with method=none,lasso) or sweeps a setting the
    sweep did not. A sweep may grow (more values: the new jobs run beside the finished ones) or be resumed in part (a
    subset of its jobs; its record is kept: `launch`); a changed setting of the recorded jobs is each job's own
    check's."""
    record = path / "multirun.yaml"
    recorded = _recorded_overrides(record.read_bytes()) if record.is_file() else None
    if recorded is None:
        return
    was, now = _swept(recorded), _swept(overrides)
    replaced = [key for key in was.keys() & now.keys() if was[key] - now[key] and now[key] - was[key]]
    added = sorted(now.keys() - was.keys())
    if replaced or added:
        swaps = [f"{k}={','.join(sorted(was[k] - now[k]))} with {','.join(sorted(now[k] - was[k]))}"
                 for k in sorted(replaced)]
        what = "replaces " + "; ".join(swaps) if replaced else f"sweeps {', '.join(added)}, which it did not"
        raise UserError(f"{path}: the resumed sweep {what}; resume it with its own jobs (more values, or some of them),"
                        " or start the other sweep in another hydra.sweep.dir")


def _in_part(record: bytes, overrides: list[str]) -> bool:
    """Whether a resumed sweep ran only some of the jobs `record` (its multirun.yaml as it was) holds."""
    recorded = _recorded_overrides(record)
    if recorded is None:
        return False
    was, now = _swept(recorded), _swept(overrides)
    return all(values <= was.get(key, set()) for key, values in now.items()) and now != was


def run_task(task: Callable, cfg, command: str, job: JobSummary | None = None, found: dict | None = None) -> None:
    """One job of any command, the same way (the task wrapper): claim the job's directory (`claim_job`; `found`: a
    sweep's records as the checks before Hydra found them, by job directory), run `task(cfg, job)` unless it finished
    already, and close the summary (`closing`)."""
    from hydra.core.hydra_config import HydraConfig

    out = Path(HydraConfig.get().runtime.output_dir)
    job = claim_job(out, command, cfg, job, found=(found or {}).get(str(out)))
    if not job.finished:
        with closing([job]):
            task(cfg, job)


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
    args = arguments(command, argv)
    error, cfg = checked_config(config_name, args.overrides, args.multirun)
    if error:
        print(_usage(command), file=sys.stderr)
        print(f"adaptsim {command}: error: {error}", file=sys.stderr)
        sys.exit(2)
    if args.help:
        print(help_text(command, cfg))
        return 0
    if args.cfg or args.info or args.hydra_help or args.version:  # Hydra shows, nothing runs
        _hydra_main(config_name, lambda cfg: None, argv)
        return 0
    multirun = args.multirun
    out_dir, claimed, finished, found = claim_output_dir(cfg, multirun, command, list(args.overrides))
    if claimed is not None and claimed.finished:
        print(f"adaptsim {command}: {out_dir}: finished already; nothing to resume", file=sys.stderr)
        return 0
    if finished:  # a resumed sweep with nothing to run: Hydra is not started, no run's file is rewritten
        for job_dir in finished:
            print(f"adaptsim {command}: {job_dir}: finished already; nothing to resume", file=sys.stderr)
        write_json_atomic(out_dir / SWEEP_CLAIM, {"status": "ended"})
        _say_outputs(command, out_dir)
        return 0
    claimed_dir = [f"hydra.{'sweep' if multirun else 'run'}.dir={_quoted(out_dir)}"] if out_dir is not None else []
    # a resumed sweep that fails keeps the record of the sweep that was resumed: Hydra rewrites multirun.yaml
    # (the sweep's jobs, for `table`) before any job can fail
    record = out_dir / "multirun.yaml" if multirun and out_dir is not None else None
    resumed = record.read_bytes() if record and record.is_file() and cfg.get("resume") else None
    since = time.time()
    main_pid = os.getpid()
    refused = []  # a single run's error that left no trace on disk (a resume refused by its replay: records given back)

    @functools.wraps(task)
    def job(cfg):
        # (only module-level names in here besides the closure: a parallel launcher pickles this function)
        try:
            with job_context(main_pid):
                return run_task(task, cfg, command, claimed if os.getpid() == main_pid else None, found)
        except UserError as e:
            print(f"adaptsim {command}: error: {e}", file=sys.stderr)
            record_failed_job(*_job_dirs(), str(e))
            refused.append(str(e))
            if os.getpid() != main_pid:
                raise

    job.resume_found = found  # what the lockstep launcher, which claims its jobs itself, hands to `claim_job`
    try:
        _hydra_main(config_name, job, [*argv, *claimed_dir])
    finally:
        if multirun and out_dir is not None:  # the sweep's claim says it ended (a resume may take it over)
            write_json_atomic(out_dir / SWEEP_CLAIM, {"status": "ended"})
    failed = failed_jobs(out_dir, multirun, since)
    if resumed is not None and (failed or _in_part(resumed, list(args.overrides))):
        write_bytes_atomic(record, resumed)  # (a sweep resumed in part keeps the record of all its jobs)
    if multirun and out_dir is not None:
        _say_outputs(command, out_dir)
    return 1 if failed or (refused and not multirun) else 0


def _hydra_main(config_name: str, task_function: Callable, argv: list[str]) -> None:
    """`argv` run by `hydra.main` on adaptsim's configs, as if it were the command line."""
    import hydra

    GlobalHydra.instance().clear()
    saved, sys.argv = sys.argv, ["adaptsim", *argv]
    try:
        hydra.main(config_path=str(CONFIG_DIR), config_name=config_name, version_base="1.3")(task_function)()
    finally:
        sys.argv = saved


def _say_outputs(command: str, sweep_dir: Path) -> None:
    """Where a sweep's outputs are, and the README's next step."""
    if command in ("run", "bench"):
        print(f"adaptsim {command}: the sweep's outputs are in {sweep_dir} (python -m adaptsim table {sweep_dir})",
              file=sys.stderr)

def _quoted(path: Path) -> str:
    """A path as the value of a Hydra override (quoted where its characters would be read as grammar)."""
    text = str(path)
    return text if all(c.isalnum() or c in "/._-+~" for c in text) else "'" + text.replace("'", "\\'") + "'"
