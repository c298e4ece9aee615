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

Bootstrap intervals are 95% percentile intervals of the B bootstrap values (of each run's score; under "ci" and
"bs" also of its difference to the first run, the baseline, and of that difference in percent of the first run's
score): with m the values
that have a score and k = ⌈m·α/2⌉ (α = 0.05), the k-th smallest and the k-th largest. So the interval
excludes 0 exactly when fewer than m·α/2 of the resampled differences lie at or beyond 0 on one side.
sacrebleu's `estimate_ci` (sacrebleu/significance.py of 2.6.0, lines 38-54: index n // 40 of the sorted scores)
takes the same order statistic unless 40 divides m; then (B = 1000) adaptsim's is one further out (the 25th
smallest and largest, sacrebleu's the 26th), so that "the interval excludes 0" and "p < 0.05" below are one
condition, not two that differ at a boundary. sacrebleu reports an interval of each system's score only.

Tests, all paired (all runs resampled with the same units):

- "auto" (the default) is the paired randomisation test over units at every size: "exact" up to EXACT_UNITS
  units, "ar" beyond. One test family whatever the number of documents, so no verdict moves at an arbitrary n
  (a default that switched to the percentile bootstrap at 100 documents decided a verdict at exactly 100). It is
  two-sided (its |δ'| does not know the paper's direction); reports read the direction from the sign, which is two
  one-sided tests at α/2 each, so "the paper's way" and "the other way" are decided by one rule.
- "exact", randomisation over every one of the 2ⁿ swap patterns (up to EXACT_UNITS units; beyond, "ar"): each
  unit's statistics swapped between the two runs or not; p = #{|δ'| ≥ |δ|} / 2ⁿ, the permutation test itself
  (Fisher's sign-flip test when a unit's score is additive). Its smallest p is 2/2ⁿ (no swap and every swap give
  ±δ): 6 units are the fewest that can reach p < 0.05; with 5 it answers 0.0625 at best, as a sign test does.
