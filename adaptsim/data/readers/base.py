"""What all readers share: turning an ordered stream of segments into documents, with id checks."""

from __future__ import annotations

import logging
from pathlib import Path

from adaptsim.data.textio import error_at
from adaptsim.data.types import Document, Segment

log = logging.getLogger("adaptsim.data")


def documents_in_order(segments: list[Segment], opts: dict) -> list[Document]:
    """Consecutive segments with the same doc_id form a document, in file order.

    A document id that comes back after another document is an error (the order of a document's
    segments is what the simulation is about, so we do not silently merge). A segment id seen twice in
    one document is an error unless `on_duplicate_id: keep`.
    """
    docs: list[Document] = []
    seen_docs: dict[str, str] = {}
    seen_segs: dict[str, str] = {}
    for seg in segments:
        if not docs or docs[-1].doc_id != seg.doc_id:
            if seg.doc_id in seen_docs:
                raise error_at(seg.origin, f"document {seg.doc_id!r} appears again after other documents "
                                           f"(it started at {seen_docs[seg.doc_id]}); keep a document's "
                                           "segments together")
            seen_docs[seg.doc_id] = seg.origin
            docs.append(Document(seg.doc_id, []))
            seen_segs = {}
        if seg.seg_id in seen_segs:
            if opts.get("on_duplicate_id", "error") == "error":
                raise error_at(seg.origin, f"duplicate segment id {seg.seg_id!r} in document {seg.doc_id!r} "
                                           f"(first at {seen_segs[seg.seg_id]}); set dataset.on_duplicate_id=keep "
                                           "to allow it")
            log.debug("%s: duplicate segment id %r kept", seg.origin, seg.seg_id)
        else:
            seen_segs[seg.seg_id] = seg.origin
        docs[-1].segments.append(seg)
    return docs


def default_doc_id(opts: dict, path) -> str:
    """The id of a file that holds a single document: dataset.doc_id, else the file name without suffixes."""
    return str(opts.get("doc_id") or Path(str(path)).name.split(".")[0] or Path(str(path)).name)
