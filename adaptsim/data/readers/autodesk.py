"""The Autodesk post-editing corpus (Zhechev, 2012; docs/design.md §7).

Each record ends with U+F8FF ◊ ÷ and a newline (so a record may span lines); its fields are separated
by U+F8FF: field 0 is the English source, field 1 the MT output (kept as `attrs["mt"]`), field 2 the
post-edited translation (the reference). `path` is one corpus file (one document) or a directory whose
files are read in name order as one document each; `split_every` cuts them into smaller documents.
The corpus is not redistributable, so a missing path says where we looked and how to get it.
"""

from __future__ import annotations

from pathlib import Path

from adaptsim.data.readers.base import default_doc_id, documents_in_order
from adaptsim.data.textio import expand, read_text
from adaptsim.data.types import Document, Segment
from adaptsim.errors import DataError

FIELD = "\uf8ff"
END = "\uf8ff\u25ca\u00f7\n"  # U+F8FF, ◊ (U+25CA), ÷ (U+00F7), newline

HOW_TO_GET = ("the Autodesk post-editing corpus is not shipped with adaptsim: download it by hand from "
              "Autodesk's public post-editing data release (Zhechev, 2012), then point dataset.path at the "
              "corpus file or folder, e.g. `adaptsim run dataset=autodesk dataset.path=/data/autodesk/en-de`")


def read(opts: dict) -> list[Document]:
    path = expand(opts.get("path") or "")
    if str(path) in ("", ".", "???") or not path.exists():
        raise DataError(path, f"not found; {HOW_TO_GET}")
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith("."))
        if not files:
            raise DataError(path, f"folder has no corpus files; {HOW_TO_GET}")
        segments = [s for f in files for s in read_file(f, default_doc_id({}, f))]
    else:
        segments = read_file(path, default_doc_id(opts, path))
    return documents_in_order(segments, opts)


def read_file(path: Path, doc_id: str) -> list[Segment]:
    text = read_text(path).replace(END[:-1] + "\r\n", END)
    records = text.split(END)
    tail = records.pop()
    line = 1
    segments = []
    for n, record in enumerate(records, start=1):
        fields = record.split(FIELD)
        if len(fields) < 3:
            raise DataError(path, f"record {n} has {len(fields)} field(s), expected at least 3 "
                                  "(source, MT, post-edit) separated by U+F8FF", line)
        segments.append(Segment(doc_id, str(n), fields[0].strip(), fields[2].strip(),
                                attrs={"mt": fields[1].strip()}, origin=f"{path}:{line}"))
        line += record.count("\n") + 1
    if tail.strip():
        raise DataError(path, "last record is not terminated by U+F8FF ◊ ÷ and a newline "
                              "(is this an Autodesk corpus file?)", line)
    return segments
