"""The markdown tables every report prints: one head, written once."""

from __future__ import annotations


def head(first: str, columns: list[str]) -> list[str]:
    """A table's header and alignment rows: the `first` column left-aligned (the row names), the `columns`
    right-aligned (the figures)."""
    return ["| " + " | ".join([first, *columns]) + " |", "|:--" + "|--:" * len(columns) + "|"]
