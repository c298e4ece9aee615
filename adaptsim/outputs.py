"""What a run writes (docs/design.md §6): steps.jsonl and hyps.txt line by line, summary.json atomically.

A run owns its directory: two runs writing into one directory interleaved their steps and
mixed one's summary with the other's config, and a re-run truncated the old run's steps. So a run
claims its directory by creating steps.jsonl exclusively and refuses a directory that already holds
another run's outputs, unless it is resuming that run (`resume=True`: the files are appended to,
never truncated). Each line is written whole, and a failed write (a full disk) is cut back to the
last complete line, so steps.jsonl never ends in half a record.
"""

from __future__ import annotations

import json
import os
import socket
import tempfile
from pathlib import Path

from adaptsim.errors import UserError

# The files whose presence means a directory belongs to a run.
RUN_FILES = ("summary.json", "steps.jsonl")


def write_json_atomic(path: Path, data: dict) -> None:
    """Write to a temporary file in the same folder, then rename: readers never see a truncated file."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2, ensure_ascii=False)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


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
    if not existing.is_dir():
        raise UserError(f"{run_dir}: {existing} is a file, not a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise UserError(f"{run_dir}: {'the run directory' if existing == run_dir else existing} is not writable")


class RunWriter:
    """A run's output files. `resume=True` (for resuming an interrupted run) appends to its files instead
    of refusing them; deciding where to resume from is the caller's business."""

    def __init__(self, run_dir: Path, resume: bool = False):
        self.dir = Path(run_dir)
        self.last_summary: dict | None = None
        check_run_dir(self.dir, resume)
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
        """The steps an interrupted run wrote, whole lines only; both files are cut back to them, so the
        run goes on where its last complete step ended. (A step's line is written after its update.)"""
        path = self.dir / "steps.jsonl"
        records, keep = [], 0
        with open(path, "rb") as f:
            for line in f:
                if not line.endswith(b"\n"):
                    break
                try:
                    records.append(json.loads(line))
                except ValueError:
                    break
                keep += len(line)
        hyps = (self.dir / "hyps.txt").read_bytes()
        cut = 0
        for _ in records:
            cut = hyps.index(b"\n", cut) + 1
        os.ftruncate(self._fds["steps.jsonl"], keep)
        os.ftruncate(self._fds["hyps.txt"], cut)
        return records

    def step(self, record: dict) -> None:
        """Append one line to steps.jsonl and one to hyps.txt, each whole or (on a write error) not at all."""
        lines = {"steps.jsonl": json.dumps(record, ensure_ascii=False) + "\n",
                 "hyps.txt": record["hypothesis"].replace("\n", " ") + "\n"}
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

    def summary(self, data: dict) -> None:
        """Write summary.json atomically. While the run is `running` it also names its process, so readers
        can tell a live run from a killed one (SIGKILL leaves `running` behind)."""
        self.last_summary = dict(data)
        if data.get("status") == "running":
            data = {**data, "process": {"pid": os.getpid(), "host": socket.gethostname()}}
        try:
            write_json_atomic(self.dir / "summary.json", data)
        except OSError as e:
            raise _os_error(self.dir / "summary.json", e, "write") from None

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds = {}
