"""The zero-shot penalty over the base model's learning curve: its table and figure, from learning_curve.sh's points.

    python scripts/experiments/learning_curve.py [--results docs/results/curve] [--out docs/results/learning_curve]

For every model (a directory of RESULTS, written by learning_curve.sh) and stream (its runs/<stream>): the baseline's
BLEU, and `full`'s and `lasso`'s R0, R1 and R0+1 relative to the baseline, in percent as the paper's Table 5 prints
them, with the 95 % interval of the reports' default test over documents (adaptsim.report.stats `compare`, as `table`
and `findings` compute it), and R0 split by whether the stream had shown every piece of the word before
(r0_by_pieces.py's classes, from r0_by_pieces_<stream>.json). The figure puts each difference against the
baseline's BLEU, one line per stream and method from the weakest model to the strongest, and marks the paper's Table 5
(Autodesk for Business Central, the mean of its five sets for GNOME help) at the paper's baseline BLEU: where a
converged model would sit. A relative interval divides the interval of the difference by the baseline's score.
A point whose records have left the tree (docs/results.md, "Where small-ende-probe's records went") is kept as the
previous OUT.json printed it, so the curve does not lose its weakest model when another stream or model is added.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from adaptsim.report import paper
from adaptsim.report.figures import save
from adaptsim.report.runs import discover
from adaptsim.report.significance import Steps, scorer
from adaptsim.report.stats import Series, Settings, compare, units_of

METHODS = ("full", "lasso")
METRICS = ("R0", "R1", "R0+1")
CLASSES = ("pieces seen", "a new piece")  # r0_by_pieces.py's
PANELS = (*METRICS, *(f"R0, {c}" for c in CLASSES))
PAPER_SET = {"business_central": "Autodesk", "business_central_all": "Autodesk", "gnome_help_20": paper.MEAN}
STREAM_NAMES = {"business_central": "Business Central (100 articles)",
                "business_central_all": "Business Central (all 338 articles)",
                "gnome_help_20": "GNOME help (20 topics)"}
RESAMPLES = 1000


def point(stream_dir: Path, pieces: Path) -> dict:
    """One model on one stream: the baseline's BLEU and every panel's relative difference [interval] per method."""
    runs = {run.summary["method"]: run for run in discover([stream_dir]).runs}
    names = ["none", *(m for m in METHODS if m in runs)]
    steps = [Steps.of(runs[m]) for m in names]
    index, n_units = units_of(steps[0].doc_ids, "document")
    series = [Series(metric, scorer(metric), [s.statistics(metric) for s in steps]) for metric in METRICS]
    result = compare(series, index, n_units, Settings(RESAMPLES, "document", 1, "auto"))
    out = {"BLEU": runs["none"].summary["scores"]["BLEU"], "documents": n_units, "segments": len(steps[0].rows),
           "signature": str(result.signature), "methods": {}, "seconds": {m: seconds(run) for m, run in runs.items()}}
    split = json.loads(pieces.read_text()) if pieces.is_file() else None
    for r, m in enumerate(names[1:], start=1):
        cells = {}
        for metric in METRICS:
            d = result.differences[r][metric]
            cells[metric] = (d.relative, *d.relative_ci, d.p)
        if split and m in split["differences"]:
            for c in CLASSES:
                d, base = split["differences"][m][c], split["baseline"][c]
                cells[f"R0, {c}"] = (100 * d["diff"] / base, 100 * d["ci"][0] / base, 100 * d["ci"][1] / base, d["p"])
        out["methods"][m] = cells
    return out


def seconds(run) -> float:
    """The run's compute time from its own record (translating and updating, every step), so a sweep resumed across
    sessions is timed whole; a lockstep process's wall time is the sum over its methods plus loading."""
    return sum(row.get("translate_s", 0) + row.get("update_s", 0) for row in Steps.of(run).rows)


def collect(results: Path) -> dict:
    """{stream: {model: point}} for every model directory and stream with a finished baseline."""
    curve: dict[str, dict[str, dict]] = {}
    for model in sorted(p for p in results.iterdir() if (p / "runs").is_dir()):
        for stream_dir in sorted(p for p in (model / "runs").iterdir() if (p / "none").is_dir()):
            curve.setdefault(stream_dir.name, {})[model.name] = point(
                stream_dir, model / f"r0_by_pieces_{stream_dir.name}.json")
    return curve


