"""Segments longer than the model accepts: an error naming file and line, or a logged, counted skip.

Checked apart from reading because it needs the model's tokenizer; the simulation loop calls it once
the model is loaded.
"""

from __future__ import annotations

import logging
from typing import Callable, NamedTuple

from adaptsim.data.options import resolve
from adaptsim.data.textio import error_at
from adaptsim.data.types import Dataset, Document, fingerprint

log = logging.getLogger("adaptsim.data")


class Over(NamedTuple):
    """A side of a segment longer than the model accepts: its tokens, the bound, what sets the bound (a setting's name
    or the model's positions), and whether `dataset.on_too_long=skip` may leave the segment out (a budget a setting
    chooses never removes segments from the test set: it is raised instead)."""
    tokens: int
    bound: int
    what: str
    skippable: bool = True


def check_lengths(documents, cfg, over_length: Callable[[str, str], Over | None],
                  limit: int | None = None) -> tuple[Dataset, dict]:
    """Returns (documents without skipped segments, {"too_long": n}); the returned Dataset's `skipped`
    also includes what `documents` had already skipped. `over_length(side, text)`: the model's verdict on a segment's
    source or reference (adaptsim/models: what bounds it, and whether a skip may leave it out). With `limit`
    (`bench`'s first segments) only the first `limit` segments that fit are kept, cut inside a document, and nothing
    after them is tokenized or counted."""
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
                over = over_length(side, text)
                if over is not None:
                    break
            else:
                kept.append(seg)
                continue
            if on_too_long == "error" or not over.skippable:
                fix = ("set dataset.on_too_long=skip to skip such segments" if over.skippable else
                       "raise it: it bounds the earlier pairs a prompt quotes, and never leaves a segment out")
                raise error_at(origin, f"{side} has {over.tokens} tokens, more than {over.what} "
                                       f"({over.bound}); {fix}")
            n, max_tokens = over.tokens, over.bound
            log.info("%s: skipped segment: %s has %d tokens > %d", origin, side, n, max_tokens)
            skipped["too_long"] += 1
        if kept:
            out.append(Document(doc.doc_id, kept))
            left -= len(kept)
    if skipped["too_long"]:
        log.warning("skipped %d segment(s) longer than the model accepts (dataset.on_too_long=skip)",
                    skipped["too_long"])
    result = Dataset(out, getattr(documents, "skipped", None))
    result.skipped.update(skipped)
    result.read_fingerprint = fingerprint(documents)
    return result, skipped
