"""`adaptsim findings DIR…`: the paper's eight findings checked on a sweep, each tested against no effect and
against the paper's own effect, with its evidence, p values and verdict, one block per data set (the runs of
`+experiment=paper_methods`).

The findings (Simianer et al. 2019, §5–6 and Table 5), as tested here (Δ = method − baseline, in points):

1. full raises R1 (one-shot recall);                    Δ R1 > 0
2. full lowers R0 (zero-shot recall);                    Δ R0 < 0
3. lasso has the best R0 of the adapted methods;         R0 of every other adapted method − lasso's < 0
4. lasso has the best R0+1 of the adapted methods;       the same on R0+1
5. bias stays close to the baseline;                     |Δ| < CLOSE % of the baseline's score on BLEU, TER, R0, R1
                                                         and R0+1
6. fixed and top lower R0;                               Δ R0 < 0 for both
7. full, lasso and fixed raise BLEU;                     Δ BLEU > 0 for all three
8. BLEU and R0 disagree for some method;                 Δ BLEU > 0 and Δ R0 < 0 for some adapted method

Every part is tested by the paired randomisation test over documents (stats.py: exact up to 20 documents,
sequential Monte Carlo beyond), two-sided, its direction read from the sign (two one-sided tests at α/2), each tail
held against documents skewed up to its metric's bound (`SKEW`, stats.held): where the documents' differences are
lopsided the tail opposite the skew of the plain test rejects up to four times its rate (docs/reports.md, "By
direction"). A bound is the largest |skew| of the documents' contributions about their mean difference (the
shifted null) over every comparison the findings make on the held-out streams (base-ende on Business Central's and
ape-it's held-out documents, docs/results/base-ende/heldout), rounded up to a tenth: BLEU 3.40, TER 3.12, R0 1.80,
R1 1.23, R0+1 1.07; fixed before any test stream was looked at. Each finding is tested twice (`tests`):

- **against no effect** (H0: Δ = 0), which it rejects the paper's way (*reproduced*) or the other way
  (*contradicted*). Parts combine by the finding's rule: *every part must hold* (1–4, 6, 7): the paper's way when
  every part is, at the largest of their p (an intersection-union test: no factor); the other way when some part
  is, at the smallest such p times the parts (Bonferroni). *Any method* (8): the paper's way through the method
  with the smallest p, times the methods; the other way when every method is, at the largest of those p.
- **against the paper's effect** (H0: Δ = e, e the paper's Table 5 difference for the stream's counterpart set,
  turned into points of this stream's baseline: power.paper_points), which it rejects when some part falls short
  of e, at that part's p times the parts; for 8, when every method the paper shows it through falls short, at the
  largest of those p. A rejection says *smaller than the paper's*: the paper's effect is not here. (A part beyond
  e the paper's way is noted, not a verdict: 0 is excluded then too.) A finding contradicted at 0 falls short of
  the paper's effect as well, so its p here is never above its p at 0.
- finding 5 is an equivalence: H0: |Δ| ≥ margin on some metric, rejected (*reproduced*) when both one-sided tests
  of every metric reject at α, the two one-sided tests (TOST) whose 1 − 2α interval, 90 %, lies inside the
  margins; the largest of their p decides (intersection-union). Its other test, H0: |Δ| ≤ margin on every metric,
  is rejected (*contradicted*) when one metric's 90 % interval lies beyond its margin: the one-sided p at the nearer
  bound times the metrics. A one-sided p is half the two-sided one on the estimate's side: the swap patterns come
  in pairs (a pattern and its complement give δ' and −δ'), so the exact count is symmetric.
  The margin, CLOSE = 2.5 % of the baseline's score on each metric, is the paper's own line, fixed from Table 5
  before looking at any stream: every bias entry the paper calls "does not deviate much" is printed at |x| ≤ 2 %
  (Autodesk, TED, User 2, Patent; under 2.5 % before rounding), and every difference its findings rest on is
  printed at 3 % or more (lasso's R0 over bias on Autodesk, 3; the R0+1 gaps of finding 4, 3 to 6).

The p values of a stream's findings are adjusted together (`step_down`): Holm's step-down over every test of every
finding, at most one of whose nulls can hold per finding (no effect and the paper's effect exclude each other; a
contradiction is nested in "smaller"), so that each step multiplies by the number of findings that still have a
test to reject (Shaffer 1986) — m at the first step, as Holm's over the m findings. Verdicts (`VERDICTS`):

- **reproduced**: no effect rejected the paper's way (5: closeness shown); the why column says whether the paper's
  size lies inside each part's interval;
- **contradicted**: no effect rejected the other way (5: a metric shown beyond its margin);
- **smaller than the paper's**: the paper's effect rejected, no effect not: the paper's effect is not here;
- **inconclusive**: neither rejected; the evidence shows the intervals, `--power` the power;
- **cannot tell**: a method or a score missing, or Monte Carlo error still straddling a level after the most
  trials (the labels are computed at both ends of every p's Monte Carlo interval, and they must agree);
- **not the paper's**: the paper's own Table 5 number for the stream's counterpart set is 0 or points the other
  way (the paper did not show the finding there either); tested against 0 and shown, outside the adjustment.

A part's interval is its own 95 % interval (finding 5: 90 %), unadjusted: a part whose interval excludes 0 may
still not decide its finding after the rule's factor and the adjustment, and the why column says so.
"""

