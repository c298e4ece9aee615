"""Datasets: read documents of (source, reference) segments from any supported format (docs/design.md §7).

Public API, used by the simulation loop:

    docs = load_documents(cfg.dataset)          # a Dataset: list[Document] plus .skipped
    docs, counts = check_lengths(docs, cfg.dataset, model.over_length)

Skip accounting: `load_documents` returns a `Dataset` — a plain list of `Document`s that also carries
`skipped`, a Counter of skipped segments by reason (`empty`; `too_long` after check_lengths). Put
`dict(docs.skipped)` in summary.json. `check_lengths` also returns its own counts ({"too_long": n})
and its returned Dataset's `skipped` is the running total, so use one or the other, not both.
Each skip is logged at INFO (file:line) on the "adaptsim.data" logger, and a total at WARNING.

Order of work: read (format-specific validation) → empty segments → group_by → split_every →
documents / min_segments / max_documents → max_segments → detokenize. Options: configs/dataset/_common.yaml.
"""

from __future__ import annotations

from adaptsim.data import readers
from adaptsim.data.detok import detokenize
from adaptsim.data.lengths import check_lengths
from adaptsim.data.options import resolve
from adaptsim.data.readers import FORMATS
from adaptsim.data.select import prepare
from adaptsim.data.types import Dataset, Document, Segment
from adaptsim.errors import UserError

__all__ = ["Segment", "Document", "Dataset", "FORMATS", "load_documents", "check_lengths"]


def load_documents(cfg, *, allow_empty: bool = False) -> Dataset:
    """Read, validate, group and select the documents of the `dataset` config node (or a dict); none left is an
    error unless `allow_empty` (tm's external translation memory says so in its own words)."""
    opts = resolve(cfg)
    docs = detokenize(prepare(readers.read(opts), opts), opts)
    if not docs and not allow_empty:
        raise UserError(f"dataset {opts.get('name') or opts.get('path')!r}: no documents left to simulate "
                        "(check the file and dataset.documents / min_segments)")
    return docs
