"""Parameter budgets, shared by `lasso` (which groups are served) and `select-fixed` (which blocks fit)."""

from __future__ import annotations

from collections.abc import Iterable


def resolve_budget(count, fraction, total: int) -> int:
    """min(count, fraction · total): the paper's absolute budget, capped at a fraction of a small model. (Both are
    checked before: lasso's by its settings, select-fixed's by adaptsim/loop/settings.py SETTINGS.)"""
    return int(min(float(count), float(fraction) * total))


def fill_budget(order: Iterable, size, budget: int) -> list:
    """The groups of `order` (best first) that fit in what is left of the budget; one that does not fit is
    skipped and smaller ones after it may still be kept. `size[g]` is a group's parameter count."""
    kept, left = [], budget
    for g in order:
        if size[g] <= left:
            kept.append(g)
            left -= size[g]
    return kept
