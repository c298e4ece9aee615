"""`adaptsim findings DIR…`: the paper's eight findings checked on a sweep, each with its evidence, p-value and
verdict, one block per data set (the runs of `+experiment=paper_methods`).

The findings (Simianer et al. 2019, §5–6 and Table 5), as tested here (Δ = method − baseline, in points):

1. full raises R1 (one-shot recall);                    Δ R1 > 0
2. full lowers R0 (zero-shot recall);                    Δ R0 < 0
3. lasso has the best R0 of the adapted methods;         R0 of every other adapted method − lasso's < 0
4. lasso has the best R0+1 of the adapted methods;       the same on R0+1
5. bias stays close to the baseline;                     |Δ| < CLOSE points on BLEU, TER, R0, R1 and R0+1
6. fixed and top lower R0;                               Δ R0 < 0 for both
7. full, lasso and fixed raise BLEU;                     Δ BLEU > 0 for all three
8. BLEU and R0 disagree for some method;                 Δ BLEU > 0 and Δ R0 < 0 for some adapted method

Every part is tested by the paired randomisation test over documents at every size (stats.py: exact up to 20
documents, sequential Monte Carlo beyond), two-sided, its direction read from the sign (two one-sided tests at
α/2, so "the paper's way" and "the other way" are one rule); the interval printed beside a part is that test
inverted. A part goes the paper's way, the other way, or neither (a difference of exactly 0: a tie).

How the parts combine (`verdict`), each rule named in the table's "decided by":
- *every part must hold* (6, 7; 3 and 4 against every other adapted method): the paper's way when every part is, at
  the largest of their p (an intersection-union test: no adjustment); the other way when some part is, at the
  smallest such p times the number of parts (Bonferroni: any one of them);
- *any method* (8): the paper's way through the method with the smallest (largest-part) p, times the number of
  methods; the other way only when every method is, at the largest of those p;
- *closeness* (5): equivalence within ±CLOSE of each of bias's five metrics, each the test of H0: Δ = ±CLOSE
  (`Difference.p_at`; its p the larger of the two, so p < α when the part's interval lies within ±CLOSE); every
  metric must be close (intersection-union, the largest p), and one metric beyond ±CLOSE is the other way at its
  p times five;
- where the rule's answer hides a part of a finding whose parts must all hold (the finding the other way or tied
  while a part is significantly the paper's way on its own: its p times the parts and Holm's factor below α), the
  "why" column says "mixed" and names it: the label follows the rule, the parts are all shown.

The p values of a stream's findings are adjusted by Holm's step-down method (`holm`): eight findings on one
stream, and "k of 8" must not count the one in twenty that chance makes significant. Verdicts (`LABELS`):
- **reproduced** / **contradicted**: the paper's way / the other way at adjusted p < α;
- **same direction** / **opposite direction**: the paper's way / the other way, not significant;
- **tie**: no way holds in the paper's direction and no part goes against it (a difference of exactly 0); a way
  that ties fails without a direction, so beside ways that go against it leaves the other way at p 1;
- **cannot tell**: the data cannot decide — too few documents (the smallest p the test can give on them times
  max(Holm's factor m, the finding's Bonferroni factor), the least Holm can reach, is not below α, so the direction
  it points would be printed whatever the data), a method or a score missing, or Monte Carlo error still straddling
  a level after the most trials (the labels are computed at both ends of every p's Monte Carlo interval, and they
  must agree, so no label rests on where one draw put a p);
- **not the paper's**: the paper's own Table 5 number for the stream's counterpart set is 0 or points the other
  way (the paper did not show the finding there either); tested and shown, outside the count.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass, field

from adaptsim.errors import UserError
from adaptsim.report import paper
from adaptsim.report import significance as sig
from adaptsim.report.blocks import Block, blocks
from adaptsim.report.notes import notes
from adaptsim.report.power import effects_markdown, paper_points, power_markdown
from adaptsim.report.runs import Run, finished_runs
from adaptsim.report.stats import smallest_p

ADAPTED = ("bias", "full", "lasso", "fixed", "top")
METRICS = ["BLEU", "TER", "R0", "R1", "R0+1"]
CLOSE = 1.0  # finding 5: points within which every difference of bias to the baseline must lie
DIRECTIONAL = ((1, "full raises R1", ("full",), "R1", +1), (2, "full lowers R0", ("full",), "R0", -1),
               (6, "fixed and top lower R0", ("fixed", "top"), "R0", -1),
               (7, "full, lasso and fixed raise BLEU", ("full", "lasso", "fixed"), "BLEU", +1))
FACTOR = max(len(ADAPTED), len(METRICS))  # the largest Bonferroni factor of a finding (8's methods, 5's metrics)
LABELS = ("reproduced", "same direction", "tie", "opposite direction", "contradicted", "cannot tell",
          "not the paper's")
ENDS = ("p", "low", "high")  # a part's p, and the ends of its Monte Carlo interval


@dataclass
class Part:
    """One comparison a finding rests on: `plus` − `minus` (None: the baseline) on `metric`, in the direction `sign`
    (+1 up, −1 down, 0: within ±CLOSE), and its measured difference (stats.Difference)."""
    metric: str
    plus: str
    minus: str | None
    sign: int
    diff: object

    @property
    def name(self) -> str:
        return f"{self.plus}{'' if self.minus is None else ' − ' + self.minus} {self.metric}"

    def way(self) -> int:
        """+1 the paper's way, −1 the other way, 0 a tie (closeness: within ±CLOSE or not)."""
        d = self.diff.diff
        if self.sign == 0:
            return 1 if abs(d) < CLOSE else -1
        return int(math.copysign(1, self.sign * d)) if d else 0

    def p(self, end: str = "p") -> float:
        """The part's p (`end`: or an end of its Monte Carlo interval): for closeness, of being within ±CLOSE
        (the larger p of H0: Δ = −CLOSE and Δ = +CLOSE) or, beyond, of H0: Δ = the nearer bound."""
        if self.sign == 0:
            at = [self.diff.p_at(b) for b in (-CLOSE, CLOSE)] if self.way() > 0 \
                else [self.diff.p_at(math.copysign(CLOSE, self.diff.diff))]
            return max(a[ENDS.index(end)] for a in at)
        if end == "p" or self.diff.p_range is None:
            return self.diff.p
        return self.diff.p_range[ENDS.index(end) - 1]


