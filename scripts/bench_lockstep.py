"""Translating K lockstep runs together against translating each alone, in one process, one thread.

    python scripts/bench_lockstep.py --model ../shared/models/small-ende-probe \
        --data ../shared/data/ted/iwslt17.tst2016.en-de.tsv --warm 5 --segments 15
    python scripts/bench_lockstep.py --model data/demo/model --data data/demo/docs.tsv --name demo --segments 30

The runs (default: the paper's six methods) are built as `hydra/launcher=lockstep` builds them
(adaptsim/loop/lockstep.py),
adapted on the first `--warm` segments so that their parameters differ, then for each further segment
translated one by one and together (then adapted on it). Prints the CPU seconds per segment of both, for all
runs, and whether every run's hypothesis was the same both ways.
"""

from __future__ import annotations

import argparse
import csv
import time
from pathlib import Path

import torch

from adaptsim.launch.hydra_app import compose
from adaptsim.loop.learner import cloned_learners
from adaptsim.models import Seq2SeqModel


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--name", help="model.name (where fixed's tensor list is found); default: the folder's name")
    ap.add_argument("--data", required=True, help="TSV with source and reference columns")
    ap.add_argument("--methods", default="none,bias,top,fixed,lasso,full")
    ap.add_argument("--warm", type=int, default=5)
    ap.add_argument("--segments", type=int, default=15)
    args = ap.parse_args()
    torch.set_num_threads(1)
    name = args.name or Path(args.model).name
    base = Seq2SeqModel.load(args.model)
    cfgs = [compose("run", [f"method={m}", f"model.name={name}", "reset=never"]) for m in args.methods.split(",")]
    runs = cloned_learners(base, cfgs)
    for run in runs:
        run.restart()
    with open(args.data, encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))[: args.warm + args.segments]
    alone = together = 0.0
    same = 0
    for i, row in enumerate(rows):
        if i >= args.warm:
            t0 = time.process_time()
            solo = [run.model.translate(row["source"]) for run in runs]
            t1 = time.process_time()
            joint = base.translate_together([run.model for run in runs], row["source"])
            t2 = time.process_time()
            alone, together, same = alone + t1 - t0, together + t2 - t1, same + (solo == joint)
        for run in runs:
            run.adapt(run.model.pair(row["source"], row["reference"]), f"segment {i + 1}")
    n = len(rows) - args.warm
    print(f"{len(runs)} runs ({args.methods}), {n} segments after {args.warm}: translating alone {alone / n:.3f} s, "
          f"together {together / n:.3f} s per segment for all runs ({together / alone:.2f}×); "
          f"the same hypotheses for {same}/{n} segments")


if __name__ == "__main__":
    main()
