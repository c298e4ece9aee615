"""`adaptsim findings DIR…`: the paper's eight findings checked on a sweep, each with its evidence, p-value and
verdict, one block per data set (the runs of `+experiment=paper_methods`).

The findings (Simianer et al. 2019, §5–6 and Table 5), as tested here (Δ = method − baseline, in points):

1. full raises R1 (one-shot recall);                    Δ R1 > 0
2. full lowers R0 (zero-shot recall);                    Δ R0 < 0
3. lasso has the best R0 of the adapted methods;         R0 of every other adapted method − lasso's < 0
4. lasso has the best R0+1 of the adapted methods;       the same on R0+1
5. bias stays close to the baseline;                     every 95% interval of bias's Δ within ±CLOSE points
6. fixed and top lower R0;                               Δ R0 < 0 for both
7. full, lasso and fixed raise BLEU;                     Δ BLEU > 0 for all three
8. BLEU and R0 disagree for some method;                 Δ BLEU > 0 and Δ R0 < 0 for some adapted method

Verdicts, each from the test behind it (`verdict`; the p printed is that test's, and the part that decided it is
named):
- **reproduced**: the paper's direction, significant; **same direction**: its direction, not significant;
- **contradicted**: the opposite direction, significant; **opposite direction**: opposite, not significant;
- **cannot tell**: the test cannot reach p < 0.05 on this many documents (stats.min_units), a method or a score is
  missing, or the paper's own Table 5 number for the stream's counterpart set is 0 or points the other way (the
  paper did not show the finding there either).
A difference of exactly 0 is not the paper's direction (in every finding alike).
A finding whose parts must all hold (6, 7; 3 and 4 against every other adapted method) is reproduced when every
part is, at the largest of their p values (an intersection-union test); it is contradicted when some part is
significantly the other way, at the smallest of those p values times the number of parts (Bonferroni). Finding 8
can hold through any method: it takes the method with the smallest p, times the number of methods, and is
contradicted only when every method is (at the largest of their p values). Finding 5 is a
test of closeness: reproduced when every 95% interval of bias's differences lies within ±CLOSE points, contradicted
when one lies wholly beyond, same direction when every difference is within ±CLOSE, opposite when one is beyond;
it has no p, and stays out of the adjustment. "The adapted methods" of 3 and 4 are all of bias, full, lasso, fixed
and top that the sweep has, as in the paper's "lasso outperforms the other adaptation techniques".
The p values are the paired test of `table --significance` (per-segment statistics, resampled by document; the exact
randomisation test where the documents are few: adaptsim/report/stats.py), then adjusted over the findings of one
stream by Holm's step-down method (`holm`): a stream checks eight findings, and a "k of 8" must not count the one
in twenty that chance makes significant. The labels reproduced and contradicted need the adjusted p below 0.05.
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
from adaptsim.report.stats import min_units

ADAPTED = ("bias", "full", "lasso", "fixed", "top")
METRICS = ["BLEU", "TER", "R0", "R1", "R0+1"]
CLOSE = 1.0  # finding 5: points within which every difference of bias to the baseline must lie


@dataclass
class Part:
    """One comparison a finding rests on: `plus` − `minus` (None: the baseline) on `metric`, in the direction `sign`
    (+1 up, −1 down, 0: close to zero), and its measured difference."""
    metric: str
    plus: str
    minus: str | None
    sign: int
    diff: object  # stats.Difference


LABELS = ("reproduced", "same direction", "opposite direction", "contradicted", "cannot tell")


@dataclass
class Finding:
    number: int
    claim: str
    evidence: str
    p: float | None          # the p of the test that decided the label (before the adjustment)
    verdict: str
    ways: list[list[Part]] = field(default_factory=list)  # ways it can hold, each a list of parts that must all hold
    decided_by: str = "–"    # the part whose test gave p
    adjusted: float | None = None  # p after Holm's adjustment over the stream's findings


def _name(part: Part) -> str:
    return f"{part.plus}{'' if part.minus is None else ' − ' + part.minus} {part.metric}"


def verdict(ways: list[list[Part]]) -> tuple[str, float | None, str]:
    """(label, p, deciding part) of a finding that holds when every part of some way holds (module docstring)."""
    along, against = [], []
    for way in ways:
        directions = [part.sign * part.diff.diff for part in way]
        if all(d > 0 for d in directions):
            decisive = max(way, key=lambda part: part.diff.p)
            along.append((decisive.diff.p, decisive))
        else:  # some part not the paper's way (a difference of exactly 0 is not its way either)
            decisive = min((part for part, d in zip(way, directions) if d <= 0), key=lambda part: part.diff.p)
            against.append((min(1.0, len(way) * decisive.diff.p), decisive))
    if along:
        p, part = min(along, key=lambda a: a[0])
        p = min(1.0, len(ways) * p)
        return ("reproduced" if sig.significant(p) else "same direction"), p, _name(part)
    p, part = max(against, key=lambda a: a[0])
    return ("contradicted" if sig.significant(p) else "opposite direction"), p, _name(part)


def closeness(parts: list[Part]) -> str:
    """Finding 5's label: every interval within ±CLOSE, one wholly beyond, or where the point estimates lie."""
    if all(-CLOSE <= part.diff.ci[0] and part.diff.ci[1] <= CLOSE for part in parts):
        return "reproduced"
    if any(part.diff.ci[0] > CLOSE or part.diff.ci[1] < -CLOSE for part in parts):
        return "contradicted"
    return "same direction" if all(abs(part.diff.diff) <= CLOSE for part in parts) else "opposite direction"


