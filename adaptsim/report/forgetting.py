"""`adaptsim forgetting DIR… [--out FILE.png]`: what adapting on the stream cost on a general-domain probe
(`metrics.probe`, adaptsim/metrics/forgetting.py) beside what it gained on the stream — the trade-off between
full, lasso, l2 and lora that continual-learning MT reports as a matter of course.

Per data set and model, one row per run that recorded a probe (runs probed differently are refused; those without
a probe are named below the table): the probe's BLEU with θ0 and with the final θ,
the change of BLEU, chrF and the probe references' cross-entropy (nats/token; up is forgetting), and the run's
R0 and R1 on the stream minus the baseline's. The probe is one fixed set translated by every run, so its
differences are those of 200-odd sentences: no interval is given (the run records corpus scores of the probe,
not per-sentence statistics). --out draws the probe's BLEU along the stream, one line per run.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from adaptsim.errors import UserError
from adaptsim.report.blocks import BASELINE, blocks
from adaptsim.report.figures import check_out, line_style, save
from adaptsim.report.markdown import head
from adaptsim.report.runs import finished_runs


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="adaptsim forgetting", description=__doc__.split("\n\n")[0])
    p.add_argument("dirs", nargs="+", metavar="DIR", help="sweep or run directories (searched recursively)")
    p.add_argument("--out", help="also draw the probe's BLEU along the stream into this image (.png, .pdf, .svg)")
    return p


def _delta(run, baseline, metric: str) -> str:
    if baseline is None or run is baseline or metric not in run.scores or metric not in baseline.scores:
        return "–"
    return f"{run.scores[metric] - baseline.scores[metric]:+.1f}"


def probe_of(run) -> dict:
    """What a run's probe was: its file (by content where recorded), its length and its interval."""
    info = run.summary["probe"]
    files = {k: v for k, v in (run.summary.get("input_fingerprints") or {}).items() if k.startswith("metrics.probe.")}
    return {"probe": files or Path(info["path"]).name, "segments": info["segments"], "every": info["every"]}


def probed_rows(block, runs) -> list:
    """(label, run) of the block's runs with a probe; a probed baseline that `blocks` merged with an unprobed one
    (the same stream scores) is kept."""
    rows = [(label, run) for label, run in block.rows if run.summary.get("probe")]
    shown = {run.dir for _, run in rows}
    rows += [("baseline", run) for run in runs if run.method == BASELINE and run.summary.get("probe")
             and run.fingerprint == block.fingerprint and run.dir not in shown]
    probes = [(probe_of(run), run) for _, run in rows]
    for probe, run in probes[1:]:
        if probe != probes[0][0]:
            key = next(k for k in probe if probe[k] != probes[0][0].get(k))
            raise UserError(f"runs probed differently ({key}: {probes[0][0][key]} in {probes[0][1].dir}, {probe[key]} "
                            f"in {run.dir}); one table shows one probe: pass the runs of one probe")
    return rows


def markdown(block, runs) -> str | None:
    probed = probed_rows(block, runs)
    if not probed:
        return None
    baseline = next((run for _, run in block.rows if run.method == BASELINE), None)
    info = probed[0][1].summary["probe"]
    lines = [f"**{block.dataset} · model {block.model} · probe {Path(info['path']).name} ({info['segments']} "
             f"segments, every {info['every']} segments of the stream)**", "",
             *head("run", ["probes", "probe BLEU θ0", "final", "Δ BLEU", "Δ chrF", "Δ nats/token", "stream Δ R0",
                           "stream Δ R1"])]
    for label, run in probed:
        points = run.summary["probe"]["points"]
        first, last = points[0], points[-1]
        if first["after"] != 0:  # no θ0 point (a run that never probed before its first segment): no change to show
            cells = ["–", f"{last['BLEU']:.1f}", "–", "–", "–"]
        else:
            cells = [f"{first['BLEU']:.1f}", f"{last['BLEU']:.1f}", f"{last['BLEU'] - first['BLEU']:+.1f}",
                     f"{last['chrF'] - first['chrF']:+.1f}", f"{last['nll'] - first['nll']:+.3f}"]
        lines.append(f"| {label} | {len(points)} | " + " | ".join(cells)
                     + f" | {_delta(run, baseline, 'R0')} | {_delta(run, baseline, 'R1')} |")
    unprobed = [label for label, run in block.rows if not run.summary.get("probe")]
    if unprobed:
        lines += ["", f"_Left out, no probe recorded: {', '.join(unprobed)}._"]
    return "\n".join(lines)


def draw(block, runs, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt


    fig, ax = plt.subplots(figsize=(7.5, 4), layout="constrained")
    for k, (label, run) in enumerate(probed_rows(block, runs)):
        points = run.summary["probe"]["points"]
        ax.plot([p["after"] for p in points], [p["BLEU"] for p in points], marker="o", ms=3, label=label,
                **line_style(k))
    ax.set_xlabel("segments of the stream adapted on")
    ax.set_ylabel("probe BLEU")
    ax.grid(alpha=0.3, lw=0.5)
    ax.legend(frameon=False, fontsize=9)
    ax.set_title(f"{block.dataset}: forgetting on the probe (model {block.model})", fontsize=11)
    save(fig, out, dpi=130)


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    if args.out:
        check_out(Path(args.out))  # a bad file type or place is refused before any work
    runs = finished_runs(args.dirs, "forgetting").runs
    groups = blocks(runs)
    texts = [(block, markdown(block, runs)) for block in groups]
    texts = [(block, text) for block, text in texts if text]
    if not texts:
        raise UserError("no finished run recorded a probe (run with metrics.probe.path=PREFIX)")
    print("\n\n".join(text for _, text in texts) + "\n\n_Probe: BLEU and chrF with sacrebleu's defaults, the "
          "references' mean cross-entropy under θ (up: forgotten); stream Δ: the run's score minus the baseline's; "
          "adaptsim/report/forgetting.py._")
    if args.out:
        if len(texts) > 1:
            raise UserError(f"--out draws one data set; the runs cover {len(texts)}: pass one data set's directories")
        draw(texts[0][0], runs, Path(args.out))
        print(f"wrote {args.out}")
    return 0
