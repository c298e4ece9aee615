"""Seconds for 1,000 paired resamples of six runs × 10,000 segments (the speed target of the significance tests).

Builds synthetic per-segment sufficient statistics of that size (no text, no metric: the statistics a run
writes to steps.jsonl, with realistic ranges) for R0, R1, R0+1, SBLEU, BLEU, TER and chrF, then times
adaptsim.report.stats.compare (five runs against the first, intervals and p-values for every run and metric) for
each unit and test ("ar" with as many random swap patterns as resamples), and the learning-curve bands of one
metric. Usage:

    python scripts/bench_stats.py [--runs 6] [--segments 10000] [--documents 500] [--resamples 1000]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from adaptsim.report.significance import scorer
from adaptsim.report.stats import Series, Settings, compare, prefix_bands, units_of


def synthetic(runs: int, segments: int, rng: np.random.Generator) -> dict[str, list[np.ndarray]]:
    ref_len = rng.integers(5, 40, segments)
    out: dict[str, list[np.ndarray]] = {m: [] for m in ("R0", "R1", "R0+1", "SBLEU", "BLEU", "TER", "chrF")}
    for _ in range(runs):
        hyp_len = np.maximum(1, ref_len + rng.integers(-4, 5, segments))
        totals = np.stack([np.maximum(hyp_len - n, 0) for n in range(4)], axis=1)
        correct = np.floor(totals * rng.uniform(0.2, 0.9, (segments, 1)) ** np.arange(1, 5)).astype(int)
        out["BLEU"].append(np.column_stack([hyp_len, ref_len, correct, totals]).astype(float))
        out["TER"].append(np.column_stack([rng.integers(0, 15, segments), ref_len]).astype(float))
        chars = (np.column_stack([hyp_len * 6 - n for n in range(6)]),
                 np.column_stack([ref_len * 6 - n for n in range(6)]))
        match = np.floor(np.minimum(*chars) * rng.uniform(0.3, 1.0, (segments, 1))).astype(int)
        out["chrF"].append(np.stack([chars[0], chars[1], match], axis=2).reshape(segments, 18).astype(float))
        den0, den1 = rng.integers(0, 5, segments), rng.integers(0, 3, segments)
        num0, num1 = rng.binomial(den0, 0.7), rng.binomial(den1, 0.6)
        out["R0"].append(np.column_stack([num0, den0]).astype(float))
        out["R1"].append(np.column_stack([num1, den1]).astype(float))
        out["R0+1"].append(np.column_stack([num0 + num1, den0 + den1]).astype(float))
        out["SBLEU"].append(np.column_stack([rng.uniform(0, 100, segments), np.ones(segments)]))
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=6)
    p.add_argument("--segments", type=int, default=10_000)
    p.add_argument("--documents", type=int, default=500)
    p.add_argument("--resamples", type=int, default=1000)
    args = p.parse_args()
    rng = np.random.default_rng(0)
    stats = synthetic(args.runs, args.segments, rng)
    series = [Series(m, scorer(m), s) for m, s in stats.items()]
    doc_ids = [str(i * args.documents // args.segments) for i in range(args.segments)]
    print(f"{args.runs} runs × {args.segments} segments ({args.documents} documents), {len(series)} metrics, "
          f"{args.resamples} resamples")
    for unit in ("document", "segment"):
        index, n = units_of(doc_ids, unit)
        for test in ("ci", "bs", "ar"):
            t = time.perf_counter()
            compare(series, index, n, Settings(args.resamples, unit, 12345, test, trials=args.resamples))
            print(f"compare  unit={unit:<8} test={test}: {time.perf_counter() - t:.2f} s")
        t = time.perf_counter()
        ends = sorted({round(args.segments * (k + 1) / 500) for k in range(500)})
        prefix_bands(series[4], index, n, ends, Settings(args.resamples, unit, 12345, "ci"))
        print(f"bands    unit={unit:<8} (BLEU, 500 points): {time.perf_counter() - t:.2f} s")


if __name__ == "__main__":
    main()