from __future__ import annotations

import argparse
import json
import math
from collections import Counter
from dataclasses import dataclass, field, replace

from adaptsim.errors import UserError
from adaptsim.report import paper
from adaptsim.report import significance as sig
from adaptsim.report.blocks import Block, blocks
from adaptsim.report.notes import notes
from adaptsim.report.power import effects_markdown, floor_tests, paper_points, power_markdown, shown
from adaptsim.report.runs import Run, finished_runs
from adaptsim.report.stats import smallest_p

ADAPTED = ("bias", "full", "lasso", "fixed", "top")
METRICS = ["BLEU", "TER", "R0", "R1", "R0+1"]
CLOSE = 2.5  # finding 5: % of the baseline's score within which bias must stay on every metric (module docstring)
SKEW = (("BLEU", 3.5), ("TER", 3.2), ("R0", 1.9), ("R1", 1.3), ("R0+1", 1.1))  # each metric's tails held against
# documents skewed this much (stats.held): the largest skew on held-out streams, rounded up (module docstring)
DIRECTIONAL = ((1, "full raises R1", ("full",), "R1", +1), (2, "full lowers R0", ("full",), "R0", -1),
               (6, "fixed and top lower R0", ("fixed", "top"), "R0", -1),
               (7, "full, lasso and fixed raise BLEU", ("full", "lasso", "fixed"), "BLEU", +1))
FACTOR = max(len(ADAPTED), len(METRICS))  # the largest Bonferroni factor of a finding (8's methods, 5's metrics)
VERDICTS = ("reproduced", "contradicted", "smaller than the paper's", "inconclusive", "cannot tell",
            "not the paper's")
DECIDED = VERDICTS[:3]
ENDS = ("p", "low", "high")  # a p, and the ends of its Monte Carlo interval


@dataclass
class Part:
    """One comparison a finding rests on: `plus` − `minus` (None: the baseline) on `metric`, in the direction `sign`
    (+1 up, −1 down, 0: within ±`effect`), its measured difference (stats.Difference) and `effect`: the paper's
    difference here in points (None: the paper has none), or finding 5's margin."""
    metric: str
    plus: str
    minus: str | None
    sign: int
    diff: object
    effect: float | None = None
    _at: dict = field(default_factory=dict, repr=False, compare=False)  # p_at by null: each counts every pattern

    @property
    def name(self) -> str:
        return f"{self.plus}{'' if self.minus is None else ' − ' + self.minus} {self.metric}"

    def way(self) -> int:
        """+1 the paper's way, −1 the other way, 0 a tie (closeness: within the margin or not)."""
        d = self.diff.diff
        if self.sign == 0:
            return 1 if abs(d) < self.effect else -1
        return int(math.copysign(1, self.sign * d)) if d else 0

    def p(self, end: str = "p") -> float:
        """The two-sided p of H0: Δ = 0 (`end`: or an end of its Monte Carlo interval)."""
        if end == "p" or self.diff.p_range is None:
            return self.diff.p
        return self.diff.p_range[ENDS.index(end) - 1]

    def short(self) -> bool:
        """Whether Δ falls short of the paper's effect: on 0's side of it, or beyond 0."""
        return self.sign * (self.diff.diff - self.effect) < 0

    def p_at(self, delta: float) -> tuple[float, float, float]:
        """The difference's (p, low, high) of H0: Δ = delta, counted once per null however often a rule asks."""
        if delta not in self._at:
            self._at[delta] = self.diff.p_at(delta)
        return self._at[delta]

    def p_paper(self, end: str = "p") -> float:
        """The two-sided p of H0: Δ = the paper's effect here."""
        return self.p_at(self.effect)[ENDS.index(end)]

    def p_within(self, end: str = "p") -> float:
        """Closeness: the TOST p, the larger of the one-sided p of H0: Δ ≤ −margin and of H0: Δ ≥ +margin."""
        d, m = self.diff.diff, self.effect
        return max(_one_sided(self.p_at(-m), d > -m, end), _one_sided(self.p_at(m), d < m, end))

    def p_beyond(self, end: str = "p") -> float:
        """Closeness: the one-sided p of H0: |Δ| ≤ margin, at the bound nearer to Δ."""
        d, m = self.diff.diff, self.effect
        return _one_sided(self.p_at(math.copysign(m, d)), abs(d) > m, end)

    def interval(self) -> tuple[float, float]:
        """The part's own interval: 95 %; closeness 90 % (the TOST's), both the test inverted, unadjusted."""
        return self.diff.flips.interval(2 * sig.ALPHA) if self.sign == 0 else self.diff.ci