@dataclass
class Finding:
    number: int
    claim: str
    evidence: str
    p: float | None          # the p of the rule that decided the label (before Holm's adjustment)
    verdict: str
    ways: list[list[Part]] = field(default_factory=list)  # ways it can hold, each a list of parts that must all hold
    decided_by: str = "–"    # the part whose test gave p, and the rule
    adjusted: float | None = None  # p after Holm's adjustment over the stream's findings
    why: str = ""            # what a label does not say by itself
    direction: int = 0       # +1 the paper's way, −1 the other way, 0 a tie
    factor: int = 1          # the Bonferroni factor of the rule in that direction
    ends: dict = field(default_factory=dict)  # p at each end of the parts' Monte Carlo intervals


def verdict(ways: list[list[Part]], end: str = "p") -> tuple[int, float, Part | None, int]:
    """(direction, p, deciding part, Bonferroni factor) of a finding that holds when every part of some way holds
    (module docstring); `end`: every part's p taken at that end of its Monte Carlo interval."""
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


def holm(ps: list[float]) -> list[float]:
    """Holm's step-down adjustment: the i-th smallest of m p values times (m − i + 1), kept monotone, at most 1."""
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    adjusted, running = [0.0] * len(ps), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(ps) - rank) * ps[i]))
        adjusted[i] = running
    return adjusted


def levels(findings: int, factor: int) -> list[float]:
    """Every level a part's p is compared with: α over each Holm factor times each Bonferroni factor."""
    return sorted({sig.ALPHA / (k * f) for k in range(1, findings + 1) for f in range(1, factor + 1)})


def paper_shows(ways: list[list[Part]], set_name: str, baseline: Run) -> bool:
    """Whether the paper's Table 5 shows the finding on the stream's counterpart set: every part of some way in the
    claimed direction (closeness: every difference within ±CLOSE)."""
    for way in ways:
        effects = [paper_points(part, set_name, baseline.scores.get(part.metric, math.nan)) for part in way]
        if all(e is not None and (abs(e) <= CLOSE if part.sign == 0 else part.sign * e > 0)
               for part, e in zip(way, effects)):
            return True
    return False


