"""Effect sizes beside the paper's, and the power of a stream to show them (`adaptsim findings --effects/--power`).

`--effects`: every adapted method's difference to the baseline in percent of the baseline's score, with its 95%
interval (the paired document bootstrap of `table --significance`, baseline and method resampled together), beside
the paper's Table 5 number for the stream's counterpart set (adaptsim/report/paper.py).

`--power` separates "the data contradict the paper" from "this stream cannot tell". Per finding:
- *detectable*: the half-width of the 95% interval of its differences (points; the largest of its parts): a true
  difference smaller than that is likely to come out "same direction" on a stream like this one;
- *the paper's effect*: its Table 5 relative numbers turned into points of this stream's baseline (the paper's
  relative difference × our baseline's score; for "lasso has the best R0" the gap between the other method's
  and lasso's relative numbers);
- *documents needed*: the fewest documents like these at which the paper's effect has 80% power at α = 0.05
  (two-sided). A part's standard error at n documents is σ/√n, σ from this stream (its bootstrap half-width taken
  as 1.96 standard errors of its n documents); its power is that of a t test on n − 1 degrees of freedom,
  1 − F(t₀.₉₇₅ − |e|·√n/σ), which at few documents asks for more than the normal approximation did; a finding whose
  parts must all hold needs their joint power (the product: the parts taken as independent) at 80%; finding 8 can
  hold through any method (the method that needs the fewest). No n is below what the test can resolve
  (stats.min_units: 6 documents for the exact test), so no n is promised at which a finding cannot be significant.
  For finding 5 (closeness) it is the documents for every interval (t quantile) to fit within ±CLOSE around the
  paper's difference.
Where the paper's own number points the other way on its set, or is 0, no n is given: the paper did not show it
there either.
"""

from __future__ import annotations

import math

from scipy.stats import t as student_t

from adaptsim.report import paper
from adaptsim.report.markdown import head
from adaptsim.report.significance import Steps
from adaptsim.report.stats import min_units, units_of

Z_ALPHA = 1.959964  # two-sided 5%: the bootstrap half-width as this many standard errors
POWER = 0.8
MOST = 1_000_000  # documents beyond which "needed" is printed as more than this


def paper_points(part, set_name: str, baseline_score: float) -> float | None:
    """The paper's Table 5 difference for a part, in points of this stream's baseline score (None: no number)."""
    plus = paper.relative(set_name, part.plus, part.metric)
    minus = 0.0 if part.minus is None else paper.relative(set_name, part.minus, part.metric)
    if plus is None or minus is None:
        return None
    return (plus - minus) / 100 * baseline_score


def _sigma(part, n: int) -> float:
    """The per-document standard deviation of a part's difference, from its bootstrap interval on n documents."""
    return (part.diff.ci[1] - part.diff.ci[0]) / 2 / Z_ALPHA * math.sqrt(n)


def t_power(effect: float, sigma: float, n: int, alpha: float = 0.05) -> float:
    """The power of the two-sided test at level `alpha` of a difference on n units (a t test on n − 1 degrees of
    freedom; σ: one unit's standard deviation) against a true difference `effect`."""
    if sigma == 0:
        return 1.0
    return float(student_t.sf(student_t.ppf(1 - alpha / 2, n - 1) - abs(effect) * math.sqrt(n) / sigma, n - 1))


def _smallest(enough, start: int) -> int | None:
    """The smallest n ≥ start with enough(n) (monotone), or None beyond MOST."""
    if enough(start):
        return start
    high = start
    while not enough(high):
        if high > MOST:
            return None
        high *= 2
    low = high // 2
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if enough(mid) else (mid, high)
    return high


def needed(way, effects: list[float | None], n: int, close: float, floor: int) -> int | None:
    """Documents for 80% joint power of one way's parts (None: the paper's number is 0 or the other way, or more
    than MOST documents). Closeness (sign 0): every interval's half-width within what ±close leaves."""
    if any(e is None for e in effects) or any(math.isnan(p.diff.ci[0]) for p in way):
        return None
    sigmas = [_sigma(p, n) for p in way]
    if way[0].sign == 0:
        rooms = [close - abs(e) for e in effects]
        if min(rooms) <= 0:
            return None
        return _smallest(lambda m: all(student_t.ppf(0.975, m - 1) * s / math.sqrt(m) <= r
                                       for s, r in zip(sigmas, rooms)), floor)
    if any(p.sign * e <= 0 for p, e in zip(way, effects)):
        return None
    return _smallest(lambda m: math.prod(t_power(e, s, m) for e, s in zip(effects, sigmas)) >= POWER,
                     floor)


def power_markdown(block, findings, baseline, cfg, close: float) -> str:
    set_name = paper.paper_set(block.dataset)
    n = units_of(Steps.of(baseline).doc_ids, cfg.unit)[1]
    floor = min_units(cfg.effective(n))
    lines = [f"_Power on {n} {cfg.unit}s, against the paper's Table 5 effects on {set_name} "
             "(adaptsim/report/power.py):_",
             "", *head("#", ["verdict here", "detectable (95% half-width, points)", "the paper's effect here (points)",
                             f"{cfg.unit}s needed for 80% power"])]
    for f in findings:
        if not f.ways:
            lines.append(f"| {f.number} | {f.verdict} | – | – | – |")
            continue
        best = None  # (needed, effects text, detectable) of the way that needs the fewest documents
        for way in f.ways:
            effects = [paper_points(p, set_name, baseline.scores.get(p.metric, float("nan"))) for p in way]
            need = needed(way, effects, n, close, floor)
            text = "; ".join(f"{p.plus}{'' if p.minus is None else ' − ' + p.minus} {p.metric} "
                             + ("–" if e is None else f"{e:+.1f}") for p, e in zip(way, effects))
            h = max((p.diff.ci[1] - p.diff.ci[0]) / 2 for p in way)
            if best is None or (need is not None and (best[0] is None or need < best[0])):
                best = (need, text, h)
        need, text, h = best
        why = f"– (the paper's own difference is beyond ±{close:g})" if f.ways[0][0].sign == 0 \
            else "– (the paper: 0 or the other way, or over a million)"
        lines.append(f"| {f.number} | {f.verdict} | {h:.2f} | {text} | {why if need is None else f'{need:,}'} |")
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
            ours = ("–" if math.isnan(d.relative)
                    else f"{d.relative:+.0f} [{d.relative_ci[0]:+.0f}, {d.relative_ci[1]:+.0f}]")
            theirs = paper.relative(set_name, method, metric)
            cells += [ours, "–" if theirs is None else f"{theirs:+.0f}"]
        lines.append(f"| {method} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
