"""What a run writes (DESIGN §6): steps.jsonl and hyps.txt line by line, summary.json atomically."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path


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


class RunWriter:
    def __init__(self, run_dir: Path):
        self.dir = Path(run_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self._steps = open(self.dir / "steps.jsonl", "w", encoding="utf-8")
        self._hyps = open(self.dir / "hyps.txt", "w", encoding="utf-8")

    def step(self, record: dict) -> None:
        self._steps.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._steps.flush()
        self._hyps.write(record["hypothesis"].replace("\n", " ") + "\n")
        self._hyps.flush()

    def summary(self, data: dict) -> None:
        write_json_atomic(self.dir / "summary.json", data)

    def close(self) -> None:
        self._steps.close()
        self._hyps.close()
