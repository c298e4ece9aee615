"""Segments longer than the model accepts: an error naming file and line, or a logged, counted skip.

Checked apart from reading because it needs the model's tokenizer; the simulation loop calls it once
the model is loaded.
"""

from __future__ import annotations

import logging
from typing import Callable

from adaptsim.data.options import resolve
from adaptsim.data.textio import error_at
from adaptsim.data.types import Dataset, Document, fingerprint

log = logging.getLogger("adaptsim.data")


def check_lengths(documents, cfg, count_tokens: Callable[[str], int], max_tokens: int,
                  limit: int | None = None) -> tuple[Dataset, dict]:
    """Returns (documents without skipped segments, {"too_long": n}); the returned Dataset's `skipped`
    also includes what `documents` had already skipped. With `limit` (`bench`'s first segments) only the first
    `limit` segments that fit are kept, cut inside a document, and nothing after them is tokenized or counted."""
    on_too_long = resolve(cfg)["on_too_long"]
    skipped = {"too_long": 0}
    out, left = [], limit if limit is not None else float("inf")
    for doc in documents:
        if left <= 0:
            break
        kept = []
        for seg in doc.segments:
            if len(kept) >= left:
                break
            for side, text, origin in (("source", seg.source, seg.origin),
                                       ("reference", seg.reference, seg.ref_origin or seg.origin)):
                n = count_tokens(text)
                if n > max_tokens:
                    break
            else:
                kept.append(seg)
                continue
            if on_too_long == "error":
                raise error_at(origin, f"{side} has {n} tokens, more than the model accepts ({max_tokens}); "
                                       "set dataset.on_too_long=skip to skip such segments")
            log.info("%s: skipped segment: %s has %d tokens > %d", origin, side, n, max_tokens)
            skipped["too_long"] += 1
        if kept:
            out.append(Document(doc.doc_id, kept))
            left -= len(kept)
    if skipped["too_long"]:
        log.warning("skipped %d segment(s) longer than %d model tokens (dataset.on_too_long=skip)",
                    skipped["too_long"], max_tokens)
    result = Dataset(out, getattr(documents, "skipped", None))
    result.skipped.update(skipped)
    result.read_fingerprint = fingerprint(documents)
    return result, skipped
