"""What happens between reading and simulating, the same for every format, in this order:
empty segments (error or skip) → grouping → splitting → document selection → trimming.

Empty segments are handled first so `max_segments` and `min_segments` count segments that will
actually be simulated.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import logging

from adaptsim.data.textio import error_at, is_blank
from adaptsim.data.types import Dataset, Document
from adaptsim.errors import UserError

log = logging.getLogger("adaptsim.data")


def drop_empty(docs: list[Document], opts: dict, skipped) -> list[Document]:
    """Segments with a blank side (textio.is_blank: also only zero-width or control characters) are an
    error or skipped, as dataset.on_empty says."""
    out = []
    for doc in docs:
        kept = []
        for seg in doc.segments:
            for side, text in (("source", seg.source), ("reference", seg.reference)):
                if "\x00" in text:  # a NUL byte is refused when reading; this is an escape such as JSON's \u0000
                    raise error_at(seg.origin if side == "source" else (seg.ref_origin or seg.origin),
                                   f"NUL character in the {side} (document {doc.doc_id!r}, segment {seg.seg_id!r})")
            side = "source" if is_blank(seg.source) else "reference" if is_blank(seg.reference) else None
            if side is None:
                kept.append(seg)
                continue
            origin = seg.origin if side == "source" else (seg.ref_origin or seg.origin)
            if opts["on_empty"] == "error":
                raise error_at(origin, f"empty {side} (document {doc.doc_id!r}, segment {seg.seg_id!r}); "
                                       "set dataset.on_empty=skip to skip such segments")
            log.info("%s: skipped segment with empty %s", origin, side)
            skipped["empty"] += 1
        if kept:
            out.append(Document(doc.doc_id, kept))
    return out


def topic(doc_id: str, separator: str) -> str:
    """GNOME-style topic of a page id: without its extension, up to the first separator."""
    stem = doc_id.rsplit(".", 1)[0] if "." in doc_id.lstrip(".") else doc_id
    return stem.split(separator, 1)[0] if separator else stem


def group(docs: list[Document], opts: dict) -> list[Document]:
    """Merge documents by topic, in order of each topic's first appearance."""
    if opts["group_by"] != "topic":
        return docs
    groups: dict[str, Document] = {}
    for doc in docs:
        key = topic(doc.doc_id, opts.get("topic_separator") or "")
        groups.setdefault(key, Document(key, [])).segments += doc.segments
    return list(groups.values())


def split(docs: list[Document], every: int | None) -> list[Document]:
    if not every:
        return docs
    out = []
    for doc in docs:
        for k, start in enumerate(range(0, len(doc), every), start=1):
            out.append(Document(f"{doc.doc_id}/{k}", doc.segments[start:start + every]))
    return out


def relabel(docs: list[Document]) -> list[Document]:
    """Give segments their (grouped or split) document's id, keeping the id they were read with as
    attrs["source_doc"]; done last so only selected segments are copied."""
    for doc in docs:
        doc.segments = [s if s.doc_id == doc.doc_id else
                        dataclasses.replace(s, doc_id=doc.doc_id, attrs={**s.attrs, "source_doc": s.doc_id})
                        for s in doc.segments]
    return docs


def choose(docs: list[Document], opts: dict) -> list[Document]:
    """Documents by id (patterns allowed, file order kept), then by length, then the first N."""
    wanted = opts.get("documents")
    if wanted:
        wanted = [str(w) for w in wanted]
        docs = [d for d in docs if any(fnmatch.fnmatchcase(d.doc_id, w) for w in wanted)]
        if not docs:
            raise UserError(f"dataset.documents={wanted}: no document id matches")
    if opts.get("min_segments"):
        docs = [d for d in docs if len(d) >= opts["min_segments"]]
    if opts.get("max_documents"):
        docs = docs[: opts["max_documents"]]
    if opts.get("max_segments"):
        docs = [Document(d.doc_id, d.segments[: opts["max_segments"]]) for d in docs]
    return docs


def prepare(docs: list[Document], opts: dict) -> Dataset:
    skipped = Dataset(skipped=getattr(docs, "skipped", None)).skipped  # a reader's own skips (TMX), then the empty
    docs = drop_empty(docs, opts, skipped)
    if skipped["empty"]:
        log.warning("skipped %d segment(s) with an empty source or reference (dataset.on_empty=skip)",
                    skipped["empty"])
    docs = relabel(choose(split(group(docs, opts), opts.get("split_every")), opts))
    return Dataset(docs, skipped)