def _one_sided(p: tuple[float, float, float], toward: bool, end: str) -> float:
    """The one-sided p from a two-sided (p, low, high): half of it where the estimate lies on the tested side, else
    one minus that half (its Monte Carlo ends swapped)."""
    if toward:
        return p[ENDS.index(end)] / 2
    return 1 - p[{"p": 0, "low": 2, "high": 1}[end]] / 2


@dataclass
class Test:
    """One of a finding's two tests: the verdict its rejection gives (None: a tie, nothing to claim), its p at each
    end of the Monte Carlo intervals before and after the adjustment, the part that decided it and the rule."""
    null: str
    claim: str | None
    ps: dict[str, float]
    part: Part | None
    rule: str
    factor: int = 1
    one_sided: bool = False
    adjusted: dict[str, float] = field(default_factory=dict)


@dataclass
class Finding:
    number: int
    claim: str
    evidence: str
    verdict: str = ""
    ways: list[list[Part]] = field(default_factory=list)  # ways it can hold, each a list of parts that must all hold
    tests: list[Test] = field(default_factory=list)
    why: str = ""

    @property
    def closeness(self) -> bool:
        return bool(self.ways) and self.ways[0][0].sign == 0


def no_effect(ways: list[list[Part]], end: str = "p") -> tuple[int, float, Part | None, int]:
    """(direction, p, deciding part, factor) of the test against no effect of a finding that holds when every part of
    some way holds (module docstring)."""
    along, against = [], []
    for way in ways:
        if all(part.way() > 0 for part in way):
            decisive = max(way, key=lambda part: part.p(end))
            along.append((decisive.p(end), decisive))
        elif any(part.way() < 0 for part in way):
            decisive = min((part for part in way if part.way() < 0), key=lambda part: part.p(end))
            against.append((min(1.0, len(way) * decisive.p(end)), decisive, len(way)))
        else:  # tied, and nothing against: this way fails without a direction (p 1 against)
            against.append((1.0, next(part for part in way if part.way() == 0), len(way)))
    if along:
        p, part = min(along, key=lambda a: a[0])
        return 1, min(1.0, len(ways) * p), part, len(ways)
    if all(part.way() >= 0 for way in ways for part in way):
        return 0, 1.0, None, 1
    p, part, factor = max(against, key=lambda a: a[0])
    return -1, p, part, factor


def against_paper(ways: list[list[Part]], end: str = "p") -> tuple[float, Part | None, int]:
    """(p, deciding part, factor) of the test against the paper's effect: per way the paper shows, its parts that
    fall short of their effect, the smallest p times the parts; the finding's p the largest over those ways."""
    out = []
    for way in ways:
        short = [part for part in way if part.short()]
        if not short:
            out.append((1.0, None, len(way)))
            continue
        decisive = min(short, key=lambda part: part.p_paper(end))
        out.append((min(1.0, len(way) * decisive.p_paper(end)), decisive, len(way)))
    return max(out, key=lambda a: a[0])


def _closeness(way: list[Part], end: str) -> tuple[tuple[float, Part], tuple[float, Part]]:
    """Finding 5's two tests at `end`: (TOST p, the part with the largest), (p beyond × parts, the part)."""
    within = max(((part.p_within(end), part) for part in way), key=lambda a: a[0])
    beyond = min(((part.p_beyond(end), part) for part in way), key=lambda a: a[0])
    return within, (min(1.0, len(way) * beyond[0]), beyond[1])


