"""`adaptsim litter DIR… [--preset paper|adaptsim] [--resources FILE]`: literal translation errors of idioms over the
stream (LitTER, adaptsim/metrics/litter.py), with the significance machinery of R0/R1.

An idiom occurrence is a (segment, idiom) pair: the idioms of a segment are its data's `spans` column (several
separated by " | "), read again through the run's recorded dataset settings, or else the resources' idiom list
matched in the source. A labelled idiom is scored only where it is located in the segment's source (lemmas, the
`gap` of configs/litter/presets.yaml; adaptsim.metrics.litter.IdiomList), with the words as they stand there, as
the reference takes its span from the source (litter.py l. 577–579); a label not found is not scored, and the
table says how many.
Each occurrence gets a verdict (a literal error or not; an empty blocklist is no error, as the reference counts it,
l. 655–702; no verdict only for a span without a content word, l. 628–631) and its index k among the idiom's
occurrences in the run's counting scope (that of R0/R1: the document, or the whole stream under reset=never). Per
block of runs, in percent of the occurrences with a verdict:

- LitTER: all occurrences (micro); LitTER.macro: the mean of the idioms' own rates (the paper's macro average);
  the preset's `headline` comes first (the paper's: macro);
- LitTER0, LitTER1, …: at an idiom's first, second, … occurrence, up to the runs' metrics.k_max (R0/R1's analogues:
  does a correction of a literal translation cure the next occurrence?);
- LitTER.repeat: P(error at k | error at k−1), over occurrences k ≥ 1 whose previous occurrence was a literal
  error: does the error come back after the translator fixed it once?

`--preset` (configs/litter/presets.yaml): `paper`, the authors' configuration, or `adaptsim`, its refinements.
Intervals and † come from the document bootstrap against the baseline (adaptsim.report.stats), like `table`'s.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from omegaconf import OmegaConf

from adaptsim import CONFIG_DIR
from adaptsim.data import load_documents
from adaptsim.errors import UserError
from adaptsim.metrics.litter import IdiomList, Litter, macro, occurrences, statistics
from adaptsim.report import significance as sig
from adaptsim.report.blocks import blocks
from adaptsim.report.markdown import head
from adaptsim.report.resources import DEFAULT as RESOURCES
from adaptsim.report.resources import loader, presets
from adaptsim.report.runs import finished_runs
from adaptsim.report.stats import Series, compare, ratio, units_of

SPANS = "spans"  # the data column naming a segment's idioms
SEPARATOR = " | "
COLUMN = f"idioms from the data's `{SPANS}` column"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="adaptsim litter", description=__doc__.split("\n\n")[0])
    p.add_argument("dirs", nargs="+", metavar="DIR", help="sweep or run directories (a method=none run: the baseline)")
    p.add_argument("--resources", type=Path, default=RESOURCES,
                   help="idiom list, dictionaries, overrides of the preset "
                        f"(default: {RESOURCES.relative_to(CONFIG_DIR.parent)})")
    known = presets()
    p.add_argument("--preset", choices=[k for k, v in known.items() if isinstance(v, dict)], default=known["default"],
                   help=f"LitTER's switches: the paper's or adaptsim's (default: {known['default']}; "
                        "configs/litter/presets.yaml)")
    sig.add_arguments(p)
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    found = finished_runs(args.dirs, "litter")
    cfg = sig.settings(args)
    get = loader(args.resources, args.preset)
    get(found.runs[0])  # a bad resources file fails before any block is scored
    for block in blocks(found.runs):
        block.need_baseline("LitTER")
        runs = [run for _, run in block.rows]
        res = get(runs[0])
        steps = sig.paired(runs)
        spans, where = spans_of(runs[0], steps[0].rows, res.idioms)
        located = locate(spans, [r["source"] for r in steps[0].rows], res.idioms)
        labels = [label for label, _ in block.rows]
        if not any(located):  # nothing to score: no bootstrap of empty rates
            print(render_empty(block, labels, res.preset, where, located))
            continue
        a = analyse(steps, located, res.scorer, res.headline, cfg)
        a["not_found"] = not_found(located) if where == COLUMN else ""  # the idiom list's finds are all located
        print(render(block, labels, a, res.scorer, res.preset, where))
    return 0


def spans_of(run, rows: list[dict], idioms: IdiomList) -> tuple[list[list[str]], str]:
    """Each segment's idioms, and where they come from: the data's `spans` column where the data (read again with
    the run's settings, every segment checked against the run's) has one, else the idiom list matched in the
    source."""
    dataset = (run.summary.get("config") or {}).get("dataset")
    column = None
    if dataset is not None:
        try:
            segments = {(s.doc_id, s.seg_id): s
                        for doc in load_documents(OmegaConf.create(dataset)) for s in doc.segments}
        except UserError as e:
            print(f"adaptsim litter: the run's data cannot be read again ({e}); idioms from the idiom list",
                  file=sys.stderr)
        else:
            keyed = [segments.get((str(r["doc_id"]), str(r["seg_id"]))) for r in rows]
            if any(SPANS in s.attrs for s in keyed if s is not None):
                changed = next((r for r, s in zip(rows, keyed) if s is None or s.reference != r["reference"]), None)
                if changed is not None:
                    raise UserError(f"{run.dir}: its data ({dataset.get('path')}) no longer holds document "
                                    f"{changed['doc_id']}, segment {changed['seg_id']} as the run translated it")
                column = [[t.strip() for t in s.attrs.get(SPANS, "").split(SEPARATOR) if t.strip()] for s in keyed]
    if column is not None:
        return column, COLUMN
    if not idioms.idioms:
        raise UserError(f"{run.dir}: its data has no `{SPANS}` column and the resources name no idiom list")
    return [idioms.find(r["source"]) for r in rows], "idioms from the idiom list, matched in the sources"


class Located(list):
    """One segment's idioms located in its source: (idiom, its source words) each; `missing` counts its labels
    not found there."""

    missing = 0


def locate(spans: list[list[str]], sources: list[str], idioms: IdiomList) -> list[Located]:
    """Each segment's labelled idioms with the words they occupy in its source; a label not found there is left
    out (and counted): the reference scores the words of the source's span, and a label that is not in the source
    has none."""
    out = []
    for labels, source in zip(spans, sources):
        here = Located()
        for idiom in labels:
            words = idioms.locate(idiom, source)
            if words is None:
                here.missing += 1
            else:
                here.append((idiom, words))
        out.append(here)
    return out


def not_found(located: list[Located]) -> str:
    missing = sum(seg.missing for seg in located)
    return f"{missing} of {missing + sum(map(len, located))} labelled occurrences not found in their source"


def analyse(steps, located: list[Located], scorer: Litter, headline: str, cfg: sig.Settings) -> dict:
    base = steps[0]
    summary = base.run.summary
    k_max = int(((summary.get("config") or {}).get("metrics") or {}).get("k_max", 1))
    occ = occurrences([[idiom for idiom, _ in seg] for seg in located], base.doc_ids,
                      summary.get("metrics_scope", "document"))
    labels = sorted({idiom for segment in occ for idiom, _ in segment})
    per_run = []
    for s in steps:
        verdicts = [[scorer.error(words, row["reference"], row["hypothesis"]) for _, words in segment]
                    for segment, row in zip(located, s.rows)]
        per_run.append(statistics(verdicts, occ, labels, k_max))
    names = list(per_run[0])
    if headline == "macro":
        names.insert(0, names.pop(names.index("LitTER.macro")))
    series = [Series(m, macro if m == "LitTER.macro" else ratio(100.0), [r[m] for r in per_run]) for m in names]
    index, n_units = units_of(base.doc_ids, cfg.unit)
    sig.warn_few(n_units, cfg, "litter")
    judged = per_run[0]["LitTER"][:, 1].sum()
    return {"result": compare(series, index, n_units, cfg), "names": names,
            "occurrences": sum(map(len, occ)), "judged": int(judged), "idioms": len(labels)}


def _head(block, preset: str, where: str) -> str:
    return f"**{block.dataset} · {block.segments} segments · model {block.model}** · LitTER preset {preset} · {where}"


def render(block, labels: list[str], a: dict, scorer: Litter, preset: str, where: str) -> str:
    result, names = a["result"], a["names"]
    out = [f"{_head(block, preset, where)}: {a['idioms']} idioms, {a['occurrences']} occurrences located in their "
           f"source, {a['judged']} with a verdict (a content word in the span)"
           + (f"; {a['not_found']}" if a["not_found"] else ""), "",
           *head("method", names)]
    for i, label in enumerate(labels):
        out.append(f"| {label} | " + " | ".join(sig.cell(result, i, m) for m in names) + " |")
    missing = f"{a['not_found']} (not scored); " if a["not_found"] else ""
    return "\n".join(out + ["", f"_percent of idiom occurrences with a verdict, lower is better; {missing}"
                                f"{sig.footer(result)}; signature {result.signature}; {scorer.signature()}._", ""])


def render_empty(block, labels: list[str], preset: str, where: str, located: list[Located]) -> str:
    """The table of a stream in which no idiom occurs: its methods, no figures, and one line saying why."""
    out = [f"{_head(block, preset, where)}: no idiom occurs in this stream", "", *head("method", [])]
    out += [f"| {label} |" for label in labels]
    labelled = any(seg.missing for seg in located)
    return "\n".join(out + ["", f"_no idiom occurs in this stream{'; ' + not_found(located) if labelled else ''}._",
                            ""])
