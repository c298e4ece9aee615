"""The prompt path of a decoder-only model (method=icl): lockstep runs' prompts translated one at a time, each distinct
prompt once, or all in one generate (`model.prompt.batch`), and the reference scored with its context with and without
the prompt's keys and values kept from translating (adaptsim/models/causal.py), in one process.

    python scripts/bench_prompt.py                                    # the demo LM (data/demo/lm), CPU, one thread
    python scripts/bench_prompt.py --config qwen2.5-0.5b-instruct --path /models/Qwen2.5-0.5B-Instruct --device cuda

N runs quote the document's last 1, 2, …, N post-edits before each segment (icl's `document` retrieval with k = 1 … N,
every run on θ0: icl without a weights method, so the clones share every tensor, as `hydra/launcher=lockstep` builds
them; the first pairs left out where the prompt would be over its budget, as the loop leaves them out), on the first
`--segments` segments of `--data`. The modes alternate segment by segment (A B C, B C A, …), so a
busy machine slows them alike. Prints, per mode, the seconds per segment for all N runs and the tokens per second
(prompt tokens read plus tokens generated, over all runs), whether every mode gave every run the same hypothesis, and
for scoring the reference with its context (CXMI's `logprobs_context`, after translating as the loop does) the seconds
with and without the kept keys and values and the largest difference between their log-probabilities. Seconds are
CPU seconds of the process on a CPU, wall seconds (synchronised) on a GPU.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import time

import torch

from adaptsim.loop.learner import share
from adaptsim.models import load_model
from adaptsim.models.prompt import model_config


def clock(device: str) -> float:
    if device.startswith("cuda"):
        torch.cuda.synchronize()
        return time.perf_counter()
    return time.process_time()


def segments(path: str, limit: int) -> list[tuple[str, str, list[tuple[str, str]]]]:
    """(source, reference, the document's earlier pairs) of the first `limit` segments."""
    with open(path, encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))[:limit]
    out, earlier = [], {}
    for row in rows:
        pairs = earlier.setdefault(row["doc_id"], [])
        out.append((row["source"], row["reference"], list(pairs)))
        pairs.append((row["source"], row["reference"]))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default="demo-lm", help="configs/model/<name>.yaml")
    ap.add_argument("--path", help="model.path (default: the config's)")
    ap.add_argument("--data", default="data/demo/docs.tsv", help="TSV with doc_id, source and reference columns")
    ap.add_argument("--runs", type=int, default=4, help="N: runs quoting the last 1 … N pairs")
    ap.add_argument("--segments", type=int, default=30)
    ap.add_argument("--beams", type=int, default=5)
    ap.add_argument("--max-length", type=int, default=64)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    cfg = model_config(args.config)
    if args.path:
        cfg.path = args.path
    base = load_model(cfg, args.device)
    single = dataclasses.replace(base.prompt, batch=False)
    base.prompt = single
    batched = base.with_net(base.net)
    batched.prompt = dataclasses.replace(single, batch=True)
    runs = [share(base) for _ in range(args.runs)]
    decode = dict(beam_size=args.beams, max_length=args.max_length)

    def one_at_a_time(source, contexts):
        return [run.translate(source, context=c, **decode) for run, c in zip(runs, contexts)]

    def each_prompt_once(source, contexts):
        return [hyp for hyp, _ in base.translate_runs(runs, source, contexts, **decode)]

    def one_generate(source, contexts):
        return [hyp for hyp, _ in batched.translate_runs(runs, source, contexts, **decode)]

    modes = {"one prompt at a time": one_at_a_time, "each distinct prompt once": each_prompt_once,
             f"one generate for the {args.runs} runs": one_generate}
    seconds = dict.fromkeys(modes, 0.0)
    scoring = {True: 0.0, False: 0.0}
    tokens, same, differ = 0, 0, 0.0
    data = segments(args.data, args.segments)
    for i, (source, reference, earlier) in enumerate(data):
        contexts = [earlier[-k:] for k in range(1, args.runs + 1)]  # (all there are, where fewer)
        contexts = [c[base.fitting(source, c):] for c in contexts]  # what fits model.prompt.max_tokens, as the loop
        names = list(modes)
        names = names[i % len(names):] + names[:i % len(names)]
        hyps = {}
        for name in names:
            start = clock(args.device)
            hyps[name] = modes[name](source, contexts)
            seconds[name] += clock(args.device) - start
        same += all(h == hyps[names[0]] for h in hyps.values())
        tokens += sum(base.prompt_tokens(source, c) + len(h.pieces) + 1 for c, h in zip(contexts, hyps[names[0]]))
        found = {}
        for reuse in ((True, False) if i % 2 == 0 else (False, True)):  # translate, then score with the context
            for run in runs:
                run.reuse_prompt = reuse
            one_at_a_time(source, contexts)
            start = clock(args.device)
            with torch.no_grad():
                found[reuse] = [run.token_nll(run.pair(source, reference, c)) for run, c in zip(runs, contexts)]
            scoring[reuse] += clock(args.device) - start
        differ = max(differ, *(float((a - b).abs().max()) for a, b in zip(found[True], found[False])))
    n = len(data)
    where = f"{args.device}, {torch.get_num_threads()} thread(s)" if args.device == "cpu" else args.device
    dtype = str(next(base.net.parameters()).dtype).removeprefix("torch.")
    print(f"{args.config} ({base.net.config.model_type}, {sum(p.numel() for p in base.net.parameters()):,} parameters, "
          f"{dtype}), {where}: {args.runs} runs quoting the last 1…{args.runs} pairs, {n} segments, beam "
          f"{args.beams}; {tokens / n:.0f} tokens per segment over all runs")
    for name, s in seconds.items():
        print(f"  {name:<28} {s / n:.4f} s per segment, {tokens / s:,.0f} tokens/s "
              f"({seconds['one prompt at a time'] / s:.2f}× one at a time)")
    print(f"  the same hypotheses in every mode for {same}/{n} segments")
    print(f"  scoring with context: {scoring[False] / n:.4f} s per segment without the kept keys and values, "
          f"{scoring[True] / n:.4f} s with them ({scoring[False] / scoring[True]:.2f}×); largest difference of a "
          f"log-probability {differ:.1e}")


if __name__ == "__main__":
    main()
