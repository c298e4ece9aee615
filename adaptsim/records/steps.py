"""A run's per-step records besides summary.json (`RecordWriter`): steps.jsonl and hyps.txt line by line, curves.csv.
Each line is written whole, and a failed write (a full disk) is cut back to the last complete line, so steps.jsonl
never ends in half a record; a resumed run appends after its last whole step (`written_steps`)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from adaptsim.errors import UserError
from adaptsim.records.files import _os_error, written_records


def _hyp_line(hypothesis: str) -> str:
    return hypothesis.replace("\n", " ") + "\n"


def written_steps(run_dir: Path) -> tuple[list[dict], int]:
    """The whole steps of an interrupted run's steps.jsonl and the bytes they take (`written_records`)."""
    return written_records(Path(run_dir) / "steps.jsonl", "step")


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

    def resume_steps(self) -> tuple[list[dict], dict[str, bytes]]:
        """The steps an interrupted run wrote (`written_steps`): steps.jsonl is cut back to them and hyps.txt,
        which only repeats their hypotheses, is written again from them (a kill between the two files' writes
        leaves them one line apart), so the run goes on where its last complete step ended. (A step's line is
        written after its update.) Also the two files' bytes as they were, for a refused resume to give back."""
        found = {name: (self.dir / name).read_bytes() for name in ("steps.jsonl", "hyps.txt")}
        records, keep = written_steps(self.dir)
        os.ftruncate(self._fds["steps.jsonl"], keep)
        os.ftruncate(self._fds["hyps.txt"], 0)
        data = "".join(_hyp_line(r["hypothesis"]) for r in records).encode("utf-8")
        while data:
            data = data[os.write(self._fds["hyps.txt"], data):]
        return records, found

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

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds = {}

    def __enter__(self) -> RecordWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