def table(curve: dict) -> str:
    lines = ["The zero-shot penalty over the base model's learning curve: full's and lasso's difference from the "
             "baseline, % of the baseline's score [95 % interval over documents], † p < 0.05 (the reports' default "
             "test); the paper's Table 5 in the last row of each stream", ""]
    for stream, models in curve.items():
        lines += [f"**{STREAM_NAMES.get(stream, stream)}**", "",
                  "| model | baseline BLEU | method | " + " | ".join(PANELS) + " |",
                  "|:--|--:|:--|" + "--:|" * len(PANELS)]
        for model, pt in sorted(models.items(), key=lambda kv: kv[1]["BLEU"]):
            for m, cells in pt["methods"].items():
                row = [cell(cells.get(panel)) for panel in PANELS]
                lines.append(f"| {model} | {pt['BLEU']:.1f} | {m} | " + " | ".join(row) + " |")
        set_name = PAPER_SET.get(stream, paper.MEAN)
        for m in METHODS:
            lines.append(f"| paper: {set_name} | {paper_bleu(set_name):.1f} | {m} | " + " | ".join(
                f"{paper.relative(set_name, m, metric):+.0f}" for metric in METRICS) + " | – | – |")
        signatures = sorted({pt["signature"] for pt in models.values()})
        lines += ["", *(f"`{s}`  " for s in signatures), ""]
    columns = ("none", *paper.METHODS)  # Table 5's order
    lines += ["**Cost**: seconds of translating and updating (the runs' own records, one thread; the machine's two "
              "cores shared with development), per stream and in all", "",
              "| stream | model | segments | " + " | ".join(columns) + " | in all |",
              "|:--|:--|--:|" + "--:|" * (len(columns) + 1)]
    for stream, models in curve.items():
        for model, pt in sorted(models.items(), key=lambda kv: kv[1]["BLEU"]):
            cells = [f"{pt['seconds'][m]:,.0f}" if m in pt["seconds"] else "–" for m in columns]
            lines.append(f"| {STREAM_NAMES.get(stream, stream)} | {model} | {pt['segments']:,} | " + " | ".join(cells)
                         + f" | {sum(pt['seconds'].values()):,.0f} |")
    return "\n".join(lines)


def cell(c) -> str:
    """A relative difference [interval]† for the table; – where there is none, unbounded where the test rejects none."""
    if not c or not np.isfinite(c[0]):
        return "–"
    v, lo, hi, p = c
    interval = f"[{lo:+.1f}, {hi:+.1f}]" if np.isfinite(lo) and np.isfinite(hi) else "[unbounded]"
    return f"{v:+.1f} {interval}{'†' if p is not None and p < 0.05 else ''}"


def paper_bleu(set_name: str) -> float:
    sets = paper.TABLE5 if set_name == paper.MEAN else {set_name: paper.TABLE5[set_name]}
    return float(np.mean([rows["baseline"][0] for rows in sets.values()]))


def figure(curve: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(PANELS), figsize=(3.2 * len(PANELS), 3.9), sharex=True)
    colours = {"business_central": "tab:blue", "business_central_all": "tab:green", "gnome_help_20": "tab:orange"}
    for ax, panel in zip(axes, PANELS):
        ax.axhline(0, color="0.6", lw=0.8)
        for stream, models in curve.items():
            ordered = sorted(models.values(), key=lambda pt: pt["BLEU"])
            for m, marker, style in (("full", "o", "-"), ("lasso", "s", "--")):
                xs, ys, lo, hi = [], [], [], []
                for pt in ordered:
                    c = pt["methods"].get(m, {}).get(panel)
                    if c and np.isfinite(c[0]):
                        xs.append(pt["BLEU"]), ys.append(c[0])
                        lo.append(c[0] - c[1] if np.isfinite(c[1]) else 0)
                        hi.append(c[2] - c[0] if np.isfinite(c[2]) else 0)
                if xs:
                    ax.errorbar(xs, ys, yerr=[lo, hi], color=colours.get(stream), marker=marker, ls=style, capsize=2,
                                lw=1, ms=4, label=f"{m}, {STREAM_NAMES.get(stream, stream)}")
            if panel in METRICS:
                set_name = PAPER_SET.get(stream, paper.MEAN)
                for m, marker in (("full", "*"), ("lasso", "P")):
                    ax.plot(paper_bleu(set_name), paper.relative(set_name, m, panel), marker=marker, ms=9,
                            color=colours.get(stream), mec="black", mew=0.6, ls="none")
        ax.set_title(panel, fontsize=9)
        ax.set_xlabel("baseline BLEU", fontsize=8)
        ax.tick_params(labelsize=7)
    axes[0].set_ylabel("% of the baseline's score", fontsize=8)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=7, loc="lower center", ncol=len(labels), frameon=False)  # under the panels
    fig.suptitle("Adapted − baseline over the base model's learning curve (stars, plus: the paper's Table 5 for full, "
                 "lasso)", fontsize=9)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    save(fig, path, dpi=100)  # (a palette PNG, as every committed figure)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--results", type=Path, default=Path("docs/results/curve"))
    ap.add_argument("--out", type=Path, default=Path("docs/results/learning_curve"))
    args = ap.parse_args()
    curve = collect(args.results)
    previous = args.out.parent / (args.out.name + ".json")
    for stream, models in (json.loads(previous.read_text()) if previous.is_file() else {}).items():
        for model, pt in models.items():
            curve.setdefault(stream, {}).setdefault(model, pt)
    if not curve:
        raise SystemExit(f"learning_curve.py: no model's runs under {args.results} (learning_curve.sh writes them)")
    text = table(curve)
    print(text)
    args.out.with_suffix(".md").write_text(text + "\n")
    figure(curve, args.out.with_suffix(".png"))
    previous.write_text(json.dumps(curve, indent=1, default=float) + "\n")


if __name__ == "__main__":
    main()
