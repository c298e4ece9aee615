"""`adaptsim findings DIR…`: the paper's eight findings checked on a sweep, each with its evidence, p-value and
verdict, one block per data set (the runs of `+experiment=paper_methods`).

The findings (Simianer et al. 2019, §5–6 and Table 5), as tested here:

1. full raises R1 (one-shot recall);                    Δ(full − baseline) R1 > 0
2. full lowers R0 (zero-shot recall);                    Δ(full − baseline) R0 < 0
3. lasso has the best R0 of the adapted methods;         Δ(other − lasso) R0 < 0 for every other adapted method
4. lasso has the best R0+1 of the adapted methods;       the same on R0+1
5. bias stays close to the baseline;                     no metric of bias differs from the baseline
6. fixed and top lower R0;                               Δ R0 < 0 for both
7. full, lasso and fixed raise BLEU;                     Δ BLEU > 0 for all three
8. BLEU and R0 disagree for some method;                 Δ BLEU and Δ R0 of opposite signs for some method

Verdicts: **reproduced** (the direction holds and p < 0.05), **not significant** (the direction holds,
p ≥ 0.05), **not reproduced** (the direction does not hold). A finding about several comparisons takes
the largest of their p-values (every part must hold); finding 5 is reproduced when none of bias's
BLEU, TER, R0, R1, R0+1 differs at p < 0.05 (its p is the smallest of those) and not reproduced
otherwise; finding 8 takes the method whose disagreement has the smallest p. The p-values are the paired
test of `table --significance` (per-segment statistics, resampled by document).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from adaptsim.report import significance as sig
from adaptsim.report.compare import Block, blocks
from adaptsim.report.runs import Run, finished_runs
from adaptsim.stats import TESTS

ADAPTED = ("bias", "full", "lasso", "fixed", "top")
CLOSE_METRICS = ("BLEU", "TER", "R0", "R1", "R0+1")
METRICS = ["BLEU", "TER", "R0", "R1", "R0+1"]


@dataclass
class Finding:
    number: int
    claim: str
    evidence: str
    p: float | None
    verdict: str


def verdict(holds: bool, p: float | None) -> str:
    if not holds:
        return "not reproduced"
    return "reproduced" if sig.significant(p) else "not significant"


def _d(diff, metric: str, label: str) -> str:
    return f"{label} {metric} {diff.diff:+.1f} [{diff.ci[0]:+.1f}, {diff.ci[1]:+.1f}]"


def check(block: Block, cfg: sig.Settings) -> list[Finding]:
    """The eight findings on one block; a finding whose methods are missing says so."""
    runs: dict[str, Run] = {run.method: run for _, run in block.rows}
    baseline = block.need_baseline("findings")
    present = [m for m in ADAPTED if m in runs]
    result = sig.analyse([baseline, *(runs[m] for m in present)], METRICS, cfg, "findings")
    vs_base = {m: result.differences[i + 1] for i, m in enumerate(present)}
    out: list[Finding] = []

    def missing(number: int, claim: str, needed: tuple[str, ...]) -> bool:
        lacking = [m for m in needed if m not in runs]
        if lacking:
            out.append(Finding(number, claim, f"no {', '.join(lacking)} run", None, "not testable"))
        return bool(lacking)

    def direction(number: int, claim: str, methods: tuple[str, ...], metric: str, sign: int) -> None:
        if missing(number, claim, methods):
            return
        diffs = [vs_base[m][metric] for m in methods]
        p = max(d.p for d in diffs)
        out.append(Finding(number, claim, "; ".join(_d(d, metric, m) for m, d in zip(methods, diffs)), p,
                           verdict(all(sign * d.diff > 0 for d in diffs), p)))

    direction(1, "full raises R1", ("full",), "R1", +1)
    direction(2, "full lowers R0", ("full",), "R0", -1)
    for number, metric in ((3, "R0"), (4, "R0+1")):
        claim = f"lasso has the best {metric} of the adapted methods"
        others = [m for m in present if m != "lasso"]
        if missing(number, claim, ("lasso",)) or not others:
            continue
        against = sig.analyse([runs["lasso"], *(runs[m] for m in others)], [metric], cfg, "findings", warn=False)
        diffs = [against.differences[i + 1][metric] for i in range(len(others))]
        p = max(d.p for d in diffs)
        evidence = "; ".join(f"{m} − lasso {d.diff:+.1f} [{d.ci[0]:+.1f}, {d.ci[1]:+.1f}]" for m, d in zip(others, diffs))
        out.append(Finding(number, claim, evidence, p, verdict(all(d.diff < 0 for d in diffs), p)))
    claim = "bias stays close to the baseline"
    if not missing(5, claim, ("bias",)):
        diffs = {m: vs_base["bias"][m] for m in CLOSE_METRICS}
        p = min(d.p for d in diffs.values())
        differ = [m for m, d in diffs.items() if sig.significant(d.p)]
        out.append(Finding(5, claim, "; ".join(_d(d, m, "bias") for m, d in diffs.items()), p,
                           "not reproduced" if differ else "reproduced"))
    direction(6, "fixed and top lower R0", ("fixed", "top"), "R0", -1)
    direction(7, "full, lasso and fixed raise BLEU", ("full", "lasso", "fixed"), "BLEU", +1)
    claim = "BLEU and R0 disagree for some method"
    disagree = [(max(vs_base[m]["BLEU"].p, vs_base[m]["R0"].p), m) for m in present
                if vs_base[m]["BLEU"].diff * vs_base[m]["R0"].diff < 0]
    if disagree:
        p, m = min(disagree)
        evidence = f"{_d(vs_base[m]['BLEU'], 'BLEU', m)}; {_d(vs_base[m]['R0'], 'R0', m)}"
        out.append(Finding(8, claim, evidence, p, verdict(True, p)))
    else:
        out.append(Finding(8, claim, "every method moves BLEU and R0 the same way", None, "not reproduced"))
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
    sig.add_arguments(p)
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    cfg = sig.settings(args)
    texts = [markdown(block, check(block, cfg)) for block in blocks(finished_runs(args.dirs, "findings").runs)]
    print("\n\n".join(texts) + f"\n\n_p: {TESTS[cfg.test]}, {cfg.resamples} resamples of {cfg.unit}s, seed "
          f"{cfg.seed}; reproduced: the paper's direction at p < {sig.ALPHA}, not significant: its direction at "
          "p ≥ that, not reproduced: the other direction (adaptsim/report/findings.py)._")
    return 0
