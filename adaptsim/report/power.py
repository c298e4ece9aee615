"""Effect sizes beside the paper's, and the power of a stream to show them (`adaptsim findings --effects/--power`).

`--effects`: every adapted method's difference to the baseline in percent of the baseline's score, with its 95%
interval (the paired document bootstrap of `table --significance`, baseline and method resampled together), beside
the paper's Table 5 number for the stream's counterpart set (adaptsim/report/paper.py).

`--power` separates "not reproduced" from "this stream cannot tell". Per finding:
- *detectable*: the half-width of the 95% interval of its differences (points; the largest of its parts): a true
  difference smaller than that is likely to come out "not significant" on a stream like this one;
- *the paper's effect*: its Table 5 relative numbers turned into points of this stream's baseline (the paper's
  relative difference × our baseline's score; for "lasso has the best R0" the gap between the other method's
  and lasso's relative numbers);
- *documents needed*: how many documents like these the paper's effect would need for 80% power at α = 0.05
  (two-sided): the interval's half-width shrinks as 1/√n, so n = n_here · (z₀.₉₇₅ + z₀.₈)² / z₀.₉₇₅² · (h / e)²
  — the usual normal approximation, with the bootstrap's half-width as 1.96 standard errors. For finding 5
  (closeness) it is the documents for every interval to fit within ±CLOSE around the paper's difference. A
  finding with several parts needs them all (the largest n); finding 8 can hold through any method (the smallest).
Where the paper's own number points the other way on its set, or is 0, no n is given: the paper did not show it
there either.
"""

from __future__ import annotations

import math

from adaptsim.report import paper
from adaptsim.report.markdown import head
from adaptsim.report.significance import Steps
from adaptsim.report.stats import units_of

Z_ALPHA, Z_POWER = 1.959964, 0.841621  # two-sided 5%, 80% power


def _paper_points(part, set_name: str, baseline_score: float) -> float | None:
    plus = paper.relative(set_name, part.plus, part.metric)
    minus = 0.0 if part.minus is None else paper.relative(set_name, part.minus, part.metric)
    if plus is None or minus is None:
        return None
    return (plus - minus) / 100 * baseline_score


def _needed(part, effect: float | None, n: int, close: float) -> float | None:
    """Documents for 80% power for one part (None: the paper's number is 0 or the other way)."""
    h = (part.diff.ci[1] - part.diff.ci[0]) / 2
    if effect is None or math.isnan(h):
        return None
    if part.sign == 0:  # closeness: the interval's half-width must fit in what ±close leaves around the effect
        room = close - abs(effect)
        return n * (h / room) ** 2 if room > 0 else None
    if effect * part.sign <= 0:
        return None
    return n * ((Z_ALPHA + Z_POWER) / Z_ALPHA * h / abs(effect)) ** 2


def power_markdown(block, findings, baseline, unit: str, close: float) -> str:
    set_name = paper.paper_set(block.dataset)
    n = units_of(Steps.of(baseline).doc_ids, unit)[1]
    lines = [f"_Power on {n} {unit}s, against the paper's Table 5 effects on {set_name} (adaptsim/report/power.py):_",
             "", *head("#", ["verdict here", "detectable (95% half-width, points)", "the paper's effect here (points)",
                             f"{unit}s needed for 80% power"])]
    for f in findings:
        if not f.ways:
            lines.append(f"| {f.number} | {f.verdict} | – | – | – |")
            continue
        best = None  # (needed, effects text, detectable) of the way that needs the fewest documents
        for way in f.ways:
            effects = [_paper_points(p, set_name, baseline.scores.get(p.metric, float("nan"))) for p in way]
            needs = [_needed(p, e, n, close) for p, e in zip(way, effects)]
            need = None if any(x is None for x in needs) else max(needs)
            text = "; ".join(f"{p.plus}{'' if p.minus is None else ' − ' + p.minus} {p.metric} "
                             + ("–" if e is None else f"{e:+.1f}") for p, e in zip(way, effects))
            h = max((p.diff.ci[1] - p.diff.ci[0]) / 2 for p in way)
            if best is None or (need is not None and (best[0] is None or need < best[0])):
                best = (need, text, h)
        need, text, h = best
        why = f"– (the paper's own difference is beyond ±{close:g})" if f.ways[0][0].sign == 0 \
            else "– (the paper: 0 or the other way)"
        lines.append(f"| {f.number} | {f.verdict} | {h:.2f} | {text} | {why if need is None else f'{math.ceil(need):,}'} |")
    return "\n".join(lines)


def effects_markdown(block, methods: list[str], result, metrics: list[str]) -> str:
    """`result`: the analysis of [baseline, *methods] on `metrics` (significance.analyse)."""
    set_name = paper.paper_set(block.dataset)
    lines = [f"_Relative to the baseline, % [95% interval], beside the paper's Table 5 on {set_name}:_", "",
             *head("method", [c for m in metrics for c in (f"{m} here", "paper")])]
    for i, method in enumerate(methods, 1):
        cells = []
        for metric in metrics:
            d = result.differences[i][metric]
            ours = "–" if math.isnan(d.relative) else f"{d.relative:+.0f} [{d.relative_ci[0]:+.0f}, {d.relative_ci[1]:+.0f}]"
            theirs = paper.relative(set_name, method, metric)
            cells += [ours, "–" if theirs is None else f"{theirs:+.0f}"]
        lines.append(f"| {method} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
