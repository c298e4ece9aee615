"""The device comparison of scripts/device/gpu.sh: sweeps of the same methods on the same segments, the first the
reference (the CPU's), each other set against it method by method — are the hypotheses and scores the same, and if
not, where do they first differ and by how much — and the per-segment times of all of them side by side.

    python scripts/device/compare.py REFERENCE_SWEEP SWEEP [SWEEP …]     (markdown on stdout)

"Identical" is asked of the hypotheses and the update counts; perplexities and log-probabilities are compared as
numbers (the largest difference is printed), since another device sums in another order.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

from adaptsim.report.runs import finished_runs
from adaptsim.report.significance import Steps

SCORES = ("BLEU", "R0", "R1", "R0+1")


def runs(sweep: Path) -> dict[str, tuple[dict, list[dict]]]:
    """method → (summary, steps) of every finished run of a sweep, read as the reports read them."""
    return {run.summary["method"]: (run.summary, Steps.of(run).rows)
            for run in finished_runs([str(sweep)], "compare.py").runs}


def first_difference(a: list[dict], b: list[dict]) -> str:
    """Where two runs' steps first part: the segment and what differs there (– where nothing does)."""
    if len(a) != len(b):
        return f"{len(a)} against {len(b)} steps"
    for x, y in zip(a, b):
        what = [k for k in ("hypothesis", "updates") if x.get(k) != y.get(k)]
        if what:
            return f"segment {x['index'] + 1} ({x['doc_id']}/{x['seg_id']}): {', '.join(what)}"
    return "–"


def largest(a: list[dict], b: list[dict], key: str) -> float:
    """The largest absolute difference of a per-step number (or of its per-token values, for logprobs)."""
    if key == "logprobs":
        pairs = [(u, v) for x, y in zip(a, b) for u, v in zip(x.get(key) or [], y.get(key) or [])]
    else:
        pairs = [(x[key], y[key]) for x, y in zip(a, b) if x.get(key) is not None and y.get(key) is not None]
    return max((abs(u - v) for u, v in pairs), default=0.0)


def median_ms(steps: list[dict], key: str) -> str:
    values = [s[key] for s in steps if s.get(key) is not None]
    return f"{1000 * statistics.median(values):.0f}" if values else "–"


def report(sweeps: list[Path]) -> str:
    found = {sweep.name: runs(sweep) for sweep in sweeps}
    reference = sweeps[0].name
    methods = list(found[reference])
    lines = []
    for name, sweep_runs in found.items():
        devices = sorted({s["timing"].get("device", "?") for s, _ in sweep_runs.values()})
        some = next(iter(sweep_runs.values()), None)
        lines.append(f"- **{name}**: {len(sweep_runs)} runs, {len(some[1]) if some else 0} segments; "
                     f"device {', '.join(devices) or '–'}")
    lines += ["", f"## Against {reference}", "",
              "| method | sweep | hypotheses equal | first difference | max Δ ppl_before | max Δ logprob | "
              + " | ".join(f"Δ {s}" for s in SCORES) + " |",
              "|:--|:--|--:|:--|--:|--:|" + "--:|" * len(SCORES)]
    for method in methods:
        ref_summary, ref_steps = found[reference][method]
        for name in list(found)[1:]:
            if method not in found[name]:
                lines.append(f"| {method} | {name} | no finished run | | | |" + " |" * len(SCORES))
                continue
            summary, steps = found[name][method]
            equal = sum(x.get("hypothesis") == y.get("hypothesis") for x, y in zip(ref_steps, steps))
            deltas = [summary["scores"].get(s, 0) - ref_summary["scores"].get(s, 0) for s in SCORES]
            lines.append(f"| {method} | {name} | {equal}/{len(ref_steps)} | {first_difference(ref_steps, steps)} | "
                         f"{largest(ref_steps, steps, 'ppl_before'):.2e} | "
                         f"{largest(ref_steps, steps, 'logprobs'):.2e} | "
                         + " | ".join(f"{d:+.2f}" for d in deltas) + " |")
    lines += ["", "## Per segment: median ms to translate / to update", "",
              "| method | " + " | ".join(found) + " |", "|:--|" + "--:|" * len(found)]
    for method in methods:
        cells = [f"{median_ms(found[n][method][1], 'translate_s')} / {median_ms(found[n][method][1], 'update_s')}"
                 if method in found[n] else "–" for n in found]
        lines.append(f"| {method} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    missing = [a for a in argv if not Path(a).is_dir()]
    if missing:
        print(f"compare.py: {missing[0]}: no such sweep directory", file=sys.stderr)
        return 2
    print(report([Path(a) for a in argv]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
