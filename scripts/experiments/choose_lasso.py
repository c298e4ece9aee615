"""Step 2 of realistic_ende.sh: choose lasso's variant on held-out data and write what was tried.

    python scripts/experiments/choose_lasso.py HELDOUT HELDOUT_MORE SELECT_FIXED CHOSEN.yaml SELECTION.md

HELDOUT and HELDOUT_MORE are the held-out sweeps (the baseline, full, bias, lasso and the variants of
scripts/experiments/configs/method, one stream; HELDOUT_MORE may be absent). The lasso variant with the best held-out
R0+1 (lasso's aim; ties go to the default `lasso`, then to the first name) is written as a method config named `lasso`
(CHOSEN.yaml), which the test sweeps run. No test stream is read.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from omegaconf import OmegaConf


def table(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "adaptsim", "table", *args], capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"choose_lasso.py: adaptsim table {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout


def ablations(reference: str, dirs: list[Path]) -> str:
    """Each variant of `reference` (a method name) against it: the difference with its 95% interval and p-value
    on the recall metrics and BLEU (the paired test of `table --significance`)."""
    from adaptsim.report import significance as sig
    from adaptsim.report.runs import finished_runs

    options = argparse.ArgumentParser()
    sig.add_arguments(options)  # the test's defaults, from their one home
    runs = {r.summary["method"]: r for r in finished_runs([str(d) for d in dirs], "choose_lasso").runs}
    variants = sorted(m for m in runs if m.startswith(reference + "_"))
    metrics = ["R0", "R1", "R0+1", "BLEU"]
    result = sig.analyse([runs[reference], *(runs[m] for m in variants)], metrics,
                         sig.settings(options.parse_args([])), "choose_lasso", warn=False)
    rows = [f"| {reference} (the reference) | "
            + " | ".join(f"{result.scores[0][m].score:.2f}" for m in metrics) + " |"]
    for i, m in enumerate(variants, 1):
        cells = []
        for metric in metrics:
            d = result.differences[i][metric]
            cells.append(f"{d.diff:+.2f} [{d.ci[0]:+.2f}, {d.ci[1]:+.2f}]" + (" †" if sig.significant(d.p) else ""))
        rows.append(f"| {m} | " + " | ".join(cells) + " |")
    return "\n".join([f"| {reference} variant | " + " | ".join(f"Δ{m}" for m in metrics) + " |",
                      "|:--|" + "--:|" * len(metrics), *rows,
                      "", f"_Δ: variant − {reference} in points [95% interval]; {sig.footer(result)}; "
                          f"{result.signature}._"])


def main() -> None:
    heldout, heldout_more, select_fixed, chosen_yaml, selection_md = map(Path, sys.argv[1:6])
    sweeps = [str(d) for d in (heldout, heldout_more) if d.is_dir()]
    runs = {}
    for summary_path in [p for d in sweeps for p in Path(d).glob("*/summary.json")]:
        summary = json.loads(summary_path.read_text())
        if summary["method"].startswith("lasso") and summary["status"] == "finished":
            runs[summary["method"]] = summary["scores"]
    if "lasso" not in runs:
        raise SystemExit(f"choose_lasso.py: no finished lasso run in {heldout}")
    best = max(sorted(runs), key=lambda m: (runs[m]["R0+1"], m == "lasso"))
    if chosen_yaml.is_file():  # test runs may already use the earlier choice: never change it under them
        earlier = OmegaConf.load(chosen_yaml).defaults[0]
        if earlier != best:
            raise SystemExit(f"choose_lasso.py: {chosen_yaml} names {earlier}, the held-out runs now choose {best}; "
                             "delete it and the test streams' lasso runs to choose again")
    chosen_yaml.write_text(f"# lasso's variant with the best R0+1 on held-out data ({selection_md.name})\n"
                           f"defaults:\n  - {best}\n  - _self_\n\nname: lasso\n")
    fixed = json.loads((select_fixed / "summary.json").read_text())
    lines = ["# Settings chosen on held-out data", "",
             "Held-out data: heldout.tsv of scripts/experiments/prepare_ende.py (held-out GNOME help topics and ape-it "
             "blocks, disjoint from the test streams; split.json), one stream (reset=never) unless marked.", "",
             f"`lasso` on the test streams: **{best}** (the best held-out R0+1 of the lasso variants; ties go to "
             "the default), the variants' settings in scripts/experiments/configs/method.", "",
             f"`fixed`: select-fixed's list of {len(fixed['params'])} tensors, {fixed['parameters']:,} parameters, "
             f"chosen with reset={fixed.get('reset', '?')}; held-out prequential cross-entropy {fixed['loss']:.3f} "
             f"nats/token (adapting the source-embedding rows only: {fixed['baseline_loss']:.3f}).", "",
             "## The held-out sweep, relative to the baseline (†: p < 0.05 under the reports' default test, "
             "named below it)", "",
             table(*sweeps, "--relative", "--significance", "--cost"), "",
             "## Each variant against the default", "", ablations("lasso", [Path(d) for d in sweeps]), "",
             ablations("bias", [Path(d) for d in sweeps]), "",
             "## Absolute, with 95% intervals", "", table(*sweeps, "--ci"), ""]
    selection_md.write_text("\n".join(lines) + "\n")
    print(f"lasso on the test streams: {best} (held-out R0+1 {runs[best]['R0+1']:.2f})")


if __name__ == "__main__":
    main()
