"""Effect sizes beside the paper's, and the power of a stream to show them (`adaptsim findings --effects/--power`).

`--effects`: every adapted method's difference to the baseline in percent of the baseline's score, with its 95%
interval (the test inverted, as `findings` prints it), beside the paper's Table 5 number for the stream's
counterpart set (adaptsim/report/paper.py).

`--power` separates "the data contradict the paper" from "this stream cannot tell", at the level each finding is
actually tested at. A finding's p is multiplied by its Bonferroni factor f and then by the step-down's
(findings.step_down): before any other test is rejected its factor is m, the findings in the stream's family (those
with parts, less "not the paper's"). So the level used is the conservative one of its first step, α' = α / (m · f),
f the factor of the finding's rule in the paper's direction: the number of ways for "any method" (8: its methods),
1 otherwise ("every part must hold" and closeness are intersection-union tests: each part at α', no factor). Per
finding:

- *σ*: one document's standard deviation of a part's difference, from the standard error of the randomisation test
  that decides (`diff.se`, √ of the mean squared permuted difference; not a bootstrap interval, which covers ~85%
  at 5 documents). se·√n is the documents' root mean square difference, the spread under H0: Δ = 0; the test's
  power under an effect follows the spread about the mean (the sign-flip statistic is a monotone function of the
  t statistic), so σ² = (n·se² − δ²) · n/(n − 1), exact for equally weighted documents. Uncentred, a stream with
  a difference of one σ would be told 29 documents where 16 give 80% (tests/test_power.py simulates the test). A
  part without σ (no difference, a test without randomisation, no spread) gives "–".
- *power here*: the joint power of the paper's effect on these n documents at α', the product of the parts' (taken
  as independent); 0 below the floor (see *documents needed*). A part's power against a true difference e is the
  randomisation test's, modelled on normal per-document differences: beyond SIMULATED = 12 documents that of a t
  test on n − 1 degrees of freedom in the paper's direction, P(T′ > t₁₋α'/₂), T′ noncentral t with noncentrality
  |e|·√n/σ (the sign-flip statistic is a monotone function of the t statistic; the shifted central t,
  1 − F(t₁₋α'/₂ − |e|·√n/σ) of `t_power`, is 1 to 2 points too high); up to 12, where the exact test at α/7 is
  nearly a sign test and a t test promises too much (at 9 documents 87% where the test has 62%), the exact test
  itself on 2,000 simulated streams (`_exact_power`). Against stats.compare on simulated streams
  (tests/test_power.py) it is within the simulation's error, about 2 points.
- *held tails*: each part's test holds its tails against its metric's skew bound (findings.SKEW, stats.held), which
  is the randomisation test at a lower level (`level`: stats.randomisation_level of α' on n documents); power,
  detectable and needed are that test's, the floor its smallest held p.
- *detectable*: the smallest true difference that one part shows with 80% power at α' on these n documents (beyond
  12 documents a little above (t₁₋α'/₂ + t₀.₈)·σ/√n), the largest of the finding's parts; not the 95% half-width,
  which is found half of the time at α = 0.05.
- *the paper's effect*: its Table 5 relative numbers turned into points of this stream's baseline (the paper's
  relative difference × our baseline's score; for "lasso has the best R0" the gap between the other method's and
  lasso's relative numbers).
- *documents needed*: the fewest documents at which the joint power at α' reaches 80%, and never fewer than the
  floor: the fewest n from which max(m, f) · (the smallest p the test can give on n, `stats.smallest_p`) < α,
  the smallest p the adjustment can reach (every other finding at the smallest p, this one last), since below it
  no difference can be significant (m = 7: 9 documents, finding 8's f = 5 too). α' = α/(m·f) is conservative: the
  level of the step-down's first step, below what a finding later in its order is tested at.
- finding 8 (any method): the method whose way needs the fewest documents is shown.
- finding 5 (closeness, no f): each metric's one-sided tests of H0: Δ = ±margin (the margin: findings.CLOSE % of
  the baseline's score, the part's `effect`) must both reject at α' = α / m (the TOST), and every metric must hold;
  power at a true difference of 0 (what the finding claims), the metrics' product. With se = σ/√n and the estimate
  taken as normal, P_k = max(0, 2Φ(margin/se − t) − 1); t is the randomisation test's threshold on the estimate's
  scale, z·√((n − 1)/(n − z²)), z = z₁₋α', not t₁₋α': its null spread is the root mean square of the documents'
  differences to ±margin, which includes the distance to the margin itself (solving δ − margin against z times that
  spread gives it). With Student's t the power is 3 to 7 points too high from 12 to 30 documents; with it, 1 to 2
  points too high at 80 to 150 and too low below 20 (up to 12: the simulated exact test). "detectable" is "–" (a
  closeness, not a difference); the power is in "power here".
Where the paper's own number points the other way on its set, or is 0 (finding 5: beyond its margin), no n is given:
the paper did not show it there either. More than MOST documents is printed as such.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy.stats import nct, norm
from scipy.stats import t as student_t

from adaptsim.report import paper
from adaptsim.report.markdown import head
from adaptsim.report.significance import Steps, bound
from adaptsim.report.stats import ALPHA, randomisation_level, smallest_p, units_of

POWER = 0.8
MOST = 1_000_000  # documents beyond which "needed" is printed as more than this
SIMULATED = 12  # up to this many documents the power is the exact test's, simulated (module docstring)
DRAWS = 2000  # samples of that simulation
_BEYOND = 65  # from here on (2⁶⁴ distinct outcomes) the smallest p the test can give no longer changes with n


def paper_points(part, set_name: str, baseline_score: float) -> float | None:
    """The paper's Table 5 difference for a part, in points of this stream's baseline score (None: no number)."""
    plus = paper.relative(set_name, part.plus, part.metric)
    minus = 0.0 if part.minus is None else paper.relative(set_name, part.minus, part.metric)
    if plus is None or minus is None:
        return None
    return (plus - minus) / 100 * baseline_score


def sigma(part, n: int) -> float | None:
    """One document's standard deviation of a part's difference on n documents, from the randomisation test's
    standard error: √((n·se² − δ²) · n/(n − 1)), se·√n centred on the observed δ (module docstring). None: no
    difference, no randomisation standard error, fewer than 2 documents, or no spread."""
    se, delta = part.diff.se, part.diff.diff
    if se is None or not math.isfinite(se) or not math.isfinite(delta) or n < 2:
        return None
    spread = (n * se * se - delta * delta) * n / (n - 1)
    return math.sqrt(spread) if spread > 0 else None


def t_power(effect: float, sigma: float, n: int, alpha: float = ALPHA) -> float:
    """The power of the two-sided test at level `alpha` of a difference on n units in the direction of `effect`
    (a t test on n − 1 degrees of freedom; σ: one unit's standard deviation)."""
    if n < 2:
        return 0.0
    if sigma == 0:
        return 1.0
    return float(student_t.sf(student_t.ppf(1 - alpha / 2, n - 1) - abs(effect) * math.sqrt(n) / sigma, n - 1))


@lru_cache(maxsize=4096)
def _exact_power(shift: float, n: int, alpha: float, closeness: bool) -> float:
    """The power of the exact randomisation test (every one of the 2ⁿ⁻¹ swap patterns, as stats.py's "exact") on n
    equally weighted documents whose differences are normal with sd 1, from DRAWS samples (seeded by n: common
    draws, so the power grows with `shift`). Directional: mean `shift`, two-sided p < alpha and the difference > 0.
    Closeness: mean 0, |difference| < `shift` and both H0: Δ = ±shift rejected at two-sided p < alpha, one-sided
    alpha / 2 (findings.Part.p_within)."""
    d = np.random.default_rng(n).standard_normal((DRAWS, n)) + (0.0 if closeness else shift)
    signs = 1.0 - 2 * ((np.arange(2 ** (n - 1))[:, None] >> np.arange(n)) & 1)  # the last unit always kept
    permuted, observed = d @ signs.T, d.sum(axis=1)
    nulls = (-shift, shift) if closeness else (0.0,)
    reject = np.abs(observed) < shift * n if closeness else observed > 0
    for null in nulls:
        gap = np.abs(observed - null * n)[:, None]
        count = np.sum(np.abs(permuted - null * signs.sum(axis=1)) >= gap * (1 - 1e-9) - 1e-12, axis=1)
        reject &= count / 2 ** (n - 1) < alpha
    return float(reject.mean())


def direction_power(shift: float, n: int, alpha: float) -> float:
    """The power of one part's test at `alpha` on n documents against a true difference of `shift` σ in the paper's
    direction: the exact test simulated up to SIMULATED documents, a t test beyond (module docstring)."""
    if n < 2:
        return 0.0
    if n <= SIMULATED:
        return _exact_power(round(abs(shift), 4), n, alpha, False)
    return float(nct.sf(student_t.ppf(1 - alpha / 2, n - 1), n - 1, abs(shift) * math.sqrt(n)))


def _threshold(n: int, alpha: float) -> float:
    """The randomisation test of H0: Δ = ±CLOSE on the estimate's t scale: z·√((n − 1)/(n − z²)), z = z₁₋α/₂
    (its null spread includes the distance to the null; module docstring); infinite where n ≤ z²."""
    z = float(norm.ppf(1 - alpha / 2))
    return z * math.sqrt((n - 1) / (n - z * z)) if n > z * z else math.inf


def closeness_power(room: float, n: int, alpha: float) -> float:
    """The power of one metric's TOST at one-sided `alpha` on n documents at a true difference of 0, `room` =
    margin/σ: the exact test simulated up to SIMULATED documents, max(0, 2Φ(room·√n − t) − 1) beyond (t:
    `_threshold` at the two-sided 2·alpha)."""
    if n < 2:
        return 0.0
    if n <= SIMULATED:
        return _exact_power(round(room, 4), n, 2 * alpha, True)
    return max(0.0, 2 * float(norm.cdf(room * math.sqrt(n) - _threshold(n, 2 * alpha))) - 1)


def level(part, alpha: float, n: int) -> float:
    """The level of the randomisation test that decides where the part's test, held against its metric's skew bound
    (stats.held), is at `alpha` on n units: `alpha` itself where nothing is held."""
    flips = getattr(part.diff, "flips", None)
    return randomisation_level(alpha, n, flips.skew) if flips is not None else alpha


def _optimistic(way, effects, sigmas, n: int, alpha: float) -> float:
    """A bound above the simulated power up to SIMULATED documents (the t test's, measured above it: module
    docstring), so that the simulation runs only where 80% is within reach."""
    if way[0].sign == 0:
        return math.prod(max(0.0, 2 * float(norm.cdf(p.effect * math.sqrt(n) / s
                                                     - student_t.ppf(1 - level(p, 2 * alpha, n) / 2, n - 1))) - 1)
                         for p, s in zip(way, sigmas))
    return math.prod(t_power(e, s, n, level(p, alpha, n)) for p, e, s in zip(way, effects, sigmas))


def detectable(sigma: float, n: int, alpha: float) -> float:
    """The smallest true difference one part's test at `alpha` on n documents finds with POWER (`direction_power`,
    bisected; beyond SIMULATED documents a little above (t₁₋α/₂ + t_POWER)·σ/√n)."""
    low, high = 0.0, 1.0
    while direction_power(high, n, alpha) < POWER:
        if high > 64:
            return math.inf
        low, high = high, 2 * high
    while high - low > 1e-4 * high:
        mid = (low + high) / 2
        low, high = (low, mid) if direction_power(mid, n, alpha) >= POWER else (mid, high)
    return high * sigma


def close_power(way, sigmas: list[float], n: int, alpha: float) -> float:
    """The chance that every metric is shown within its margin (both one-sided tests of H0: Δ = ±margin reject at
    `alpha`, held: `level`) on n documents when the true differences are 0: the product of the metrics'
    `closeness_power`."""
    return math.prod(closeness_power(p.effect / s, n, level(p, 2 * alpha, n) / 2) for p, s in zip(way, sigmas))


def joint_power(way, effects: list[float], sigmas: list[float], n: int, alpha: float) -> float:
    """The power of one way (every part must hold) on n documents at `alpha`: closeness (sign 0) at a true
    difference of 0, else the product of the parts' powers against the paper's effects."""
    if way[0].sign == 0:
        return close_power(way, sigmas, n, alpha)
    return math.prod(direction_power(abs(e) / s, n, level(p, alpha, n)) for p, e, s in zip(way, effects, sigmas))


def fewest_units(cfg, tests: int, metrics=()) -> int | None:
    """The fewest units from which on `tests` · smallest_p(cfg, n) < ALPHA for every one of `metrics` (held
    against its skew bound), so that a p multiplied by `tests` can be significant at all (None: at no size with
    these settings, e.g. too few --trials)."""
    fails = [n for n in range(1, _BEYOND + 1)
             if any(tests * smallest_p(cfg, n, m) >= ALPHA for m in (metrics or [None]))]
    if _BEYOND in fails:
        return None
    return max(fails, default=0) + 1


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
    return high if high <= MOST else None


def shown(way, effects: list[float | None]) -> bool:
    """Whether the paper's numbers show this way: every effect in the part's direction (closeness: within the part's
    margin)."""
    return all(e is not None and (abs(e) <= p.effect if p.sign == 0 else p.sign * e > 0) for p, e in zip(way, effects))


def needed(way, effects: list[float | None], n: int, alpha: float, least: int | None) -> int | None:
    """Documents for POWER joint power of one way's parts at `alpha` (σ from this stream's n documents), never below
    `least` (`fewest_units`). None: the paper does not show the way, a part has no σ, no size can be significant
    (`least` None), or more than MOST documents."""
    sigmas = [sigma(p, n) for p in way]
    if least is None or not shown(way, effects) or any(s is None for s in sigmas):
        return None
    for k in range(least, SIMULATED + 1):  # simulated where a t test would already reach POWER
        if (_optimistic(way, effects, sigmas, k, alpha) >= POWER
                and joint_power(way, effects, sigmas, k, alpha) >= POWER):
            return k
    return _smallest(lambda k: joint_power(way, effects, sigmas, k, alpha) >= POWER,
                     max(least, SIMULATED + 1))


def family(findings) -> int:
    """m: the findings in the stream's family, the step-down's first factor (with parts, not "not the paper's")."""
    return sum(1 for f in findings if f.ways and f.verdict != "not the paper's")


def _level(m: int, f: int) -> str:
    return f"{ALPHA / (m * f):.2g} (α/{m * f})"


def floor_tests(m: int, f: int, closeness: bool) -> float:
    """What the smallest p is multiplied by before it meets α: the step-down's first factor or the rule's, the
    larger, halved for the one-sided tests of closeness (findings' "too few" and the power's floor alike)."""
    return max(m, f) / (2 if closeness else 1)


def row(finding, set_name: str, scores: dict, n: int, m: int, cfg) -> str:
    """One finding's row of the power table (module docstring); `scores`: the baseline's scores, `m`: the family."""
    if not finding.ways:
        return f"| {finding.number} | {finding.verdict} | – | – | – | – | – |"
    m, f = max(m, 1), len(finding.ways)
    closeness = finding.ways[0][0].sign == 0
    alpha = ALPHA / (m * f)  # the level: conservative; the floor: what the step-down reaches, every part held
    least = fewest_units(cfg, floor_tests(m, f, closeness), sorted({p.metric for way in finding.ways for p in way}))
    best = None  # (sort key, way, effects, σs, power here, needed): the way that needs the fewest documents
    for i, way in enumerate(finding.ways):
        effects = [paper_points(p, set_name, scores.get(p.metric, math.nan)) for p in way]
        sigmas = [sigma(p, n) for p in way]
        usable = shown(way, effects) and all(s is not None for s in sigmas)
        here = (joint_power(way, effects, sigmas, n, alpha)
                if usable and least is not None and n >= least else 0.0 if usable else None)
        need = needed(way, effects, n, alpha, least)
        key = (need is None, need or 0, -(here or 0.0), i)
        if best is None or key < best[0]:
            best = (key, way, effects, sigmas, here, need)
    _, way, effects, sigmas, here, need = best
    if closeness:
        text = ("0 assumed on each metric, margins " + ", ".join(f"{p.metric} ±{p.effect:.2f}" for p in way)
                + " (the paper's: " + ", ".join(f"{p.metric} " + ("–" if e is None else f"{e:+.1f}")
                                                for p, e in zip(way, effects)) + ")")
        seen = "–"
    else:
        text = "; ".join(f"{p.name} " + ("–" if e is None else f"{e:+.1f}") for p, e in zip(way, effects))
        if any(s is None for s in sigmas) or least is None:
            seen = "–"
        elif n < least:  # the test cannot be significant here, whatever the difference
            seen = f"– (fewer than {least} {cfg.unit}s)"
        else:
            seen = max(detectable(s, n, level(p, alpha, n)) for p, s in zip(way, sigmas))
            seen = f"{seen:.2f}" if math.isfinite(seen) else "– (no difference reaches 80% here)"
    if need is not None:
        needs = f"{need:,}"
    elif any(s is None for s in sigmas):
        needs = "– (no σ: no randomisation test or no spread)"
    elif not shown(way, effects):
        needs = ("– (the paper's own difference is beyond the margin)" if closeness
                 else "– (the paper: 0 or the other way)")
    elif least is None:
        needs = f"– (never significant at α/{m * f} with {cfg.trials:,} trials)"
    else:
        needs = f"over {MOST:,}"
    power = "–" if here is None else f"{here:.0%}"
    return f"| {finding.number} | {finding.verdict} | {_level(m, f)} | {power} | {seen} | {text} | {needs} |"


def power_markdown(block, findings, baseline, cfg) -> str:
    set_name = paper.paper_set(block.dataset)
    n = units_of(Steps.of(baseline).doc_ids, cfg.unit)[1]
    m = family(findings)
    unit = cfg.unit
    lines = [f"_Power on {n} {unit}s at the level each finding is tested at, α' = α / (m · f): m = {max(m, 1)} "
             f"findings in the step-down (its first step), f = the finding's Bonferroni factor in the paper's "
             f"direction (finding 8: its methods; else 1; finding 5: one-sided, the TOST); against the paper's Table "
             f"5 effects on {set_name} (adaptsim/report/power.py):_",
             "", *head("#", ["verdict here", "level α'", "power here", "detectable with 80% power (points)",
                             "the paper's effect here (points)", f"{unit}s needed for 80% power"])]
    lines += [row(f, set_name, baseline.scores, n, m, cfg) for f in findings]
    lines += ["", "_power here: the joint power of the paper's effect (finding 5: of every metric shown within its "
              f"margin when the true differences are 0) on these {n} {unit}s at α'; detectable: the smallest true "
              "difference one part shows with 80% power at α', the largest of the parts; both for the randomisation "
              f"test on normal differences (noncentral t; up to {SIMULATED} {unit}s the exact test simulated), σ of "
              f"one {unit} from the test's standard error; needed: the fewest {unit}s for 80% joint power at α', never "
              f"fewer than those at which max(m, f) · (the test's smallest p) < {ALPHA} (finding 5: half that p, "
              "one-sided), below which the findings table says too few; finding 8: through the method that needs the "
              "fewest._"]
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
                    else f"{d.relative:+.0f} [{bound(d.relative_ci[0], 0)}, {bound(d.relative_ci[1], 0)}]")
            theirs = paper.relative(set_name, method, metric)
            cells += [ours, "–" if theirs is None else f"{theirs:+.0f}"]
        lines.append(f"| {method} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
