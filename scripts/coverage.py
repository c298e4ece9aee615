"""How the document-level tests behave on few documents: how often the paired randomisation test (the reports'
default) and the paired percentile bootstrap ("ci") say p < 0.05, and how often each one's 95% interval covers the
true difference, under two nulls and a planted difference, on streams of 5 to 100 documents drawn from a
committed sweep's per-document statistics (docs/reports.md, "Few documents"; docs/results/coverage.md).

    python scripts/coverage.py [--sweep DIR] [--compare METRIC BASELINE METHOD]... [--sizes N...]
                               [--replications R] [--planted-replications R] [--exact-up-to N] [--trials T]
                               [--resamples B] [--seed S] [--out FILE]

A stream of n documents is n documents drawn with replacement from the sweep's (its per-document sums of the
metric's statistics, numerator and denominator, for the baseline and the method). Three scenarios:

- *swap*: each drawn document's two runs swapped with probability ½. The population (every document once each
  way) has a pooled difference of exactly 0; it is the randomisation test's own null, so that test holds its level
  here by construction.
- *shifted*: the method's numerator of every document lowered by δ·den/100 (den: the document's denominator,
  which the two runs share for recall; δ: the sweep's pooled difference, method − baseline, over all its
  documents), then n documents drawn. The shifted population's pooled score is the baseline's, so the true
  difference is 0 (up to rounding, ~1e-14), while the per-document differences keep their shape: lopsided, not
  symmetric about 0, which the randomisation test assumes and this null does not.
- *planted*: the documents as they are; the true difference is δ.

Per stream, `adaptsim.report.stats.compare` computes the percentile bootstrap ("ci": `--resamples` resamples; its
p < 0.05 exactly when its interval excludes 0) and the randomisation test over documents with its inverted
interval: "exact" (every swap pattern) up to `--exact-up-to` documents (default: stats.EXACT_UNITS, 20, as the
reports), beyond that "ar" with a fixed `--trials` random patterns (default 10,000: the reports draw these first,
then four times as many while a p's Monte Carlo interval straddles 0.05). A fixed draw only adds binomial noise
around the full test's decision, and that barely moves a rejection rate: under a uniform p, P((1 + c)/(T + 1) < 0.05)
with c ~ Bin(T, p) averages ⌈0.05·(T + 1) − 1⌉/(T + 1), 500/10,001 = 5.0 % at T = 10,000. The table gives each
rate r with its Monte Carlo standard error √(r(1 − r)/streams) (0 where r is 0 or 1: then no stream of the row
went the other way). Every row has its own seed (from --seed, the comparison, the scenario and n), so a row is the
same whatever else is run beside it; `--out` writes the printed text (the command line, a legend, a table per
comparison) to a file, as docs/results/coverage.md. The CPU time goes to stderr.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import zlib
from pathlib import Path

import numpy as np

from adaptsim import PROJECT_ROOT
from adaptsim.report.findings import SKEW
from adaptsim.report.runs import finished_runs
from adaptsim.report.significance import Steps, scorer
from adaptsim.report.stats import (ALPHA, EXACT_UNITS, FIRST_TRIALS, Series, Settings, compare, held, unit_sums,
                                   units_of)

SWEEP = PROJECT_ROOT / "docs" / "results" / "base-ende" / "runs" / "business_central"
SCENARIOS = ("swap", "shifted", "planted")
COMPARISONS = [["R0", "none", "bias"], ["R1", "none", "full"]]
# --by-direction: the two-sided levels a verdict's p meets (adaptsim/report/findings.py): α, α over the step-down's
# first factor (m = 8 findings), and over that times the largest Bonferroni factor (f = 5); each tail's nominal
# rate is half of it
STEP, FACTOR = 8, 5
LEVELS = {"α": ALPHA, "α/m": ALPHA / STEP, "α/(m·f)": ALPHA / (STEP * FACTOR)}


def legend(resamples: int) -> str:
    return f"""Streams of n documents drawn with replacement from the sweep's. *swap*: each drawn document's two