def tests(f: Finding, paper_ways: list[list[Part]]) -> list[Test]:
    """A finding's two tests (module docstring); `paper_ways`: the ways the paper shows."""
    if f.closeness:
        way = f.ways[0]
        (_, close), (_, far) = _closeness(way, "p")
        return [Test("some metric beyond its margin", "reproduced", {e: _closeness(way, e)[0][0] for e in ENDS},
                     close, f"{close.name}: the largest TOST p of every metric", one_sided=True),
                Test("every metric within its margin", "contradicted", {e: _closeness(way, e)[1][0] for e in ENDS},
                     far, f"{far.name}: the nearest to its margin, × {len(way)}", len(way), one_sided=True)]
    direction, _, part, factor = no_effect(f.ways)
    rule = ("a part tied (Δ = 0), none the other way" if part is None
            else part.name + (f": the smallest p of {factor} methods, × {factor}" if direction > 0 and factor > 1
                              else ": the largest p of every part" if direction > 0 and len(f.ways[0]) > 1
                              else f": the other way, × {factor} parts" if factor > 1 else ""))
    zero = Test("no effect", {1: "reproduced", -1: "contradicted", 0: None}[direction],
                {e: no_effect(f.ways, e)[1] for e in ENDS}, part, rule, factor)
    out = [zero]
    if paper_ways:
        _, part, factor = against_paper(paper_ways)
        ps = {e: against_paper(paper_ways, e)[0] for e in ENDS}
        if direction < 0:  # contradicted at 0 is short of the paper's effect too
            ps = {e: min(ps[e], zero.ps[e]) for e in ENDS}
        rule = ("no part short of it" if part is None else
                f"{part.name}: short of the paper's {part.effect:+.1f}" + (f", × {factor} parts" if factor > 1 else "")
                + (f"; the largest of {len(paper_ways)} methods" if len(paper_ways) > 1 else ""))
        out.append(Test("the paper's effect", "smaller than the paper's", ps, part, rule, factor))
    return out


def step_down(finding_of: list[int], ps: list[float]) -> list[float]:
    """Holm's step-down over tests of several findings, at most one of whose nulls can hold per finding: the i-th
    smallest p times the number of findings with a test among it and the larger ones (Shaffer 1986), kept monotone,
    at most 1. One test per finding: Holm's."""
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    left = Counter(finding_of)
    adjusted, running = [0.0] * len(ps), 0.0
    for i in order:
        running = max(running, min(1.0, len(left) * ps[i]))
        adjusted[i] = running
        left[finding_of[i]] -= 1
        if not left[finding_of[i]]:
            del left[finding_of[i]]
    return adjusted


def levels(findings: int, factor: int) -> list[float]:
    """Every level a part's two-sided p is compared with: α over each step's factor times each Bonferroni factor,
    and twice that for a one-sided p (finding 5's tests)."""
    one = {sig.ALPHA / (k * f) for k in range(1, findings + 1) for f in range(1, factor + 1)}
    return sorted(one | {2 * a for a in one})


def _p(p: float | None) -> str:
    """Three decimals, five where three would round onto 0.05 (a label must not seem to contradict its p)."""
    if p is None:
        return "–"
    return "<0.001" if p < 0.001 else f"{p:.5f}" if abs(p - sig.ALPHA) < 0.0005 else f"{p:.3f}"


def _ci(ci: tuple[float, float]) -> str:
    return f"[{sig.bound(ci[0])}, {sig.bound(ci[1])}]"


def _d(part: Part, labelled: bool) -> str:
    """A part as the evidence shows it: Δ, its own interval, the p of each null; `labelled`: with its sign (a
    finding of several parts)."""
    d = part.diff.diff
    if part.sign == 0:
        inside = abs(d) < part.effect
        return (f"{part.name} {d:+.1f} 90% {_ci(part.interval())}, {'within' if inside else 'beyond'} "
                f"±{part.effect:.2f}: p {_p(part.p_within() if inside else part.p_beyond())} "
                f"(H0: |Δ| {'≥' if inside else '≤'} {part.effect:.2f})")
    sign = (", " + {1: "the paper's way", -1: "the other way", 0: "tie"}[part.way()]) if labelled else ""
    text = f"{part.name} {d:+.1f} {_ci(part.interval())}{sign}: p {_p(part.p())}"
    if part.effect is not None and part.sign * part.effect > 0:
        text += f", at the paper's {part.effect:+.1f} p {_p(part.p_paper())}"
    return text


