"""`adaptsim cxmi DIR…`: what the adapted models gained from the post-edited history (adaptsim.metrics.cxmi).

Per block of runs (one data set, one model, with its baseline run `none`): CXMI per token (adaptsim's), per
segment (the paper's equation) and the mean of the segments' per-token CXMI (the paper's code and figures;
adaptsim.metrics.cxmi says which is which) with 95% intervals and † against the baseline; the share of reference tokens
whose log-probability fell; negative and positive flips per 100 reference content words (content words the baseline's
hypothesis has and the run's lacks, and the reverse), with intervals; the mean P-CXMI of a word by its role in the
stream; and by the distance (in segments) since the word's previous occurrence. --out draws CXMI against the stream
position and against that distance.

Runs whose prompts quoted earlier pairs (method=icl on a decoder-only model) get a second table: the CXMI of that
context on one θ, with and without it in the prompt (the paper's own reading), tested against 0, and by word role;
it needs no baseline run.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from adaptsim.errors import UserError
from adaptsim.metrics import cxmi
from adaptsim.metrics.roles import ROLES, Roles
from adaptsim.report import significance as sig
from adaptsim.report.blocks import blocks
from adaptsim.report.figures import check_out, line_style
from adaptsim.report.markdown import head
from adaptsim.report.runs import finished_runs
from adaptsim.report.significance import Steps
from adaptsim.report.stats import Series, compare, ratio, units_of

WINDOW = 50  # segments in the moving average of the position curve
FLIPS = ("flips−", "flips+")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="adaptsim cxmi", description=__doc__.split("\n\n")[0])
    p.add_argument("dirs", nargs="+", metavar="DIR",
                   help="sweep or run directories: the history's CXMI needs a method=none run among them, the CXMI of "
                        "an icl prompt's context none")
    p.add_argument("--out", type=Path, help="also draw the curves into this figure (.png, .pdf or .svg)")
    sig.add_arguments(p)
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    if args.out is not None:
        check_out(args.out)
    found = finished_runs(args.dirs, "cxmi")
    cfg = sig.settings(args)
    figures = []
    for block in blocks(found.runs):
        context = [(label, Steps.of(run)) for label, run in block.rows if cxmi.reads_context(Steps.of(run).rows)]
        if not context or block.baseline is not None:
            block.need_baseline("CXMI")
            if len(block.rows) < 2:
                raise UserError(f"dataset {block.dataset!r}: only the baseline run; CXMI compares adapted runs with it")
            analysis = analyse([run for _, run in block.rows], cfg)
            print(render(block, [label for label, _ in block.rows], analysis))
            figures.append((block, analysis))
        if context:
            judge = Steps.of(block.baseline).rows if block.baseline is not None else None
            print(render_context(block, [label for label, _ in context], analyse_context(context, cfg, judge)))
    if args.out is not None:
        draw(figures, args.out)
        print(f"adaptsim cxmi: wrote {args.out}", file=sys.stderr)
    return 0


def analyse(runs, cfg: sig.Settings) -> dict:
    """Everything the report shows, for runs[0] = the baseline and the runs after it."""
    steps = sig.paired(runs)
    base = steps[0]
    values = [s.cxmi_values(base) for s in steps]
    roles = Roles.of_run(base)
    index, n_units = units_of(base.doc_ids, cfg.unit)
    sig.warn_few(n_units, cfg, "cxmi")
    flips = [cxmi.flips(roles, base.rows, s.rows) for s in steps]
    series = [Series(m, ratio(1.0), [cxmi.statistics(m, v) for v in values]) for m in cxmi.METRICS]
    series += [Series(name, ratio(100.0), [f[:, [j, 2]] for f in flips]) for j, name in enumerate(FLIPS)]
    words = [cxmi.words(roles, s.rows, v, base.rows) for s, v in zip(steps, values)]
    tokens = [np.concatenate([v for v in vs if v is not None] or [np.zeros(0)]) for vs in values]
    return {"result": compare(series, index, n_units, cfg), "words": words, "values": values,
            "negative": [float((t < 0).mean()) if len(t) else None for t in tokens],
            "missing": max(cxmi.missing(v) for v in values), "doc_ids": base.doc_ids}


def analyse_context(context: list[tuple[str, Steps]], cfg: sig.Settings, judge: list[dict] | None) -> dict:
    """The context's CXMI of each run whose prompts quoted earlier pairs (one θ, with and without them), tested
    against 0: row 0 of the comparison is the runs' reading without context (zeros on the same tokens). `judge`: the
    baseline's rows, whose hypotheses (θ0 without context) say which second occurrences were recalled."""
    values = [cxmi.context_values(steps.rows) for _, steps in context]
    zero = [None if v is None else np.zeros_like(v) for v in values[0]]
    base = context[0][1]
    index, n_units = units_of(base.doc_ids, cfg.unit)
    sig.warn_few(n_units, cfg, "cxmi")
    series = [Series(m, ratio(1.0), [cxmi.statistics(m, v) for v in [zero, *values]]) for m in cxmi.METRICS]
    roles = Roles.of_run(base)
    tokens = [np.concatenate([v for v in vs if v is not None] or [np.zeros(0)]) for vs in values]
    return {"result": compare(series, index, n_units, cfg),
            "words": [cxmi.words(roles, steps.rows, v, judge) for (_, steps), v in zip(context, values)],
            "negative": [float((t < 0).mean()) if len(t) else None for t in tokens]}


