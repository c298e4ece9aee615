"""`adaptsim litter DIR… [--resources FILE]`: literal translation errors of idioms over the stream (LitTER,
adaptsim/metrics/litter.py), with the significance machinery of R0/R1.

An idiom occurrence is a (segment, idiom) pair: the idioms of a segment are its data's `spans` column (several
separated by " | "), read again through the run's recorded dataset settings, or else the resources' idiom list
matched in the source. Each occurrence gets a verdict (literal error, none, or no verdict when the blocklist is
empty) and its index k among the idiom's occurrences in the run's counting scope (that of R0/R1: the document, or
the whole stream under reset=never). Per block of runs, in percent of the occurrences with a verdict:

- LitTER: all occurrences (micro); LitTER.macro: the mean of the idioms' own rates (the paper's macro average);
- LitTER0, LitTER1, …: at an idiom's first, second, … occurrence, up to the runs' metrics.k_max (R0/R1's analogues:
  does a correction of a literal translation cure the next occurrence?);
- LitTER.repeat: P(error at k | error at k−1), over occurrences k ≥ 1 whose previous occurrence was a literal
  error: does the error come back after the translator fixed it once?

Intervals and † come from the document bootstrap against the baseline (adaptsim.report.stats), like `table`'s.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

import numpy as np
from omegaconf import OmegaConf

from adaptsim import CONFIG_DIR
from adaptsim.data import load_documents
from adaptsim.errors import UserError
from adaptsim.metrics.litter import IdiomList, Litter, span_words
from adaptsim.report import significance as sig
from adaptsim.report.blocks import blocks
from adaptsim.report.resources import DEFAULT as RESOURCES
from adaptsim.report.resources import Resources, loader
from adaptsim.report.runs import finished_runs
from adaptsim.report.stats import Series, compare, ratio, units_of

SPANS = "spans"  # the data column naming a segment's idioms
SEPARATOR = " | "


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="adaptsim litter", description=__doc__.split("\n\n")[0])
    p.add_argument("dirs", nargs="+", metavar="DIR", help="sweep or run directories (a method=none run: the baseline)")
    p.add_argument("--resources", type=Path, default=RESOURCES,
                   help=f"idiom list, dictionaries and switches (default: {RESOURCES.relative_to(CONFIG_DIR.parent)})")
    sig.add_arguments(p)
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    found = finished_runs(args.dirs, "litter")
    cfg = sig.settings(args)
    get = loader(args.resources)
    get(found.runs[0])  # a bad resources file fails before any block is scored
    for block in blocks(found.runs):
        block.need_baseline("LitTER")
        runs = [run for _, run in block.rows]
        scorer, idioms = resources(get(runs[0]))
        steps = sig.paired(runs)
        spans, where = spans_of(runs[0], steps[0].rows, idioms)
        print(render(block, [label for label, _ in block.rows], analyse(steps, spans, scorer, cfg), scorer, where))
    return 0


def resources(res: Resources) -> tuple[Litter, IdiomList | None]:
    """LitTER's scorer and idiom list from a resources file (adaptsim.report.resources, shared with `terms`)."""
    return res.scorer, IdiomList.load(res.idioms) if res.idioms else None


def spans_of(run, rows: list[dict], idioms: IdiomList | None) -> tuple[list[list[str]], str]:
    """Each segment's idioms, and where they come from: the data's `spans` column where the data (read again with
    the run's settings, every segment checked against the run's) has one, else the idiom list matched in the
    source."""
    dataset = (run.summary.get("config") or {}).get("dataset")
    column = None
    if dataset is not None:
        try:
            segments = {(s.doc_id, s.seg_id): s for doc in load_documents(OmegaConf.create(dataset)) for s in doc.segments}
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
        return column, f"idioms from the data's `{SPANS}` column"
    if idioms is None:
        raise UserError(f"{run.dir}: its data has no `{SPANS}` column and the resources name no idiom list")
    return [idioms.find(r["source"]) for r in rows], "idioms from the idiom list, matched in the sources"