def _by_method(block: Block) -> dict[str, Run]:
    """The block's runs by method; a method with two runs (two learning rates, a rerun beside the original) is
    refused, since a finding must say which run it rests on."""
    runs: dict[str, list[Run]] = {}
    for _, run in block.rows:
        runs.setdefault(run.summary.get("method", "?"), []).append(run)
    doubled = {m: rs for m, rs in runs.items() if len(rs) > 1}
    if doubled:
        listed = "; ".join(f"{m}: {', '.join(str(r.dir) for r in rs)}" for m, rs in doubled.items())
        raise UserError(f"dataset {block.dataset!r}: more than one run of a method ({listed}); pass the directories "
                        "of one run per method")
    return {m: rs[0] for m, rs in runs.items()}


def _settle(at: list[float], nulls: dict[tuple[int, str], set[float]]):
    """stats.compare's `settle`: a difference some finding uses (`nulls`: run, metric → the Δ it is tested at) whose
    p at one of those Δ has a Monte Carlo interval holding one of the levels `at` is drawn on."""
    def straddles(r: int, metric: str, diff) -> bool:
        if (r, metric) not in nulls or diff.flips is None or diff.flips.exact:
            return False
        ranges = [diff.p_at(v)[1:] for v in nulls[r, metric]]
        return any(lo < level <= hi for lo, hi in ranges for level in at)
    return straddles


def check(block: Block, cfg: sig.Settings) -> tuple[list[Finding], list[str], sig.Result]:
    """The eight findings on one block, tested, adjusted and labelled (module docstring); and the adapted methods
    present with their analysis against the baseline (for --effects)."""
    if cfg.test in ("ci", "bs"):  # the verdicts' rules (closeness, intervals, floors) are the randomisation test's
        raise UserError(f"findings decides by the randomisation test (--test auto, ar or exact), not --test "
                        f"{cfg.test}; the bootstrap's p is in `table --significance --test ci`")
    cfg = held(cfg)
    runs = _by_method(block)
    baseline = block.need_baseline("findings")
    present = [m for m in ADAPTED if m in runs]
    metrics = [m for m in METRICS if all(m in r.scores for r in (baseline, *(runs[k] for k in present)))]
    set_name = paper.paper_set(block.dataset)
    at = levels(8, FACTOR)

    def effect(metric: str, plus: str, minus: str | None, sign: int) -> float | None:
        base = baseline.scores.get(metric, math.nan)
        if sign == 0:
            return CLOSE / 100 * abs(base)
        return paper_points(Part(metric, plus, minus, sign, None), set_name, base)

    row = {m: i + 1 for i, m in enumerate(present)}  # a method's run in the analysis against the baseline
    nulls: dict[tuple[int, str], set[float]] = {}
    for *_, methods, metric, sign in DIRECTIONAL:
        for m in (m for m in methods if m in row):
            nulls.setdefault((row[m], metric), {0.0}).add(effect(metric, m, None, sign) or 0.0)
    for m in present:
        for metric, sign in (("BLEU", +1), ("R0", -1)):
            nulls.setdefault((row[m], metric), {0.0}).add(effect(metric, m, None, sign) or 0.0)
    if "bias" in row:
        for metric in METRICS:
            margin = effect(metric, "bias", None, 0)
            nulls.setdefault((row["bias"], metric), {0.0}).update({-margin, margin})
    nulls = {k: {v for v in vs if math.isfinite(v)} for k, vs in nulls.items()}
    result = sig.analyse([baseline, *(runs[m] for m in present)], metrics, cfg, "findings",
                         settle=_settle(at, nulls))
    vs_base = {m: result.differences[i + 1] for i, m in enumerate(present)}
    out: list[Finding] = []

    def part(metric: str, plus: str, minus: str | None, sign: int, diff) -> Part:
        return Part(metric, plus, minus, sign, diff, effect(metric, plus, minus, sign))

    def missing(number: int, claim: str, methods: tuple[str, ...], needed: tuple[str, ...]) -> bool:
        """Record the finding as cannot tell when a method, a score or a difference is missing."""
        lacking = [m for m in methods if m not in runs]
        why = f"no {', '.join(lacking)} run" if lacking else ""
        if not why:
            gone = [k for k in needed if k not in metrics or any(math.isnan(vs_base[m][k].diff) for m in methods)]
            why = f"no {', '.join(gone)} difference" if gone else ""
        if why:
            out.append(Finding(number, claim, why, "cannot tell", why=why))
        return bool(why)

    def add(number: int, claim: str, ways: list[list[Part]]) -> None:
        labelled = sum(len(way) for way in ways) > 1
        out.append(Finding(number, claim, "; ".join(_d(p, labelled) for way in ways for p in way), ways=ways))

    def direction(number: int, claim: str, methods: tuple[str, ...], metric: str, sign: int) -> None:
        if not missing(number, claim, methods, (metric,)):
            add(number, claim, [[part(metric, m, None, sign, vs_base[m][metric]) for m in methods]])

    for spec in DIRECTIONAL[:2]:
        direction(*spec)
    for number, metric in ((3, "R0"), (4, "R0+1")):
        claim = f"lasso has the best {metric} of the adapted methods"
        others = tuple(m for m in present if m != "lasso")
        if missing(number, claim, ("lasso", *others), (metric,)):
            continue
        if not others:
            out.append(Finding(number, claim, "no other adapted method", "cannot tell", why="no other adapted method"))
            continue
        gaps = {i + 1: {0.0, effect(metric, m, "lasso", -1) or 0.0} for i, m in enumerate(others)}
        against = sig.analyse([runs["lasso"], *(runs[m] for m in others)], [metric], cfg, "findings", warn=False,
                              settle=_settle(at, {(r, metric): {v for v in vs if math.isfinite(v)}
                                                  for r, vs in gaps.items()}))
        add(number, claim, [[part(metric, m, "lasso", -1, against.differences[i + 1][metric])
                             for i, m in enumerate(others)]])
    claim = f"bias stays close to the baseline (every difference within ±{CLOSE:g} % of the baseline's score)"
    if not missing(5, claim, ("bias",), tuple(METRICS)):
        add(5, claim, [[part(m, "bias", None, 0, vs_base["bias"][m]) for m in METRICS]])
    for spec in DIRECTIONAL[2:]:
        direction(*spec)
    claim = "BLEU and R0 disagree for some method (BLEU up, R0 down)"
    if not present:
        out.append(Finding(8, claim, "no adapted method", "cannot tell", why="no adapted method"))
    elif not missing(8, claim, tuple(present), ("BLEU", "R0")):
        add(8, claim, [[part("BLEU", m, None, +1, vs_base[m]["BLEU"]), part("R0", m, None, -1, vs_base[m]["R0"])]
                       for m in present])
    label([f for f in out if f.ways], set_name, lambda metric: smallest_p(cfg, result.units, metric), result.units,
          cfg.unit)
    return sorted(out, key=lambda f: f.number), present, result


