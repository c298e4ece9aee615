"""`adaptsim findings DIR…`: the paper's eight findings checked on a sweep, each with its evidence, p-value and
verdict, one block per data set (the runs of `+experiment=paper_methods`).

The findings (Simianer et al. 2019, §5–6 and Table 5), as tested here (Δ = method − baseline, in points):

1. full raises R1 (one-shot recall);                    Δ R1 > 0
2. full lowers R0 (zero-shot recall);                    Δ R0 < 0
3. lasso has the best R0 of the adapted methods;         R0 of every other adapted method − lasso's ≤ 0
4. lasso has the best R0+1 of the adapted methods;       the same on R0+1
5. bias stays close to the baseline;                     every 95% interval of bias's Δ within ±CLOSE points
6. fixed and top lower R0;                               Δ R0 < 0 for both
7. full, lasso and fixed raise BLEU;                     Δ BLEU > 0 for all three
8. BLEU and R0 disagree for some method;                 Δ BLEU > 0 and Δ R0 < 0 for some adapted method

Verdicts: **reproduced** (the direction holds and p < 0.05), **not significant** (the direction holds,
p ≥ 0.05), **not reproduced** (the direction does not hold), **not testable** (a method or a score is
missing). A finding about several comparisons takes the largest of their p-values (every part must hold).
Finding 5 is a test of closeness, not of difference: reproduced when every interval lies within ±CLOSE,
not reproduced when some difference is significant (its p is the smallest), not significant otherwise.
Finding 8 takes the method with the smallest p (the larger of its BLEU and R0 p-values), Bonferroni-corrected
for the methods that could have shown it. "The adapted methods" of 3 and 4 are all of bias, full, lasso,
fixed and top that the sweep has, as in the paper's "lasso outperforms the other adaptation techniques".
The p-values are the paired test of `table --significance` (per-segment statistics, resampled by document).
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass, field

from adaptsim.errors import UserError
from adaptsim.report import significance as sig
from adaptsim.report.blocks import Block, blocks
from adaptsim.report.notes import notes
from adaptsim.report.power import effects_markdown, power_markdown
from adaptsim.report.runs import Run, finished_runs
from adaptsim.report.stats import TESTS

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


@dataclass
class Finding:
    number: int
    claim: str
    evidence: str
    p: float | None
    verdict: str
    ways: list[list[Part]] = field(default_factory=list)  # ways it can hold, each a list of parts that must all hold


def verdict(holds: bool, p: float | None) -> str:
    if not holds:
        return "not reproduced"
    return "reproduced" if sig.significant(p) else "not significant"


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
    """The eight findings on one block; a finding whose methods or scores are missing says so."""
    runs = _by_method(block)
    baseline = block.need_baseline("findings")
    present = [m for m in ADAPTED if m in runs]
    metrics = [m for m in METRICS if all(m in r.scores for r in (baseline, *(runs[k] for k in present)))]
    result = sig.analyse([baseline, *(runs[m] for m in present)], metrics, cfg, "findings")
    vs_base = {m: result.differences[i + 1] for i, m in enumerate(present)}
    out: list[Finding] = []

    def untestable(number: int, claim: str, methods: tuple[str, ...], needed: tuple[str, ...]) -> bool:
        """Record the finding as not testable when a method, a score or a difference is missing."""
        lacking = [m for m in methods if m not in runs]
        why = f"no {', '.join(lacking)} run" if lacking else ""
        if not why:
            gone = [k for k in needed if k not in metrics or any(math.isnan(vs_base[m][k].diff) for m in methods)]
            why = f"no {', '.join(gone)} difference" if gone else ""
        if why:
            out.append(Finding(number, claim, why, None, "not testable"))
        return bool(why)

    def direction(number: int, claim: str, methods: tuple[str, ...], metric: str, sign: int) -> None:
        if untestable(number, claim, methods, (metric,)):
            return
        diffs = [vs_base[m][metric] for m in methods]
        p = max(d.p for d in diffs)
        out.append(Finding(number, claim, "; ".join(_d(d, metric, m) for m, d in zip(methods, diffs)), p,
                           verdict(all(sign * d.diff > 0 for d in diffs), p),
                           [[Part(metric, m, None, sign, d) for m, d in zip(methods, diffs)]]))

    direction(1, "full raises R1", ("full",), "R1", +1)
    direction(2, "full lowers R0", ("full",), "R0", -1)
    for number, metric in ((3, "R0"), (4, "R0+1")):
        claim = f"lasso has the best {metric} of the adapted methods"
        others = tuple(m for m in present if m != "lasso")
        if untestable(number, claim, ("lasso", *others), (metric,)):
            continue
        if not others:
            out.append(Finding(number, claim, "no other adapted method", None, "not testable"))
            continue
        against = sig.analyse([runs["lasso"], *(runs[m] for m in others)], [metric], cfg, "findings", warn=False)
        diffs = [against.differences[i + 1][metric] for i in range(len(others))]
        p = max(d.p for d in diffs)
        evidence = "; ".join(f"{m} − lasso {d.diff:+.1f} [{d.ci[0]:+.1f}, {d.ci[1]:+.1f}]"
                             for m, d in zip(others, diffs))
        out.append(Finding(number, claim, evidence, p, verdict(all(d.diff <= 0 for d in diffs), p),  # ties: best too
                           [[Part(metric, m, "lasso", -1, d) for m, d in zip(others, diffs)]]))
    claim = f"bias stays close to the baseline (every 95% interval within ±{CLOSE:g} points)"
    if not untestable(5, claim, ("bias",), tuple(METRICS)):
        diffs = {m: vs_base["bias"][m] for m in METRICS}
        p = min(d.p for d in diffs.values())
        close = all(-CLOSE <= d.ci[0] and d.ci[1] <= CLOSE for d in diffs.values())
        differ = any(sig.significant(d.p) for d in diffs.values())
        out.append(Finding(5, claim, "; ".join(_d(d, m, "bias") for m, d in diffs.items()), p,
                           "reproduced" if close else "not reproduced" if differ else "not significant",
                           [[Part(m, "bias", None, 0, d) for m, d in diffs.items()]]))
    direction(6, "fixed and top lower R0", ("fixed", "top"), "R0", -1)
    direction(7, "full, lasso and fixed raise BLEU", ("full", "lasso", "fixed"), "BLEU", +1)
    claim = "BLEU and R0 disagree for some method (BLEU up, R0 down)"
    if not present:
        out.append(Finding(8, claim, "no adapted method", None, "not testable"))
    elif not untestable(8, claim, tuple(present), ("BLEU", "R0")):
        ways = [[Part("BLEU", m, None, +1, vs_base[m]["BLEU"]), Part("R0", m, None, -1, vs_base[m]["R0"])]
                for m in present]
        disagree = [(min(1.0, len(present) * max(vs_base[m]["BLEU"].p, vs_base[m]["R0"].p)), m) for m in present
                    if vs_base[m]["BLEU"].diff > 0 and vs_base[m]["R0"].diff < 0]
        if disagree:
            p, m = min(disagree)
            evidence = f"{_d(vs_base[m]['BLEU'], 'BLEU', m)}; {_d(vs_base[m]['R0'], 'R0', m)} (p × {len(present)})"
            out.append(Finding(8, claim, evidence, p, verdict(True, p), ways))
        else:
            out.append(Finding(8, claim, "no method raises BLEU while lowering R0", None, "not reproduced", ways))
    return sorted(out, key=lambda f: f.number)


def markdown(block: Block, findings: list[Finding]) -> str:
    lines = [f"**{block.dataset} · {block.segments} segments · data {block.fingerprint} · model {block.model}**", "",
             "| # | the paper's finding | here: Δ in points [95% CI] | p | verdict |", "|--:|:--|:--|--:|:--|"]
    lines += [f"| {f.number} | {f.claim} | {f.evidence} | {'–' if f.p is None else f'{f.p:.3f}'} | {f.verdict} |"
              for f in findings]
    held = sum(f.verdict == "reproduced" for f in findings)
    lines += ["", f"_{held} of {len(findings)} reproduced at p < {sig.ALPHA}; "
              f"{sum(f.verdict == 'not significant' for f in findings)} in the paper's direction without significance._"]
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
        parts.append(power_markdown(block, findings, baseline, cfg.unit, CLOSE))
    return "\n\n".join(parts) + "".join(f"\n\n_Note: {n}._" for n in notes(block.rows))


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    cfg = sig.settings(args)
    texts = [report(block, cfg, args.effects, args.power) for block in blocks(finished_runs(args.dirs, "findings").runs)]
    print("\n\n".join(texts) + f"\n\n_p: {TESTS[cfg.test]}, {cfg.resamples} resamples of {cfg.unit}s, seed "
          f"{cfg.seed}; reproduced: the paper's direction at p < {sig.ALPHA} (finding 5: every interval within "
          f"±{CLOSE:g} points), not significant: its direction at p ≥ that (5: neither close nor different), not "
          "reproduced: the other direction (5: a significant difference); adaptsim/report/findings.py._")
    return 0