- "ar", approximate randomisation (Noreen 1989; Riezler & Maxwell 2005): each unit swapped with probability ½,
  p = (1 + #{|δ'| ≥ |δ|}) / (N + 1). Sequential, so that Monte Carlo error never decides a label: FIRST_TRIALS
  trials, then four times as many, up to `Settings.trials`, until the Monte Carlo interval of every p (Clopper–
  Pearson at 1 − MC_ERROR, `Difference.p_range`) lies on one side of every level the caller names (`compare`'s
  `settle`: α for a table's †, every adjusted level for `findings`). A p still straddling a level at the cap is
  reported as such, not decided by the draw.
- "ci", the percentile interval of the paired bootstrap as a test: p = 2 · min(#{δ*_b ≤ 0}, #{δ*_b ≥ 0}) / m
  (at most 1), δ*_b the difference to the first run in resample b; p < α exactly when the bootstrap's 95% interval
  of the difference excludes 0. Too liberal at few documents (docs/reports.md, "Few documents").
- "bs", paired bootstrap resampling (Koehn 2004) with sacrebleu's statistic, the test of `sacrebleu --paired-bs`
  (sacrebleu/significance.py, `_paired_bs_test`, lines 252-269, and `_compute_p_value`, lines 89-109): δ the
  observed difference, p = (1 + #{b : |δ*_b| − mean(|δ*|) ≥ |δ|}) / (B + 1). The ≥ (sacrebleu: >) gives two
  identical runs p = 1 rather than 1/(B + 1). The statistic is nearly one-tailed: with δ* centred on δ it counts
  δ* ≥ 2δ, the mirror image about δ of δ* ≤ 0, so p ≈ #{δ* on the other side of 0} / B, half the "ci" p: "bs" at
  p < 0.05 is the 90% interval excluding 0 (tests/test_stats.py).

Skew-held tails (`Settings.skew`, per metric; off unless set, as `findings` sets findings.SKEW): the randomisation
test assumes each unit's contribution to δ is symmetric about 0 under H0, and where the contributions are skewed the
tail opposite the skew rejects up to four times its rate (docs/reports.md, "By direction"). With a bound γ for a
metric, each tail's p gains the Edgeworth term of a sum of units skewed γ away from it (`held`), a monotone map of
the p: the held test is the randomisation test at a lower level (`randomisation_level`), and its interval that
test's inverted there.

**Under the randomisation tests the interval of a difference is the test inverted**: the Δ that the same test, on
the same swap patterns, does not reject, so the interval excludes 0 exactly when p < α, at every size. H0(Δ): the
units' contributions to δ − Δ are symmetric about 0, Δ spread over the units by their weights w_u (their share of
the metric's denominator, column 1 of its statistics: the reference's words for recall, TER and BLEU, its
characters for chrF, its segments for SBLEU; the two runs' mean). A pattern ε (unit kept +1, swapped −1) gives
δ'_ε − Δ·W_ε, W_ε = Σ ε_u w_u, against the observed δ − Δ. For recall, TER and SBLEU, whose denominators the runs
share, this is exactly the sign-flip test of the shifted contributions; for BLEU and chrF spreading Δ by weight is
a linearisation. A pattern counts for the Δ of one interval (|δ'_ε − ΔW_ε| ≥ |δ − Δ| is a quadratic in Δ with a
negative leading term, as |W_ε| ≤ 1, and holds at Δ = δ), so the interval's ends are order statistics of those
ends: with M patterns the ⌈α·M⌉-th smallest lower end and largest upper end. Where nothing can be rejected (5
documents: p ≥ 0.0625) the interval is unbounded, which is the honest answer. The relative interval is that
interval in percent of the first run's score; its coverage is measured in docs/reports.md ("Few documents").
Under "ci" and "bs" it is the bootstrap's percentile interval. Each run's own score keeps its bootstrap interval
(a score, not a test), and so do learning-curve bands (`prefix_bands`).

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
from functools import lru_cache
from importlib.metadata import version

import numpy as np
from scipy.optimize import brentq
from scipy.stats import beta, norm

from adaptsim.errors import UserError

UNITS = ("document", "segment")
TESTS = {"auto": "paired randomisation (exact up to EXACT_UNITS units, Monte Carlo beyond)",
         "ci": "paired bootstrap, percentile interval", "bs": "paired bootstrap, sacrebleu's statistic",
         "ar": "paired approximate randomisation", "exact": "paired randomisation over every swap pattern"}
EXACT_UNITS = 20  # "exact" counts 2ⁿ swap patterns up to here (half of them computed, about a million at 20: about
# 1.6 s for two runs and seven metrics with the inverted intervals, docs/reports.md)
FIRST_TRIALS = 10_000  # "ar" draws this many swap patterns first, then four times as many while a p is unsettled
MAX_TRIALS = 2_560_000  # … up to this many (FIRST_TRIALS · 4⁴; the default of --trials)
MC_ERROR = 0.001  # a Monte Carlo p's interval (`Difference.p_range`) is its Clopper–Pearson interval at 1 − this
ALPHA = 0.05  # a difference is significant when p < ALPHA; every interval is the 1 − ALPHA interval
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
    resamples: int  # bootstrap resamples: each run's score interval, learning-curve bands, the "ci" / "bs" tests
    unit: str
    seed: int
    test: str
    trials: int = MAX_TRIALS  # the most swap patterns "ar" draws (module docstring)
    skew: tuple[tuple[str, float], ...] = ()  # (metric, bound): that metric's tails also held against per-unit
    # contributions skewed up to the bound (`held`); () or a metric not named: the randomisation test alone

    def __post_init__(self):
        if self.unit not in UNITS:
            raise UserError(f"resampling unit must be one of {', '.join(UNITS)}, not {self.unit!r}")
        if self.test not in TESTS:
            raise UserError(f"significance test must be one of {', '.join(TESTS)}, not {self.test!r}")
        for name in ("resamples", "trials"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise UserError(f"{name} must be a positive integer, not {value!r}")
        if not all(isinstance(b, (int, float)) and 0 <= b < math.inf for _, b in self.skew):
            raise UserError(f"skew bounds must be non-negative numbers, not {self.skew!r}")

    def skew_for(self, metric: str) -> float:
        """The skew bound a metric's tails are held against (0: none)."""
        return dict(self.skew).get(metric, 0.0)

    def effective(self, units: int) -> str:
        """The test that decides on `units` units: "auto" and "exact" are "exact" up to EXACT_UNITS, "ar" beyond."""
        if self.test not in ("auto", "exact"):
            return self.test
        return "exact" if units <= EXACT_UNITS else "ar"

    def held(self) -> list[tuple[str, float]]:
        """The metrics whose tails are skew-held, with their bounds (none under the bootstrap tests)."""
        return [(m, b) for m, b in self.skew if b] if self.test in ("auto", "ar", "exact") else []

    def describe(self) -> str:
        """The test in words, as a report's note names it."""
        held = (", each tail also held against per-" + self.unit + " contributions skewed up to "
                + ", ".join(f"{m} {b:g}" for m, b in self.held()) + " (an Edgeworth term)" if self.held() else "")
        if self.test != "auto":
            return TESTS[self.test] + held
        return (f"{TESTS['exact']} up to {EXACT_UNITS} {self.unit}s, {TESTS['ar']} beyond ({FIRST_TRIALS:,} to "
                f"{self.trials:,} trials, until Monte Carlo error cannot change a verdict){held}")

    def signature(self, units: int) -> str:
        """What someone needs to reproduce the numbers, in sacrebleu's signature style (the test that ran)."""
        test = self.effective(units)
        draws = (f"|trials:{min(FIRST_TRIALS, self.trials)}..{self.trials}" if test == "ar"
                 else f"|patterns:{2 ** units}" if test == "exact" else "")
        skew = "+skew:" + ",".join(f"{m}={b:g}" for m, b in self.held()) if self.held() else ""
        return (f"test:{test}{skew}|unit:{self.unit}|units:{units}{draws}|resamples:{self.resamples}"
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
class Flips:
    """A randomisation test's swap patterns, kept to test other nulls than 0 (`Difference.p_at`): per pattern the
    permuted difference δ' and the weight W of the units it keeps minus those it swaps (module docstring)."""
    observed: float
    permuted: np.ndarray
    weight: np.ndarray
    exact: bool       # every pattern (p = count / M) or random draws (p = (1 + count) / (N + 1))
    floor: float      # the smallest p the units can resolve
    n_units: int = 0  # the units the patterns swap (the skew-held tails' n)
    skew: float = 0.0  # Settings.skew: > 0 holds each tail against units skewed this much (`held`)

    def count(self, delta: float) -> int:
        """Patterns at least as extreme as the observed difference under H0: δ = delta (float sums of the same
        statistics in another order may miss by an ulp, hence the tolerance)."""
        gap = abs(self.observed - delta)
        return int(np.sum(np.abs(self.permuted - delta * self.weight) >= gap * (1 - 1e-9) - 1e-12))

    def p(self, delta: float = 0.0) -> tuple[float, float, float]:
        """(p, and its Monte Carlo interval) of H0: δ = delta; exact: the interval is p itself. With `skew`, each
        of the three held against skewed units (`held`): a monotone map, so the interval stays an interval."""
        return tuple(held(v, self.n_units, self.skew) for v in self._randomised_p(delta))

    def _randomised_p(self, delta: float) -> tuple[float, float, float]:
        n, c = len(self.permuted), self.count(delta)
        if self.exact:
            return (c / n,) * 3
        low = beta.ppf(MC_ERROR / 2, c, n - c + 1) if c else 0.0
        high = beta.ppf(1 - MC_ERROR / 2, c + 1, n - c) if c < n else 1.0
        p = max((1 + c) / (n + 1), self.floor)
        return p, float(min(max(low, self.floor), p)), float(max(high, p))

    def interval(self, alpha: float = ALPHA) -> tuple[float, float]:
        """The Δ the test does not reject at `alpha` (two-sided): with `skew`, the randomisation test's interval at
        the level whose held p is `alpha` (`held` is monotone, so the held test is the randomisation test at it)."""
        return self._randomised_interval(randomisation_level(alpha, self.n_units, self.skew))

    def _randomised_interval(self, alpha: float) -> tuple[float, float]:
        """The randomisation test inverted: from each pattern's interval of Δ (a quadratic's roots), the k-th smallest
        lower end and k-th largest upper end (module docstring)."""
        if self.floor >= alpha:
            return (-math.inf, math.inf)
        a, w, d = self.permuted, self.weight, self.observed
        quad, lin, const = w * w - 1, -2 * (a * w - d), a * a - d * d  # quad·Δ² + lin·Δ + const ≥ 0
        tied = np.abs(a) >= abs(d) * (1 - 1e-9) - 1e-12  # counted at Δ = 0 (`count`'s tolerance): 0 is inside
        const = np.where(tied, np.maximum(const, 0), const)
        low, high = np.full(len(a), -np.inf), np.full(len(a), np.inf)
        curved = quad < -1e-12
        root = np.sqrt(np.maximum(lin[curved] ** 2 - 4 * quad[curved] * const[curved], 0))
        ends = np.sort(np.stack([(-lin[curved] + root) / (2 * quad[curved]),
                                 (-lin[curved] - root) / (2 * quad[curved])]), axis=0)
        low[curved], high[curved] = ends[0], ends[1]
        line = ~curved & (np.abs(lin) > 1e-12)  # |W| = 1: a half-line
        cut = -const[line] / lin[line]
        low[line] = np.where(lin[line] > 0, cut, -np.inf)
        high[line] = np.where(lin[line] > 0, np.inf, cut)
        n = len(a)
        need = alpha * n if self.exact else alpha * (n + 1) - 1  # patterns that must count for p ≥ alpha
        k = max(math.ceil(need - 1e-9), 1)
        return float(np.partition(low, k - 1)[k - 1]), float(-np.partition(-high, k - 1)[k - 1])


@dataclass
class Difference:
    diff: float                      # run − first run, in points
    ci: tuple[float, float]
    relative: float                  # diff in percent of the first run's score (NaN if that is 0)
    relative_ci: tuple[float, float]
    p: float
    p_range: tuple[float, float] | None = None  # the Monte Carlo interval of p (None: not a Monte Carlo p)
    trials: int | None = None        # swap patterns behind p ("exact": all 2ⁿ⁻¹ distinct ones)
    se: float | None = None          # the randomisation standard error of δ (√ mean δ'²): one unit's σ is se·√n
    flips: Flips | None = field(default=None, repr=False)

    def p_at(self, delta: float) -> tuple[float, float, float]:
        """(p, low, high) of H0: δ = delta under the randomisation test (low = high = p when exact)."""
        if self.flips is None:
            raise ValueError("p at another null needs a randomisation test")
        return self.flips.p(delta)

    def straddles(self, level: float) -> bool:
        """Whether Monte Carlo error could put p on either side of `level`."""
        return self.p_range is not None and self.p_range[0] < level <= self.p_range[1]


@dataclass
class Result:
    settings: Settings
    units: int
    scores: list[dict[str, Estimate]]        # per run, per metric
    differences: list[dict[str, Difference]]  # per run, per metric; the first run's is empty
    signature: str = field(init=False)

    def __post_init__(self):
        self.signature = self.settings.signature(self.units)

    def unsettled(self) -> list[tuple[int, str]]:
        """(run, metric) whose Monte Carlo p still straddles α (a † that the draw would decide)."""
        return [(r, m) for r, ds in enumerate(self.differences) for m, d in ds.items() if d.straddles(ALPHA)]


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
    """Random swap patterns (rows; 1: the unit swapped), each unit swapped with probability ½: random bytes
    unpacked to bits (2.5× faster than drawing integers)."""
    rows = max(1, _CHUNK // max(n_units, 1))
    for start in range(0, resamples, rows):
        drawn = rng.integers(0, 256, size=(min(rows, resamples - start), -(-n_units // 8)), dtype=np.uint8)
        yield np.unpackbits(drawn, axis=1, count=n_units).astype(float)


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


def held(p: float, n_units: int, skew: float) -> float:
    """A two-sided randomisation p held against units skewed up to `skew`: each tail q = p/2 plus the first-order
    Edgeworth term of a studentised sum of n units of skew γ, γ/(6√n)·(2z² + 1)·φ(z), z = Φ⁻¹(1 − q) (Hall 1992,
    §2.6): how much more often than q that tail rejects when the units are skewed γ away from it, the sign-flip
    distribution being symmetric. Both tails at the bound, as a sample cannot show the rare units that make its own
    skew (docs/reports.md, "By direction"). Increasing in p for every γ/(6√n) < 0.7 (n ≥ 1 at the bounds used)."""
    if not skew or not 0 < p < 1 or n_units < 1:
        return p
    q = p / 2
    z = float(norm.isf(q))
    return min(1.0, 2 * (q + skew / (6 * math.sqrt(n_units)) * (2 * z * z + 1) * float(norm.pdf(z))))


@lru_cache(maxsize=4096)  # power's searches ask for the same levels over and over
def randomisation_level(alpha: float, n_units: int, skew: float) -> float:
    """The level at which the randomisation test rejects exactly where its held p (`held`) is below `alpha`."""
    if not skew or held(alpha, n_units, skew) == alpha:
        return alpha
    return float(brentq(lambda a: held(a, n_units, skew) - alpha, 1e-300, alpha, xtol=1e-300, rtol=1e-12))


def distinct_outcomes(test: str, n_units: int) -> float:
    """D of the module docstring: distinct resamples of n units (C(2n − 1, n)), or distinct |δ'| of approximate
    randomisation (2ⁿ⁻¹); infinite beyond 64 units, where 1/D is far below any 1/(B + 1)."""
    if n_units > 64:
        return math.inf
    return 2 ** (n_units - 1) if test in ("ar", "exact") else math.comb(2 * n_units - 1, n_units)


def floor(test: str, n_units: int, draws: int) -> float:
    """The smallest p that `draws` resamples (or trials) of n units can resolve: 1/min(draws + 1, D)."""
    return 1 / min(draws + 1, distinct_outcomes(test, n_units))


def smallest_p(settings: Settings, n_units: int, metric: str | None = None) -> float:
    """The smallest p the test of `settings` can give on n units, at its most draws (`metric`: held against its
    skew bound)."""
    test = settings.effective(n_units)
    if test == "exact":
        least = 1 / distinct_outcomes(test, n_units)
    else:
        least = floor(test, n_units, settings.trials if test == "ar" else settings.resamples)
    return held(least, n_units, settings.skew_for(metric)) if metric and settings.held() else least


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


def compare(series: list[Series], index: np.ndarray, n_units: int, settings: Settings,
            settle: Callable[[int, str, Difference], bool] | None = None) -> Result:
    """Scores, intervals, differences to run 0 and p-values of every run and metric.

    Every run and metric is resampled with the same count matrices (paired), all in one matrix product. Under
    "ar", `settle(run, metric, difference)` says whether a difference's Monte Carlo p is still undecided for the
    caller (default: it straddles α); such differences are tested again with four times the trials, up to
    `settings.trials`.
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
    randomised = test in ("ar", "exact")  # the difference's p and interval: the randomisation test's, below
    for s in series:
        point = [float(s.score(total[where[s.name, r]])) for r in range(runs)]
        sampled = [s.score(boot[:, where[s.name, r]]) for r in range(runs)]
        for r in range(runs):
            scores[r][s.name] = Estimate(point[r], _interval(sampled[r]))
        with np.errstate(divide="ignore", invalid="ignore"):
            for r in range(1, runs):
                observed = point[r] - point[0]
                relative = 100 * observed / point[0] if point[0] else np.nan
                if randomised:
                    differences[r][s.name] = Difference(observed, (np.nan, np.nan), relative, (np.nan, np.nan), np.nan)
                    continue
                delta = sampled[r] - sampled[0]
                rel = np.where(sampled[0] != 0, 100 * delta / sampled[0], np.nan)
                p = _p_interval(delta) if test == "ci" else _p_bootstrap(delta, observed)
                p = max(p, floor(test, n_units, int(np.sum(~np.isnan(delta))))) if not np.isnan(p) else p
                differences[r][s.name] = Difference(observed, _interval(delta), relative, _interval(rel), p)
    if randomised:
        settle = settle or (lambda r, m, d: d.straddles(ALPHA))
        for r in range(1, runs):
            trials, pending = min(FIRST_TRIALS, settings.trials), series
            while pending:
                _randomise(pending, x, total, where, r, n_units, settings, differences[r], test == "exact", trials)
                pending = [s for s in pending if trials < settings.trials and settle(r, s.name, differences[r][s.name])]
                trials = min(4 * trials, settings.trials)
            for s in series:  # the interval from the patterns that settled the p: once, after the last round
                d, first = differences[r][s.name], scores[0][s.name].score
                if d.flips is not None:
                    d.ci = d.flips.interval()
                    d.relative_ci = tuple(sorted(100 * v / first for v in d.ci)) if first else (np.nan, np.nan)
    return Result(settings, n_units, scores, differences)


def _randomise(series: list[Series], x: np.ndarray, total: np.ndarray, where: dict, r: int, n_units: int,
               settings: Settings, out: dict[str, Difference], exact: bool, trials: int) -> None:
    """Randomisation of run r against run 0: swapping unit u moves x0[u] − xr[u] from run 0 to r, and its weight
    (per metric, one of the last columns of `moved`) from W's kept side to its swapped side. Patterns are scored a
    chunk at a time, so memory holds one chunk's shifts and each metric's permuted differences."""
    cols0 = np.concatenate([np.arange(x.shape[1])[where[s.name, 0]] for s in series])
    colsr = np.concatenate([np.arange(x.shape[1])[where[s.name, r]] for s in series])
    weights = []
    for s in series:
        w = (x[:, where[s.name, 0].start + 1] + x[:, where[s.name, r].start + 1]) / 2 \
            if where[s.name, 0].stop - where[s.name, 0].start > 1 else np.ones(n_units)
        weights.append(w / w.sum() if w.sum() > 0 else np.full(n_units, 1 / n_units))
    moved = np.hstack([x[:, cols0] - x[:, colsr], np.column_stack(weights)])
    rng = np.random.default_rng([settings.seed, r, trials])  # its own stream per run and round
    chunks = [_every_shift(moved)] if exact else (mask @ moved for mask in _swap_masks(rng, n_units, trials))
    permuted: list[list[np.ndarray]] = [[] for _ in series]
    weight: list[list[np.ndarray]] = [[] for _ in series]
    for shifts in chunks:
        start = 0
        for i, s in enumerate(series):
            width = where[s.name, 0].stop - where[s.name, 0].start
            shift = shifts[:, start:start + width]
            start += width
            with np.errstate(invalid="ignore", divide="ignore"):
                permuted[i].append(s.score(total[where[s.name, r]] + shift) - s.score(total[where[s.name, 0]] - shift))
            weight[i].append(1 - 2 * shifts[:, moved.shape[1] - len(series) + i])
    for i, s in enumerate(series):
        a, w = np.concatenate(permuted[i]), np.concatenate(weight[i])
        kept = ~np.isnan(a)
        d = out[s.name]
        if np.isnan(d.diff) or not kept.any():
            d.p, d.flips = np.nan, None
            continue
        flips = Flips(d.diff, a[kept], w[kept], exact,
                      1 / int(kept.sum()) if exact else floor("ar", n_units, int(kept.sum())), n_units,
                      settings.skew_for(s.name))
        p, low, high = flips.p(0.0)
        d.p, d.flips, d.trials = p, flips, int(kept.sum())
        d.p_range = None if exact else (low, high)
        d.se = float(np.sqrt(np.mean(flips.permuted ** 2)))


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
