"""Whether GNOME help's pages may stand as documents for the resampling: on a sweep whose documents are pages
(dataset.group_by=null), the standard error of each method's difference to the baseline resampled by page, beside
the same resampled by topic (the pages' clusters), for every metric. Their squared ratio is the design effect: near
1, the pages of one topic vary no more alike than pages of different topics, and resampling pages keeps the
variance; well above 1, they do not. Run it on held-out topics, so that the choice of unit is not made on the test
stream (scripts/experiments/gnome_pages.sh).

    python scripts/experiments/page_dependence.py SWEEP_DIR [--resamples 2000]
"""

from __future__ import annotations

import argparse
import re
import sys

import numpy as np

from adaptsim.report.runs import finished_runs
from adaptsim.report.significance import paired, scorer
from adaptsim.report.stats import Series, Settings, compare, units_of

METRICS = ("BLEU", "R0", "R1", "R0+1")


def topic(page: str) -> str:
    """A page's topic, as dataset.group_by=topic forms it: the id up to its first '.' or '-'."""
    return re.split(r"[.-]", page, maxsplit=1)[0]


def standard_errors(steps, metric: str, by: str, resamples: int, seed: int) -> list[float]:
    """Bootstrap standard error of each run's difference to runs[0], resampling pages or topics."""
    ids = steps[0].doc_ids if by == "page" else [topic(d) for d in steps[0].doc_ids]
    index, n = units_of(ids, "document")
    series = Series(metric, scorer(metric), [s.statistics(metric) for s in steps])
    result = compare([series], index, n, Settings(resamples, "document", seed, "ci"))
    return [(d[metric].ci[1] - d[metric].ci[0]) / (2 * 1.959964) for d in result.differences[1:]]


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="page_dependence.py", description=__doc__.split("\n\n")[0])
    p.add_argument("sweep")
    p.add_argument("--resamples", type=int, default=2000)
    p.add_argument("--seed", type=int, default=12345)
    args = p.parse_args(argv)
    runs = sorted(finished_runs([args.sweep], "page_dependence").runs, key=lambda r: r.summary.get("method") != "none")
    if not runs or runs[0].summary.get("method") != "none" or len(runs) < 2:
        print("page_dependence.py: the sweep needs a none run and at least one other", file=sys.stderr)
        return 2
    steps = paired(runs)
    pages, topics = len(set(steps[0].doc_ids)), len({topic(d) for d in steps[0].doc_ids})
    print(f"_{pages} pages in {topics} topics, {len(steps[0].rows)} segments; bootstrap standard errors of the "
          f"difference to none, {args.resamples} resamples:_\n")
    print("| method | metric | by page | by topic | design effect |\n|:--|:--|--:|--:|--:|")
    for metric in METRICS:
        by_page = standard_errors(steps, metric, "page", args.resamples, args.seed)
        by_topic = standard_errors(steps, metric, "topic", args.resamples, args.seed)
        for run, a, b in zip(runs[1:], by_page, by_topic):
            effect = (b / a) ** 2 if a else np.nan
            print(f"| {run.summary.get('method')} | {metric} | {a:.2f} | {b:.2f} | {effect:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