def shown_ways(f: Finding) -> list[list[Part]]:
    """The ways of a finding the paper's Table 5 shows on the stream's counterpart set, those its test against the
    paper's effect tests: every part's effect in the claimed direction (closeness: its one way, `paper_shows`)."""
    if f.closeness:
        return f.ways
    return [way for way in f.ways if shown(way, [p.effect for p in way])]


def paper_shows(f: Finding, set_name: str) -> bool:
    """Whether the paper's Table 5 shows the finding on the stream's counterpart set (closeness: every bias number
    within the margin)."""
    if f.closeness:
        relative = [paper.relative(set_name, p.plus, p.metric) for p in f.ways[0]]
        return all(r is not None and abs(r) <= CLOSE for r in relative)
    return bool(shown_ways(f))


def label(tested: list[Finding], set_name: str, least, n: int, unit: str) -> None:
    """Both tests, the adjustment and the label of every finding with parts (module docstring); `least(metric)`:
    the smallest p the test can give on these n units."""
    family = []
    for f in tested:
        if not paper_shows(f, set_name):
            f.tests = tests(f, [])
            f.verdict, f.why = "not the paper's", f"the paper's Table 5 ({set_name}) does not show it"
            continue
        f.tests = tests(f, shown_ways(f))
        family.append(f)
    flat = [(i, t) for i, f in enumerate(family) for t in f.tests]
    for end in ENDS:
        for (_, t), a in zip(flat, step_down([i for i, _ in flat], [t.ps[end] for _, t in flat])):
            t.adjusted[end] = a
    m = len(family)
    for f in family:
        names = {_name(f, end) for end in ENDS}
        if len(names) > 1:
            torn = next(t for t in f.tests if t.claim and len({sig.significant(t.adjusted[e]) for e in ENDS}) > 1)
            f.verdict = "cannot tell"
            f.why = (f"Monte Carlo error: the adjusted p of H0: {torn.null} between "
                     f"{min(torn.adjusted.values()):.4f} and {max(torn.adjusted.values()):.4f} after the most trials")
            continue
        f.verdict = names.pop()
        f.why = _why(f, m, least, n, unit)


