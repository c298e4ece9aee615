"""curves.csv: one row per segment, the cumulative score of every metric (paper Appendix B).

A later report subtracts a baseline run's curve column by column, so the columns are the metric
keys themselves; a score that does not exist yet (nothing to recall so far) is an empty cell.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Sequence
from pathlib import Path


def write_curves(rows: Sequence[dict], path: str | Path, append: bool = False) -> None:
    """Write rows as CSV atomically (temp file + rename), so a crash never leaves half a file; `append`: add
    them to the file's rows (same columns), for a run that writes its curves as it goes."""
    path = Path(path)
    fields = list(rows[0]) if rows else ["segment", "doc_id"]
    if append:
        with open(path, "a", newline="", encoding="utf-8") as f:
            _write_rows(csv.DictWriter(f, fieldnames=fields, lineterminator="\n"), rows)
        return
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
        writer.writeheader()
        _write_rows(writer, rows)
    os.replace(tmp, path)


def _write_rows(writer: csv.DictWriter, rows: Sequence[dict]) -> None:
    for row in rows:
        writer.writerow({k: "" if v is None else v for k, v in row.items()})
