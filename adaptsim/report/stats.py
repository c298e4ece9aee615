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
cluster bootstrap) keeps the dependence. With few documents the document bootstrap has few distinct
resamples and finds little significant: that is the honest answer, not a defect.

Tests, both paired (all runs resampled with the same units):

- "bs", paired bootstrap resampling (Koehn 2004) with sacrebleu's statistic, so that it is the test of
  `sacrebleu --paired-bs`: δ the observed difference, δ*_b the difference in resample b,
  p = (1 + #{b : |δ*_b| − mean(|δ*|) ≥ |δ|}) / (B + 1). The ≥ (sacrebleu: >) gives two identical runs
  p = 1 rather than 1/(B + 1); with continuous scores ties have probability zero, so nothing else changes.
  The statistic is nearly one-tailed: with δ* centred on δ it counts δ* ≥ 2δ, so p ≈ P(δ* on the other side
  of 0), about half a two-sided p (docs/reports.md, "Intervals"; tests/test_stats.py).
- "ar", two-sided paired approximate randomisation (Noreen 1989; Riezler & Maxwell 2005): each unit's statistics
  are swapped between the two runs with probability ½; p = (1 + #{|δ'| ≥ |δ|}) / (R + 1).

Intervals are 95% percentile intervals (2.5th and 97.5th percentile) of the bootstrap distribution: of
each run's score, of its difference to the first run (the baseline), and of that difference in percent of
the first run's score. A resample in which a recall metric has nothing to recall (Σden = 0) has no score;
it is left out of that metric's intervals and p-values. Everything is seeded (numpy's default_rng) and
the settings are printed as a signature next to the results, like sacrebleu's.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from importlib.metadata import version

import numpy as np

from adaptsim.errors import UserError

UNITS = ("document", "segment")
TESTS = {"bs": "paired bootstrap", "ar": "paired approximate randomisation"}
LEVEL = 0.95  # confidence level of every interval
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

    def signature(self, units: int) -> str:
        """What someone needs to reproduce the numbers, in sacrebleu's signature style."""
        return (f"test:{self.test}|unit:{self.unit}|units:{units}|resamples:{self.resamples}|seed:{self.seed}"
                f"|ci:{LEVEL:.0%}|adaptsim:{version('adaptsim')}")


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


def _interval(values: np.ndarray) -> tuple[float, float]:
    values = values[~np.isnan(values)]
    if not len(values):
        return (np.nan, np.nan)
    low, high = np.quantile(values, [(1 - LEVEL) / 2, (1 + LEVEL) / 2])
    return (float(low), float(high))


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
                p = _p_bootstrap(delta, observed) if settings.test == "bs" else np.nan
                differences[r][s.name] = Difference(
                    observed, _interval(delta), 100 * observed / point[0] if point[0] else np.nan,
                    _interval(rel), p)
    if settings.test == "ar":
        for r in range(1, runs):
            _randomise(series, x, total, where, r, n_units, settings, differences[r])
    return Result(settings, n_units, scores, differences)


def _randomise(series: list[Series], x: np.ndarray, total: np.ndarray, where: dict, r: int, n_units: int,
               settings: Settings, out: dict[str, Difference]) -> None:
    """Approximate randomisation of run r against run 0: swapping unit u moves x0[u] − xr[u] from run 0 to r."""
    cols0 = np.concatenate([np.arange(x.shape[1])[where[s.name, 0]] for s in series])
    colsr = np.concatenate([np.arange(x.shape[1])[where[s.name, r]] for s in series])
    moved = x[:, cols0] - x[:, colsr]
    rng = np.random.default_rng([settings.seed, r])  # its own stream per run: independent of the bootstrap's
    shifts = np.vstack([mask @ moved for mask in _swap_masks(rng, n_units, settings.resamples)])
    start = 0
    for s in series:
        width = where[s.name, 0].stop - where[s.name, 0].start
        shift = shifts[:, start:start + width]
        start += width
        with np.errstate(invalid="ignore"):
            stat = np.abs(s.score(total[where[s.name, r]] + shift) - s.score(total[where[s.name, 0]] - shift))
        stat = stat[~np.isnan(stat)]
        observed = out[s.name].diff
        out[s.name].p = (np.nan if np.isnan(observed) or not len(stat)
                         else float((1 + np.sum(stat >= abs(observed))) / (len(stat) + 1)))


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
    bands = []
    for r in range(1, runs):
        with warnings.catch_warnings():  # a prefix with nothing to recall yet has no band: NaN, no warning
            warnings.simplefilter("ignore", RuntimeWarning)
            low, high = np.nanquantile(np.vstack(diffs[r]), [(1 - LEVEL) / 2, (1 + LEVEL) / 2], axis=0)
        bands.append((low, high))
    return bands
