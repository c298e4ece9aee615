"""How the document-level tests behave at few documents: the coverage of the 95% percentile interval and how often
each test says p < 0.05, with no difference and with a planted one, on streams of 5, 10, 20 and 100 documents
drawn from a committed sweep's per-document statistics (docs/reports.md, "Few documents").

    python scripts/coverage.py [--sweep DIR] [--metric R0] [--methods none full] [--replications 400]

A stream of n documents is n documents drawn with replacement from the sweep's. *planted*: as they were, so the
true difference is the sweep's own (method − baseline, over all its documents); *null*: each drawn document's two
runs swapped with probability ½, a population whose difference is 0 exactly. Per stream, `adaptsim.report.stats`
computes the paired bootstrap (the percentile interval and its test, "ci") and the randomisation test over
documents ("exact" up to stats.EXACT_UNITS documents, "ar" beyond), as the reports do.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from adaptsim import PROJECT_ROOT
from adaptsim.report.runs import finished_runs
from adaptsim.report.significance import Steps, scorer
from adaptsim.report.stats import ALPHA, EXACT_UNITS, Series, Settings, compare, unit_sums, units_of

SWEEP = PROJECT_ROOT / "docs" / "results" / "base-ende" / "runs" / "business_central"


def per_document(sweep: Path, metric: str, methods: list[str]) -> list[np.ndarray]:
    """Each method's statistics of `metric` summed per document (documents × columns), in one document order."""
    runs = {r.summary.get("method"): r for r in finished_runs([str(sweep)], "coverage").runs}
    out = []
    for method in methods:
        steps = Steps.of(runs[method])
        index, n = units_of(steps.doc_ids, "document")
        out.append(unit_sums(steps.statistics(metric), index, n))
    return out


def simulate(base: np.ndarray, other: np.ndarray, metric: str, sizes: list[int], replications: int,
             resamples: int, seed: int) -> list[dict]:
    score = scorer(metric)
    truth = {"planted": float(score(other.sum(0)) - score(base.sum(0))), "null": 0.0}
    rng = np.random.default_rng(seed)
    rows = []
    for n in sizes:
        test = "exact" if n <= EXACT_UNITS else "ar"
        for scenario, true in truth.items():
            covered = significant = randomised = 0
            for rep in range(replications):
                drawn = rng.integers(0, len(base), n)
                a, b = base[drawn], other[drawn]
                if scenario == "null":
                    flip = rng.random(n) < 0.5
                    a, b = np.where(flip[:, None], b, a), np.where(flip[:, None], a, b)
                series = [Series(metric, score, [a, b])]
                boot = compare(series, np.arange(n), n, Settings(resamples, "document", seed + rep, "ci"))
                perm = compare(series, np.arange(n), n, Settings(resamples, "document", seed + rep, test))
                d = boot.differences[1][metric]
                covered += d.ci[0] <= true <= d.ci[1]
                significant += d.p < ALPHA
                randomised += perm.differences[1][metric].p < ALPHA
            rows.append({"documents": n, "scenario": scenario, "true": true, "coverage": covered / replications,
                         "ci": significant / replications, "randomised": randomised / replications, "test": test})
    return rows


def markdown(rows: list[dict], metric: str, methods: list[str], replications: int) -> str:
    lines = [f"_{methods[1]} − {methods[0]} {metric}, {replications} streams per row:_", "",
             "| documents | scenario | true Δ | 95% interval covers it | p < 0.05: bootstrap "
             "| p < 0.05: randomisation |",
             "|--:|:--|--:|--:|--:|--:|"]
    lines += [f"| {r['documents']} | {r['scenario']} | {r['true']:+.2f} | {r['coverage']:.1%} | {r['ci']:.1%} | "
              f"{r['randomised']:.1%} ({r['test']}) |" for r in rows]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="coverage.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--sweep", type=Path, default=SWEEP)
    p.add_argument("--metric", default="R0")
    p.add_argument("--methods", nargs=2, default=["none", "full"], metavar=("BASELINE", "METHOD"))
    p.add_argument("--sizes", nargs="+", type=int, default=[5, 10, 20, 100])
    p.add_argument("--replications", type=int, default=400)
    p.add_argument("--resamples", type=int, default=1000)
    p.add_argument("--seed", type=int, default=12345)
    args = p.parse_args(argv)
    base, other = per_document(args.sweep, args.metric, args.methods)
    rows = simulate(base, other, args.metric, args.sizes, args.replications, args.resamples, args.seed)
    print(markdown(rows, args.metric, args.methods, args.replications))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
