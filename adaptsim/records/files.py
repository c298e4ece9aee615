"""A job's files written safely and read back in either form (docs/design.md §6): atomic writes (readers never see a
truncated file), a finished run's records compressed (`compress_records`: steps.jsonl.xz, curves.csv.xz) and read plain
or xz (`record_file`, `read_record`), and the whole records of an interrupted JSON-lines file (`written_records`)."""

from __future__ import annotations

import json
import lzma
import os
import tempfile
from pathlib import Path

from adaptsim.errors import UserError

# The records a finished run may store xz-compressed (run.yaml `compress`): a fifth of their size or less, so that the
# committed records stay small enough for the working tree to travel to a GPU machine (docs/performance.md). xz, not
# gzip: 22 MB against 29 MB for the base-ende records of docs/results.
COMPRESSIBLE = ("steps.jsonl", "curves.csv")
SIMULATIONS = "simulations.jsonl"  # select-fixed's record: each simulated candidate's held-out loss
XZ = ".xz"


def write_json_atomic(path: Path, data: dict) -> None:
    """Write to a temporary file in the same folder, then rename: readers never see a truncated file."""
    write_bytes_atomic(path, (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))


def write_bytes_atomic(path: Path, data: bytes, mode: int | None = None) -> None:
    """`write_json_atomic` for bytes as they are. The file gets the mode an ordinary write would give it (0666 less
    the process's umask), not mkstemp's 0600, so colleagues on a shared machine can read every record of a run;
    `mode`: another, from its first byte (a secret's 0600: serve's token)."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~_umask() if mode is None else mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def follow_umask(*paths: Path) -> None:
    """Give files a library wrote with a mode of its own (safetensors' 0600) the mode an ordinary write gives: 0666
    less the process's umask, as every other record has (a model directory colleagues share)."""
    for path in paths:
        os.chmod(path, 0o666 & ~_umask())


def _umask() -> int:
    """The process's umask (reading it means setting it: set back at once)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _os_error(path, e: OSError, doing: str) -> UserError:
    return UserError(f"{path}: cannot {doing} ({e.strerror or e})")


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


def written_records(path: Path, what: str) -> tuple[list[dict], int]:
    """The whole records of an interrupted job's JSON-lines file (a run's steps, select-fixed's simulations) and the
    bytes they take: its lines up to the first one a kill cut short (no newline, or not JSON: a torn write). A line
    that is not JSON with whole lines after it is no torn write but a damaged file: resuming from before it would
    drop the later records without a word, so that is refused (one line naming the line and how many records it
    would drop). Read before anything is written (adaptsim/launch/resume.py)."""
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
