"""Does an adapted method's zero-shot loss grow along the stream? R0 against the baseline by thirds of the documents.

    python scripts/experiments/r0_along_stream.py STREAM_DIR… [--methods full,lasso] [--out R0_ALONG.md]

Under reset=never every update stays in θ, so a loss of zero-shot recall that comes from the updates drifting θ away
from general vocabulary should be larger late in a stream than early. For each STREAM_DIR (runs of one stream: a
sweep, or the text-free record export_runs.py writes, with a `none` run beside each method's) the documents are cut in
thirds in stream order, and the method's R0 minus the baseline's (points, pooled over each third's occurrences) is
given per third, with the test of the prediction: the difference over the later two thirds minus that over the first,
against the documents' positions permuted (each document keeps its own hits; one-sided, the prediction's direction
being negative; exact where the choices of the first third can be enumerated). The baseline's R0 falls along every
stream (the words left unseen late are rarer), so the differences are in points, not percent of a falling baseline.
"""

from __future__ import annotations

import argparse
import itertools
import math
from pathlib import Path

import numpy as np

from adaptsim.report.runs import discover
from adaptsim.report.significance import Steps
from adaptsim.report.stats import unit_sums, units_of

EXACT = 200_000  # at most this many choices of the first third are enumerated; beyond, `permutations` random ones


def hits_by_document(run) -> tuple[list[str], np.ndarray]:
    """The run's documents in stream order and, per document, R0's (numerator, denominator)."""
    steps = Steps.of(run)
    index, n = units_of(steps.doc_ids, "document")
    return list(dict.fromkeys(steps.doc_ids)), unit_sums(steps.statistics("R0"), index, n)


def along(stream: Path, method: str, permutations: int, seed: int) -> dict | None:
    """The per-third differences and the test, or None where the stream has no such run."""
    runs = {run.summary["method"]: run for run in discover([stream]).runs}
    if method not in runs or "none" not in runs:
        return None
    docs, base = hits_by_document(runs["none"])
    other, adapted = hits_by_document(runs[method])
    if other != docs or not np.array_equal(adapted[:, 1], base[:, 1]):
        raise SystemExit(f"r0_along_stream.py: {stream}: {method}'s documents or R0 words are not the baseline's")
    won, occurrences = adapted[:, 0] - base[:, 0], base[:, 1]
    n, cut = len(docs), len(docs) // 3

    def later_minus_first(first: np.ndarray) -> np.ndarray:
        """The statistic for each row of `first`: the documents taken as the first third."""
        won_first, all_first = won[first].sum(-1), occurrences[first].sum(-1)
        return 100 * ((won.sum() - won_first) / (occurrences.sum() - all_first) - won_first / all_first)

    observed = float(later_minus_first(np.arange(cut)))
    if math.comb(n, cut) <= EXACT:  # every choice of the first third: an exact p, no seed
        null, draws = later_minus_first(np.array(list(itertools.combinations(range(n), cut)))), 0
    else:
        rng = np.random.default_rng(seed)
        null, draws = later_minus_first(np.array([rng.permutation(n)[:cut] for _ in range(permutations)])), permutations
    p = float(np.mean(null <= observed + 1e-9))
    thirds = [np.arange(n)[a:b] for a, b in ((0, cut), (cut, 2 * cut), (2 * cut, n))]
    return {"documents": n, "thirds": [(100 * won[t].sum() / occurrences[t].sum(),
                                        100 * base[t, 0].sum() / occurrences[t].sum(), int(occurrences[t].sum()))
                                       for t in thirds],
            "later_minus_first": observed, "p": p, "p_error": float(np.sqrt(p * (1 - p) / draws)) if draws else 0.0}


def label(stream: Path) -> str:
    """`MODEL · STREAM` for a record under RESULTS/MODEL/runs/STREAM (learning_curve.sh's, realistic_ende.sh's)."""
    return f"{stream.parent.parent.name} · {stream.name}" if stream.parent.name == "runs" else str(stream)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("streams", nargs="+", type=Path)
    ap.add_argument("--methods", default="full,lasso")
    ap.add_argument("--permutations", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    lines = ["R0 along the stream: the method's R0 − the baseline's, points, by thirds of the documents in stream "
             "order (the baseline's R0; R0 occurrences), and the later two thirds' difference − the first's with its "
             f"one-sided p: over every choice of the first third's documents up to {EXACT:,} choices, else over "
             f"{args.permutations:,} random ones (± its Monte Carlo error)", "",
             "| stream | method | documents | first third | second | last | later − first | p |",
             "|:--|:--|--:|--:|--:|--:|--:|--:|"]
    for stream in args.streams:
        for method in args.methods.split(","):
            r = along(stream, method, args.permutations, args.seed)
            if r is None:
                continue
            thirds = [f"{d:+.2f} ({b:.1f}; {k:,})" for d, b, k in r["thirds"]]
            lines.append(f"| {label(stream)} | {method} | {r['documents']} | " + " | ".join(thirds) +
                         f" | {r['later_minus_first']:+.2f} | {r['p']:.3f} "
                         + (f"± {r['p_error']:.3f} |" if r["p_error"] else "(exact) |"))
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
