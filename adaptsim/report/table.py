"""`adaptsim table DIR…`: the paper's tables from finished runs (Tables 1, 2 absolute; Table 5 relative).

Rows are methods, columns metrics, one block per data set. With --relative the baseline row keeps its
absolute scores and every other row shows its difference to the baseline in percent of the baseline.
The best value per column is marked (bold; in CSV a `best` column) and is judged on absolute scores
with the baseline competing, so both modes mark the same cells; TER is best when lowest. Failed and
missing runs are listed on stderr, so stdout stays a clean table.
"""

from __future__ import annotations

import argparse
import csv
import io
import sys
from dataclasses import dataclass

from adaptsim.errors import UserError
from adaptsim.report.compare import Block, best, blocks, relative
from adaptsim.report.runs import finished_runs

ABSOLUTE_METRICS = ["BLEU", "SBLEU", "TER", "R0", "R1", "R0+1"]  # Table 1 then Table 2
RELATIVE_METRICS = ["BLEU", "SBLEU", "TER", "R0+1", "R0", "R1"]  # Table 5's order
FORMATS = ("md", "csv", "latex")


@dataclass
class Row:
    label: str
    run_dir: str
    is_baseline: bool
    shown: list[float | None]  # what the cell shows: absolute, or relative % for adapted rows in --relative
    best: list[bool]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="adaptsim table", description=__doc__.split("\n\n")[0])
    p.add_argument("dirs", nargs="+", metavar="DIR", help="sweep or run directories (searched recursively)")
    p.add_argument("--relative", action="store_true",
                   help="baseline absolute, other methods as relative difference in percent (Table 5)")
    p.add_argument("--format", choices=FORMATS, default="md", help="output format (default: md)")
    p.add_argument("--metrics", help="comma-separated metric keys, e.g. R0,R1,R0+1 or subword.R0 "
                   f"(default: {','.join(ABSOLUTE_METRICS)}; with --relative {','.join(RELATIVE_METRICS)})")
    p.add_argument("--decimals", type=int, help="digits after the point (default: 1, relative 0; csv: unrounded)")
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    found = finished_runs(args.dirs, "table")
    groups = blocks(found.runs)
    metrics = choose_metrics(args.metrics, RELATIVE_METRICS if args.relative else ABSOLUTE_METRICS, groups)
    tables = [(b, rows(b, metrics, args.relative)) for b in groups]
    render = {"md": markdown, "csv": to_csv, "latex": latex}[args.format]
    print(render(tables, metrics, args.relative, args.decimals), end="")
    if found.problems:
        print(f"adaptsim table: {len(found.problems)} run(s) failed or missing (listed above); "
              "the table shows the finished ones", file=sys.stderr)
    return 0


def choose_metrics(option: str | None, default: list[str], groups: list[Block]) -> list[str]:
    known = {k for b in groups for _, run in b.rows for k in run.scores}
    if option is None:
        return [m for m in default if m in known]
    metrics = [m.strip() for m in option.split(",") if m.strip()]
    unknown = [m for m in metrics if m not in known]
    if unknown or not metrics:
        raise UserError(f"unknown metric {', '.join(unknown) or '(none given)'}; these runs have: "
                        + ", ".join(sorted(known)))
    return metrics


def rows(block: Block, metrics: list[str], rel: bool) -> list[Row]:
    if rel:
        block.need_baseline("--relative")
    absolute = [[run.scores.get(m) for m in metrics] for _, run in block.rows]
    marks = list(zip(*(best(list(col), m) for col, m in zip(zip(*absolute), metrics))))
    base = [block.baseline.scores.get(m) for m in metrics] if block.baseline else []
    out = []
    for (label, run), values, mark in zip(block.rows, absolute, marks):
        is_base = run is block.baseline
        shown = [relative(v, b) for v, b in zip(values, base)] if rel and not is_base else values
        out.append(Row(label, str(run.dir), is_base, shown, list(mark)))
    return out


def _number(v: float | None, rel_cell: bool, decimals: int | None, empty: str) -> str:
    if v is None:
        return empty
    d = decimals if decimals is not None else (0 if rel_cell else 1)
    text = f"{v:+.{d}f}" if rel_cell else f"{v:.{d}f}"
    return f"{0:.{d}f}" if rel_cell and float(text) == 0 else text  # no "+0"/"-0": unchanged


def _caption(b: Block) -> str:
    return f"{b.dataset} · {b.segments} segments · data {b.fingerprint} · model {b.model} ({b.model_path})"


def _legend(rel: bool) -> str:
    what = ("baseline: absolute scores; other rows: difference to the baseline in percent of the baseline score"
            if rel else "scores in percent")
    return f"{what}; best per column marked (TER: lowest)"


def markdown(tables, metrics: list[str], rel: bool, decimals: int | None) -> str:
    out = []
    for block, rs in tables:
        out += [f"**{_caption(block)}**", "", "| method | " + " | ".join(metrics) + " |",
                "|:--" + "|--:" * len(metrics) + "|"]
        for r in rs:
            cells = [_number(v, rel and not r.is_baseline, decimals, "–") for v in r.shown]
            cells = [f"**{c}**" if m and c != "–" else c for c, m in zip(cells, r.best)]
            out.append(f"| {r.label.replace('|', '/')} | " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out + [f"_{_legend(rel)}._", ""])


def to_csv(tables, metrics: list[str], rel: bool, decimals: int | None) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["dataset", "data_fingerprint", "model", "method", "values", *metrics, "best", "run_dir"])
    for block, rs in tables:
        for r in rs:
            rel_row = rel and not r.is_baseline
            cells = [("" if v is None else repr(v)) if decimals is None else _number(v, rel_row, decimals, "")
                     for v in r.shown]
            w.writerow([block.dataset, block.fingerprint, block.model, r.label,
                        "relative %" if rel_row else "absolute", *cells,
                        ";".join(m for m, b in zip(metrics, r.best) if b), r.run_dir])
    return buf.getvalue()


_TEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{",
        "}": r"\}", "~": r"\textasciitilde{}", "^": r"\^{}"}


def _tex(text: str) -> str:
    return "".join(_TEX.get(c, c) for c in text)


def latex(tables, metrics: list[str], rel: bool, decimals: int | None) -> str:
    out = [f"% {_legend(rel)} (booktabs)", r"\begin{tabular}{l" + "r" * len(metrics) + "}", r"\toprule"]
    for i, (block, rs) in enumerate(tables):
        if i:
            out.append(r"\midrule")
        out += [f"% {_tex(_caption(block))}",
                rf"\textbf{{{_tex(block.dataset)}}} & " + " & ".join(map(_tex, metrics)) + r" \\", r"\midrule"]
        for r in rs:
            cells = [_number(v, rel and not r.is_baseline, decimals, "--") for v in r.shown]
            cells = ["$-$" + c[1:] if c.startswith("-") and c != "--" else c for c in cells]  # a minus, not a hyphen
            cells = [rf"\textbf{{{c}}}" if m and c != "--" else c for c, m in zip(cells, r.best)]
            label = _tex(r.label) if r.is_baseline else rf"\textit{{{_tex(r.label)}}}"
            out.append(f"{label} & " + " & ".join(cells) + r" \\")
    return "\n".join(out + [r"\bottomrule", r"\end{tabular}", ""])
