"""summary.json: what a job is and how it ended (docs/design.md §6).

Every command's job directory holds summary.json (`JobSummary`): claimed at the job's start with status `running` and
the process, filled in by the command, closed by the launcher as finished, failed (with the error) or interrupted.
A job owns its directory: two runs writing into one directory would interleave their steps and mix one's summary with
the other's config, and a re-run would truncate the first run's steps. (Whether a resume may take over a run is
decided before any of this writes: adaptsim/launch/resume.py.) So summary.json is created exclusively, and a directory
that already holds another run's outputs is refused, unless the job is resuming that run."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
from pathlib import Path

from adaptsim.errors import UserError
from adaptsim.fingerprints import fingerprints
from adaptsim.records.files import _os_error, write_json_atomic

log = logging.getLogger("adaptsim")

# The files whose presence means a directory belongs to a run.
RUN_FILES = ("summary.json", "steps.jsonl", "steps.jsonl.xz")
# summary.json's schema, shared by its writers (JobSummary, simulate.Simulation) and its readers (adaptsim/report;
# docs/design.md §6 lists the same keys): the top-level keys and what each holds.
JOB_KEYS = {  # every command's job, from its start
    "command": "the command (run, bench, select-fixed, train, serve)",
    "method": "method.name", "model": "model.name", "model_path": "model.path", "dataset": "dataset.name",
    "overrides": "the command line's overrides",
    "config": "every setting, resolved (Hydra's own node left out)",
    "input_fingerprints": "{setting: hash of the bytes} of every file a setting names (adaptsim/fingerprints.py)",
    "status": "running | finished | failed | interrupted",
    "process": "while running: {pid, host}, so that readers tell a live job from a killed one",
    "error": "failed or interrupted: the one-line error, or a bug's traceback",
}
RUN_KEYS = {  # a finished run's (run, bench): what the reports read
    "reset": "document | never", "metrics_scope": "document | corpus: where occurrence counting restarts",
    "data_fingerprint": "hash of the segments' ids and texts: runs on the same data share it",
    "data_read_fingerprint": "the same hash of the segments as read, before the model's length check (null where "
                             "none was made): with the model's and the settings it fixes data_fingerprint",
    "model_fingerprint": "hash of the model directory's files: runs of one model share it, whatever its path",
    "documents": "documents run", "segments": "segments run", "skipped": "segments skipped, by reason",
    "ended_early": "serve: the translator finished the session early (segments validated, segments assigned)",
    "model_parameters": "parameters of the model", "trainable_parameters": "parameters the method trains",
    "generation_reset": "the checkpoint's generation-config settings that would change the winning hypothesis, reset "
                        "to neutral (adaptsim/models/base.py PENALTIES): {setting: the checkpoint's value}",
    "scores": "corpus scores: R0, R1, R0+1 (subword., novel. variants), BLEU, SBLEU, TER, chrF",
    "counts": "{metric: {num, den}} of the recall metrics",
    "signatures": "sacrebleu-style signature of each metric family",
    "divergences": "updates that diverged (on_divergence=rollback)",
    "cut_hypotheses": "hypotheses cut at decode.max_length",
    "empty_hypotheses": "hypotheses with no word: {empty, reasoning_only: a reply of reasoning only}",
    "per_document": "per document: changed parameters, stored-state bytes",
    "changed_parameters_max": "the most parameters changed in one document",
    "method_info": "the method's own figures (lasso's budgets, fixed's tensors, …)",
    "cost": "step_ms_median, steps, state_bytes_median, state_bytes_max",
    "timing": "wall and per-step times, threads, device (the GPU, CUDA and torch where cuda), the allocator that ran, "
              "resident memory every 100 segments, resumed_after_steps; serve: earlier_s (the session's earlier "
              "processes, which total_s includes)",
    "peak_rss_mb": "bench: the peak resident memory",
}


def alive(pid) -> bool:
    """Whether process `pid` exists and is not a zombie (a killed process nobody has reaped yet)."""
    try:
        os.kill(int(pid), 0)
    except (ProcessLookupError, ValueError, TypeError):
        return False
    except PermissionError:
        return True
    try:
        return Path(f"/proc/{int(pid)}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


def _started(pid: int) -> int | None:
    """When process `pid` started (clock ticks after boot, /proc's), None where that cannot be read."""
    try:
        return int(Path(f"/proc/{int(pid)}/stat").read_text().rsplit(")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def this_process() -> dict:
    """What a `running` record names of the process writing it: its pid, host and start, so that a reader can tell it
    from a later process that was given the same pid (`recorded_process`)."""
    return {"pid": os.getpid(), "host": socket.gethostname(), "started": _started(os.getpid())}


def recorded_process(summary: dict) -> int | None:
    """The pid a `running` summary names, if that process ran on this host (only there can it be checked) and the
    process with that pid now is the same one (its start recorded and unchanged: a killed run's pid is reused)."""
    process = summary.get("process") or {}
    if summary.get("status") != "running" or process.get("host") != socket.gethostname():
        return None
    pid, started = process.get("pid"), process.get("started")
    return pid if started is None or _started(pid) in (started, None) else None


def read_summary(run_dir: Path) -> dict:
    """The summary.json a resume takes over ({} where there is none), refused in one line where it cannot be read: a
    full disk leaves it empty or cut, and a run without its summary has no settings or fingerprints to be checked by."""
    path = Path(run_dir) / "summary.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as e:
        reason = "empty" if path.is_file() and path.stat().st_size == 0 else f"{type(e).__name__}: {e}"
        raise UserError(f"{path}: unreadable ({reason}); cannot resume the run: restore its summary.json, or start a "
                        "new run in another directory") from None
    if not isinstance(data, dict):
        raise UserError(f"{path}: not a summary (a JSON {type(data).__name__}, not an object); cannot resume the run: "
                        "restore its summary.json, or start a new run in another directory")
    return data


def check_run_dir(run_dir: Path, resume: bool = False, create: bool = True) -> None:
    """Refuse (one line) a run directory that is a file, cannot be created or written, or holds another
    run's outputs while we are not resuming that run. `create=False` checks without creating anything
    (before Hydra writes its .hydra/ files into the directory)."""
    run_dir = Path(run_dir)
    if run_dir.exists() and not run_dir.is_dir():
        raise UserError(f"{run_dir}: a file is in the way of the run directory")
    existing = next(p for p in (run_dir, *run_dir.absolute().parents) if p.exists())
    if not existing.is_dir():
        raise UserError(f"{run_dir}: {existing} is a file, not a directory")
    if create:
        try:
            run_dir.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise _os_error(run_dir, e, "create the run directory") from None
    if run_dir.is_dir() and not resume:
        held = [name for name in RUN_FILES if (run_dir / name).exists()]
        if held:
            raise UserError(f"{run_dir}: holds another run's outputs ({', '.join(held)}); "
                            "choose another hydra.run.dir (or leave it to the default)")
    existing = next(p for p in (run_dir, *run_dir.absolute().parents) if p.exists())
    if not os.access(existing, os.W_OK | os.X_OK):
        raise UserError(f"{run_dir}: {'the run directory' if existing == run_dir else existing} is not writable")


def check_resumable(run_dir: Path, previous: dict) -> None:
    """Refuse (one line) to resume the run in `run_dir` (`previous`: its summary.json, {} if none) where the directory
    cannot be used (`check_run_dir`), its steps have no summary.json to check them by, or the run is still going.
    Reads only: a sweep checks every job before Hydra starts."""
    check_run_dir(run_dir, resume=True, create=False)
    if not previous and any((Path(run_dir) / n).is_file() and (Path(run_dir) / n).stat().st_size
                            for n in ("steps.jsonl", "steps.jsonl.xz")):
        raise UserError(f"{run_dir}: holds a run's steps but no summary.json, so the settings they were made "
                        "with cannot be checked; cannot resume it (restore its summary.json, or start a new run "
                        "in another directory)")
    pid = recorded_process(previous)
    if pid is not None and pid != os.getpid() and alive(pid):
        raise UserError(f"{run_dir}: the run is still going (process {pid}); cannot resume it until that process "
                        f"has ended (kill {pid} stops it as interrupted)")


def job_fields(command: str, cfg, overrides) -> dict:
    """What a job is, as its summary.json names it from the start: the command, whichever of method, model and
    data the command's config has, its command-line `overrides`, every setting resolved (`config`, without
    Hydra's node), so that reports need no file another process could overwrite, and the content fingerprints of
    the files those settings name (`input_fingerprints`), so that a resume can check them."""
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
            "overrides": [str(o) for o in overrides], "config": settings, "input_fingerprints": fingerprints(settings)}


class JobSummary:
    """summary.json of one job. `fields` (what the job is: command, method, model, data; `job_fields`) are written at
    once with status `running`; `resume=True` takes over an interrupted job's summary, and `finished` then
    says whether there is nothing left to do. `found`: the run's records as its resume check found them (what
    `give_back` writes back); `alone`: the command's only job (`withdraw`)."""

    def __init__(self, run_dir: Path, fields: dict, resume: bool = False, found: dict[str, bytes] | None = None,
                 alone: bool = False):
        self.dir = Path(run_dir)
        self.found = found or {}
        self.path = self.dir / "summary.json"
        check_run_dir(self.dir, resume)
        previous = read_summary(self.dir) if resume else {}
        if resume:
            check_resumable(self.dir, previous)
        self.nothing_to_resume = resume and not previous  # said in the job's log (run_task), once it has one
        self.finished = previous.get("status") == "finished"
        self.given_back = False  # (give_back, withdraw)
        self.resumed = resume and bool(previous)
        self.begun = False  # whether the job began the work its records keep (`began`)
        self.alone = alone  # a command's single job (not one of a sweep's, whose failed records its table reports)
        self.data = previous if self.finished else {**fields, "status": "running"}
        if not self.finished:
            if not resume:  # the claim: exclusive, so a second job started into this directory is refused
                try:
                    os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
                except FileExistsError:
                    raise UserError(f"{self.dir}: holds another run's outputs (summary.json); choose another "
                                    "hydra.run.dir (or leave it to the default)") from None
                except OSError as e:
                    raise _os_error(self.path, e, "create") from None
            self._write()

    def keep(self, records: dict[str, bytes]) -> None:
        """Records the resume found that a step of its own is about to rewrite (steps.jsonl cut back to its last whole
        step, hyps.txt written again: `RecordWriter.resume_steps`), kept to be given back like the others."""
        for name, data in records.items():
            self.found.setdefault(name, data)

    def began(self) -> None:
        """The job began the work its records keep (a run's first step of its own, train's first batch, select-fixed's
        first simulation): from now on it ends as a job that worked, its failure recorded (`close`)."""
        self.begun = True

    def withdraw(self) -> None:
        """A new job refused before it began: what it and Hydra wrote into its directory goes (the directory too,
        where nothing else is left in it), so the same command runs once the cause is fixed; nothing more is
        written. Its command said the refusal (a sweep's failed.jsonl keeps it: adaptsim/launch/jobs.py)."""
        logs = [Path(h.baseFilename) for h in logging.getLogger().handlers if isinstance(h, logging.FileHandler)]
        for path in [*(self.dir / name for name in (*RECORDS, "steps.jsonl", "hyps.txt")), *logs]:
            if path.parent in (self.dir, self.dir / ".hydra"):  # (a log is named for its command: train.log)
                path.unlink(missing_ok=True)
        for folder in (self.dir / ".hydra", self.dir):
            with contextlib.suppress(OSError):  # not empty (a file of the user's), or gone
                folder.rmdir()
        self.given_back = True

    def give_back(self, records: dict[str, bytes] | None = None) -> None:
        """Write `records` (file name under the directory → bytes; the records the resume found, `found`, by default)
        back, and nothing more from now on: a resume refused by its replay leaves the run's records as they were."""
        for name, data in (self.found if records is None else records).items():
            tmp = self.dir / (name + ".given-back.tmp")
            try:
                tmp.write_bytes(data)
                os.replace(tmp, self.dir / name)
            except OSError as e:
                tmp.unlink(missing_ok=True)
                log.error("%s", _os_error(self.dir / name, e, "write back"))
        self.given_back = True

    def update(self, **fields) -> None:
        """Add or replace fields and write the file (atomically)."""
        self.data.update(fields)
        self._write()

    def close(self, status: str, error: str | None = None, refused: bool = False) -> None:
        """The job's end: finished, failed or interrupted. A job that ends otherwise than finished before it began
        (`began`) leaves its directory as it found it: a resumed one gives its records back as the resume found them
        (refused by a check that can only come after the claim, or by its replay; stopped while replaying), so that
        a later resume still has every fingerprint to check; a new one `refused` (a UserError, not a bug) withdraws
        where it is its command's only job (`alone`; a sweep's table reports its failed jobs, and its resume reruns
        them).
        `data` says how it ended, for the launchers. A failure to write this (a full disk) is logged, so the job's
        own error is the one reported."""
        self.data.update(status=status, **({"error": error} if error else {}))
        if status != "finished" and not self.begun:
            if self.resumed:
                self.give_back()
            elif refused and self.alone:
                self.withdraw()
        try:
            self._write()
        except UserError as e:
            log.error("%s", e)

    def _write(self) -> None:
        if self.given_back:
            return
        data = dict(self.data)  # while running it also names its process, so readers can tell a live job
        if data.get("status") == "running":  # from a killed one (SIGKILL leaves `running` behind)
            data["process"] = this_process()
        else:
            data.pop("process", None)
        try:
            write_json_atomic(self.path, data)
        except OSError as e:
            raise _os_error(self.path, e, "write") from None


# The files that record what a run is, and its log: what a resume found before anything was written
# (adaptsim/launch/resume.py `check` returns them, the job keeps them: `JobSummary.found`), written back where the
# resume is refused only by its replay (§1: what no setting names) or a resumed sweep's job is found finished after
# Hydra started it (writing its .hydra/ and log).
RECORDS = ("summary.json", ".hydra/config.yaml", ".hydra/hydra.yaml", ".hydra/overrides.yaml", "adaptsim.log")


def read_records(run_dir: Path) -> dict[str, bytes]:
    """The run's records (`RECORDS`) as they are now: file name under the directory → bytes."""
    return {name: (Path(run_dir) / name).read_bytes() for name in RECORDS if (Path(run_dir) / name).is_file()}
