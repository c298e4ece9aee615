"""Compress the finished runs' large records below each directory given: steps.jsonl and curves.csv become
steps.jsonl.xz and curves.csv.xz (adaptsim/records/ `compress_records`; every report reads either form).

    python scripts/compress_records.py docs/results          # what a run with compress=true does at its end

Unfinished runs are left as they are (a resume appends to the plain files) and named.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from adaptsim.errors import UserError
from adaptsim.records import COMPRESSIBLE, compress_records


def run_dirs(root: Path) -> list[Path]:
    """Directories below `root` (itself included) that hold a run's summary.json and a plain record."""
    return sorted(p.parent for p in root.rglob("summary.json") if any((p.parent / n).is_file() for n in COMPRESSIBLE))


def main(paths: list[str]) -> int:
    if not paths:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    before = after = done = 0
    for root in map(Path, paths):
        if not root.is_dir():
            print(f"compress_records.py: {root}: no such directory", file=sys.stderr)
            return 2
        for run in run_dirs(root):
            if json.loads((run / "summary.json").read_text(encoding="utf-8")).get("status") != "finished":
                print(f"compress_records.py: {run}: not finished, left as it is", file=sys.stderr)
                continue
            size = sum((run / n).stat().st_size for n in COMPRESSIBLE if (run / n).is_file())
            try:
                written = compress_records(run)
            except UserError as e:
                print(f"compress_records.py: {e}", file=sys.stderr)
                return 1
            before, after, done = before + size, after + sum(p.stat().st_size for p in written), done + 1
    print(f"compress_records.py: {done} runs, {before / 1e6:.1f} MB → {after / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
