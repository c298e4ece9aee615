"""`adaptsim compare RUN_A RUN_B [RUN_C…]`: each run's scores with 95% intervals, and every later run's
difference to RUN_A with its interval and p-value (paired, on the per-segment statistics of steps.jsonl).

RUN_A is usually the baseline (method=none), but any run can be the reference: runs are paired segment by
segment, so all must be on the same data (data_fingerprint) and scored with the same metric settings, and of one
model (model_fingerprint; model_path for runs that do not record it).

`--flips` adds, for every later run, the R0 and R1 occurrences it gained against RUN_A (RUN_A's hypothesis lacked the
word, its own held it) and lost (the reverse): a difference in recall is gained − lost, and a net difference of 0 can
hide many of both. It reads the hypotheses, so it needs the runs' own records, not text-free ones.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from adaptsim.errors import UserError
from adaptsim.metrics import cxmi, effort, sacre
from adaptsim.metrics.roles import Roles
from adaptsim.report import significance as sig
from adaptsim.report.blocks import LOWER_IS_BETTER, labels, one_model, same_scoring
from adaptsim.report.notes import notes
from adaptsim.report.runs import Run, discover

DEFAULT_METRICS = "BLEU,SBLEU,TER,chrF,R0,R1,R0+1,KSMR,WSR,MAR"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="adaptsim compare", description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="+", metavar="RUN", help="run directories; the first is the reference")
    p.add_argument("--metrics", default=DEFAULT_METRICS,
                   help="comma-separated metric keys; those the runs lack are left out; CXMI, CXMI/seg and CXMI.sent "
                   "(nats gained over RUN_A, which must be method=none; adaptsim.metrics.cxmi) "
                   f"(default: {DEFAULT_METRICS})")
    p.add_argument("--json", action="store_true", help="print JSON instead of a text table")
    p.add_argument("--decimals", type=int, default=1, help="digits after the point in the text table (default: 1)")
    p.add_argument("--flips", action="store_true",
                   help="the R0 and R1 occurrences each later run gained and lost against RUN_A (needs hypotheses)")
    sig.add_arguments(p)
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    if len(args.runs) < 2:
        raise UserError("compare needs at least two run directories")
    runs = [_one_run(path) for path in args.runs]
    same_scoring(runs, decoding=False)  # one way of scoring, or the first difference named (decodings: labelled)
    one_model(runs)  # methods compared on one model: known by its files (the path for runs recorded before)
    wanted = [m.strip() for m in args.metrics.split(",") if m.strip()]
    sig.scores(runs, wanted)  # CXMI, if asked for: RUN_A must then be the baseline (method=none)
    metrics = [m for m in wanted if all(m in r.scores for r in runs)]
    if not metrics:
        raise UserError(f"none of {', '.join(wanted)} is scored in every run")
    result = sig.analyse(runs, metrics, sig.settings(args), "compare")
    names = labels(runs)
    found = flips(runs) if args.flips else None
    if args.json:
        print(json.dumps(as_json(runs, names, metrics, result) | ({"flips": dict(zip(names[1:], found))}
                                                                  if found else {}), indent=2))
    else:
        print(text(runs, names, metrics, result, args.decimals))
        if found:
            print("\n".join(["", f"occurrences gained and lost against {names[0]} (its hypothesis lacked the word and "
                                "the run's held it, and the reverse):"] +
                             [f"  {name}: " + "; ".join(f"{level} +{f['gained']} −{f['lost']} of {f['occurrences']}"
                                                       for level, f in by.items())
                              for name, by in zip(names[1:], found)]))
    return 0


def flips(runs: list[Run]) -> list[dict]:
    """Per later run, {R0, R1: {gained, lost, occurrences}} against runs[0], by the runs' own counting (their words
    and scope: adaptsim.metrics.roles, as their evaluator counted R0 and R1)."""
    steps = [sig.Steps.of(r) for r in runs]
    if any("hypothesis" not in row for s in steps for row in s.rows):
        raise UserError("--flips needs the hypotheses, which a text-free record does not hold "
                        "(scripts/experiments/export_runs.py); compare the runs themselves")
    roles = Roles.of_run(steps[0])
    base = [roles.words(row["hypothesis"]) for row in steps[0].rows]
    out = []
    for s in steps[1:]:
        by = {}
        for k, level in enumerate(("R0", "R1")):
            gained = lost = occurrences = 0
            for i, row in enumerate(s.rows):
                held, words = roles.words(row["hypothesis"]), roles.levels[i][k]
                gained += len({w for w in words if w in held and w not in base[i]})
                lost += len({w for w in words if w in base[i] and w not in held})
                occurrences += len(words)
            by[level] = {"gained": gained, "lost": lost, "occurrences": occurrences}
        out.append(by)
    return out


def _one_run(path: str) -> Run:
    found = discover([path])
    if found.problems and not found.runs:
        raise UserError(str(found.problems[0]))
    if len(found.runs) != 1:
        raise UserError(f"{path}: {len(found.runs)} finished runs below it; compare takes run directories")
    return found.runs[0]


def _f(v: float) -> float | None:
    """A number for JSON: null where there is none, or an interval is unbounded (too few units to reject)."""
    return None if v is None or not math.isfinite(v) else v


def as_json(runs: list[Run], labels: list[str], metrics: list[str], result) -> dict:
    out = {"signature": result.signature, "test": result.settings.effective(result.units), "unit": result.settings.unit,
           "units": result.units, "resamples": result.settings.resamples, "seed": result.settings.seed,
           "alpha": sig.ALPHA, "runs": [{"label": lb, "run_dir": str(r.dir), "method": r.method}
                                        for lb, r in zip(labels, runs)],
           "metrics": {}}
    if said := notes(zip(labels, runs)):
        out["notes"] = said
    if effort.note(runs[0].summary, metrics):  # how the effort was counted (the runs' alike: sig.check_effort)
        out["effort"] = effort.counting(runs[0].summary)
    if tokenised := sacre.note(runs[0].summary.get("signatures") or {}, metrics):  # not 13a/TERCOM: said
        out["tokenisation"] = tokenised
    for m in metrics:
        rows = []
        for i in range(len(runs)):
            est = result.scores[i][m]
            row = {"score": _f(est.score), "ci": [_f(v) for v in est.ci]}
            if i:
                d = result.differences[i][m]
                row |= {"diff": _f(d.diff), "diff_ci": [_f(v) for v in d.ci], "relative": _f(d.relative),
                        "relative_ci": [_f(v) for v in d.relative_ci], "p": _f(d.p),
                        "significant": sig.mark(d) == sig.MARK}
                if d.p_range is not None:  # a Monte Carlo p: its interval and the trials behind it
                    row |= {"p_range": [_f(v) for v in d.p_range], "trials": d.trials}
            rows.append(row)
        out["metrics"][m] = rows
    return out


def text(runs: list[Run], labels: list[str], metrics: list[str], result, decimals: int) -> str:
    def num(v: float, signed: bool = False) -> str:
        return "–" if v is None or math.isnan(v) else sig.bound(v, places, signed)

    table = [["metric", "run", "score [95% CI]", f"Δ to {labels[0]} [95% CI]", "p"]]
    for m in metrics:
        places = max(decimals, 3) if m in cxmi.METRICS else decimals  # CXMI: nats, a few tenths
        for i, label in enumerate(labels):
            est = result.scores[i][m]
            cells = [m + (" (lower is better)" if m.split(".")[-1] in LOWER_IS_BETTER else "") if i == 0 else "",
                     label, f"{num(est.score)} [{num(est.ci[0])}, {num(est.ci[1])}]"]
            if i:
                d = result.differences[i][m]
                p = "–" if math.isnan(d.p) else f"{d.p:.4f}" + (f" {sig.mark(d)}" if sig.mark(d) else "")
                cells += [f"{num(d.diff, True)} [{num(d.ci[0], True)}, {num(d.ci[1], True)}]", p]
            else:
                cells += ["", ""]
            table.append(cells)
    widths = [max(len(row[j]) for row in table) for j in range(5)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in table]
    runs_line = "; ".join(f"{lb}: {_shown(Path(r.dir))}" for lb, r in zip(labels, runs))
    return "\n".join([f"{runs[0].dataset} · {runs[0].summary.get('segments', '?')} segments · "
                      f"data {runs[0].fingerprint}",
                      "", *lines, "", f"{sig.footer(result).replace('the baseline', labels[0])}",
                      f"signature: {result.signature}",
                      *([counted] if (counted := effort.note(runs[0].summary, metrics)) else []),
                      *([tokenised] if (tokenised := sacre.note(runs[0].summary.get("signatures") or {}, metrics))
                        else []),
                      f"runs: {runs_line}",
                      *(f"Note: {n}" for n in notes(zip(labels, runs)))])


def _shown(path: Path) -> Path:
    """A run's directory relative to the working directory where it is below it: a printed comparison made in a
    checkout names no machine's paths."""
    try:
        return path.relative_to(Path.cwd().resolve())
    except ValueError:
        return path
