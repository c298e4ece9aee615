"""R0, R1, …, Rk and their unions (paper §2.2, docs/design.md §4) on sets of word types.

A reference word's k-th occurrence is the k-th reference (in corpus order, within the counting
scope) whose word set holds it: set level, no clipping. The levels of one segment are disjoint,
so a union's numerator and denominator are sums of its levels' counts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

Levels = tuple[frozenset[str], ...]  # levels[k]: the segment's reference words seen for the (k+1)-th time


def metric_names(k_max: int) -> list[str]:
    """R0 … Rk_max, then the unions R0+1, R0+1+2, … up to k_max."""
    singles = [f"R{k}" for k in range(k_max + 1)]
    unions = ["R" + "+".join(str(i) for i in range(k + 1)) for k in range(1, k_max + 1)]
    return singles + unions


def occurrence_levels(word_sets: Sequence[frozenset[str]], groups: Sequence[object], k_max: int) -> list[Levels]:
    """Split every reference's words by occurrence index; counting restarts whenever the group changes."""
    levels: list[Levels] = []
    seen: Counter[str] = Counter()
    previous = object()
    for words, group in zip(word_sets, groups, strict=True):
        if group != previous:
            seen, previous = Counter(), group
        split: list[set[str]] = [set() for _ in range(k_max + 1)]
        for word in words:
            k = seen[word]
            seen[word] = k + 1
            if k <= k_max:
                split[k].add(word)
        levels.append(tuple(frozenset(s) for s in split))
    return levels


def restrict(levels: Levels, keep: Callable[[str], bool]) -> Levels:
    """The same levels holding only the words `keep` accepts (e.g. novel words)."""
    return tuple(frozenset(w for w in level if keep(w)) for level in levels)


def counts(hypothesis: frozenset[str], levels: Levels) -> dict[str, tuple[int, int]]:
    """(numerator, denominator) of every metric of `metric_names(len(levels) - 1)` for one segment."""
    nums = [len(hypothesis & level) for level in levels]
    dens = [len(level) for level in levels]
    out = {f"R{k}": (nums[k], dens[k]) for k in range(len(levels))}
    for k in range(1, len(levels)):
        out["R" + "+".join(str(i) for i in range(k + 1))] = (sum(nums[: k + 1]), sum(dens[: k + 1]))
    return out


def percent(num: float, den: float) -> float | None:
    """A recall in percent; None when there was nothing to recall (no score, neither 0 nor 100)."""
    return 100.0 * num / den if den else None