def _name(f: Finding, end: str) -> str:
    """The verdict the tests give at one end of their Monte Carlo intervals."""
    rejected = {t.claim for t in f.tests if t.claim and sig.significant(t.adjusted[end])}
    return next((v for v in ("contradicted", "reproduced", "smaller than the paper's") if v in rejected),
                "inconclusive")


def _why(f: Finding, m: int, least, n: int, unit: str) -> str:
    """What the label does not say by itself: the paper's size beside a reproduced finding's parts, the sign of an
    inconclusive one, too few units to decide anything, and parts whose own (unadjusted) interval excludes 0 though
    the finding's adjusted test does not decide that way."""
    notes_ = []
    parts = [p for way in f.ways for p in way]
    if f.verdict == "reproduced" and not f.closeness:
        paper_test = next((t for t in f.tests if t.claim == "smaller than the paper's"), None)
        if paper_test is not None and sig.significant(paper_test.adjusted["p"]):
            notes_.append(f"and smaller than the paper's: {paper_test.rule} "
                          f"(adjusted p {_p(paper_test.adjusted['p'])})")
        sizes = [p for p in parts if p.effect is not None and p.sign * p.effect > 0]
        outside = [(p, "beyond" if p.sign * (p.interval()[0 if p.sign > 0 else 1] - p.effect) > 0 else "short of")
                   for p in sizes if not p.interval()[0] <= p.effect <= p.interval()[1]]
        if sizes:
            notes_.append("; ".join(f"{p.name}'s interval {word} the paper's {p.effect:+.1f}" for p, word in outside)
                          or "the paper's size inside every part's interval")
    if f.verdict == "inconclusive":
        smallest = max(least(p.metric) for p in parts)  # every part of a way must reject
        reachable = min(floor_tests(m, t.factor, t.one_sided) * smallest for t in f.tests)
        if reachable >= sig.ALPHA:
            notes_.append(f"too few {unit}s: {n} give p ≥ {smallest:.3g}, and after the rule's factor and the "
                          f"step-down's × {m} the smallest reachable is {min(reachable, 1):.2g}, never below "
                          f"{sig.ALPHA}")
        elif not f.closeness:
            sign = no_effect(f.ways)[0]
            notes_.append("neither 0 nor the paper's effect excluded; the estimate points "
                          + {1: "the paper's way", -1: "the other way", 0: "nowhere (Δ = 0)"}[sign])
        else:
            notes_.append("neither closeness nor a metric beyond its margin shown")
    claimed = {"reproduced": 1, "contradicted": -1}.get(f.verdict, 0)
    if f.closeness:
        alone = []
    elif len(f.ways) == 1:  # a part significant on its own in a direction the verdict does not claim
        alone = [p for p in parts if sig.significant(p.p()) and p.way() != claimed]
    else:  # any method: a whole way significant the paper's way on its own, the finding not reproduced
        alone = [p for way in f.ways if claimed < 1 and all(sig.significant(p.p()) and p.way() > 0 for p in way)
                 for p in way]
    if alone:
        notes_.append(", ".join(f"{p.name} ({'the paper' if p.way() > 0 else 'the other'}'s way, p {_p(p.p())})"
                                for p in alone)
                      + f": {'its' if len(alone) == 1 else 'their'} own 95% interval excludes 0, but part intervals "
                      "are unadjusted; the rule and the step-down decide the finding")
    return "; ".join(notes_)


def markdown(block: Block, findings: list[Finding]) -> str:
    lines = [f"**{block.caption}**", "",
             "| # | the paper's finding | here: Δ in points [its own 95% interval] (5: 90%): p at 0, at the paper's "
             "effect | H0 no effect (5: not close): p → adjusted, decided by | H0 the paper's effect (5: close): p → "
             "adjusted, decided by | verdict | why |",
             "|--:|:--|:--|:--|:--|:--|:--|"]
    for f in findings:
        cells = [f"{_p(t.ps['p'])} → {_p(t.adjusted.get('p'))}" + (f", {t.rule}" if t.rule else "")
                 for t in f.tests] + ["–"] * (2 - len(f.tests))
        lines.append(f"| {f.number} | {f.claim} | {f.evidence} | {cells[0]} | {cells[1]} | {f.verdict} | "
                     f"{f.why or '–'} |")
    count = Counter(f.verdict for f in findings)
    shown = [v for v in VERDICTS if count[v] or v != "not the paper's"]
    tested = sum(count[v] for v in VERDICTS if v != "not the paper's")
    lines += ["", f"_Of {len(findings)}: " + ", ".join(f"{count[v]} {v}" for v in shown)
              + f"; {sum(count[v] for v in DECIDED)} of the {tested} the paper shows here decided._"]
    return "\n".join(lines)