def _p(p: float | None) -> str:
    """Three decimals, five where three would round onto 0.05 (a label must not seem to contradict its p)."""
    if p is None:
        return "–"
    return "<0.001" if p < 0.001 else f"{p:.5f}" if abs(p - sig.ALPHA) < 0.0005 else f"{p:.3f}"


def _ci(ci: tuple[float, float]) -> str:
    return f"[{sig.bound(ci[0])}, {sig.bound(ci[1])}]"


def _d(part: Part, labelled: bool) -> str:
    """A part as the evidence shows it; `labelled`: with its own direction (a finding of several parts). A closeness
    part's p is that of its test against ±CLOSE."""
    way = {1: "the paper's way", -1: "the other way", 0: "tie"}[part.way()] if labelled else ""
    p = f"p(|Δ| < {CLOSE:g})" if part.sign == 0 else "p"
    return f"{part.name} {part.diff.diff:+.1f} {_ci(part.diff.ci)} {p} {_p(part.p())}" + (f", {way}" if way else "")


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


def _settle(at: list[float], used: set[tuple[int, str]], close_runs: set[int]):
    """stats.compare's `settle`: a p that some finding uses (`used`: run, metric) and whose Monte Carlo interval
    holds one of the levels `at` is drawn on (for the closeness runs, also its p of H0: Δ = ±CLOSE)."""
    def straddles(r: int, metric: str, diff) -> bool:
        if (r, metric) not in used:
            return False
        ranges = [diff.p_range] + ([diff.p_at(b)[1:] for b in (-CLOSE, CLOSE)]
                                   if r in close_runs and diff.flips is not None else [])
        return any(lo < level <= hi for lo, hi in filter(None, ranges) for level in at)
    return straddles


def check(block: Block, cfg: sig.Settings) -> tuple[list[Finding], list[str], sig.Result]:
    """The eight findings on one block, labelled and adjusted (module docstring); and the adapted methods present
    with their analysis against the baseline (for --effects)."""
    if cfg.test in ("ci", "bs"):  # the verdicts' rules (closeness, intervals, floors) are the randomisation test's
        raise UserError(f"findings decides by the randomisation test (--test auto, ar or exact), not --test "
                        f"{cfg.test}; the bootstrap's p is in `table --significance --test ci`")
    runs = _by_method(block)
    baseline = block.need_baseline("findings")
    present = [m for m in ADAPTED if m in runs]
    metrics = [m for m in METRICS if all(m in r.scores for r in (baseline, *(runs[k] for k in present)))]
    at = levels(8, FACTOR)
    row = {m: i + 1 for i, m in enumerate(present)}  # a method's run in the analysis against the baseline
    used = {(row[m], metric) for *_, methods, metric, _ in DIRECTIONAL for m in methods if m in row}
    used |= {(row[m], k) for m in present for k in ("BLEU", "R0")}
    used |= {(row["bias"], k) for k in METRICS if "bias" in row}
    result = sig.analyse([baseline, *(runs[m] for m in present)], metrics, cfg, "findings",
                         settle=_settle(at, used, {row["bias"]} if "bias" in row else set()))
    vs_base = {m: result.differences[i + 1] for i, m in enumerate(present)}
    n = result.units
    set_name = paper.paper_set(block.dataset)
    out: list[Finding] = []

    def missing(number: int, claim: str, methods: tuple[str, ...], needed: tuple[str, ...]) -> bool:
        """Record the finding as cannot tell when a method, a score or a difference is missing."""
        lacking = [m for m in methods if m not in runs]
        why = f"no {', '.join(lacking)} run" if lacking else ""
        if not why:
            gone = [k for k in needed if k not in metrics or any(math.isnan(vs_base[m][k].diff) for m in methods)]
            why = f"no {', '.join(gone)} difference" if gone else ""
        if why:
            out.append(Finding(number, claim, why, None, "cannot tell", why=why))
        return bool(why)

    def add(number: int, claim: str, ways: list[list[Part]]) -> None:
        labelled = sum(len(way) for way in ways) > 1
        out.append(Finding(number, claim, "; ".join(_d(part, labelled) for way in ways for part in way), None, "",
                           ways))

    def direction(number: int, claim: str, methods: tuple[str, ...], metric: str, sign: int) -> None:
        if not missing(number, claim, methods, (metric,)):
            add(number, claim, [[Part(metric, m, None, sign, vs_base[m][metric]) for m in methods]])

    for spec in DIRECTIONAL[:2]:
        direction(*spec)
    for number, metric in ((3, "R0"), (4, "R0+1")):
        claim = f"lasso has the best {metric} of the adapted methods"
        others = tuple(m for m in present if m != "lasso")
        if missing(number, claim, ("lasso", *others), (metric,)):
            continue
        if not others:
            out.append(Finding(number, claim, "no other adapted method", None, "cannot tell",
                               why="no other adapted method"))
            continue
        against = sig.analyse([runs["lasso"], *(runs[m] for m in others)], [metric], cfg, "findings", warn=False,
                              settle=_settle(at, {(i + 1, metric) for i in range(len(others))}, set()))
        add(number, claim, [[Part(metric, m, "lasso", -1, against.differences[i + 1][metric])
                             for i, m in enumerate(others)]])
    claim = f"bias stays close to the baseline (every difference within ±{CLOSE:g} points)"
    if not missing(5, claim, ("bias",), tuple(METRICS)):
        add(5, claim, [[Part(m, "bias", None, 0, vs_base["bias"][m]) for m in METRICS]])
    for spec in DIRECTIONAL[2:]:
        direction(*spec)
    claim = "BLEU and R0 disagree for some method (BLEU up, R0 down)"
    if not present:
        out.append(Finding(8, claim, "no adapted method", None, "cannot tell", why="no adapted method"))
    elif not missing(8, claim, tuple(present), ("BLEU", "R0")):
        add(8, claim, [[Part("BLEU", m, None, +1, vs_base[m]["BLEU"]), Part("R0", m, None, -1, vs_base[m]["R0"])]
                       for m in present])
    _label([f for f in out if f.ways], set_name, baseline, smallest_p(cfg, n), n, cfg.unit)
    return sorted(out, key=lambda f: f.number), present, result


