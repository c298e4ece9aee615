"""Paired significance tests and confidence intervals from per-segment sufficient statistics.

Every corpus score adaptsim reports is a function of per-segment statistics summed over the corpus:
recall Rk = 100 · Σnum / Σden, SBLEU = Σ sentence-BLEU+1 / Σ 1, BLEU, TER and chrF = sacrebleu's score
of the summed sacrebleu statistics. A resampled corpus is therefore just a vector of how often each
resampling unit was drawn, and the summed statistics of B resamples of every run and metric are one
matrix product, counts (B × units) @ unit statistics (units × columns). No tokenizer or metric sees text
again, which is what makes 1,000 resamples of six 10,000-segment runs take seconds
(scripts/bench_stats.py).

Units: documents (the default) or segments. Segments of one document are not independent: its terms
recur (that is what R1 counts), the model adapts along the document and is reset at its end. Resampling
segments treats them as independent and understates the variance; resampling whole documents (a
cluster bootstrap) keeps the dependence.

Intervals are 95% percentile intervals of the B bootstrap values (of each run's score, of its difference to
the first run, the baseline, and of that difference in percent of the first run's score): with m the values
that have a score and k = ⌈m·α/2⌉ (α = 0.05), the k-th smallest and the k-th largest. So the interval
excludes 0 exactly when fewer than m·α/2 of the resampled differences lie at or beyond 0 on one side.
sacrebleu's `estimate_ci` (sacrebleu/significance.py of 2.6.0, lines 38-54: index n // 40 of the sorted scores)
takes the same order statistic unless 40 divides m; then (B = 1000) adaptsim's is one further out (the 25th
smallest and largest, sacrebleu's the 26th), so that "the interval excludes 0" and "p < 0.05" below are one
condition, not two that differ at a boundary. sacrebleu reports an interval of each system's score only.

Tests, all paired (all runs resampled with the same units):

- "ci" (the default), the percentile interval as a test: p = 2 · min(#{δ*_b ≤ 0}, #{δ*_b ≥ 0}) / m
  (at most 1), δ*_b the difference to the first run in resample b. p < α exactly when the 95% interval of
  the difference, from the same resamples, excludes 0: a † never sits on an interval that holds 0.
- "bs", paired bootstrap resampling (Koehn 2004) with sacrebleu's statistic, so that it is the test of
  `sacrebleu --paired-bs` (sacrebleu/significance.py, `_paired_bs_test`, lines 252-269, and
  `_compute_p_value`, lines 89-109): δ the observed difference,
  p = (1 + #{b : |δ*_b| − mean(|δ*|) ≥ |δ|}) / (B + 1). The ≥ (sacrebleu: >) gives two identical runs
  p = 1 rather than 1/(B + 1); with continuous scores ties have probability zero, so nothing else changes.
  The statistic is nearly one-tailed: with δ* centred on δ (mean |δ*| ≈ |δ| while δ* keeps δ's sign) it
  counts δ* ≥ 2δ, the mirror image about δ of δ* ≤ 0, so p ≈ #{δ* on the other side of 0} / B, half the "ci"
  p: "bs" at p < 0.05 is the 90% interval excluding 0 (tests/test_stats.py). Where δ* straddles 0 the
  absolute value folds the distribution and the relation is no longer exact.
- "ar", two-sided paired approximate randomisation (Noreen 1989; Riezler & Maxwell 2005): each unit's statistics
  are swapped between the two runs with probability ½; p = (1 + #{|δ'| ≥ |δ|}) / (R + 1).
- "exact", the same randomisation over every one of the 2ⁿ swap patterns (up to EXACT_UNITS units; beyond, "ar"):
  p = #{|δ'| ≥ |δ|} / 2ⁿ, the permutation test itself rather than an estimate of it (Fisher's sign-flip test when a
  unit's score is additive). Its smallest p is 2/2ⁿ (no swap and every swap give ±δ): 6 units are the fewest that
  can reach p < 0.05, and with 5 it answers 0.0625 at best, as a sign test on 5 units does.

The default, "auto", is the randomisation test below SMALL_UNITS units ("exact" up to EXACT_UNITS, "ar" beyond)
and "ci" from there. At few documents the percentile bootstrap is too liberal: on streams drawn from the committed
Business Central records with no difference at all it said p < 0.05 for 14–18 % of 5-document streams, 8–9 % at
10, 6–7 % at 20, 7–9 % at 30, 5–7 % at 50 and 4 % at 100 (its 95% interval covering 0 as often as that leaves),
where the randomisation test stayed at or below 5 % throughout and lost little power where there was an effect
(scripts/coverage.py; docs/reports.md, "Few documents").

No p below what the units can resolve. A Monte-Carlo p counts the observed data as one of the equally
informative outcomes, hence the + 1 above and p ≥ 1/(B + 1) (Davison & Hinkley 1997, §4.2.1). A scheme with
only D distinct outcomes cannot resolve more finely than 1/D, however large B is: B resamples are then the D
outcomes repeated, and "none of B on the other side" says no more than "none of D". So every p is at least
1/min(B + 1, D) (`floor`), with D:

- bootstrap ("ci", "bs"): a resample of n units is a multiset of n of them, C(2n − 1, n) distinct ones. For a
  paired test the runs share the resample, so this, not its square, is the number of distinct outcomes of
  (δ*, its interval). n = 1, 2, 3 give 1, 3, 10 (p ≥ 1, 1/3, 1/10); 4 units give 35, the fewest that can
  reach p < 0.05 (`min_units`).
- approximate randomisation: 2ⁿ swap patterns, but a pattern and its complement give δ' and −δ', so
  2ⁿ⁻¹ distinct |δ'|, among them the observed |δ| (no swap, and every swap). Its Monte-Carlo p already counts
  the two on average (that is why "ar" does not give p = 0.001 from two documents); the floor makes it hold
  for every seed. 6 units are the fewest that can reach p < 0.05.

With fewer units no † is possible, and the reports say so (adaptsim.report.significance). A resample in which
a recall metric has nothing to recall (Σden = 0) has no score; it is left out of that metric's intervals and
p-values (m < B). Everything is seeded (numpy's default_rng) and the settings are printed as a signature next
to the results, like sacrebleu's.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from importlib.metadata import version

import numpy as np

from adaptsim.errors import UserError

UNITS = ("document", "segment")
TESTS = {"auto": "randomisation below SMALL_UNITS units (exact up to EXACT_UNITS), the percentile interval from there",
         "ci": "paired bootstrap, percentile interval", "bs": "paired bootstrap, sacrebleu's statistic",
         "ar": "paired approximate randomisation", "exact": "paired randomisation over every swap pattern"}
EXACT_UNITS = 20  # "exact" counts 2ⁿ swap patterns up to here (about a million at 20, half of them computed: about
# a second for two runs and seven metrics, docs/reports.md)
SMALL_UNITS = 100  # "auto": below this many units the percentile bootstrap said p < 0.05 for 5–18 % of streams
# without a difference (scripts/coverage.py; docs/reports.md, "Few documents"); the randomisation test kept to 5 %
ALPHA = 0.05  # a difference is significant when p < ALPHA; every interval is the 1 − ALPHA percentile interval
LEVEL = 1 - ALPHA
_TAIL = Fraction(str(ALPHA)) / 2  # exactly: interval indices are computed in integers
_CHUNK = 4_000_000  # at most this many resample × unit entries in memory at once (32 MB of float64)

Scorer = Callable[[np.ndarray], np.ndarray]  # summed statistics (…, columns) -> scores (…)


def ratio(scale: float) -> Scorer:
    """scale · Σnum / Σden (recall: 100; SBLEU, a mean of sentence scores: 1); NaN where Σden = 0."""
    def score(t: np.ndarray) -> np.ndarray:
        num, den = t[..., 0], t[..., 1]
        return np.where(den != 0, scale * num / np.where(den != 0, den, 1), np.nan)
    return score


@dataclass(frozen=True)
class Settings:
    resamples: int
    unit: str
    seed: int
    test: str

    def __post_init__(self):
        if self.unit not in UNITS:
            raise UserError(f"resampling unit must be one of {', '.join(UNITS)}, not {self.unit!r}")
        if self.test not in TESTS:
            raise UserError(f"significance test must be one of {', '.join(TESTS)}, not {self.test!r}")
        if not isinstance(self.resamples, int) or self.resamples < 1:
            raise UserError(f"resamples must be a positive integer, not {self.resamples!r}")

    def effective(self, units: int) -> str:
        """The test that decides on `units` units: "auto" is "exact" up to EXACT_UNITS, "ar" below SMALL_UNITS,
        "ci" from there."""
        if self.test != "auto":
            return self.test
        return "exact" if units <= EXACT_UNITS else "ar" if units < SMALL_UNITS else "ci"

    def describe(self) -> str:
        """The test in words, as a report's note names it."""
        if self.test != "auto":
            return TESTS[self.test]
        return (f"{TESTS['exact']} up to {EXACT_UNITS} {self.unit}s, {TESTS['ar']} below {SMALL_UNITS}, "
                f"{TESTS['ci']} from {SMALL_UNITS}")

    def signature(self, units: int) -> str:
        """What someone needs to reproduce the numbers, in sacrebleu's signature style (the test that ran)."""
        return (f"test:{self.effective(units)}|unit:{self.unit}|units:{units}|resamples:{self.resamples}"
                f"|seed:{self.seed}|ci:{LEVEL:.0%}|adaptsim:{version('adaptsim')}")


