"""One reader per input format: `read(opts) -> list[Document]` with every segment as found on disk.

Readers only parse and validate structure (files, encodings, counts, ids); what to do with empty
segments, grouping and selection is common to all formats and lives in adaptsim.data.select.
"""

from __future__ import annotations

import importlib

from adaptsim.errors import UserError

# format -> module under adaptsim.data.readers with a read(opts) function
FORMATS = {
    "plain": "plain",
    "triplet": "plain",
    "tsv": "tabular",
    "csv": "tabular",
    "jsonl": "tabular",
    "tmx": "tmx",
    "xml": "mteval",
    "sgml": "mteval",
    "autodesk": "autodesk",
}


def read(opts: dict):
    fmt = opts["format"]
    if fmt not in FORMATS:
        raise UserError(f"dataset.format={fmt!r}: choose {' | '.join(FORMATS)}")
    return importlib.import_module(f"adaptsim.data.readers.{FORMATS[fmt]}").read(opts)
