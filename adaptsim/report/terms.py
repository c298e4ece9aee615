"""`adaptsim terms DIR… [--resources FILE]`: terminology consistency over the stream (adaptsim/metrics/terms.py),
with the significance machinery of R0/R1.

Per block of runs (one data set and model, with its baseline run `none`), in the run's counting scope
(`metrics_scope`: the document, or the whole stream) and with its content words (the run's metric settings):

- consistency: of the judged term occurrences (a term in the source after an earlier post-edit rendered it) whose
  hypothesis uses a dictionary rendering of the term, the percent using the previous post-edit's rendering;
- consistency.all: the same of all judged occurrences (a hypothesis without any rendering counts against it);
- renderings: the mean number of distinct renderings per (document, term) rendered in at least two of the
  document's hypotheses (lower: more consistent);
- c / d / n: consistent, different and neither occurrences; pairs: the (document, term) pairs of `renderings`.

A `post-edits` row gives the references' own figures (scored like a hypothesis), for comparison, without †.
Intervals and † come from the document bootstrap against the baseline (adaptsim.report.stats), like `table`'s.
Under --unit segment a (document, term) pair is resampled with the segment of its last rendering (a bootstrap of
pairs, which, like segment resampling of R1, treats them as independent).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from adaptsim import CONFIG_DIR
from adaptsim.errors import UserError
from adaptsim.metrics.roles import Roles
from adaptsim.metrics.terms import METRICS, Terms, statistics, stream
from adaptsim.report import significance as sig
from adaptsim.report.blocks import blocks
from adaptsim.report.markdown import head
from adaptsim.report.notes import notes
from adaptsim.report.resources import DEFAULT, Resources, loader
from adaptsim.report.runs import finished_runs
from adaptsim.report.stats import Series, compare, ratio, units_of

PRESET = "adaptsim"  # terms is adaptsim's own measure: LitTER's refinements (stopwords, lemmas), not the paper's
DIGITS = {"consistency": 1, "consistency.all": 1, "renderings": 2}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="adaptsim terms", description=__doc__.split("\n\n")[0])
    p.add_argument("dirs", nargs="+", metavar="DIR", help="sweep or run directories (a method=none run: the baseline)")
    p.add_argument("--resources", type=Path, default=DEFAULT,
                   help="dictionaries and switches, LitTER's format "
                        f"(default: {DEFAULT.relative_to(CONFIG_DIR.parent)})")
    sig.add_arguments(p)
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    found = finished_runs(args.dirs, "terms")
    cfg = sig.settings(args)
    resources = loader(args.resources, PRESET)
    resources(found.runs[0])  # a bad resources file fails before any block is scored
    for block in blocks(found.runs):
        block.need_baseline("terminology consistency")
        res = resources(block.rows[0][1])
        terms = Terms(res.scorer)
        steps = sig.paired([run for _, run in block.rows])
        print(render(block, [label for label, _ in block.rows], analyse(steps, terms, cfg), terms, res)
              + "".join(f"\n_Note: {n}._\n" for n in notes(block.rows)))
    return 0


def analyse(steps, terms: Terms, cfg: sig.Settings) -> dict:
    """Statistics of every run (steps[0]: the baseline) and of the post-edits, their scores, intervals and tests."""
    base = steps[0]
    for s in steps:
        lacking = next((k for k in ("source", "hypothesis") for r in s.rows if not isinstance(r.get(k), str)), None)
        if lacking is not None:
            raise UserError(f"{s.run.dir}/steps.jsonl has no {lacking} texts (a run stripped of them, or written "
                            "before adaptsim recorded them); terms reads sources and hypotheses")
    scope = base.run.summary.get("metrics_scope", "document")
    roles = Roles.of_run(base)  # the run's content words: its WordPipeline, truecaser trained as the run's was
    groups = base.doc_ids if scope == "document" else [None] * len(base.doc_ids)
    occ = stream(terms, [r["source"] for r in base.rows], roles.sets, groups)
    texts = [[roles.words(r["hypothesis"]) for r in s.rows] for s in steps] + [roles.sets]
    per_text = [statistics(terms, occ, t, base.doc_ids) for t in texts]
    series = [Series(m, ratio(1.0 if m == "renderings" else 100.0), [p[m] for p in per_text]) for m in METRICS]
    index, n_units = units_of(base.doc_ids, cfg.unit)
    sig.warn_few(n_units, cfg, "terms")
    term_keys = {(groups[i], o.term) for i, segment in enumerate(occ) for o in segment if o.is_term}
    return {"result": compare(series, index, n_units, cfg), "scope": scope, "terms": len(term_keys),
            "judged": sum(o.judged for segment in occ for o in segment),
            "verdicts": [p["verdicts"].sum(axis=0).astype(int) for p in per_text],
            "pairs": [int(p["renderings"][:, 1].sum()) for p in per_text]}


def render(block, labels: list[str], a: dict, terms: Terms, res: Resources) -> str:
    result, scope = a["result"], a["scope"]
    within = "document" if scope == "document" else "stream"
    per = " (counted per document)" if within == "document" else ""
    out = [f"**{block.dataset} · {block.segments} segments · model {block.model}** · resources {res.path} "
           f"(dictionaries {' + '.join(terms.scorer.dictionary.names)}): {a['terms']} terms{per} (source words whose "
           f"post-edited rendering recurs in the {within}), {a['judged']} judged occurrences (after a post-edit of "
           f"the {within} rendered the term)", "",
           *head("method", [*METRICS, "c / d / n", "pairs"])]
    rows = [*labels, "post-edits"]
    for i, label in enumerate(rows):
        cells = [sig.cell(result, i, m, DIGITS[m], tested=i < len(labels)) for m in METRICS]  # post-edits: no †
        c, d, n = a["verdicts"][i]
        out.append(f"| {label} | " + " | ".join(cells) + f" | {c} / {d} / {n} | {a['pairs'][i]} |")
    return "\n".join(out + ["", "_consistency: percent of judged occurrences whose hypothesis uses the previous "
                            "post-edit's rendering, of those with a dictionary rendering (consistency.all: of all), "
                            "higher is better; renderings: distinct renderings per (document, term) rendered at "
                            "least twice, lower is better; post-edits: the references' own figures, not tested; "
                            f"{sig.footer(result)}; signature {result.signature}; {terms.signature(scope)}._", ""])
