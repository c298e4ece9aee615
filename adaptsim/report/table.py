"""`adaptsim table DIR…`: the paper's tables from finished runs (Tables 1, 2 absolute; Table 5 relative).

Rows are methods, columns metrics, one block per data set. With --relative the baseline row keeps its
absolute scores and every other row shows its difference to the baseline in percent of the baseline.
The best value per column is marked (bold; in CSV a `best` column) and is judged on absolute scores
with the baseline competing, so both modes mark the same cells; TER and the translator's effort (KSMR, KSR,
WSR, MAR: `metrics.interactive`) are best when lowest. Failed and
missing runs are listed on stderr, so stdout stays a clean table.

--significance marks (†) the cells of adapted runs that differ from the baseline at p < 0.05 (by default the paired
randomisation test over documents, whose inverted 95% interval then excludes 0; ? where a Monte Carlo p is still
within its error of 0.05 at the most trials) and --ci adds 95% intervals (of the score: bootstrap; with --relative,
of the relative difference: the test's), from the per-segment statistics in steps.jsonl (adaptsim.report.stats);
the footer names the test and its signature.

--cost adds what each method costs (summary.json `cost`): the median milliseconds per adaptation step (an SGD
step, or memory's store of a pair) and the median bytes to store one document's adapted state (the changed
offsets θ − θ0; lora's adapters; memory's keys and values), each document's measured at its end; and, where a run
of the block has them, tm's moments of adaptation (their updates and seconds in all), the simulated translator's
prefix searches (`metrics.interactive`: searches and seconds per segment) and a decoder-only model's prompts (tokens
and quoted context pairs per segment, and the seconds a translation took: icl's cost is its longer prompts).
"""

from __future__ import annotations

import argparse
import csv
import io
import math
import sys
from dataclasses import dataclass, field

from adaptsim.errors import UserError
from adaptsim.metrics import cxmi, effort, sacre
from adaptsim.report import significance as sig
from adaptsim.report.blocks import LOWER_IS_BETTER, Block, best, blocks, relative
from adaptsim.report.markdown import head
from adaptsim.report.notes import note, notes
from adaptsim.report.runs import finished_runs

EFFORT = ["KSMR", "WSR", "MAR"]  # the simulated translator's effort, where the runs have it (metrics.interactive)
ABSOLUTE_METRICS = ["BLEU", "SBLEU", "TER", "R0", "R1", "R0+1", *EFFORT]  # Table 1 then Table 2
RELATIVE_METRICS = ["BLEU", "SBLEU", "TER", "R0+1", "R0", "R1", *EFFORT]  # Table 5's order
FORMATS = ("md", "csv", "latex")
CXMI_PLACES = 3  # digits of the CXMI columns (nats) unless --decimals says otherwise
# --cost: column, summary.json `cost` key (dotted: nested), digits (None: a size); the first two always, the others
# where a run of the block has them (tm's moments of adaptation; the simulated translator's searches; prompts)
COST = [("ms/step", "step_ms_median", 1), ("state", "state_bytes_median", None),
        ("tm updates", "temporary.updates", 0), ("tm s", "temporary.seconds", 1),
        ("IMT calls/seg", "interactive.decoder_calls_per_segment", 1),
        ("IMT s/seg", "interactive.seconds_per_segment", 2),
        ("prompt tok/seg", "prompt.tokens_per_segment", 0),
        ("context pairs/seg", "prompt.context_pairs_per_segment", 1),
        ("translate s/seg", "prompt.translate_s_per_segment", 3)]
ALWAYS_COST = 2


