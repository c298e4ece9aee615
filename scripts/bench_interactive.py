"""What the simulated translator's corrections cost (`metrics.interactive`), against what they must cost.

    python scripts/bench_interactive.py --model ../shared/models/small-ende-probe \
        --data ../shared/data/ted/iwslt17.tst2016.en-de.tsv --segments 30

For each segment (θ0, one thread) the first hypothesis is translated, then the corrections are simulated at the
word and at the character level three ways, interleaved segment by segment so machine load hits all alike:

- kept: adaptsim's (`Seq2SeqModel.completions`: one prefix search per segment, the source encoded once, the
  forced prefix's decoder cache kept and extended);
- fresh: the same lean search started afresh for every correction (the source re-encoded, the prefix re-decoded);
- generate: transformers' `generate` with the prefix as `decoder_input_ids` for every correction (what a user
  writes; it is also adaptsim's fallback for other architectures).

Prints, per level, CPU seconds per segment and per correction for each, the ratios to `kept`, and a correction's
cost relative to translating the segment from scratch; and checks that the three give the same counts (the same
hypotheses after every correction).
"""

from __future__ import annotations

import argparse
import csv
import statistics
import time

import torch

from adaptsim.loop import interactive
from adaptsim.models import Seq2SeqModel


def timed(fn):
    t = time.process_time()
    out = fn()
    return out, time.process_time() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--data", required=True, help="TSV with source and reference columns")
    ap.add_argument("--segments", type=int, default=30)
    ap.add_argument("--beam", type=int, default=5)
    args = ap.parse_args()
    torch.set_num_threads(1)
    model = Seq2SeqModel.load(args.model)
    with open(args.data, encoding="utf-8") as f:
        rows = [(r["source"], r["reference"]) for r in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)]
    decode = dict(beam_size=args.beam, max_length=256, length_penalty=1.0)
    def kept(src):
        system = model.completions(src, **decode)
        return system.propose, lambda: system.calls

    def fresh(src):
        made = []
        return (lambda text: made.append(1) or model.completions(src, **decode).propose(text)), lambda: len(made)

    def generate(src):
        system = model.completions(src, **decode, search="generate")
        return system.propose, lambda: system.calls

    ways = {"kept": kept, "fresh": fresh, "generate": generate}
    translate_s = []
    seconds = {(mode, way): [] for mode in ("word", "char") for way in ways}
    calls = {mode: 0 for mode in ("word", "char")}
    differ = 0
    for source, reference in rows[:args.segments]:
        hyp, t = timed(lambda: model.translate(source, **decode).text)
        translate_s.append(t)
        for mode in ("word", "char"):
            counts = set()
            for way, make in ways.items():
                propose, searches = make(source)
                effort, t = timed(lambda: interactive.simulate(mode, "nmt-keras", reference, hyp, propose, 1000,
                                                               searches))
                seconds[mode, way].append(t)
                counts.add((effort.KS, effort.WS, effort.MA, effort.decoder_calls))
            differ += len(counts) > 1
            calls[mode] += effort.decoder_calls
    n = len(translate_s)
    per_translation = statistics.mean(translate_s)
    print(f"{n} segments, beam {args.beam}, 1 thread; first hypothesis: {1000 * per_translation:.0f} ms CPU "
          "per segment")
    for mode in ("word", "char"):
        total = {way: sum(seconds[mode, way]) for way in ways}
        c = calls[mode]
        print(f"\n{mode} level: {c} corrections ({c / n:.1f} per segment)")
        for way in ways:
            per_call = total[way] / c if c else float("nan")
            print(f"  {way:9s} {total[way] / n:7.3f} s/segment  {1000 * per_call:6.1f} ms/correction  "
                  f"= {per_call / per_translation:4.2f}× a first translation  {total[way] / total['kept']:4.2f}× kept")
    print(f"\nsegments whose counts differ between the three ways: {differ} (must be 0)")


if __name__ == "__main__":
    main()
