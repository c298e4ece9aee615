"""What a job writes (docs/design.md §6).

Every command's job directory holds summary.json (`JobSummary`): claimed at the job's start with status
`running` and the process, filled in by the command, closed by the launcher as finished, failed (with the
error) or interrupted. A run's other files are written by `RecordWriter`: steps.jsonl and hyps.txt line by
line, curves.csv, offsets/. A finished run may keep its two large records compressed (`compress_records`:
steps.jsonl.xz, curves.csv.xz); every reader takes either form (`record_file`, `read_record`).

A job owns its directory: two runs writing into one directory would interleave their steps and mix one's
summary with the other's config, and a re-run would truncate the first run's steps. (Whether a resume may take over
a run is decided before any of this writes: adaptsim/resume.py.) So summary.json is created
exclusively, and a directory that already holds another run's outputs is refused, unless the job is
resuming that run (`resume=True`: files are appended to, never truncated). Each line is written whole,
and a failed write (a full disk) is cut back to the last complete line, so steps.jsonl never ends in
half a record. A job's log lines go to its own log file, also when a lockstep sweep runs several jobs in one
process (`job_logs`, `speaking_for`).
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import lzma
import os
import socket
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from adaptsim.errors import UserError
from adaptsim.inputs import fingerprints

if TYPE_CHECKING:  # (imported where used: reports read summaries without importing torch)
    from adaptsim.update import Snapshot

log = logging.getLogger("adaptsim")

# The files whose presence means a directory belongs to a run.
RUN_FILES = ("summary.json", "steps.jsonl", "steps.jsonl.xz")
# The records a finished run may store xz-compressed (run.yaml `compress`): a fifth of their size or less, so that the
# committed records stay small enough for the working tree to travel to a GPU machine (docs/performance.md). xz, not
# gzip: 22 MB against 29 MB for the base-ende records of docs/results.
COMPRESSIBLE = ("steps.jsonl", "curves.csv")
SIMULATIONS = "simulations.jsonl"  # select-fixed's record: each simulated candidate's held-out loss
XZ = ".xz"

# summary.json's schema, shared by its writers (JobSummary, simulate.Simulation) and its readers (adaptsim/report;
# docs/design.md §6 lists the same keys): the top-level keys and what each holds.
JOB_KEYS = {  # every command's job, from its start
    "command": "the command (run, bench, select-fixed, train, serve)",
    "method": "method.name", "model": "model.name", "model_path": "model.path", "dataset": "dataset.name",
    "overrides": "the command line's overrides",
    "config": "every setting, resolved (Hydra's own node left out)",
    "input_fingerprints": "{setting: hash of the bytes} of every file a setting names (adaptsim/inputs.py)",
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
    "scores": "corpus scores: R0, R1, R0+1 (subword., novel. variants), BLEU, SBLEU, TER, chrF",
    "counts": "{metric: {num, den}} of the recall metrics",
    "signatures": "sacrebleu-style signature of each metric family",
    "divergences": "updates that diverged (on_divergence=rollback)",
    "cut_hypotheses": "hypotheses cut at decode.max_length",
    "per_document": "per document: changed parameters, stored-state bytes",
    "changed_parameters_max": "the most parameters changed in one document",
    "method_info": "the method's own figures (lasso's budgets, fixed's tensors, …)",
    "cost": "step_ms_median, steps, state_bytes_median, state_bytes_max",
    "timing": "wall and per-step times, threads, device (the GPU, CUDA and torch where cuda), the allocator that ran, "
              "resident memory every 100 segments, resumed_after_steps",
    "peak_rss_mb": "bench: the peak resident memory",
}


def write_json_atomic(path: Path, data: dict) -> None:
    """Write to a temporary file in the same folder, then rename: readers never see a truncated file."""
    write_bytes_atomic(path, (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """`write_json_atomic` for bytes as they are. The file gets the mode an ordinary write would give it (0666 less
    the process's umask), not mkstemp's 0600, so colleagues on a shared machine can read every record of a run."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    """The process's umask (reading it means setting it: set back at once)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


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


def recorded_process(summary: dict) -> int | None:
    """The pid a `running` summary names, if that process ran on this host (only there can it be checked)."""
    process = summary.get("process") or {}
    if summary.get("status") == "running" and process.get("host") == socket.gethostname():
        return process.get("pid")
    return None


def _os_error(path, e: OSError, doing: str) -> UserError:
    return UserError(f"{path}: cannot {doing} ({e.strerror or e})")


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
    says whether there is nothing left to do."""

    def __init__(self, run_dir: Path, fields: dict, resume: bool = False):
        self.dir = Path(run_dir)
        self.path = self.dir / "summary.json"
        check_run_dir(self.dir, resume)
        previous = json.loads(self.path.read_text(encoding="utf-8")) if resume and self.path.is_file() else {}
        if resume and not previous and any((self.dir / n).is_file() and (self.dir / n).stat().st_size
                                           for n in ("steps.jsonl", "steps.jsonl.xz")):
            raise UserError(f"{self.dir}: holds a run's steps but no summary.json, so the settings they were made "
                            "with cannot be checked; cannot resume it (restore its summary.json, or start a new run "
                            "in another directory)")
        self.nothing_to_resume = resume and not previous  # said in the job's log (run_task), once it has one
        pid = recorded_process(previous)
        if pid is not None and pid != os.getpid() and alive(pid):
            raise UserError(f"{self.dir}: the run is still going (process {pid}); cannot resume it")
        self.finished = previous.get("status") == "finished"
        self.given_back = False  # (give_back)
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

    def give_back(self, records: dict[str, bytes]) -> None:
        """Write `records` (file name under the directory → bytes, as a resume found them) back, and nothing more from
        now on: a resume refused by its replay leaves the run's records as they were."""
        for name, data in records.items():
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

    def close(self, status: str, error: str | None = None) -> None:
        """The job's end: finished, failed or interrupted. A failure to write this (a full disk) is logged,
        so the job's own error is the one reported."""
        self.data.update(status=status, **({"error": error} if error else {}))
        try:
            self._write()
        except UserError as e:
            log.error("%s", e)

    def _write(self) -> None:
        if self.given_back:
            return
        data = dict(self.data)  # while running it also names its process, so readers can tell a live job
        if data.get("status") == "running":  # from a killed one (SIGKILL leaves `running` behind)
            data["process"] = {"pid": os.getpid(), "host": socket.gethostname()}
        else:
            data.pop("process", None)
        try:
            write_json_atomic(self.path, data)
        except OSError as e:
            raise _os_error(self.path, e, "write") from None


def record_file(run_dir: Path, name: str) -> Path:
    """Where a run's record `name` (steps.jsonl, curves.csv) is: the plain file (a run writes it so, and it is
    whole while it exists: `compress_records` removes it only after its .xz is in place), else its .xz; the plain
    path when neither exists, for the caller's message."""
    plain = Path(run_dir) / name
    packed = plain.with_name(name + XZ)
    return packed if not plain.exists() and packed.exists() else plain


def read_record(path: Path) -> str:
    """A record's text, plain or xz (by its name)."""
    path = Path(path)
    try:
        data = lzma.decompress(path.read_bytes()) if path.name.endswith(XZ) else path.read_bytes()
    except lzma.LZMAError as e:
        raise UserError(f"{path}: not a whole xz file ({e})") from None
    return data.decode("utf-8")


def compress_records(run_dir: Path) -> list[Path]:
    """Replace a finished run's plain steps.jsonl and curves.csv by .xz files with the same bytes inside, each
    written whole before its plain file goes (a kill in between leaves both, and readers take the plain one).
    Returns the files written. An unfinished run is refused: resuming reads and appends to the plain files."""
    run_dir = Path(run_dir)
    status = json.loads((run_dir / "summary.json").read_text(encoding="utf-8")).get("status") \
        if (run_dir / "summary.json").is_file() else None
    if status != "finished":
        raise UserError(f"{run_dir}: not a finished run (status {status}); only finished runs are compressed")
    written = []
    for name in COMPRESSIBLE:
        plain = run_dir / name
        if not plain.is_file():
            continue
        packed = plain.with_name(name + XZ)
        tmp = plain.with_name(f".{packed.name}.tmp")
        try:
            tmp.write_bytes(lzma.compress(plain.read_bytes(), preset=9 | lzma.PRESET_EXTREME))
            os.replace(tmp, packed)
        except OSError as e:
            tmp.unlink(missing_ok=True)
            raise _os_error(packed, e, "write") from None
        plain.unlink()
        written.append(packed)
    return written


def _hyp_line(hypothesis: str) -> str:
    return hypothesis.replace("\n", " ") + "\n"


def written_steps(run_dir: Path) -> tuple[list[dict], int]:
    """The whole steps of an interrupted run's steps.jsonl and the bytes they take (`written_records`)."""
    return written_records(Path(run_dir) / "steps.jsonl", "step")


def written_records(path: Path, what: str) -> tuple[list[dict], int]:
    """The whole records of an interrupted job's JSON-lines file (a run's steps, select-fixed's simulations) and the
    bytes they take: its lines up to the first one a kill cut short (no newline, or not JSON: a torn write). A line
    that is not JSON with whole lines after it is no torn write but a damaged file: resuming from before it would
    drop the later records without a word, so that is refused (one line naming the line and how many records it
    would drop). Read before anything is written (adaptsim/resume.py)."""
    records, keep = [], 0
    if not path.is_file():
        return records, keep
    with open(path, "rb") as f:
        lines = f.read().splitlines(keepends=True)
    for n, line in enumerate(lines, 1):
        if not line.endswith(b"\n"):
            break
        try:
            records.append(json.loads(line))
        except ValueError:
            later = sum(1 for rest in lines[n:] if rest.endswith(b"\n"))
            if later:
                raise UserError(f"{path}:{n}: not a whole {what} record, and {later} {what}(s) follow it: resuming "
                                f"would drop them; repair line {n}, or keep the first {n - 1} lines to resume "
                                f"after {what} {n - 1}") from None
            break
        keep += len(line)
    return records, keep


class RecordWriter:
    """A run's files besides summary.json (which the job claimed): steps.jsonl, hyps.txt, curves.csv,
    offsets/. `resume=True` (for resuming an interrupted run) appends to its files instead of refusing them;
    deciding where to resume from is the caller's business."""

    def __init__(self, run_dir: Path, resume: bool = False):
        self.dir = Path(run_dir)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | (0 if resume else os.O_EXCL)
        self._fds: dict[str, int] = {}
        try:
            for name in ("steps.jsonl", "hyps.txt"):  # steps.jsonl first: creating it claims the directory
                self._fds[name] = os.open(self.dir / name, flags, 0o666)
        except FileExistsError as e:
            if not resume:  # hyps.txt was in the way: give back the steps.jsonl just created
                for name in self._fds:
                    (self.dir / name).unlink(missing_ok=True)
            self.close()
            raise UserError(f"{self.dir}: holds another run's outputs ({Path(e.filename).name}); choose another "
                            "hydra.run.dir (or leave it to the default)") from None
        except OSError as e:
            self.close()
            raise _os_error(e.filename or self.dir, e, "create") from None

    def resume_steps(self) -> list[dict]:
        """The steps an interrupted run wrote (`written_steps`): steps.jsonl is cut back to them and hyps.txt,
        which only repeats their hypotheses, is written again from them (a kill between the two files' writes
        leaves them one line apart), so the run goes on where its last complete step ended. (A step's line is
        written after its update.)"""
        records, keep = written_steps(self.dir)
        os.ftruncate(self._fds["steps.jsonl"], keep)
        os.ftruncate(self._fds["hyps.txt"], 0)
        data = "".join(_hyp_line(r["hypothesis"]) for r in records).encode("utf-8")
        while data:
            data = data[os.write(self._fds["hyps.txt"], data):]
        return records

    def step(self, record: dict) -> None:
        """Append one line to steps.jsonl and one to hyps.txt, each whole or (on a write error) not at all."""
        lines = {"steps.jsonl": json.dumps(record, ensure_ascii=False) + "\n",
                 "hyps.txt": _hyp_line(record["hypothesis"])}
        ends = {name: os.lseek(fd, 0, os.SEEK_END) for name, fd in self._fds.items()}
        try:
            for name, line in lines.items():
                data = line.encode("utf-8")
                while data:
                    data = data[os.write(self._fds[name], data):]
        except OSError as e:
            for fd, end in ((self._fds[n], end) for n, end in ends.items()):  # back to the last whole lines
                try:
                    os.ftruncate(fd, end)
                except OSError:
                    pass
            raise _os_error(self.dir / name, e, "write") from None

    def sync(self) -> None:
        """steps.jsonl and hyps.txt on disk (fsync): for a caller whose steps come at human speed (serve)."""
        for name, fd in self._fds.items():
            try:
                os.fsync(fd)
            except OSError as e:
                raise _os_error(self.dir / name, e, "write") from None

    def curves(self, rows: list[dict], append: bool = False) -> None:
        """curves.csv: the cumulative scores after every segment (`append`: rows after those it holds)."""
        from adaptsim.metrics.curves import write_curves

        try:
            write_curves(rows, self.dir / "curves.csv", append)
        except OSError as e:  # a full disk: the one-line error, and no curves.csv.tmp left behind
            (self.dir / "curves.csv.tmp").unlink(missing_ok=True)
            raise _os_error(self.dir / "curves.csv", e, "write") from None

    def offsets(self, theta0: Snapshot, doc_id: str) -> int:
        """offsets/<doc_id>.safetensors: a document's adapted offsets θ − θ0; returns the file's size."""
        from adaptsim.offsets import save_offsets

        return save_offsets(theta0, self.dir / "offsets", doc_id)

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds = {}

    def __enter__(self) -> RecordWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


_SPEAKING_FOR: contextvars.ContextVar[Path | None] = contextvars.ContextVar("adaptsim_job", default=None)


@contextlib.contextmanager
def speaking_for(job_dir: Path):
    """Log lines inside the block are the job's in `job_dir`: in a lockstep sweep they go to its log only
    (`job_logs`); alone, nothing changes."""
    token = _SPEAKING_FOR.set(Path(job_dir))
    try:
        yield
    finally:
        _SPEAKING_FOR.reset(token)


class _OneJob(logging.Filter):
    def __init__(self, job_dir: Path):
        super().__init__()
        self.job_dir = Path(job_dir)

    def filter(self, record: logging.LogRecord) -> bool:
        speaker = _SPEAKING_FOR.get()
        return speaker is None or speaker == self.job_dir


@contextlib.contextmanager
def job_logs(job_dirs: list[Path]):
    """Each job of a lockstep sweep logs to its own directory's log file, as it would alone: Hydra configures one
    job's logging at a time, so after composing every job the root logger writes to the last job's file only.
    Each file handler is replaced by one per job (same name, format and level) that takes the lines said for its
    job (`speaking_for`) and the lines said for none (loading the model, the data)."""
    root = logging.getLogger()
    files = [h for h in root.handlers if isinstance(h, logging.FileHandler)]
    added = []
    for handler in files:
        root.removeHandler(handler)
        handler.close()
        for job_dir in job_dirs:
            one = logging.FileHandler(Path(job_dir) / Path(handler.baseFilename).name, encoding="utf-8")
            one.setFormatter(handler.formatter)
            one.setLevel(handler.level)
            one.addFilter(_OneJob(job_dir))
            root.addHandler(one)
            added.append(one)
    try:
        yield
    finally:
        for one in added:
            root.removeHandler(one)
            one.close()
        for handler in files:
            root.addHandler(handler)