@dataclass
class Row:
    label: str
    run_dir: str
    is_baseline: bool
    shown: list[float | None]  # what the cell shows: absolute, or relative % for adapted rows in --relative
    best: list[bool]
    p: list[float | None] | None = None  # p-value of the difference to the baseline (--significance)
    unsettled: list[bool] | None = None  # per cell: a Monte Carlo p still straddling ALPHA (--significance)
    ci: list[tuple[float, float] | None] | None = None  # 95% interval of what the cell shows (--ci)
    cost: dict[str, float | None] | None = None  # --cost: the summary's COST figures, by key (the block's columns)
    relative: list[bool] = field(default_factory=list)  # per cell: shows a relative difference (--relative)
    places: list[int | None] = field(default_factory=list)  # per cell: digits unless --decimals says (CXMI: 3)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="adaptsim table", description=__doc__.split("\n\n")[0])
    p.add_argument("dirs", nargs="+", metavar="DIR", help="sweep or run directories (searched recursively)")
    p.add_argument("--relative", action="store_true",
                   help="baseline absolute, other methods as relative difference in percent (Table 5)")
    p.add_argument("--format", choices=FORMATS, default="md", help="output format (default: md)")
    p.add_argument("--metrics", help="comma-separated metric keys, e.g. R0,R1,R0+1 or subword.R0, or CXMI, "
                   "CXMI/seg and CXMI.sent (nats per token / per segment / per token averaged over segments, "
                   "the paper's scale, gained over the baseline; shown absolute with --relative) "
                   f"(default: {','.join(ABSOLUTE_METRICS)}; with --relative {','.join(RELATIVE_METRICS)})")
    p.add_argument("--decimals", type=int, help="digits after the point (default: 1, relative 0; csv: unrounded)")
    p.add_argument("--significance", action="store_true",
                   help=f"mark ({sig.MARK}) cells that differ from the baseline at p < {sig.ALPHA} (the default "
                   "test: paired randomisation over documents, whose inverted 95%% interval then excludes 0; "
                   f"{sig.UNSETTLED}: a Monte Carlo p still within its error of {sig.ALPHA} at the most trials)")
    p.add_argument("--ci", action="store_true", help="show 95%% intervals in the cells (a score's: bootstrap; with "
                   "--relative, the difference's: the test's)")
    p.add_argument("--bands-by-match", action="store_true",
                   help="also R1 and R1+ split by the fuzzy match (100, 95–99, 75–94, <75) between the sentence and "
                   "the one where the word was last seen, with intervals (needs a baseline run)")
    p.add_argument("--cost", action="store_true", help="add columns: median ms per adaptation step, median bytes "
                   "to store one document's adapted state; tm's moments and the simulated translator's searches "
                   "where runs have them")
    sig.add_arguments(p)
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    found = finished_runs(args.dirs, "table")
    groups = blocks(found.runs)
    metrics = choose_metrics(args.metrics, RELATIVE_METRICS if args.relative else ABSOLUTE_METRICS, groups)
    cfg = sig.settings(args) if args.significance or args.ci else None
    tables = []
    for b in groups:
        sig.check_effort([run for _, run in b.rows], metrics)
        if any(m in cxmi.METRICS for m in metrics):
            b.need_baseline("CXMI")
            sig.scores([run for _, run in b.rows], metrics)
        result = None
        if cfg is not None:
            b.need_baseline("--significance" if args.significance else "--ci")
            result = sig.analyse([run for _, run in b.rows], metrics, cfg, "table")
        rs = rows(b, metrics, args.relative, result, args.significance, args.ci)
        if args.cost:
            costs = [{key: _lookup(run.summary.get("cost") or {}, key) for _, key, _ in COST} for _, run in b.rows]
            keys = [key for i, (_, key, _) in enumerate(COST)
                    if i < ALWAYS_COST or any(c[key] is not None for c in costs)]
            for r, cost in zip(rs, costs):
                r.cost = {key: cost[key] for key in keys}
        tables.append((b, rs, result))
    render = {"md": markdown, "csv": to_csv, "latex": latex}[args.format]
    print(render(tables, metrics, args.relative, args.decimals), end="")
    if args.bands_by_match:
        from adaptsim.report import match_bands

        for b in groups:
            b.need_baseline("--bands-by-match")
            analysis = match_bands.analyse([run for _, run in b.rows], sig.settings(args))
            print("\n" + match_bands.render(b, [label for label, _ in b.rows], analysis), end="")
    if found.problems:
        print(f"adaptsim table: {len(found.problems)} run(s) failed or missing (listed above); "
              "the table shows the finished ones", file=sys.stderr)
    return 0