def holm(ps: list[float]) -> list[float]:
    """Holm's step-down adjustment: the i-th smallest of m p values times (m − i + 1), kept monotone, at most 1."""
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    adjusted, running = [0.0] * len(ps), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(ps) - rank) * ps[i]))
        adjusted[i] = running
    return adjusted


def paper_shows(ways: list[list[Part]], set_name: str, baseline: Run) -> bool:
    """Whether the paper's Table 5 shows the finding on the stream's counterpart set: every part of some way in the
    claimed direction (closeness: every difference within ±CLOSE)."""
    for way in ways:
        effects = [paper_points(part, set_name, baseline.scores.get(part.metric, math.nan)) for part in way]
        if all(e is not None and (abs(e) <= CLOSE if part.sign == 0 else part.sign * e > 0)
               for part, e in zip(way, effects)):
            return True
    return False


def _d(diff, metric: str, label: str) -> str:
    return f"{label} {metric} {diff.diff:+.1f} [{diff.ci[0]:+.1f}, {diff.ci[1]:+.1f}]"


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


def check(block: Block, cfg: sig.Settings) -> list[Finding]:
    """The eight findings on one block, labelled and adjusted (module docstring)."""
    runs = _by_method(block)
    baseline = block.need_baseline("findings")
    present = [m for m in ADAPTED if m in runs]
    metrics = [m for m in METRICS if all(m in r.scores for r in (baseline, *(runs[k] for k in present)))]
    result = sig.analyse([baseline, *(runs[m] for m in present)], metrics, cfg, "findings")
    vs_base = {m: result.differences[i + 1] for i, m in enumerate(present)}
    test, n = cfg.effective(result.units), result.units
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
            out.append(Finding(number, claim, why, None, "cannot tell"))
        return bool(why)

    def judged(number: int, claim: str, evidence: str, ways: list[list[Part]]) -> Finding:
        if n < min_units(test):
            return Finding(number, claim, evidence, None, "cannot tell", ways,
                           f"{n} {cfg.unit}s (p < {sig.ALPHA} needs {min_units(test)})")
        if not paper_shows(ways, set_name, baseline):
            return Finding(number, claim, evidence, None, "cannot tell", ways,
                           f"the paper's Table 5 ({set_name}) does not show it")
        if ways[0][0].sign == 0:
            return Finding(number, claim, evidence, None, closeness(ways[0]), ways,
                           f"every interval against ±{CLOSE:g}")
        label, p, part = verdict(ways)
        return Finding(number, claim, evidence, p, label, ways, part)

    def direction(number: int, claim: str, methods: tuple[str, ...], metric: str, sign: int) -> None:
        if missing(number, claim, methods, (metric,)):
            return
        diffs = [vs_base[m][metric] for m in methods]
        out.append(judged(number, claim, "; ".join(_d(d, metric, m) for m, d in zip(methods, diffs)),
                          [[Part(metric, m, None, sign, d) for m, d in zip(methods, diffs)]]))

    direction(1, "full raises R1", ("full",), "R1", +1)
    direction(2, "full lowers R0", ("full",), "R0", -1)
    for number, metric in ((3, "R0"), (4, "R0+1")):
        claim = f"lasso has the best {metric} of the adapted methods"
        others = tuple(m for m in present if m != "lasso")
        if missing(number, claim, ("lasso", *others), (metric,)):
            continue
        if not others:
            out.append(Finding(number, claim, "no other adapted method", None, "cannot tell"))
            continue
        against = sig.analyse([runs["lasso"], *(runs[m] for m in others)], [metric], cfg, "findings", warn=False)
        diffs = [against.differences[i + 1][metric] for i in range(len(others))]
        evidence = "; ".join(f"{m} − lasso {d.diff:+.1f} [{d.ci[0]:+.1f}, {d.ci[1]:+.1f}]"
                             for m, d in zip(others, diffs))
        out.append(judged(number, claim, evidence, [[Part(metric, m, "lasso", -1, d) for m, d in zip(others, diffs)]]))
    claim = f"bias stays close to the baseline (every 95% interval within ±{CLOSE:g} points)"
    if not missing(5, claim, ("bias",), tuple(METRICS)):
        diffs = {m: vs_base["bias"][m] for m in METRICS}
        out.append(judged(5, claim, "; ".join(_d(d, m, "bias") for m, d in diffs.items()),
                          [[Part(m, "bias", None, 0, d) for m, d in diffs.items()]]))
    direction(6, "fixed and top lower R0", ("fixed", "top"), "R0", -1)
    direction(7, "full, lasso and fixed raise BLEU", ("full", "lasso", "fixed"), "BLEU", +1)
    claim = "BLEU and R0 disagree for some method (BLEU up, R0 down)"
    if not present:
        out.append(Finding(8, claim, "no adapted method", None, "cannot tell"))
    elif not missing(8, claim, tuple(present), ("BLEU", "R0")):
        ways = [[Part("BLEU", m, None, +1, vs_base[m]["BLEU"]), Part("R0", m, None, -1, vs_base[m]["R0"])]
                for m in present]
        shown = [m for m in present if vs_base[m]["BLEU"].diff > 0 and vs_base[m]["R0"].diff < 0]
        evidence = "; ".join(f"{_d(vs_base[m]['BLEU'], 'BLEU', m)}, R0 {vs_base[m]['R0'].diff:+.1f}" for m in shown) \
            or "no method raises BLEU while lowering R0"
        out.append(judged(8, claim, evidence, ways))
    tested = [f for f in out if f.p is not None]
    for f, adjusted in zip(tested, holm([f.p for f in tested])):
        f.adjusted = adjusted
        if f.verdict in ("reproduced", "contradicted") and not sig.significant(adjusted):
            f.verdict = "same direction" if f.verdict == "reproduced" else "opposite direction"
    return sorted(out, key=lambda f: f.number)


