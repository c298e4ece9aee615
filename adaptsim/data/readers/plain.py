"""Line-parallel text files: `plain` (source + reference) and `triplet` (source + MT + post-edit, WMT APE).

Files are `source`/`reference` (/`mt`) when given, else derived from the prefix `path`:
plain `PATH.<source_lang>` / `PATH.<target_lang>`; triplet `PATH.src` / `PATH.mt` / `PATH.pe`.
One document per file set, unless `doc_ids` names a file with one document id per line or
`blank_line_breaks: true` makes a line that is blank in every file end a document.
(`detokenize: true`, for Moses-tokenised files, is applied after selection: adaptsim.data.detok.)
"""

from __future__ import annotations

from adaptsim.data.readers.base import default_doc_id, documents_in_order
from adaptsim.data.textio import expand, read_lines
from adaptsim.data.types import Document, Segment
from adaptsim.errors import DataError, UserError

SUFFIXES = {
    "plain": {"source": "{source_lang}", "reference": "{target_lang}"},
    "triplet": {"source": "src", "mt": "mt", "reference": "pe"},
}


def file_paths(opts: dict) -> dict:
    """role -> path, from explicit `source`/`reference`/`mt` or from the `path` prefix."""
    paths = {}
    for role, suffix in SUFFIXES[opts["format"]].items():
        if opts.get(role):
            paths[role] = expand(opts[role])
            continue
        prefix = opts.get("path")
        if prefix in (None, "", "???"):
            raise UserError(f"dataset.path (a file prefix) or dataset.{role} must be set")
        try:
            suffix = suffix.format(**opts)
        except KeyError as e:
            raise UserError(f"dataset.{e.args[0]} must be set to find the {role} file") from None
        paths[role] = expand(f"{prefix}.{suffix}")
    return paths


def read(opts: dict) -> list[Document]:
    paths = file_paths(opts)
    lines = {role: read_lines(path) for role, path in paths.items()}
    n = len(lines["source"])
    for role, path in paths.items():
        if len(lines[role]) != n:
            raise DataError(path, f"has {len(lines[role])} lines but {paths['source']} has {n}; "
                                  "parallel files need one segment per line each")
    doc_ids = read_doc_ids(opts, n)
    base_id = default_doc_id(opts, opts.get("path") or paths["source"])
    breaks = bool(opts.get("blank_line_breaks"))
    segments, doc_no = [], 1
    for i in range(n):
        row = {role: lines[role][i] for role in paths}
        if breaks and not any(text.strip() for text in row.values()):
            doc_no += 1 if segments and segments[-1].doc_id == str(doc_no) else 0
            continue
        doc_id = doc_ids[i] if doc_ids else (str(doc_no) if breaks else base_id)
        segments.append(Segment(doc_id, str(i + 1), row["source"], row["reference"],
                                attrs={"mt": row["mt"]} if "mt" in row else {},
                                origin=f"{paths['source']}:{i + 1}", ref_origin=f"{paths['reference']}:{i + 1}"))
    return documents_in_order(segments, opts)


def read_doc_ids(opts: dict, n: int) -> list[str] | None:
    """The optional `doc_ids` file: one document id per line, as many lines as the text files."""
    if not opts.get("doc_ids"):
        return None
    path = expand(opts["doc_ids"])
    ids = read_lines(path)
    if len(ids) != n:
        raise DataError(path, f"has {len(ids)} document ids but the text files have {n} lines")
    for i, doc_id in enumerate(ids):
        if not doc_id.strip():
            raise DataError(path, "missing document id", i + 1)
    return [doc_id.strip() for doc_id in ids]
