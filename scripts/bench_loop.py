"""adaptsim's engine against the straightforward loop a user writes in an afternoon, side by side.

    python scripts/bench_loop.py --model ../shared/models/small-ende-probe \
        --data ../shared/data/ted/iwslt17.tst2016.en-de.tsv --segments 40 --methods full,bias,top,lasso

Both run in this process, one thread, interleaved segment by segment (so machine load hits both alike), from
the same base model: adaptsim's `Seq2SeqModel.translate` + `Updater` with the chosen method, and `naive_step`
below (transformers `generate`, then plain SGD on the pair with the paper's rule: tensor-wise clipping to 1.0,
repeated until perplexity ≤ 2, at most three updates; it fine-tunes everything, so it is the reference for
`full`). Prints CPU seconds per segment for translating and updating, the ratio adaptsim / naive, and whether
the hypotheses were identical (for `full` they must be). Metrics and output writing are not timed: they are
negligible next to these two (measured with `adaptsim bench`). With `--alone OUT` only the straightforward loop runs,
as a process of its own, to be timed whole against `adaptsim bench` (docs/performance.md, "As a whole process").
"""

from __future__ import annotations

import argparse
import csv
import math
import statistics
import time
from pathlib import Path

import torch
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer


def naive_step(net, tok, opt, source: str, reference: str, beam: int) -> tuple[str, float, float]:
    """Translate, then adapt on the pair: the reference loop. Returns (hypothesis, translate s, update s)."""
    t0 = time.process_time()
    with torch.inference_mode():
        out = net.generate(**tok(source, return_tensors="pt"), num_beams=beam, max_new_tokens=256,
                           early_stopping=True)  # adaptsim's decode settings, so the outputs can be compared
    hyp = tok.decode(out[0], skip_special_tokens=True)
    t1 = time.process_time()
    batch = tok(source, text_target=reference, return_tensors="pt")
    loss = net(**batch).loss
    for k in range(3):
        if k and math.exp(loss.item()) <= 2.0:
            break
        opt.zero_grad(set_to_none=True)
        loss.backward()
        for p in net.parameters():
            if p.grad is not None:
                p.grad.mul_(torch.clamp(1.0 / (p.grad.norm() + 1e-6), max=1.0))
        opt.step()
        loss = net(**batch).loss
    return hyp, t1 - t0, time.process_time() - t1


def naive_model(path: str):
    """The straightforward loop's tokenizer, model and SGD (γ = 1e-2, the paper's rate), from the same base model."""
    net = AutoModelForSeq2SeqLM.from_pretrained(path).eval()
    return AutoTokenizer.from_pretrained(path), net, torch.optim.SGD(net.parameters(), lr=1e-2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--data", required=True, help="TSV with source and reference columns")
    ap.add_argument("--segments", type=int, default=40)
    ap.add_argument("--methods", default="full")
    ap.add_argument("--beam", type=int, default=5)
    ap.add_argument("--alone", metavar="OUT", help="only the straightforward loop, its hypotheses into OUT: a whole "
                    "process to time against `adaptsim bench … method=full` (nothing of adaptsim imported)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    with open(args.data, encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))[: args.segments]
    if args.alone:
        tok, net, opt = naive_model(args.model)
        with open(args.alone, "w", encoding="utf-8") as out:
            for row in rows:
                print(naive_step(net, tok, opt, row["source"], row["reference"], args.beam)[0], file=out, flush=True)
        return
    from adaptsim import methods
    from adaptsim.launch.hydra_app import compose
    from adaptsim.loop.update import Snapshot, Updater
    from adaptsim.models import Seq2SeqModel

    print(f"{len(rows)} segments, beam {args.beam}, 1 thread, CPU seconds per segment (medians; total: mean of "
          "translate + update; ratio: adaptsim's total CPU time / naive's)")
    print("| method | adaptsim translate | naive translate | adaptsim update | naive update | adaptsim total | "
          "naive total | ratio | same hypotheses |")
    print("|:--|--:|--:|--:|--:|--:|--:|--:|:--|")
    for name in args.methods.split(","):
        model = Seq2SeqModel.load(args.model)
        method = methods.build(compose("run", [f"method={name}", f"model.name={Path(args.model).name}"]).method, model)
        updater = Updater(model, method)
        method.start_document(Snapshot(method.parameters()).initial)
        tok, net, opt = naive_model(args.model)
        times = {k: [] for k in ("at", "nt", "au", "nu")}
        same = True
        for row in rows:
            t0 = time.process_time()
            hyp = model.translate(row["source"], beam_size=args.beam).text
            t1 = time.process_time()
            updater(model.pair(row["source"], row["reference"]))
            t2 = time.process_time()
            naive_hyp, nt, nu = naive_step(net, tok, opt, row["source"], row["reference"], args.beam)
            for k, v in zip(times, (t1 - t0, nt, t2 - t1, nu)):
                times[k].append(v)
            same &= hyp == naive_hyp
        med = {k: statistics.median(v) for k, v in times.items()}
        ours, naive = (sum(map(sum, (times[t], times[u]))) / len(rows) for t, u in (("at", "au"), ("nt", "nu")))
        print(f"| {name} | {med['at']:.3f} | {med['nt']:.3f} | {med['au']:.3f} | {med['nu']:.3f} | {ours:.3f} | "
              f"{naive:.3f} | {ours / naive:.2f} | {'yes' if same else 'no'} |", flush=True)


if __name__ == "__main__":
    main()