def _rule(f: Finding, part: Part | None) -> str:
    if part is None:
        return "a part tied (Δ = 0), none the other way"
    if f.ways[0][0].sign == 0:
        return f"{part.name}: " + (f"the largest p of every metric within ±{CLOSE:g}" if f.direction > 0
                                   else f"beyond ±{CLOSE:g}, × {f.factor}")
    if f.direction > 0:
        return part.name + (f": the smallest p of {f.factor} methods, × {f.factor}" if f.factor > 1
                            else ": the largest p of every part" if len(f.ways[0]) > 1 else "")
    return part.name + (f": against, × {f.factor} parts" if f.factor > 1 else "")


def _label(tested: list[Finding], set_name: str, baseline: Run, least: float, n: int, unit: str) -> None:
    """Direction, p, Holm's adjustment and the label of every finding with parts (module docstring)."""
    family = []
    for f in tested:
        f.direction, f.p, part, f.factor = verdict(f.ways)
        f.decided_by = _rule(f, part)
        if not paper_shows(f.ways, set_name, baseline):
            f.verdict, f.why = "not the paper's", f"the paper's Table 5 ({set_name}) does not show it"
            continue
        f.ends = {"p": f.p, **{end: verdict(f.ways, end)[1] for end in ENDS[1:]}}
        family.append(f)
    m = len(family)
    adjusted = {end: holm([f.ends[end] for f in family]) for end in ENDS}
    for i, f in enumerate(family):
        f.adjusted = adjusted["p"][i]
        labels = {_name(f.direction, adjusted[end][i]) for end in ENDS}
        reachable = max(m, f.factor) * least  # Holm's step: m × the smallest q, and this finding's q ≥ f × least
        if f.direction == 0:
            f.verdict = "tie"
        elif reachable >= sig.ALPHA:
            f.verdict = "cannot tell"
            f.why = (f"too few {unit}s: {n} give p ≥ {least:.3g}, and after the rule's × {f.factor} and Holm's "
                     f"× {m} the smallest reachable is {min(reachable, 1):.2g}, never below {sig.ALPHA}")
        elif len(labels) > 1:
            f.verdict = "cannot tell"
            f.why = (f"Monte Carlo error: adjusted p between {min(a[i] for a in adjusted.values()):.4f} and "
                     f"{max(a[i] for a in adjusted.values()):.4f} after the most trials")
        else:
            f.verdict = labels.pop()
        if f.verdict in ("opposite direction", "contradicted", "tie"):  # what the rule's label does not show
            along = [p.name for way in f.ways for p in way
                     if p.way() > 0 and len(f.ways) * len(way) * m * p.p() < sig.ALPHA]
            if along:
                f.why = (f"mixed: {', '.join(along)} significantly the paper's way on its own; the rule "
                         f"({'every part must hold' if len(f.ways) == 1 else 'some method, both parts'}) decides")


