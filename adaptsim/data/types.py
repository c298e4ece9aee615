"""What every reader returns: documents of ordered (source, reference) segments, and the hash that tells data apart."""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Segment:
    doc_id: str
    seg_id: str
    source: str
    reference: str
    attrs: dict = field(default_factory=dict)  # extra fields, e.g. {"mt": …} for post-editing corpora
    origin: str = ""  # "file:line" (or file + id) the segment was read from, for error messages
    ref_origin: str = ""  # where the reference was read from, when that is another file; "" = origin


@dataclass
class Document:
    doc_id: str
    segments: list[Segment]

    def __len__(self) -> int:
        return len(self.segments)


class Dataset(list):
    """A list of Documents that also remembers how many segments were skipped, and why.

    `skipped` maps a reason ("empty", "too_long") to a segment count; it travels with the documents so
    the simulation loop can put it into summary.json without another channel. So does `read_fingerprint`, that of
    the documents as read, before the model's length check kept these (`check_lengths` sets it; else None).
    """

    def __init__(self, documents=(), skipped: dict | None = None):
        super().__init__(documents)
        self.skipped: Counter = Counter(skipped or {})
        self.read_fingerprint: str | None = None


def fingerprint(documents) -> str:
    """A short hash of the data itself, so reports can refuse to compare runs on different data."""
    h = hashlib.sha256()
    for doc in documents:
        for s in doc.segments:
            h.update(f"{s.doc_id}\t{s.source}\t{s.reference}\n".encode())
    return h.hexdigest()[:16]