@dataclass
class Series:
    """One metric's per-segment statistics for every run (stats[r]: segments × columns), and its scorer."""
    name: str
    score: Scorer
    stats: list[np.ndarray]


@dataclass
class Estimate:
    score: float
    ci: tuple[float, float]


@dataclass
class Difference:
    diff: float                      # run − first run, in points
    ci: tuple[float, float]
    relative: float                  # diff in percent of the first run's score (NaN if that is 0)
    relative_ci: tuple[float, float]
    p: float


@dataclass
class Result:
    settings: Settings
    units: int
    scores: list[dict[str, Estimate]]        # per run, per metric
    differences: list[dict[str, Difference]]  # per run, per metric; the first run's is empty
    signature: str = field(init=False)

    def __post_init__(self):
        self.signature = self.settings.signature(self.units)


def units_of(doc_ids: Sequence[str], unit: str) -> tuple[np.ndarray, int]:
    """Each segment's resampling unit (0-based) and the number of units."""
    if unit == "segment":
        return np.arange(len(doc_ids)), len(doc_ids)
    ids: dict[str, int] = {}
    index = np.array([ids.setdefault(str(d), len(ids)) for d in doc_ids], dtype=np.int64)
    return index, len(ids)


def unit_sums(stats: np.ndarray, index: np.ndarray, n_units: int) -> np.ndarray:
    """Per-unit sums of per-segment statistics (units × columns)."""
    stats = np.asarray(stats, dtype=float).reshape(len(index), -1)
    out = np.zeros((n_units, stats.shape[1]))
    np.add.at(out, index, stats)
    return out