def render_context(block, labels: list[str], a: dict) -> str:
    result = a["result"]
    out = [f"**{block.dataset} · {block.segments} segments · model {block.model} · CXMI of the prompt's context**",
           "", "θ_{i−1} scoring the reference with the earlier pairs its prompt quoted and without them (Fernandes et "
           "al.'s definition; adaptsim.metrics.cxmi `context_values`):", "",
           *head("method", ["CXMI (nats/token)", "CXMI/seg (nats; paper's eq.)",
                            "CXMI.sent (nats/token; paper's code)", "tokens < 0"])]
    for i, label in enumerate(labels):
        cells = [sig.cell(result, i + 1, m, 3) for m in cxmi.METRICS]
        negative = a["negative"][i]
        cells.append("–" if negative is None else f"{100 * negative:.1f}%")
        out.append(f"| {label} | " + " | ".join(cells) + " |")
    out += ["", f"_{sig.footer(result).replace('the baseline', 'no context (0)')}; signature {result.signature}._",
            "", "P-CXMI of the context for a reference word by its role in the stream (nats per word; words in "
            f"brackets; {RECALLED if any(w.role in SPLIT for ws in a['words'] for w in ws) else NOT_SPLIT}):", "",
            *head("role", labels), *role_rows(a["words"])]
    return "\n".join(out) + "\n"


RECALLED = "a second occurrence recalled or missed by the baseline's hypothesis, which the context did not make"
NOT_SPLIT = ("second occurrences not split by recall: no baseline run (method=none) is among the DIRs, and the run's "
             "own hypothesis would build in the sign")
SPLIT = ("second, recalled", "second, missed")


def role_rows(words: list[list]) -> list[str]:
    """One row per role that some run's words hold: the mean P-CXMI (words)."""
    out = []
    for role in ROLES:
        cells = []
        for ws in words:
            v = [w.value for w in ws if w.role == role]
            cells.append(f"{np.mean(v):+.3f} ({len(v)})" if v else "–")
        if any(c != "–" for c in cells):
            out.append(f"| {role} | " + " | ".join(cells) + " |")
    return out


def render(block, labels: list[str], a: dict) -> str:
    result = a["result"]
    out = [f"**{block.dataset} · {block.segments} segments · model {block.model} · CXMI of the post-edited history**",
           "", "θ_{i−1} against θ0 scoring each reference without context: what the adapted weights gained from the "
           "earlier post-edits (0 for a method that changes no weights, such as icl alone; its prompt's context is "
           "the table after this one):", "",
           *head("method", ["CXMI (nats/token)", "CXMI/seg (nats; paper's eq.)", "CXMI.sent (nats/token; paper's code)",
                            "tokens < 0", "flips− /100 words", "flips+ /100 words"])]
    for i, label in enumerate(labels):
        cells = [sig.cell(result, i, m, 3 if m in cxmi.METRICS else 1) for m in (*cxmi.METRICS, *FLIPS)]
        negative = a["negative"][i]
        cells.insert(len(cxmi.METRICS), "–" if negative is None else f"{100 * negative:.1f}%")
        out.append(f"| {label} | " + " | ".join(cells) + " |")
    out += ["", f"_{sig.footer(result)}; signature {result.signature}._"]
    if a["missing"]:
        out.append(f"_{a['missing']} segment(s) without log-probabilities (written by an older adaptsim, or "
                   "diverged) are left out._")
    out += ["", "P-CXMI of a reference word by its role in the stream (nats per word; words in brackets; a second "
            "occurrence recalled or missed by the baseline's hypothesis, which the adaptation did not make):", "",
            *head("role", labels[1:]), *role_rows(a["words"][1:])]
    out += ["", "P-CXMI of a second or later occurrence by segments since the previous one (nats per word):", "",
            *head("segments back", labels[1:])]
    for name in _bins([w for ws in a["words"][1:] for w in ws]):
        cells = []
        for ws in a["words"][1:]:
            v = [w.value for w in ws if w.distance is not None and cxmi.distance_bin(w.distance) == name]
            cells.append(f"{np.mean(v):+.3f} ({len(v)})" if v else "–")
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def _bins(words) -> list[str]:
    """The distance bins that occur, in order."""
    present = {cxmi.distance_bin(w.distance) for w in words if w.distance is not None}
    return [name for name in map(cxmi.distance_bin, cxmi.DISTANCE_BINS) if name in present]


def _moving(values, window: int) -> np.ndarray:
    """Per segment, CXMI per token over the last `window` segments (Σ P-CXMI / tokens)."""
    sums = np.array([0.0 if v is None else v.sum() for v in values])
    counts = np.array([0 if v is None else len(v) for v in values], dtype=float)
    cs, cc = np.cumsum(sums), np.cumsum(counts)
    start = np.maximum(np.arange(len(values)) - window, -1)
    num = cs - np.where(start >= 0, cs[np.maximum(start, 0)], 0.0)
    den = cc - np.where(start >= 0, cc[np.maximum(start, 0)], 0.0)
    return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


def draw(figures, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(figures), 2, figsize=(11, 3.6 * len(figures)), squeeze=False)
    for (block, a), (left, right) in zip(figures, axes):
        for k, ((label, _), values, ws) in enumerate(zip(block.rows[1:], a["values"][1:], a["words"][1:])):
            style = line_style(k)
            left.plot(np.arange(1, len(values) + 1), _moving(values, WINDOW), label=label, **style)
            bins = _bins(ws)
            means = [np.mean([w.value for w in ws if w.distance is not None and cxmi.distance_bin(w.distance) == b])
                     for b in bins]
            right.plot(range(len(bins)), means, marker="o", label=label, **style)
            right.set_xticks(range(len(bins)), bins)
        left.axhline(0, color="grey", lw=0.8)
        right.axhline(0, color="grey", lw=0.8)
        left.set(title=f"{block.dataset}: CXMI over the stream ({WINDOW}-segment window)", xlabel="segment",
                 ylabel="nats per token")
        right.set(title="P-CXMI by segments since the previous occurrence", xlabel="segments back",
                  ylabel="nats per word")
        left.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(out)