def choose_metrics(option: str | None, default: list[str], groups: list[Block]) -> list[str]:
    known = {k for b in groups for _, run in b.rows for k in run.scores} | set(cxmi.METRICS)
    if option is None:  # the effort columns by default only where every run has them (metrics.interactive)
        runs = [run for b in groups for _, run in b.rows]
        return [m for m in default if m in known and (m not in EFFORT or all(m in run.scores for run in runs))]
    metrics = [m.strip() for m in option.split(",") if m.strip()]
    unknown = [m for m in metrics if m not in known]
    if unknown or not metrics:
        raise UserError(f"unknown metric {', '.join(unknown) or '(none given)'}; these runs have: "
                        + ", ".join(sorted(known)))
    return metrics


def rows(block: Block, metrics: list[str], rel: bool, result=None, marks: bool = False,
         intervals: bool = False) -> list[Row]:
    """The block's rows; with a significance `result` (runs in block order, baseline first) p-values
    (`marks`) and intervals (`intervals`) of what each cell shows."""
    if rel:
        block.need_baseline("--relative")
    absolute = [[run.scores.get(m) for m in metrics] for _, run in block.rows]
    bests = list(zip(*(best(list(col), m) for col, m in zip(zip(*absolute), metrics))))
    base = [block.baseline.scores.get(m) for m in metrics] if block.baseline else []
    out = []
    for i, ((label, run), values, best_marks) in enumerate(zip(block.rows, absolute, bests)):
        is_base = run is block.baseline
        shown = [relative(v, b) if m not in cxmi.METRICS else v for v, b, m in zip(values, base, metrics)] \
            if rel and not is_base else values
        row = Row(label, str(run.dir), is_base, shown, list(best_marks),
                  relative=[rel and not is_base and m not in cxmi.METRICS for m in metrics],
                  places=[CXMI_PLACES if m in cxmi.METRICS else None for m in metrics])
        if result is not None and marks and not is_base:
            row.p = [result.differences[i][m].p for m in metrics]
            row.unsettled = [result.differences[i][m].straddles(sig.ALPHA) for m in metrics]
        if result is not None and intervals:
            row.ci = [result.differences[i][m].relative_ci if is_rel else result.scores[i][m].ci
                      for m, is_rel in zip(metrics, row.relative)]
        out.append(row)
    return out


def _number(v: float | None, rel_cell: bool, decimals: int | None, empty: str) -> str:
    if v is None:
        return empty
    if math.isinf(v):  # an interval the test cannot bound (too few units to reject any difference)
        return "+∞" if v > 0 else "−∞"
    d = decimals if decimals is not None else (0 if rel_cell else 1)
    text = f"{v:+.{d}f}" if rel_cell else f"{v:.{d}f}"
    return f"{0:.{d}f}" if rel_cell and float(text) == 0 else text  # no "+0"/"-0": unchanged


def _effort_note(b: Block, metrics: list[str]) -> str | None:
    """How the block's effort columns were counted (its runs counted alike: `sig.check_effort`)."""
    return effort.note(b.rows[0][1].summary, metrics)


def _legend(rel: bool, metrics: list[str]) -> str:
    what = ("baseline: absolute scores; other rows: difference to the baseline in percent of the baseline score"
            if rel else "scores in percent")
    if any(m in cxmi.METRICS for m in metrics):
        what += "; CXMI: nats per token, CXMI/seg: nats per segment, CXMI.sent: nats per token averaged over " \
                "segments (the paper's scale), gained over the baseline (absolute)"
    lowest = [m for m in metrics if m.split(".")[-1] in LOWER_IS_BETTER]
    return f"{what}; best per column marked" + (f" ({', '.join(lowest)}: lowest)" if lowest else "")