def bootstrap_counts(rng: np.random.Generator, n_units: int, resamples: int) -> Iterator[np.ndarray]:
    """Count matrices (rows: resamples; columns: how often each unit was drawn, n_units draws with
    replacement), in chunks that bound memory; the chunking depends only on the sizes, so it is reproducible."""
    rows = max(1, _CHUNK // max(n_units, 1))
    for start in range(0, resamples, rows):
        b = min(rows, resamples - start)
        draws = rng.integers(0, n_units, size=(b, n_units)) + (np.arange(b) * n_units)[:, None]
        yield np.bincount(draws.ravel(), minlength=b * n_units).reshape(b, n_units).astype(float)


def _swap_masks(rng: np.random.Generator, n_units: int, resamples: int) -> Iterator[np.ndarray]:
    rows = max(1, _CHUNK // max(n_units, 1))
    for start in range(0, resamples, rows):
        yield rng.integers(0, 2, size=(min(rows, resamples - start), n_units)).astype(float)


def _every_shift(moved: np.ndarray) -> np.ndarray:
    """What every swap pattern that leaves the last unit in place moves (rows: 2ⁿ⁻¹ patterns; `moved`: a row per
    unit). Half of the 2ⁿ is enough: swapping every unit exchanges the two runs, so a pattern and its complement
    give the same |δ'| and the same p. Each unit doubles the sums of the units before it (2ⁿ⁻¹ rows added once
    each, not a pattern matrix times `moved`)."""
    sums = np.zeros((2 ** max(len(moved) - 1, 0), moved.shape[1]))
    for u, row in enumerate(moved[:-1]):
        sums[2 ** u:2 ** (u + 1)] = sums[:2 ** u] + row
    return sums


def _bounds(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per column of `values` (resamples × columns), the percentile interval of the values that are not NaN: the
    k-th smallest and k-th largest, k = ⌈m·α/2⌉ (module docstring); NaN where a column has none."""
    ordered = np.sort(values, axis=0)  # NaN last
    m = np.sum(~np.isnan(values), axis=0)
    k = np.maximum(-(-m * _TAIL.numerator // _TAIL.denominator), 1)
    low = np.take_along_axis(ordered, (k - 1)[None], axis=0)[0]
    high = np.take_along_axis(ordered, np.maximum(m - k, 0)[None], axis=0)[0]
    return np.where(m > 0, low, np.nan), np.where(m > 0, high, np.nan)


def _interval(values: np.ndarray) -> tuple[float, float]:
    low, high = _bounds(np.asarray(values, dtype=float)[:, None])
    return (float(low[0]), float(high[0]))


def distinct_outcomes(test: str, n_units: int) -> float:
    """D of the module docstring: distinct resamples of n units (C(2n − 1, n)), or distinct |δ'| of approximate
    randomisation (2ⁿ⁻¹); infinite beyond 64 units, where 1/D is far below any 1/(B + 1)."""
    if n_units > 64:
        return math.inf
    return 2 ** (n_units - 1) if test in ("ar", "exact") else math.comb(2 * n_units - 1, n_units)


def floor(test: str, n_units: int, draws: int) -> float:
    """The smallest p that `draws` resamples (or trials) of n units can resolve: 1/min(draws + 1, D)."""
    return 1 / min(draws + 1, distinct_outcomes(test, n_units))


def min_units(test: str) -> int:
    """The fewest units whose distinct outcomes allow p < ALPHA (bootstrap: 4, randomisation: 6)."""
    n = 1
    while 1 / distinct_outcomes(test, n) >= ALPHA:
        n += 1
    return n


def _p_interval(deltas: np.ndarray) -> float:
    deltas = deltas[~np.isnan(deltas)]
    if not len(deltas):
        return np.nan
    return min(1.0, 2 * min(int(np.sum(deltas <= 0)), int(np.sum(deltas >= 0))) / len(deltas))


def _p_bootstrap(deltas: np.ndarray, observed: float) -> float:
    deltas = np.abs(deltas[~np.isnan(deltas)])
    if np.isnan(observed) or not len(deltas):
        return np.nan
    return float((1 + np.sum(deltas - deltas.mean() >= abs(observed))) / (len(deltas) + 1))


def compare(series: list[Series], index: np.ndarray, n_units: int, settings: Settings) -> Result:
    """Scores, intervals, differences to run 0 and p-values of every run and metric.

    Every run and metric is resampled with the same count matrices (paired), all in one matrix product.
    """
    runs = len(series[0].stats)
    test = settings.effective(n_units)
    blocks, where = [], {}
    column = 0
    for s in series:
        for r in range(runs):
            u = unit_sums(s.stats[r], index, n_units)
            where[s.name, r] = slice(column, column + u.shape[1])
            column += u.shape[1]
            blocks.append(u)
    x = np.hstack(blocks)
    total = x.sum(axis=0)
    rng = np.random.default_rng(settings.seed)
    boot = np.vstack([counts @ x for counts in bootstrap_counts(rng, n_units, settings.resamples)])

    scores: list[dict[str, Estimate]] = [{} for _ in range(runs)]
    differences: list[dict[str, Difference]] = [{} for _ in range(runs)]
    for s in series:
        point = [float(s.score(total[where[s.name, r]])) for r in range(runs)]
        sampled = [s.score(boot[:, where[s.name, r]]) for r in range(runs)]
        for r in range(runs):
            scores[r][s.name] = Estimate(point[r], _interval(sampled[r]))
        with np.errstate(divide="ignore", invalid="ignore"):
            for r in range(1, runs):
                delta = sampled[r] - sampled[0]
                observed = point[r] - point[0]
                rel = np.where(sampled[0] != 0, 100 * delta / sampled[0], np.nan)
                p = (_p_interval(delta) if test == "ci" else _p_bootstrap(delta, observed)
                     if test == "bs" else np.nan)  # "ar", "exact": _randomise
                p = max(p, floor(test, n_units, int(np.sum(~np.isnan(delta))))) if not np.isnan(p) else p
                differences[r][s.name] = Difference(
                    observed, _interval(delta), 100 * observed / point[0] if point[0] else np.nan,
                    _interval(rel), p)
    if test in ("ar", "exact"):
        for r in range(1, runs):
            _randomise(series, x, total, where, r, n_units, settings, differences[r], test == "exact")
    return Result(settings, n_units, scores, differences)


def _randomise(series: list[Series], x: np.ndarray, total: np.ndarray, where: dict, r: int, n_units: int,
               settings: Settings, out: dict[str, Difference], exact: bool) -> None:
    """Approximate randomisation of run r against run 0: swapping unit u moves x0[u] − xr[u] from run 0 to r."""
    cols0 = np.concatenate([np.arange(x.shape[1])[where[s.name, 0]] for s in series])
    colsr = np.concatenate([np.arange(x.shape[1])[where[s.name, r]] for s in series])
    moved = x[:, cols0] - x[:, colsr]
    exact = exact and n_units <= EXACT_UNITS
    rng = np.random.default_rng([settings.seed, r])  # its own stream per run: independent of the bootstrap's
    shifts = (_every_shift(moved) if exact
              else np.vstack([mask @ moved for mask in _swap_masks(rng, n_units, settings.resamples)]))
    start = 0
    for s in series:
        width = where[s.name, 0].stop - where[s.name, 0].start
        shift = shifts[:, start:start + width]
        start += width
        with np.errstate(invalid="ignore"):
            stat = np.abs(s.score(total[where[s.name, r]] + shift) - s.score(total[where[s.name, 0]] - shift))
        stat = stat[~np.isnan(stat)]
        observed = out[s.name].diff
        if np.isnan(observed) or not len(stat):
            out[s.name].p = np.nan
        elif exact:  # every pattern counted once, the observed one among them; float sums of the same statistics
            # in another order may miss |δ| by an ulp, hence the tolerance
            out[s.name].p = float(np.sum(stat >= abs(observed) * (1 - 1e-9) - 1e-12) / len(stat))
        else:
            out[s.name].p = max(float((1 + np.sum(stat >= abs(observed))) / (len(stat) + 1)),
                                floor("ar", n_units, len(stat)))


def prefix_bands(series: Series, index: np.ndarray, n_units: int, ends: Sequence[int],
                 settings: Settings) -> list[tuple[np.ndarray, np.ndarray]]:
    """Bootstrap band of a learning curve: for every run r ≥ 1 and every prefix end e in `ends`, the 95%
    interval of score_r(segments < e) − score_0(segments < e), every prefix under the same resampled
    unit counts (each segment weighted by its unit's count: the prefix of the resampled corpus).

    Segments between consecutive ends are summed per unit once; a prefix is then a cumulative sum over
    those chunks, so the cost is that of one corpus resampling, not one per prefix.
    """
    runs = len(series.stats)
    stats = np.hstack([np.asarray(s, dtype=float).reshape(len(index), -1) for s in series.stats])
    width = stats.shape[1] // runs
    chunks = []  # (units present in the chunk, their summed statistics)
    start = 0
    for end in ends:
        units, local = np.unique(index[start:end], return_inverse=True)
        chunks.append((units, unit_sums(stats[start:end], local, len(units))))
        start = end
    rng = np.random.default_rng(settings.seed)
    diffs: list[list[np.ndarray]] = [[] for _ in range(runs)]
    for counts in bootstrap_counts(rng, n_units, settings.resamples):
        prefix = np.cumsum(np.stack([counts[:, u] @ g for u, g in chunks], axis=1), axis=1)  # b × ends × cols
        base = series.score(prefix[..., :width])
        for r in range(1, runs):
            diffs[r].append(series.score(prefix[..., r * width:(r + 1) * width]) - base)
    return [_bounds(np.vstack(diffs[r])) for r in range(1, runs)]  # a prefix with nothing to recall yet: NaN