def _name(direction: int, adjusted: float) -> str:
    significant = sig.significant(adjusted)
    if direction > 0:
        return "reproduced" if significant else "same direction"
    return "contradicted" if significant else "opposite direction" if direction < 0 else "tie"


def markdown(block: Block, findings: list[Finding]) -> str:
    lines = [f"**{block.dataset} · {block.segments} segments · data {block.fingerprint} · model {block.model}**", "",
             "| # | the paper's finding | here: Δ in points [95% CI], p (each part's direction) | decided by | p | "
             "p (Holm) | verdict | why |",
             "|--:|:--|:--|:--|--:|--:|:--|:--|"]
    lines += [f"| {f.number} | {f.claim} | {f.evidence} | {f.decided_by} | {_p(f.p)} | {_p(f.adjusted)} | "
              f"{f.verdict} | {f.why or '–'} |" for f in findings]
    count = {label: sum(f.verdict == label for f in findings) for label in LABELS}
    shown = [label for label in LABELS if count[label] or label not in ("tie", "not the paper's")]
    lines += ["", f"_Of {len(findings)}: " + ", ".join(f"{count[label]} {label}" for label in shown)
              + f" (reproduced and contradicted: p < {sig.ALPHA} after Holm's adjustment)._"]
    return "\n".join(lines)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="adaptsim findings", description=__doc__.split("\n\n")[0])
    p.add_argument("dirs", nargs="+", metavar="DIR", help="sweep or run directories (searched recursively)")
    p.add_argument("--effects", action="store_true",
                   help="also each method's relative difference to the baseline with its interval, beside the paper's "
                        "Table 5 (adaptsim/report/power.py)")
    p.add_argument("--power", action="store_true",
                   help="also, per finding, the smallest difference this stream detects with 80%% power and the "
                        "documents the paper's effect would need, at the level the finding is tested at")
    sig.add_arguments(p)
    return p


def report(block: Block, cfg: sig.Settings, effects: bool, power: bool) -> str:
    """One block's findings, with its effect sizes and power where asked for."""
    findings, present, result = check(block, cfg)
    parts = [markdown(block, findings)]
    if effects:
        parts.append(effects_markdown(block, present, result, list(result.scores[0])))
    if power:
        parts.append(power_markdown(block, findings, block.need_baseline("findings"), cfg, CLOSE))
    return "\n\n".join(parts) + "".join(f"\n\n_Note: {n}._" for n in notes(block.rows))


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    cfg = sig.settings(args)
    texts = [report(block, cfg, args.effects, args.power)
             for block in blocks(finished_runs(args.dirs, "findings").runs)]
    print("\n\n".join(texts) + f"\n\n_p: {cfg.describe()}, two-sided, seed {cfg.seed}; intervals: the test "
          f"inverted; adjusted by Holm over each stream's findings; reproduced / contradicted: the paper's / the "
          f"other direction at p < {sig.ALPHA} after the adjustment (finding 5: every difference within / one beyond "
          f"±{CLOSE:g} points, tested against ±{CLOSE:g}); same / opposite direction: not significant; cannot tell: "
          "too few documents for the corrected test, something missing, or Monte Carlo error at the most trials; "
          "not the paper's: the paper's own number not in the claimed direction; adaptsim/report/findings.py._")
    return 0