def _nan(v: float | None) -> float | None:
    return None if v is None or v != v else v


def _cell(r: Row, j: int, v: float | None, decimals: int | None, empty: str) -> str:
    """Cell j's number `v` as the row shows it (relative or absolute, its digits)."""
    return _number(v, r.relative[j], decimals if decimals is not None else r.places[j], empty)


def _extras(r: Row, j: int, decimals: int | None, empty: str, mark: str) -> str:
    """What --significance and --ci add after a cell's number: the mark, the interval."""
    text = "" if r.p is None else sig.UNSETTLED if r.unsettled[j] else mark if sig.significant(r.p[j]) else ""
    if r.ci is not None and r.ci[j] is not None and _nan(r.ci[j][0]) is not None:
        low, high = (_cell(r, j, _nan(v), decimals, empty) for v in r.ci[j])
        text += f" [{low}, {high}]"
    return text


def _size(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    raise AssertionError


def _lookup(cost: dict, key: str):
    for part in key.split("."):
        cost = cost.get(part) if isinstance(cost, dict) else None
    return cost


def _cost_columns(rs: list[Row]) -> list[str]:
    """The block's --cost column labels (none without --cost)."""
    keys = next((r.cost for r in rs if r.cost is not None), {})
    return [label for label, key, _ in COST if key in keys]


def _cost_cells(r: Row, empty: str) -> list[str]:
    """--cost's cells: COST's digits, sizes in B/kB/MB/GB (powers of 1000)."""
    if r.cost is None:
        return []
    digits = {key: d for _, key, d in COST}
    return [empty if v is None else _size(v) if digits[key] is None else f"{v:.{digits[key]}f}"
            for key, v in r.cost.items()]


def _footer(result) -> str:
    return f"{sig.footer(result)}; signature {result.signature}"


def markdown(tables, metrics: list[str], rel: bool, decimals: int | None) -> str:
    out = []
    for block, rs, result in tables:
        extra = _cost_columns(rs)
        out += [f"**{block.caption}**", "", *head("method", metrics + extra)]
        for r in rs:
            cells = [_cell(r, j, v, decimals, "–") for j, v in enumerate(r.shown)]
            cells = [f"**{c}**" if m and c != "–" else c for c, m in zip(cells, r.best)]
            cells = [c + _extras(r, j, decimals, "–", sig.MARK) for j, c in enumerate(cells)]
            cells += _cost_cells(r, "–")
            out.append(f"| {r.label.replace('|', '/')} | " + " | ".join(cells) + " |")
        out.append("")
        if result is not None:
            out += [f"_{_footer(result)}._", ""]
        if counted := _effort_note(block, metrics):
            out += [f"_{counted}._", ""]
        if tokenised := sacre.note(block.rows[0][1].summary.get("signatures") or {}, metrics):
            out += [f"_{tokenised}._", ""]
        for n in notes(block.rows):
            out += [f"_Note: {n}._", ""]
    return "\n".join(out + [f"_{_legend(rel, metrics)}._", ""])


def to_csv(tables, metrics: list[str], rel: bool, decimals: int | None) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    with_p = any(r.p is not None for _, rs, _ in tables for r in rs)
    with_ci = any(r.ci is not None for _, rs, _ in tables for r in rs)
    extra = ([f"p {m}" for m in metrics] if with_p else []) + \
        ([f"{m} {end}" for m in metrics for end in ("low", "high")] if with_ci else [])
    with_cost = any(r.cost is not None for _, rs, _ in tables for r in rs)
    cost = [key for _, key, _ in COST if any(key in (r.cost or {}) for _, rs, _ in tables for r in rs)]
    with_note = any(notes(block.rows) for block, _, _ in tables)
    w.writerow(["dataset", "data_fingerprint", "model", "method", "values", *metrics, *cost, "best", "run_dir",
                *extra, *(["significance"] if extra else []), *(["note"] if with_note else [])])
    for block, rs, result in tables:
        run_of = {str(run.dir): (label, run) for label, run in block.rows}
        for r in rs:
            rel_row = rel and not r.is_baseline
            cells = [("" if v is None else repr(v)) if decimals is None else _number(v, r.relative[j], decimals, "")
                     for j, v in enumerate(r.shown)]
            more = (([("" if _nan(p) is None else repr(p)) for p in r.p] if r.p else [""] * len(metrics))
                    if with_p else [])
            if with_ci:
                more += [("" if _nan(v) is None else repr(v)) if decimals is None
                         else _number(_nan(v), r.relative[j], decimals, "")
                         for j, ci in enumerate(r.ci or [(None, None)] * len(metrics)) for v in ci]
            w.writerow([block.dataset, block.fingerprint, block.model, r.label,
                        "relative %" if rel_row else "absolute", *cells,
                        *(["" if (r.cost or {}).get(k) is None else repr(r.cost[k]) for k in cost]
                          if with_cost else []),
                        ";".join(m for m, b in zip(metrics, r.best) if b), r.run_dir, *more,
                        *([result.signature if result else ""] if extra else []),
                        *([note(run_of[r.run_dir][1], r.label) or ""] if with_note else [])])
    return buf.getvalue()


_TEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{",
        "}": r"\}", "~": r"\textasciitilde{}", "^": r"\^{}"}


def _tex(text: str) -> str:
    return "".join(_TEX.get(c, c) for c in text)


def _tex_extras(text: str) -> str:
    """An interval in LaTeX: thin space before it, minus signs not hyphens (an empty bound "--" stays)."""
    if " [" not in text:
        return text
    mark, interval = text.split(" [", 1)
    tex = {"−∞": r"$-\infty$", "+∞": r"$+\infty$"}
    bounds = [b if b == "--" else tex.get(b) or b.replace("-", "$-$") for b in interval.rstrip("]").split(", ")]
    return mark + r"\,[" + ", ".join(bounds) + "]"


def latex(tables, metrics: list[str], rel: bool, decimals: int | None) -> str:
    out = [f"% {_legend(rel, metrics)} (booktabs)", r"\begin{tabular}{l" + "r" * len(metrics) + "}", r"\toprule"]
    for i, (block, rs, result) in enumerate(tables):
        extra = _cost_columns(rs)
        if i:
            out.append(r"\midrule")
        if result is not None:
            out.append(f"% {_tex(_footer(result))}")
        if counted := _effort_note(block, metrics):
            out.append(f"% {_tex(counted)}")
        if tokenised := sacre.note(block.rows[0][1].summary.get("signatures") or {}, metrics):
            out.append(f"% {_tex(tokenised)}")
        out += [f"% Note: {_tex(n)}" for n in notes(block.rows)]
        out += [f"% {_tex(block.caption)}",
                rf"\textbf{{{_tex(block.dataset)}}} & " + " & ".join(map(_tex, metrics + extra)) + r" \\", r"\midrule"]
        for r in rs:
            cells = [_cell(r, j, v, decimals, "--") for j, v in enumerate(r.shown)]
            cells = ["$-$" + c[1:] if c.startswith("-") and c != "--" else c for c in cells]  # a minus, not a hyphen
            cells = [rf"\textbf{{{c}}}" if m and c != "--" else c for c, m in zip(cells, r.best)]
            cells = [c + _tex_extras(_extras(r, j, decimals, "--", r"$^\dagger$")) for j, c in enumerate(cells)]
            cells += _cost_cells(r, "--")
            label = _tex(r.label) if r.is_baseline else rf"\textit{{{_tex(r.label)}}}"
            out.append(f"{label} & " + " & ".join(cells) + r" \\")
    return "\n".join(out + [r"\bottomrule", r"\end{tabular}", ""])
