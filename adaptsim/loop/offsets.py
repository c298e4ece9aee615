"""Per-document adapted offsets δ = θ − θ0, stored compactly: only what changed (`save_offsets=true`).

The file size is what storing one personalised model costs, the figure sparse methods (lasso, fixed,
bias) exist to keep small.
"""

from __future__ import annotations

import re
from pathlib import Path

import torch

from adaptsim.loop.update import Snapshot
from adaptsim.records import follow_umask

ROWS = ":rows"  # suffix of the row indices of a row-sparse offset in an offsets file
ROW_INDEX_BYTES = 8  # they are int64


def _changed_rows(p: torch.Tensor, changed: torch.Tensor) -> torch.Tensor | None:
    """For a matrix of which only some rows changed: those rows (a mask), if storing them with their int64
    indices is smaller than storing the whole matrix (a LoRA B with most rows changed is stored whole)."""
    if p.dim() != 2:
        return None
    rows = changed.any(dim=1)
    n = int(rows.sum())
    if n * (p.shape[1] * p.element_size() + ROW_INDEX_BYTES) >= p.numel() * p.element_size():
        return None
    return rows


@torch.no_grad()
def offsets(snapshot: Snapshot) -> dict[str, torch.Tensor]:
    """δ of what changed, only: a whole tensor, or, for a matrix of which only some rows changed
    (embeddings under lasso or fixed), those rows under `name` and their indices under `name + ROWS` (where
    that is smaller than the whole matrix)."""
    out = {}
    for name, p in snapshot.params.items():
        changed = p != snapshot.initial[name]
        if not changed.any():
            continue
        delta = p - snapshot.initial[name]
        rows = _changed_rows(p, changed)
        if rows is not None:
            index = rows.nonzero().squeeze(1)
            out[name], out[name + ROWS] = delta[index], index
        else:
            out[name] = delta
    return out


@torch.no_grad()
def offsets_bytes(snapshot: Snapshot) -> int:
    """The raw size of `offsets(snapshot)` (tensor data, no file header), without building the offsets: what
    storing one document's adapted parameters costs (summary.json `cost`)."""
    total = 0
    for name, p in snapshot.params.items():
        changed = p != snapshot.initial[name]
        if not changed.any():
            continue
        rows = _changed_rows(p, changed)
        if rows is not None:
            total += int(rows.sum()) * (p.shape[1] * p.element_size() + ROW_INDEX_BYTES)
        else:
            total += p.numel() * p.element_size()
    return total


def save_offsets(snapshot: Snapshot, directory: Path, doc_id: str) -> int:
    """Write `offsets(snapshot)` to `directory/<doc_id>.safetensors` (doc_id made file-safe; kept in the
    metadata). A file of the same document is replaced (a resumed run writes the documents it replays again, the same
    bytes), one of another document whose id reads the same once made file-safe is not. Returns the file size."""
    from safetensors.torch import save_file

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    stem = re.sub(r"[^\w.-]", "_", doc_id) or "_"
    path, n = directory / f"{stem}.safetensors", 1
    while path.exists() and _document_of(path) not in (doc_id, None):  # two ids that read the same once file-safe
        n += 1
        path = directory / f"{stem}-{n}.safetensors"
    save_file({k: v.contiguous().cpu() for k, v in offsets(snapshot).items()}, str(path), {"doc_id": doc_id})
    follow_umask(path)
    return path.stat().st_size


def _document_of(path: Path) -> str | None:
    """The document an offsets file is of (its metadata); None where it cannot be read (cut short by a kill)."""
    from safetensors import safe_open

    try:
        with safe_open(str(path), "pt") as f:
            return (f.metadata() or {}).get("doc_id")
    except Exception:  # noqa: BLE001 (safetensors raises its own error types for a truncated file)
        return None


@torch.no_grad()
def load_offsets(path: Path, params: dict[str, torch.Tensor]) -> None:
    """Add the offsets saved by `save_offsets` to θ0 `params` in place: θ = θ0 + δ."""
    from safetensors.torch import load_file

    saved = load_file(str(path))
    for name, delta in saved.items():
        if name.endswith(ROWS):
            continue
        p = params[name]
        index = saved.get(name + ROWS)
        if index is None:
            p.add_(delta.to(p.device))
        else:
            p.index_add_(0, index.to(p.device), delta.to(p.device))