def _p(p: float | None) -> str:
    """Three decimals, five where three would round onto 0.05 (a label must not seem to contradict its p)."""
    if p is None:
        return "–"
    return "<0.001" if p < 0.001 else f"{p:.5f}" if abs(p - sig.ALPHA) < 0.0005 else f"{p:.3f}"


def markdown(block: Block, findings: list[Finding]) -> str:
    lines = [f"**{block.dataset} · {block.segments} segments · data {block.fingerprint} · model {block.model}**", "",
             "| # | the paper's finding | here: Δ in points [95% CI] | decided by | p | p (Holm) | verdict |",
             "|--:|:--|:--|:--|--:|--:|:--|"]
    lines += [f"| {f.number} | {f.claim} | {f.evidence} | {f.decided_by} | {_p(f.p)} | {_p(f.adjusted)} | "
              f"{f.verdict} |" for f in findings]
    count = {label: sum(f.verdict == label for f in findings) for label in LABELS}
    lines += ["", f"_Of {len(findings)}: " + ", ".join(f"{count[label]} {label}" for label in LABELS)
              + f" (reproduced and contradicted: p < {sig.ALPHA} after Holm's adjustment)._"]
    return "\n".join(lines)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="adaptsim findings", description=__doc__.split("\n\n")[0])
    p.add_argument("dirs", nargs="+", metavar="DIR", help="sweep or run directories (searched recursively)")
    p.add_argument("--effects", action="store_true",
                   help="also each method's relative difference to the baseline with its interval, beside the paper's "
                        "Table 5 (adaptsim/report/power.py)")
    p.add_argument("--power", action="store_true",
                   help="also, per finding, the smallest difference this stream can detect and the documents the "
                        "paper's effect would need (80%% power)")
    sig.add_arguments(p)
    return p


def report(block: Block, cfg: sig.Settings, effects: bool, power: bool) -> str:
    """One block's findings, with its effect sizes and power where asked for."""
    findings = check(block, cfg)
    parts = [markdown(block, findings)]
    if effects or power:
        runs, baseline = _by_method(block), block.need_baseline("findings")
    if effects:
        present = [m for m in ADAPTED if m in runs]
        metrics = [m for m in METRICS if all(m in r.scores for r in (baseline, *(runs[k] for k in present)))]
        result = sig.analyse([baseline, *(runs[m] for m in present)], metrics, cfg, "findings", warn=False)
        parts.append(effects_markdown(block, present, result, metrics))
    if power:
        parts.append(power_markdown(block, findings, baseline, cfg, CLOSE))
    return "\n\n".join(parts) + "".join(f"\n\n_Note: {n}._" for n in notes(block.rows))


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    cfg = sig.settings(args)
    texts = [report(block, cfg, args.effects, args.power)
             for block in blocks(finished_runs(args.dirs, "findings").runs)]
    print("\n\n".join(texts) + f"\n\n_p: {cfg.describe()}, {cfg.resamples} resamples of {cfg.unit}s, seed "
          f"{cfg.seed}, adjusted by Holm over each stream's findings; reproduced / contradicted: the paper's / the "
          f"other direction at p < {sig.ALPHA} after the adjustment (finding 5: every interval within / one wholly "
          f"beyond ±{CLOSE:g} points); same / opposite direction: not significant; cannot tell: too few "
          "documents for the test, something missing, or the paper's own number not in the claimed direction; "
          "adaptsim/report/findings.py._")
    return 0
