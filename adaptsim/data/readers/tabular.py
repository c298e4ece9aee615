"""Tables of segments, one row each: `tsv` and `csv` (with a header row) and `jsonl` (one object a line).

Column (or JSON key) names come from `columns: {doc_id, seg_id, source, reference}`; set `doc_id` to
null for a file that is one document, `seg_id` to null to number segments 1, 2, … in each document.
Other columns are kept in `Segment.attrs`. Documents are in file order.

TSV is split on tabs with no quoting at all (real TSV text contains quote characters, see TED);
CSV follows RFC 4180 quoting via the csv module.
"""

from __future__ import annotations

import csv
import io
import json
import re

from adaptsim.data.readers.base import default_doc_id, documents_in_order
from adaptsim.data.textio import expand, read_text, split_lines
from adaptsim.data.types import Document, Segment
from adaptsim.errors import DataError, UserError

DEFAULT_COLUMNS = {"doc_id": "doc_id", "seg_id": "seg_id", "source": "source", "reference": "reference"}


def columns(opts: dict) -> dict:
    cols = {**DEFAULT_COLUMNS, **(opts.get("columns") or {})}
    for role in ("source", "reference"):
        if not cols.get(role):
            raise UserError(f"dataset.columns.{role} must name a column")
    return cols


def read(opts: dict) -> list[Document]:
    path = expand(opts.get("path") or "")
    if str(path) in ("", ".", "???"):
        raise UserError("dataset.path must be set")
    rows = ROWS[opts["format"]](path)
    return documents_in_order(list(to_segments(rows, path, opts)), opts)


def tsv_rows(path):
    """(line, {column: value}) for each data row; the first line is the header."""
    lines = split_lines(read_text(path))
    if not lines:
        raise DataError(path, "empty file (expected a header row)")
    header = lines[0].split("\t")
    for i, line in enumerate(lines[1:], start=2):
        fields = line.split("\t")
        if len(fields) != len(header):
            raise DataError(path, f"expected {len(header)} tab-separated fields (header: {', '.join(header)}), "
                                  f"found {len(fields)}", i)
        yield i, dict(zip(header, fields))


def csv_rows(path):
    reader = csv.reader(io.StringIO(read_text(path), newline=""), strict=True)
    try:
        header = next(reader, None)
        if header is None:
            raise DataError(path, "empty file (expected a header row)")
        start = reader.line_num + 1
        for fields in reader:
            if fields and len(fields) != len(header):
                raise DataError(path, f"expected {len(header)} comma-separated fields "
                                      f"(header: {', '.join(header)}), found {len(fields)}", start)
            if fields:
                yield start, dict(zip(header, fields))
            start = reader.line_num + 1
    except csv.Error as e:
        raise DataError(path, f"bad CSV: {e}", reader.line_num) from None


def jsonl_rows(path):
    """(line, object) for each non-blank line. Lines end at "\\n", "\\r\\n" or a lone "\\r" (old Mac files): JSON
    text holds no raw CR but as whitespace between tokens, so a CR is a line end that "\\n" alone would miss, and
    every error after it would be reported on line 1."""
    for i, line in enumerate(re.split(r"\r\n|\r|\n", read_text(path).removesuffix("\n").removesuffix("\r")),
                             start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            if e.pos >= len(line.rstrip()):  # the line ended inside the object: one object spread over lines
                raise DataError(path, f"invalid JSON: the object does not end on this line ({e.msg}); JSON lines "
                                      "hold one whole object a line", i) from None
            raise DataError(path, f"invalid JSON: {e.msg} (column {e.colno})", i) from None
        if not isinstance(obj, dict):
            raise DataError(path, "expected a JSON object per line", i)
        yield i, obj


ROWS = {"tsv": tsv_rows, "csv": csv_rows, "jsonl": jsonl_rows}


def to_segments(rows, path, opts):
    cols = columns(opts)
    single_doc = default_doc_id(opts, path)
    used = {c for c in cols.values() if c}
    counter: dict[str, int] = {}
    for line, row in rows:
        missing = [c for c in used if c not in row]
        if missing:
            where = "header" if opts["format"] != "jsonl" else "object"
            raise DataError(path, f"no {', '.join(map(repr, sorted(missing)))} in the {where} "
                                  f"(has: {', '.join(map(str, row))}); set dataset.columns.<role>=NAME "
                                  "(doc_id/seg_id may be null)", 1 if opts["format"] != "jsonl" else line)
        values = {}
        for role in ("doc_id", "seg_id", "source", "reference"):
            if not cols.get(role):
                continue
            value = row[cols[role]]
            if role in ("doc_id", "seg_id") and isinstance(value, (int, float)) and not isinstance(value, bool):
                value = str(value)
            if not isinstance(value, str):
                raise DataError(path, f"{cols[role]!r} must be a string, got {type(value).__name__}", line)
            if role in ("doc_id", "seg_id"):
                value = value.strip()
                if not value:
                    raise DataError(path, f"missing {role} (column {cols[role]!r})", line)
            values[role] = value
        doc_id = values.get("doc_id", single_doc)
        counter[doc_id] = counter.get(doc_id, 0) + 1
        attrs = {k: v for k, v in row.items() if k not in used}
        yield Segment(doc_id, values.get("seg_id", str(counter[doc_id])), values["source"], values["reference"],
                      attrs=attrs, origin=f"{path}:{line}")
