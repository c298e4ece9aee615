"""How long adaptsim.metrics takes to score N synthetic-ish segment pairs, part by part.

Usage: python scripts/bench_metrics.py [N] [--sample M]

References are Zipf-distributed words from a made-up vocabulary (capitalised "nouns", function
words from the German stopword list, punctuation), some repeated as in translation-memory data;
hypotheses are the references with about a fifth of the words dropped, substituted or swapped.
sacrebleu's chrF and TER are far slower than everything else, so they are timed on a sample of
M pairs and extrapolated unless M ≥ N.
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import time

from adaptsim.metrics import Evaluator
from adaptsim.metrics.sacre import SacreMetrics

FUNCTION_WORDS = "der die das und in zu den nicht von sie ist des sich mit dem auf für ein eine".split()
PUNCT = [",", ":", "(", ")", "-"]


def synthetic_corpus(n: int, seed: int = 1) -> tuple[list[str], list[str], list[str]]:
    rng = random.Random(seed)
    syllables = ["ka", "ter", "schr", "au", "ben", "dre", "her", "ein", "stel", "lung", "da", "tei", "fen", "ster"]
    content = sorted({"".join(rng.choices(syllables, k=rng.randint(2, 4))) for _ in range(30_000)})
    content = [w.capitalize() if i % 2 else w for i, w in enumerate(content)]
    cum_weights = list(itertools.accumulate(1 / (rank + 1) for rank in range(len(content))))
    refs: list[str] = []
    for _ in range(n):
        if refs and rng.random() < 0.1:  # repeated segments, as in translation memories
            refs.append(rng.choice(refs))
            continue
        length = rng.randint(4, 30)
        words = [rng.choice(FUNCTION_WORDS) if rng.random() < 0.4 else rng.choices(content, cum_weights=cum_weights)[0]
                 for _ in range(length)]
        words.insert(rng.randrange(len(words)), rng.choice(PUNCT))
        refs.append(" ".join(words).capitalize() + rng.choice([".", "?", ""]))
    hyps = []
    for ref in refs:
        words = ref.split()
        for j in range(len(words)):
            roll = rng.random()
            if roll < 0.07:
                words[j] = ""
            elif roll < 0.14:
                words[j] = rng.choice(content)
            elif roll < 0.2 and j + 1 < len(words):
                words[j], words[j + 1] = words[j + 1], words[j]
        hyps.append(" ".join(w for w in words if w))
    docs = [f"doc{i // 500}" for i in range(n)]
    return refs, hyps, docs


def clock(label: str, fn, scale: float = 1.0):
    start = time.perf_counter()
    result = fn()
    seconds = (time.perf_counter() - start) * scale
    print(f"  {label:<52} {seconds:8.2f} s{'  (extrapolated)' if scale != 1 else ''}")
    return result, seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("n", type=int, nargs="?", default=100_000)
    ap.add_argument("--sample", type=int, default=2_000, help="pairs to time chrF and TER on (default: 2000)")
    args = ap.parse_args()
    refs, hyps, docs = synthetic_corpus(args.n)
    print(f"{args.n} pairs, {len(set(refs))} distinct references, "
          f"{sum(len(r.split()) for r in refs) / args.n:.1f} words per reference, {os.cpu_count()} CPUs")
    ev, t_init = clock("Evaluator(): truecaser, reference content words", lambda: Evaluator(refs, docs, sacrebleu=()))
    _, t_r = clock("corpus(): R0, R1, R0+1 (no sacrebleu)", lambda: ev.corpus(hyps))
    _, t_curves = clock("curves(): R0, R1, R0+1 (words cached)", lambda: ev.curves(hyps))
    m = min(args.sample, args.n)
    times = {}
    for name, n in (("BLEU", args.n), ("chrF", m), ("TER", m)):
        sacre = SacreMetrics([name])
        _, times[name] = clock(f"sacrebleu {name} statistics ({n} pairs)", lambda: sacre.stats(hyps[:n], refs[:n]),
                               scale=args.n / n)
    full = SacreMetrics()
    stats = full.stats(hyps[:m], refs[:m])
    _, t_cum = clock("sacrebleu corpus + cumulative scores from statistics", lambda: full.cumulative(stats),
                     scale=args.n / m)
    r_total = t_init + t_r
    print(f"R metrics: {r_total:.1f} s; + BLEU/SBLEU: {r_total + times['BLEU']:.1f} s; "
          f"+ chrF + TER (all, as `adaptsim score` by default): {r_total + sum(times.values()) + t_cum:.1f} s")


if __name__ == "__main__":
    main()