def occurrences(spans: list[list[str]], doc_ids: list[str], scope: str) -> list[list[tuple[str, int]]]:
    """Per segment, its idioms with their occurrence index k in the counting scope."""
    out, seen, previous = [], Counter(), object()
    for idioms, doc in zip(spans, doc_ids):
        group = doc if scope == "document" else None
        if group != previous:
            seen, previous = Counter(), group
        here = []
        for idiom in idioms:
            here.append((idiom, seen[idiom]))
            seen[idiom] += 1
        out.append(here)
    return out


def statistics(verdicts: list[list[bool | None]], occ: list[list[tuple[str, int]]], labels: list[str],
               k_max: int) -> dict[str, np.ndarray]:
    """Per-segment statistics of every LitTER figure (errors, occurrences with a verdict; macro: per idiom)."""
    n = len(occ)
    names = ["LitTER", "LitTER.macro", *(f"LitTER{k}" for k in range(k_max + 1)), "LitTER.repeat"]
    stats = {m: np.zeros((n, 2 * len(labels) if m == "LitTER.macro" else 2)) for m in names}
    column = {label: j for j, label in enumerate(labels)}
    last: dict[tuple[str, int], bool | None] = {}
    for i, (segment, verdict) in enumerate(zip(occ, verdicts)):
        for (idiom, k), error in zip(segment, verdict):
            if k and last.get((idiom, k - 1)) is True and error is not None:
                stats["LitTER.repeat"][i] += (error, 1)
            last[idiom, k] = error
            if error is None:
                continue
            stats["LitTER"][i] += (error, 1)
            if k <= k_max:
                stats[f"LitTER{k}"][i] += (error, 1)
            stats["LitTER.macro"][i, 2 * column[idiom]:2 * column[idiom] + 2] += (error, 1)
    return stats


def macro(t: np.ndarray) -> np.ndarray:
    """Mean over idioms of each idiom's rate (percent), idioms without a verdict left out."""
    num, den = t[..., 0::2], t[..., 1::2]
    with np.errstate(invalid="ignore", divide="ignore"):
        rates = np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)
        return 100 * np.nanmean(rates, axis=-1)


def analyse(steps, spans: list[list[str]], scorer: Litter, cfg: sig.Settings) -> dict:
    base = steps[0]
    summary = base.run.summary
    k_max = int(((summary.get("config") or {}).get("metrics") or {}).get("k_max", 1))
    occ = occurrences(spans, base.doc_ids, summary.get("metrics_scope", "document"))
    labels = sorted({idiom for segment in occ for idiom, _ in segment})
    words = {idiom: span_words(idiom) for idiom in labels}
    per_run = []
    for s in steps:
        verdicts = [[scorer.error(words[idiom], row["reference"], row["hypothesis"]) for idiom, _ in segment]
                    for segment, row in zip(occ, s.rows)]
        per_run.append(statistics(verdicts, occ, labels, k_max))
    names = list(per_run[0])
    series = [Series(m, macro if m == "LitTER.macro" else ratio(100.0), [r[m] for r in per_run]) for m in names]
    index, n_units = units_of(base.doc_ids, cfg.unit)
    sig.warn_few(n_units, cfg, "litter")
    judged = per_run[0]["LitTER"][:, 1].sum()
    return {"result": compare(series, index, n_units, cfg), "names": names,
            "occurrences": sum(map(len, occ)), "judged": int(judged), "idioms": len(labels)}


def render(block, labels: list[str], a: dict, scorer: Litter, where: str) -> str:
    result, names = a["result"], a["names"]
    out = [f"**{block.dataset} · {block.segments} segments · model {block.model}** · {where}: {a['idioms']} "
           f"idioms, {a['occurrences']} occurrences, {a['judged']} with a verdict (a content word in the span)", "",
           "| method | " + " | ".join(names) + " |", "|:--" + "|--:" * len(names) + "|"]
    for i, label in enumerate(labels):
        out.append(f"| {label} | " + " | ".join(sig.cell(result, i, m) for m in names) + " |")
    return "\n".join(out + ["", f"_percent of idiom occurrences with a verdict, lower is better; {sig.footer(result)}; "
                                f"signature {result.signature}; {scorer.signature()}._", ""])
