"""Job bookkeeping (docs/design.md §6), for every launcher (Hydra's, adaptsim's lockstep): what claims a job's
directory or a sweep's before anything is written, how a job ends, what a failed one leaves, and what runs around
each job (SIGTERM unwinding it, a watcher of the sweep's main process in a parallel launcher's worker).

Composing configs and launching Hydra is adaptsim/launch/hydra_app.py; the lockstep launcher (hydra_plugins/
adaptsim_lockstep) needs only this module.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import signal
import threading
import time
import traceback
from pathlib import Path

from adaptsim.errors import Terminated, UserError, raise_terminated
from adaptsim.launch.resume import check as resume_check
from adaptsim.records import (JobSummary, alive, check_run_dir, job_fields, read_summary, recorded_process,
                              this_process, write_json_atomic)

log = logging.getLogger("adaptsim")

SWEEP_CLAIM = ".adaptsim-sweep.json"  # in a sweep directory: the process of the sweep that claimed it
BASIC_SWEEPER = "hydra._internal.core_plugins.basic_sweeper.BasicSweeper"
FAILED_JOBS = "failed.jsonl"          # in a sweep directory: jobs that failed before they had a summary.json


def claim_sweep_dir(path: Path, resume: bool) -> None:
    """Claim a sweep directory before Hydra writes into it (its multirun.yaml, each job's .hydra/): two sweeps
    started at once into one directory would both run, one's runs recorded under the other's settings. The claim
    is created exclusively; with `resume=true` a claim whose process is gone is taken over."""
    check_run_dir(path, resume=resume, create=True)
    claim = path / SWEEP_CLAIM
    try:
        os.close(os.open(claim, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
    except FileExistsError:
        if not resume:
            raise UserError(f"{path}: holds another sweep ({SWEEP_CLAIM}); choose another hydra.sweep.dir") from None
        pid = recorded_process(read_json(claim))
        if pid is not None and pid != os.getpid() and alive(pid):
            raise UserError(f"{path}: the sweep is still going (process {pid}); cannot resume it until that process "
                            f"has ended (kill {pid} stops it as interrupted)") from None
    else:
        if not resume and (path / "multirun.yaml").exists():  # a sweep from before claims
            claim.unlink()
            raise UserError(f"{path}: holds another sweep (multirun.yaml); choose another hydra.sweep.dir")
    write_json_atomic(claim, {"status": "running", "process": this_process()})


def _changed_since(path: Path, since: float) -> bool:
    try:
        return path.stat().st_mtime >= since
    except OSError:  # gone since it was claimed: nothing says it finished
        return True


def read_json(path: Path) -> dict:
    """A summary (or a sweep's claim) as a dict; {} where it is missing or unreadable."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}



def failed_jobs(path: Path | None, multirun: bool, since: float) -> list[str]:
    """The failures of the jobs a command ran, as their summaries (and a sweep's failed.jsonl) on disk say:
    summaries written since `since` (resumed jobs that were finished already are not touched) that say
    failed."""
    if path is None:
        return []
    summaries = list(path.glob("**/summary.json")) if multirun else [path / "summary.json"]
    out = [str(s.parent) for s in summaries if _changed_since(s, since)
           and read_json(s).get("status") in ("failed", None)]  # (None: missing or unreadable)
    failed = path / FAILED_JOBS
    if multirun and failed.is_file():
        out += [r["job"] for r in map(json.loads, failed.read_text(encoding="utf-8").splitlines())
                if r.get("time", 0) >= since]
    return out


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


@contextlib.contextmanager
def job_context(main_pid: int):
    """Around each job: SIGTERM unwinds it like SIGINT (as errors.Terminated); in a parallel launcher's worker,
    `threads: null` is one torch thread (torch's default, all physical cores, in each of n_jobs workers oversubscribes
    the machine: docs/performance.md; an explicit `threads` still wins, adaptsim.loop.learner.load), and in a local
    launcher's worker the sweep's main process is watched."""
    from hydra.core.hydra_config import HydraConfig

    in_main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, raise_terminated) if in_main_thread else None
    job_done = None
    if os.getpid() != main_pid:
        if str(HydraConfig.get().launcher.get("_target_", "")).endswith(_LOCAL_LAUNCHERS):
            job_done = _main_watcher(main_pid)
            job_done.clear()
        import torch

        torch.set_num_threads(1)
    try:
        yield
    finally:
        if job_done is not None:
            job_done.set()
        if in_main_thread:
            signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def closing(jobs: list[JobSummary]):
    """The one way a job ends, for the job of `run_task` and for the jobs of a lockstep sweep: on leaving the
    block every job of `jobs` (it may grow inside the block) that is still `running` is closed as finished, as
    failed (with the one-line error, or the traceback of a bug) or as interrupted (SIGINT, SIGTERM); a job closed
    inside the block as failed (a lockstep run that failed alone) keeps its error; on an exception, a job the
    block finished is closed with the exception too (its command failed), one finished before it (resume) is not.
    """
    def close(status: str, error: str | None = None, refused: bool = False) -> None:
        for job in jobs:
            current = job.data.get("status")
            if current == "running" or (status != "finished" and current == "finished" and not job.finished):
                job.close(status, error, refused)

    try:
        yield
    except UserError as e:
        close("failed", str(e), refused=True)
        raise
    except KeyboardInterrupt as e:  # SIGINT, or SIGTERM as Terminated
        close("interrupted", f"interrupted by {getattr(e, 'signal_name', 'SIGINT')}")
        raise
    except Exception:
        close("failed", traceback.format_exc())
        raise
    close("finished")


def claim_job(run_dir: Path, command: str, cfg, job: JobSummary | None = None,
              overrides: list[str] | None = None, found: dict[str, bytes] | None = None) -> JobSummary:
    """The job's summary.json, claimed (or `job`, claimed already by `claim_output_dir`), and what a resume
    finds said in the job's log. `overrides`: the job's command-line overrides where Hydra's runtime config is
    another job's (a lockstep sweep composes every job before any runs). `found`: the records the resume check
    before Hydra started found here (`check_sweep_resume`); where summary.json is still those bytes the job is not
    checked again."""
    from hydra.core.hydra_config import HydraConfig

    if job is None:
        fields = job_fields(command, cfg, HydraConfig.get().overrides.task if overrides is None else overrides)
        summary = run_dir / "summary.json"
        if cfg.get("resume", False) and not (found and summary.is_file()
                                             and summary.read_bytes() == found.get("summary.json")):
            found = resume_check(run_dir, read_summary(run_dir), cfg, command)
        job = JobSummary(run_dir, fields, resume=bool(cfg.get("resume", False)), found=found)
    if job.finished:
        log.info("%s: finished already; nothing to resume", run_dir)
        if cfg.get("resume", False):  # a resumed sweep's finished job: what Hydra wrote as it started it, as it was
            job.give_back()
    elif job.nothing_to_resume:
        log.warning("%s: resume=true, but no run to resume here: starting a new one", run_dir)
    return job



def record_failed_job(sweep_dir: Path | None, job: Path, error: str) -> None:
    """In a sweep, a job that failed without a summary.json of its own saying so (its directory could not be
    claimed, or a lockstep sweep could not start) goes to the sweep's failed.jsonl, which the command's exit
    code reads with the summaries."""
    if sweep_dir is None or read_json(job / "summary.json").get("status") == "failed":
        return
    line = json.dumps({"job": str(job), "error": error, "time": time.time()}, ensure_ascii=False)
    with open(sweep_dir / FAILED_JOBS, "a", encoding="utf-8") as f:
        f.write(line + "\n")


def basic_sweep_jobs(sweeper: str | None, params: dict | None, overrides: list[str]) -> list[list[str]] | None:
    """The jobs, in order, that Hydra's basic sweeper expands its `params` (hydra.sweeper.params) and the command
    line's task `overrides` into, each a list of overrides; None where another sweeper (`sweeper`: its _target_)
    chooses its jobs itself. What a resumed sweep checks before Hydra writes, and what the reports expect to find.
    (As BasicSweeper.split_arguments expands them: one list of values per key, the last of a key's overrides in its
    first one's place, their product; written here, since Hydra's sweeper is no public API.)"""
    if sweeper != BASIC_SWEEPER:
        return None
    import itertools

    from hydra.core.override_parser.overrides_parser import OverridesParser

    values = {}
    for o in OverridesParser.create().parse_overrides([f"{k}={v}" for k, v in (params or {}).items()] + overrides):
        key = o.get_key_element()
        values[key] = [f"{key}={v}" for v in o.sweep_string_iterator()] if o.is_sweep_override() \
            else [f"{key}={o.get_value_element_as_str()}"]
    return [list(job) for job in itertools.product(*values.values())]
