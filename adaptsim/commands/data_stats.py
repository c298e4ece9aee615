"""`adaptsim data-stats dataset=… [overrides…]`: how big a dataset is and how much there is to learn.

Prints documents, segments and tokens, then figures on the references' content words (the metrics'
own word pipeline: Moses tokens → truecasing → no stopwords, configured by `metrics.*`):
- the paper's footnote 2, "average occurrences of content words per sentence" (content-word tokens
  over content-word types, per sentence; the paper's data sets: 1.01–1.11, close enough to 1 for
  the set-level R metrics);
- repetition: how many of a reference's content words occurred in an earlier reference of the same
  counting scope (`metrics.scope`: document or corpus) — the words R1 can reward — versus first
  occurrences (R0), and how many source segments repeat an earlier one verbatim.
"""

from __future__ import annotations

import json
import statistics
import sys

from adaptsim.data import Dataset, load_documents
from adaptsim.metrics import Evaluator, resolve_scope
from adaptsim.metrics.recall import occurrence_levels
from adaptsim.metrics.words import WordPipeline, is_word

USAGE = "usage: adaptsim data-stats [--json] dataset=NAME [dataset.KEY=VALUE … metrics.KEY=VALUE …]"


def content_tokens(words: WordPipeline, text: str) -> list[str]:
    """Content-word tokens with repeats (the pipeline's __call__ gives the set)."""
    return [t for t in words.tokens(text) if t not in words.stopwords and is_word(t)]


def compute(docs: Dataset, metrics_cfg, reset: str = "document") -> dict:
    """All figures as a dict (the --json output); `reset` decides the counting scope where metrics.scope is
    null, as in a run."""
    segs = [s for d in docs for s in d.segments]
    refs = [s.reference for s in segs]
    # the run's own word pipeline (truecaser trained as configured), so these figures match the R metrics
    scope = resolve_scope(metrics_cfg.get("scope"), reset)
    words = Evaluator.from_config(metrics_cfg, refs, [s.doc_id for s in segs], scope=scope).words
    tokens = [content_tokens(words, r) for r in refs]
    types = [frozenset(t) for t in tokens]
    groups = [s.doc_id for s in segs] if scope == "document" else [None] * len(segs)
    levels = occurrence_levels(types, groups, k_max=1)
    n_types, n_first, n_second = (sum(len(x) for x in types), sum(len(lv[0]) for lv in levels),
                                  sum(len(lv[1]) for lv in levels))
    seen, repeated_sources = {}, 0
    for s, group in zip(segs, groups):
        if seen.get((group, s.source)):
            repeated_sources += 1
        seen[(group, s.source)] = True
    lengths = [len(d) for d in docs]

    def ratio(a, b):
        return round(a / b, 4) if b else None

    return {
        "documents": len(docs), "segments": len(segs), "skipped": dict(docs.skipped),
        "segments_per_document": {"min": min(lengths), "median": statistics.median(lengths), "max": max(lengths)},
        "tokens": {"source": sum(len(s.source.split()) for s in segs),
                   "reference": sum(len(s.reference.split()) for s in segs)},
        "content_words": {
            "lang": words.lang, "case": words.case, "scope": scope,
            "tokens": sum(map(len, tokens)), "types_per_sentence_sum": n_types,
            "per_sentence": ratio(n_types, len(segs)),
            "avg_occurrences_per_sentence": ratio(sum(map(len, tokens)), n_types),
            "first_occurrences_R0": n_first, "second_occurrences_R1": n_second,
            "later_occurrences": n_types - n_first - n_second,
            "repeated_share": ratio(n_types - n_first, n_types),
        },
        "repeated_sources": repeated_sources,
    }


def format_text(name: str, st: dict) -> str:
    cw = st["content_words"]
    spd = st["segments_per_document"]

    def pct(x):
        return "n/a" if x is None else f"{100 * x:.1f}%"

    skipped = ", ".join(f"{k} {v}" for k, v in st["skipped"].items() if v) or "none"
    rows = [
        ("dataset", name),
        ("documents", st["documents"]),
        ("segments", f"{st['segments']}  (per document: min {spd['min']}, median {spd['median']}, max {spd['max']};"
                     f" skipped: {skipped})"),
        ("tokens", f"source {st['tokens']['source']}, reference {st['tokens']['reference']}  (whitespace-separated)"),
        ("content words", f"{cw['tokens']} in the references ({cw['per_sentence']} types per sentence; "
                          f"lang {cw['lang']}, {cw['case']})"),
        ("avg occurrences of content words per sentence", f"{cw['avg_occurrences_per_sentence']}  "
                                                         "(paper footnote 2: 1.01–1.11)"),
        (f"content words seen before in the {cw['scope']}", f"{pct(cw['repeated_share'])}  (first occurrences R0 "
                                                             f"{cw['first_occurrences_R0']}, second R1 "
                                                             f"{cw['second_occurrences_R1']}, later "
                                                             f"{cw['later_occurrences']})"),
        (f"source segments repeated in the {cw['scope']}", st["repeated_sources"]),
    ]
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


def main(argv: list[str]) -> int:
    if any(a in ("-h", "--help") for a in argv):
        print(USAGE + "\n\n" + __doc__.split("\n\n", 1)[1])
        return 0
    as_json = "--json" in argv
    overrides = [a for a in argv if a != "--json"]
    unknown = [a for a in overrides if a.startswith("-")]
    from adaptsim.launch.hydra_app import check_overrides, compose

    error = f"unknown option {unknown[0]}" if unknown else check_overrides("run", overrides)
    if error:
        print(USAGE, file=sys.stderr)
        print(f"adaptsim data-stats: error: {error}", file=sys.stderr)
        return 2
    cfg = compose("run", overrides)
    docs = load_documents(cfg.dataset)
    stats = compute(docs, cfg.metrics, cfg.reset)
    name = str(cfg.dataset.get("name", "?"))
    print(json.dumps({"dataset": name, **stats}, ensure_ascii=False) if as_json else format_text(name, stats))
    return 0