def as_json(block: Block, findings: list[Finding], result: sig.Result) -> dict:
    """One block's findings for `--json`: per finding its number, verdict (one of VERDICTS), tests and parts."""
    def part(p: Part) -> dict:
        out = {"name": p.name, "metric": p.metric, "plus": p.plus, "minus": p.minus, "direction": p.sign,
               "diff": p.diff.diff, "interval": list(p.interval()), "level": 0.9 if p.sign == 0 else 0.95}
        if p.sign == 0:
            out.update(margin=p.effect, p_within=p.p_within(), p_beyond=p.p_beyond())
        else:
            out.update(p=p.p(), paper_effect=p.effect,
                       p_paper=p.p_paper() if p.effect is not None and p.sign * p.effect > 0 else None)
        return out

    return {"dataset": block.dataset, "segments": block.segments, "data": block.fingerprint, "model": block.model,
            "model_path": block.model_path, "test": result.signature,
            "findings": [{"number": f.number, "claim": f.claim, "verdict": f.verdict, "why": f.why,
                          "tests": [{"null": t.null, "claim": t.claim, "p": t.ps["p"], "adjusted": t.adjusted.get("p"),
                                     "one_sided": t.one_sided, "rule": t.rule} for t in f.tests],
                          "parts": [part(p) for way in f.ways for p in way]} for f in findings]}


def held(cfg: sig.Settings) -> sig.Settings:
    """The settings with every metric's tails held against its SKEW bound (the randomisation tests only)."""
    return replace(cfg, skew=SKEW)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="adaptsim findings", description=__doc__.split("\n\n")[0])
    p.add_argument("dirs", nargs="+", metavar="DIR", help="sweep or run directories (searched recursively)")
    p.add_argument("--effects", action="store_true",
                   help="also each method's relative difference to the baseline with its interval, beside the paper's "
                        "Table 5 (adaptsim/report/power.py)")
    p.add_argument("--power", action="store_true",
                   help="also, per finding, the smallest difference this stream detects with 80%% power and the "
                        "documents the paper's effect would need, at the level the finding is tested at")
    p.add_argument("--json", action="store_true",
                   help="print the findings as JSON (per data set: each finding's number, verdict, tests and parts)")
    sig.add_arguments(p)
    return p


def report(block: Block, cfg: sig.Settings, effects: bool, power: bool) -> str:
    """One block's findings, with its effect sizes and power where asked for, and the test that ran."""
    findings, present, result = check(block, cfg)
    parts = [markdown(block, findings)]
    if effects:
        parts.append(effects_markdown(block, present, result, list(result.scores[0])))
    if power:
        parts.append(power_markdown(block, findings, block.need_baseline("findings"), cfg))
    parts.append(f"_Test: {result.signature}._")
    return "\n\n".join(parts) + "".join(f"\n\n_Note: {n}._" for n in notes(block.rows))


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    cfg = held(sig.settings(args))
    found = blocks(finished_runs(args.dirs, "findings").runs)
    if args.json:
        checked = [(block, *check(block, cfg)) for block in found]
        print(json.dumps({"verdicts": list(VERDICTS), "alpha": sig.ALPHA, "close_percent": CLOSE,
                          "blocks": [as_json(block, fs, result) for block, fs, _, result in checked]}, indent=1))
        return 0
    texts = [report(block, cfg, args.effects, args.power) for block in found]
    print("\n\n".join(texts) + f"\n\n_p: {cfg.describe()}, two-sided (5: one-sided, the two one-sided tests of "
          f"equivalence), seed {cfg.seed}; a part's interval: its own 95% interval (5: 90%), the test inverted, "
          "unadjusted; the p of a finding's two tests adjusted together by Holm's step-down, at most one null per "
          f"finding true (Shaffer). Verdicts at adjusted p < {sig.ALPHA}: reproduced (no effect rejected the paper's "
          f"way; 5: every metric within ±{CLOSE:g} % of the baseline's score), contradicted (the other way; 5: a "
          "metric beyond it), smaller than the paper's (the paper's effect in this stream's points rejected, no "
          "effect not), inconclusive (neither), cannot tell (something missing, or Monte Carlo error at the most "
          "trials), not the paper's (the paper's own number not in the claimed direction); "
          "adaptsim/report/findings.py._")
    return 0