runs swapped with probability ½ (the randomisation test's own null; true Δ = 0). *shifted*: the method's numerator
of every document lowered by δ·den/100, δ the sweep's pooled difference, so that the population's pooled difference
is 0 while the per-document differences keep their lopsided shape (true Δ = 0). *planted*: the documents as they
are (true Δ = δ). p < 0.05: how often the test rejects Δ = 0; covers Δ: how often its 95% interval holds the true Δ
(the randomisation test's interval is the test inverted, the bootstrap's its percentile interval over {resamples:,}
resamples). Randomisation: exact over every swap pattern, or Monte Carlo with a fixed number of random patterns."""


DIRECTION_LEGEND = f"""Each tail apart, at the levels a verdict is decided at: a finding's part is significant
when its two-sided p is below α = {ALPHA}, α/m (m = {STEP}: the step-down's first factor over eight findings) or
α/(m·f) (f = {FACTOR}: the largest Bonferroni factor, finding 8's methods), and its direction is read from the sign,
so each tail's nominal rate is half the level. Streams of n documents drawn with replacement from the sweep's,
under the two nulls (true Δ = 0) of the table in coverage.md: *swap* (the randomisation test's own null) and
*shifted* (every document's numerator moved so that the pooled difference is 0, its lopsided shape kept). The
randomisation test exact over every swap pattern, or Monte Carlo with a fixed number of random patterns per
stream. A tail beyond its nominal rate by more than two standard errors rejects too often in that direction."""


def per_document(sweep: Path, metric: str, methods: list[str]) -> list[np.ndarray]:
    """Each method's statistics of `metric` summed per document (documents × columns), in one document order."""
    runs = {r.summary.get("method"): r for r in finished_runs([str(sweep)], "coverage").runs}
    out = []
    for method in methods:
        steps = Steps.of(runs[method])
        index, n = units_of(steps.doc_ids, "document")
        out.append(unit_sums(steps.statistics(metric), index, n))
    return out


def pooled(metric: str, base: np.ndarray, other: np.ndarray) -> float:
    """The pooled difference, method − baseline, of documents' statistics."""
    score = scorer(metric)
    return float(score(other.sum(0)) - score(base.sum(0)))


def shifted(metric: str, base: np.ndarray, other: np.ndarray) -> np.ndarray:
    """The method's statistics with each document's numerator lowered by δ·den/100 (δ the pooled difference): the
    population of the *shifted* null, whose pooled difference to `base` is 0. Only for recall and TER
    (100·Σnum/Σden), whose denominator (the reference's words) the two runs share."""
    if base.shape[1] != 2 or not np.array_equal(base[:, 1], other[:, 1]) or not (metric.startswith("R") or
                                                                                  metric == "TER"):
        raise SystemExit(f"coverage.py: the shifted null needs recall or TER, whose denominator the two runs share, "
                         f"not {metric}")
    out = other.copy()
    out[:, 0] -= pooled(metric, base, other) * base[:, 1] / 100
    return out


def population(metric: str, base: np.ndarray, other: np.ndarray, scenario: str) -> tuple[np.ndarray, float]:
    """The method's statistics a scenario draws from, and the true difference of its population."""
    if scenario == "shifted":
        moved = shifted(metric, base, other)
        return moved, pooled(metric, base, moved)
    return other, 0.0 if scenario == "swap" else pooled(metric, base, other)


def draw(rng: np.random.Generator, base: np.ndarray, other: np.ndarray, scenario: str,
         n: int) -> tuple[np.ndarray, np.ndarray]:
    """One stream: n documents with replacement; under *swap* each one's two runs exchanged with probability ½."""
    drawn = rng.integers(0, len(base), n)
    a, b = base[drawn], other[drawn]
    if scenario == "swap":
        flip = rng.random(n) < 0.5
        a, b = np.where(flip[:, None], b, a), np.where(flip[:, None], a, b)
    return a, b


def row_seed(seed: int, metric: str, methods: list[str], scenario: str, n: int) -> list[int]:
    return [seed, zlib.crc32(" ".join([metric, *methods]).encode()), SCENARIOS.index(scenario), n]


def simulate(base: np.ndarray, other: np.ndarray, metric: str, methods: list[str], sizes: list[int],
             scenarios: dict[str, int], resamples: int, seed: int, exact_up_to: int = EXACT_UNITS,
             trials: int = FIRST_TRIALS) -> list[dict]:
    """A row per size and scenario (`scenarios`: scenario → streams): rejection rates and coverages."""
    score = scorer(metric)
    rows = []
    for n in sizes:
        test = "exact" if n <= min(exact_up_to, EXACT_UNITS) else "ar"
        for scenario, streams in scenarios.items():
            method, true = population(metric, base, other, scenario)
            rng = np.random.default_rng(row_seed(seed, metric, methods, scenario, n))
            counts = dict.fromkeys(("rand_p", "boot_p", "rand_cover", "boot_cover"), 0)
            for _ in range(streams):
                a, b = draw(rng, base, method, scenario, n)
                series = [Series(metric, score, [a, b])]
                stream_seed = int(rng.integers(2 ** 32))
                boot = compare(series, np.arange(n), n, Settings(resamples, "document", stream_seed, "ci"))
                rand = compare(series, np.arange(n), n, Settings(1, "document", stream_seed, test, trials))
                for name, d in (("boot", boot.differences[1][metric]), ("rand", rand.differences[1][metric])):
                    counts[f"{name}_p"] += bool(d.p < ALPHA)
                    counts[f"{name}_cover"] += bool(d.ci[0] <= true <= d.ci[1])
            rows.append({"documents": n, "scenario": scenario, "true": true, "streams": streams,
                         "test": test if test == "exact" else f"ar {trials:,}",
                         **{k: v / streams for k, v in counts.items()}})
    return rows


def sign_flip_p(contributions: np.ndarray, patterns: np.ndarray) -> np.ndarray:
    """The two-sided p of the paired randomisation test from random patterns, for each stream (a row of
    `contributions`: each document's c_u = num_method − num_baseline, whose sum the difference of a recall with shared
    denominators is, up to a positive factor): (1 + #{ε : |Σ ε_u c_u| ≥ |Σ c_u|}) / (M + 1) over the M ±1 rows of
    `patterns`, with stats.Flips.count's tolerance: stats.compare's "ar" without its intervals."""
    observed = np.abs(contributions.sum(axis=1))
    permuted = np.abs(contributions @ patterns.T)
    count = np.sum(permuted >= observed[:, None] * (1 - 1e-9) - 1e-12, axis=1)
    return (1 + count) / (len(patterns) + 1)


def _sums(c: np.ndarray) -> np.ndarray:
    """Σ ε_u c_u for every sign pattern ε of the columns of c (rows: streams; 2^columns sums each)."""
    sums = np.zeros((len(c), 1))
    for u in range(c.shape[1]):
        sums = np.concatenate([sums + c[:, u:u + 1], sums - c[:, u:u + 1]], axis=1)
    return sums


def exact_p(contributions: np.ndarray) -> np.ndarray:
    """The exact two-sided p, #{ε : |Σ ε_u c_u| ≥ |Σ c_u|} / 2ⁿ over every pattern, for each stream, by meeting in
    the middle: the sums of one half's patterns against the sorted sums of the other's, so that 30 documents cost
    2 · 2¹⁵ sums and a binary search each, not 2³⁰. stats.compare's "exact" (tests/test_coverage.py)."""
    n = contributions.shape[1]
    left, right = _sums(contributions[:, : n // 2]), np.sort(_sums(contributions[:, n // 2:]), axis=1)
    gap = np.abs(contributions.sum(axis=1)) * (1 - 1e-9) - 1e-12  # Flips.count's tolerance
    out = np.empty(len(contributions))
    for i in range(len(contributions)):  # |a + b| ≥ gap: b ≥ gap − a or b ≤ −gap − a (disjoint for gap > 0)
        if gap[i] <= 0:
            out[i] = 1.0
            continue
        above = right.shape[1] - np.searchsorted(right[i], gap[i] - left[i], side="left")
        below = np.searchsorted(right[i], -gap[i] - left[i], side="right")
        out[i] = (above.sum() + below.sum()) / 2 ** n
    return out


def by_direction(base: np.ndarray, other: np.ndarray, metric: str, methods: list[str], sizes: list[int],
                 scenarios: dict[str, int], seed: int, exact_up_to: int = EXACT_UNITS,
                 trials: int = FIRST_TRIALS, skew: float = 0.0) -> list[dict]:
    """A row per size and scenario: how often each tail (the method above / below the baseline) rejects at each of
    LEVELS, the randomisation test's direction read from the sign as the verdicts read it. Streams as `simulate`'s,
    drawn in chunks; the exact test up to `exact_up_to` documents (here beyond the reports' 20 if asked: the exact p
    is what their sequential Monte Carlo approximates), `trials` random patterns per chunk of streams beyond."""
    shifted(metric, base, other)  # refuses what has no shifted null
    rows = []
    for n in sizes:
        exact = n <= exact_up_to
        for scenario, streams in scenarios.items():
            method, true = population(metric, base, other, scenario)
            rng = np.random.default_rng(row_seed(seed, metric, methods, scenario, n) + [1])
            up, down = dict.fromkeys(LEVELS, 0), dict.fromkeys(LEVELS, 0)
            chunk = max(1, (1 << 22) // (2 ** ((n + 1) // 2) if exact else trials))
            for start in range(0, streams, chunk):
                drawn = [draw(rng, base, method, scenario, n) for _ in range(min(chunk, streams - start))]
                c = np.stack([b[:, 0] - a[:, 0] for a, b in drawn])
                p = exact_p(c) if exact else sign_flip_p(c, 1.0 - 2 * rng.integers(0, 2, (trials, n)))
                total = c.sum(axis=1)
                if skew:  # the skew-held test as the verdicts use it
                    p = np.vectorize(held)(p, n, skew)
                for name, level in LEVELS.items():
                    up[name] += int(np.sum((p < level) & (total > 0)))
                    down[name] += int(np.sum((p < level) & (total < 0)))
            rows.append({"documents": n, "scenario": scenario, "true": true, "streams": streams,
                         "test": "exact" if exact else f"ar {trials:,}",
                         **{f"up {k}": v / streams for k, v in up.items()},
                         **{f"down {k}": v / streams for k, v in down.items()}})
    return rows


def skewness(base: np.ndarray, other: np.ndarray, metric: str) -> float:
    """The skew of the documents' contributions under the shifted null (what the randomisation test assumes is 0)."""
    c = shifted(metric, base, other)[:, 0] - base[:, 0]
    return float(np.mean((c - c.mean()) ** 3) / np.std(c) ** 3)


def direction_markdown(rows: list[dict], metric: str, methods: list[str], skew: float, bound: float | None) -> str:
    heads = [f"{tail} at {k} ({100 * v / 2:.4g} %)" for k, v in LEVELS.items() for tail in ("up", "down")]
    test = "the randomisation test alone" if bound is None else f"each tail held against skew up to {bound:g}"
    lines = [f"_{methods[1]} − {methods[0]}, {metric} (the shifted null's documents skewed {skew:+.2f}; {test}); how "
             "often each tail rejects, in % ± its Monte Carlo standard error, beside its nominal rate (half the "
             "level):_",
             "", "| documents | scenario | streams | randomisation test | " + " | ".join(heads) + " |",
             "|--:|:--|--:|:--|" + "--:|" * len(heads)]
    lines += [f"| {r['documents']} | {r['scenario']} | {r['streams']:,} | {r['test']} | "
              + " | ".join(rate(r[f"{tail} {k}"], r["streams"], 3) for k in LEVELS for tail in ("up", "down")) + " |"
              for r in rows]
    return "\n".join(lines)


def rate(r: float, streams: int, digits: int = 1) -> str:
    """A rate in percent with its Monte Carlo standard error."""
    return f"{100 * r:.{digits}f} ± {100 * math.sqrt(r * (1 - r) / streams):.{digits}f}"


def markdown(rows: list[dict], metric: str, methods: list[str]) -> str:
    lines = [f"_{methods[1]} − {methods[0]}, {metric}; rates in % ± their Monte Carlo standard error "
             "√(r(1 − r)/streams):_", "",
             "| documents | scenario | true Δ | streams | randomisation test | p < 0.05: randomisation "
             "| p < 0.05: bootstrap | randomisation interval covers Δ | bootstrap interval covers Δ |",
             "|--:|:--|--:|--:|:--|--:|--:|--:|--:|"]
    lines += [f"| {r['documents']} | {r['scenario']} | {round(r['true'], 9) + 0.0:+.2f} | {r['streams']:,} | "
              f"{r['test']} | {rate(r['rand_p'], r['streams'])} | {rate(r['boot_p'], r['streams'])} | "
              f"{rate(r['rand_cover'], r['streams'])} | {rate(r['boot_cover'], r['streams'])} |" for r in rows]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="coverage.py", description=__doc__.split("\n\n")[0],
                                epilog="Scenarios (swap, shifted, planted) and the tests: see the script's docstring.")
    p.add_argument("--sweep", type=Path, default=SWEEP, help="a sweep's runs directory (default: the committed "
                   "Business Central records, 100 articles)")
    p.add_argument("--compare", nargs=3, action="append", metavar=("METRIC", "BASELINE", "METHOD"),
                   help="a metric and two methods of the sweep; repeatable (default: R0 none bias, R1 none full)")
    p.add_argument("--sizes", nargs="+", type=int, default=[5, 10, 20, 30, 50, 100],
                   help="documents per stream (default: 5 10 20 30 50 100)")
    p.add_argument("--replications", type=int, default=2000, help="streams per row under the nulls (default 2000)")
    p.add_argument("--planted-replications", type=int, default=1000, help="streams per row with the planted "
                   "difference (default 1000; 0: no planted rows)")
    p.add_argument("--exact-up-to", type=int, default=EXACT_UNITS, help=f"the exact randomisation test up to this "
                   f"many documents (at most {EXACT_UNITS}, the default), Monte Carlo beyond")
    p.add_argument("--trials", type=int, default=FIRST_TRIALS, help=f"random swap patterns per stream beyond "
                   f"--exact-up-to (default {FIRST_TRIALS:,}, the reports' first round)")
    p.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples")
    p.add_argument("--seed", type=int, default=12345)
    p.add_argument("--by-direction", action="store_true",
                   help="each tail's rejection rate at the levels verdicts are decided at, under the two nulls "
                   "(the randomisation test alone; --replications streams per row)")
    p.add_argument("--held", action="store_true",
                   help="with --by-direction: each tail held against documents skewed up to the metric's bound, as "
                   "`findings` decides (findings.SKEW, stats.held); default: the randomisation test alone")
    p.add_argument("--out", type=Path, help="also write the tables there, under the command that made them")
    args = p.parse_args(argv)
    scenarios = {"swap": args.replications, "shifted": args.replications, "planted": args.planted_replications}
    scenarios = {k: v for k, v in scenarios.items() if v > 0 and not (args.by_direction and k == "planted")}
    start = time.process_time()
    tables = []
    for metric, *methods in args.compare or COMPARISONS:
        base, other = per_document(args.sweep, metric, methods)
        if args.by_direction:
            rows = by_direction(base, other, metric, methods, args.sizes, scenarios, args.seed, args.exact_up_to,
                                args.trials, dict(SKEW)[metric] if args.held else 0.0)
            tables.append(direction_markdown(rows, metric, methods, skewness(base, other, metric),
                                             dict(SKEW)[metric] if args.held else None))
            continue
        rows = simulate(base, other, metric, methods, args.sizes, scenarios, args.resamples, args.seed,
                        args.exact_up_to, args.trials)
        tables.append(markdown(rows, metric, methods))
    command = " ".join(["python scripts/coverage.py", *argv])
    text = f"`{command}`\n\n{DIRECTION_LEGEND if args.by_direction else legend(args.resamples)}\n\n" \
        + "\n\n".join(tables) + "\n"
    print(text, end="")
    if args.out:
        args.out.write_text(text)
    print(f"\n_CPU time: {time.process_time() - start:.0f} s_", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
