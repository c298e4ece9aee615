"""`adaptsim plot DIR… --out FILE.png`: learning curves like the paper's Figure 2 (Appendix B).

One panel per metric: after each segment i, the corpus score of segments 1..i of every adapted run
minus the baseline's (each run's curves.csv, or the same from its steps where it has none), so a dip shows where
adaptation hurt. The baseline's curve is read from its run in the sweep, never recomputed.

--bands shades a 95% bootstrap band around each curve: at segment i, the interval of the difference of
prefix scores under resampled units (adaptsim.report.stats.prefix_bands, from the per-segment statistics in
steps.jsonl); where the band leaves 0, the difference so far is unlikely to be resampling noise.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from adaptsim.errors import UserError
from adaptsim.report import significance as sig
from adaptsim.report.blocks import LOWER_IS_BETTER, Block, blocks
from adaptsim.report.figures import check_out, line_style, save
from adaptsim.report.runs import finished_runs

DEFAULT_METRICS = "R0,R1,R0+1,BLEU"  # Figure 2's panels, in its order
_MAX_DOC_LINES = 40  # document boundaries are drawn when there are at most this many documents
_BAND_POINTS = 500  # a band is computed at every segment up to this many segments, else at this many points


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="adaptsim plot", description=__doc__.split("\n\n")[0])
    p.add_argument("dirs", nargs="+", metavar="DIR", help="sweep or run directories (searched recursively)")
    p.add_argument("--out", required=True, help="image file to write (.png, .pdf, .svg)")
    p.add_argument("--metrics", default=DEFAULT_METRICS, help=f"comma-separated panels (default: {DEFAULT_METRICS})")
    p.add_argument("--dataset", help="the data set to draw when the runs cover several")
    p.add_argument("--bands", action="store_true", help="shade a 95%% bootstrap band around each curve")
    sig.add_arguments(p)
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    check_out(Path(args.out))
    found = finished_runs(args.dirs, "plot")
    block = _one_block(blocks(found.runs), args.dataset)
    baseline = block.need_baseline("a learning-curve plot")
    if not block.adapted:
        raise UserError(f"dataset {block.dataset!r}: only the baseline finished; nothing to compare with it")
    base = sig.curves(baseline)
    metrics = [m.strip() for m in args.metrics.split(",") if m.strip()]
    missing = [m for m in metrics if m not in base]
    if missing or not metrics:
        known = ", ".join(k for k in base if k != "doc_id")
        raise UserError(f"unknown metric {', '.join(missing) or '(none given)'}; the curves have: {known}")
    sig.check_effort([run for _, run in block.rows], metrics)
    lines = []
    for label, run in block.adapted:
        curves = sig.curves(run)
        if len(curves["doc_id"]) != len(base["doc_id"]) or any(m not in curves for m in metrics):
            raise UserError(f"{run.dir}: its curves do not match the baseline's ({baseline.dir})")
        lines.append((label, {m: [a - b for a, b in zip(curves[m], base[m])] for m in metrics}))
    band, note = None, ""
    if args.bands:
        cfg = sig.settings(args)
        n = len(base["doc_id"])
        ends = sorted({round(n * (k + 1) / _BAND_POINTS) for k in range(_BAND_POINTS)}) if n > _BAND_POINTS \
            else list(range(1, n + 1))
        computed = sig.bands([baseline] + [run for _, run in block.adapted], metrics, ends, cfg, "plot")
        band = (ends, computed)
        note = f"95% bands: {cfg.resamples} resamples of {cfg.unit}s, seed {cfg.seed}"
    draw(block, metrics, lines, base["doc_id"], Path(args.out), band, note)
    print(f"wrote {args.out}: {len(lines)} run(s) against the baseline, {len(metrics)} panel(s)"
          + (f", bands ({sig.settings(args).signature(_units(base['doc_id'], args.unit))})" if args.bands else ""))
    return 0


def _one_block(groups: list[Block], dataset: str | None) -> Block:
    chosen = groups if dataset is None else [b for b in groups if b.dataset == dataset]
    have = ", ".join(b.dataset for b in groups)
    if dataset is not None and not chosen:
        raise UserError(f"--dataset {dataset}: no finished run on it; these runs cover: {have}")
    if len(chosen) != 1:
        raise UserError(f"a plot shows one data set; these runs cover: {have}; choose one with --dataset NAME")
    return chosen[0]


def _units(doc_ids: list[str], unit: str) -> int:
    return len(set(doc_ids)) if unit == "document" else len(doc_ids)


def draw(block: Block, metrics: list[str], lines: list[tuple[str, dict]], doc_ids: list[str], out: Path,
         band: tuple[list[int], dict] | None = None, note: str = "") -> None:
    import matplotlib

    matplotlib.use("Agg")  # files only: no display needed, works on a cluster node
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    n = len(metrics)
    ncols = 1 if n == 1 else 2
    nrows = math.ceil(n / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(6.4 * ncols, 3.4 * nrows + 0.8), sharex=True,
                             squeeze=False, layout="constrained")
    n_seg = len(doc_ids)
    x = range(1, n_seg + 1)
    starts = [i + 1 for i in range(1, n_seg) if doc_ids[i] != doc_ids[i - 1]]
    skip = settled_from(doc_ids)
    every = 1 if n_seg <= 60 else max(1, n_seg // 12)  # few segments: a mark on every point; else about 12 per line
    for ax, metric in zip(axes.flat, metrics):
        for k, start in enumerate(starts if len(starts) < _MAX_DOC_LINES else []):
            ax.axvline(start - 0.5, color="0.6", lw=0.9, ls=":", zorder=0, label="new document" if k == 0 else None)
        # the baseline's zero under every run, thin and light: a run that stays at 0 (bias often does) shows on it
        ax.axhline(0, color="0.45", lw=0.8, ls="-", zorder=0.5, label="baseline (0)")
        for k, (label, diffs) in enumerate(lines):
            offset = (k * every // max(len(lines), 1)) if every > 1 else 0  # runs' marks side by side, not stacked
            drawn = ax.plot(x, diffs[metric], marker=_MARKERS[k % len(_MARKERS)], ms=4 if every > 1 else 3.5,
                            markevery=(offset, every), label=label, zorder=2 + 0.01 * k, **line_style(k))
            if band is not None:
                low, high = band[1][metric][k]
                ax.fill_between(band[0], low, high, color=drawn[0].get_color(), alpha=0.18, lw=0, zorder=1.5)
        ax.set_ylim(*_y_range([diffs[metric] for _, diffs in lines], skip))
        better = "lower is better" if metric.split(".")[-1] in LOWER_IS_BETTER else "higher is better"
        ax.set_title(f"{metric}  ({better})", fontsize=11)
        ax.set_ylabel("Δ to baseline (points)")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3, lw=0.5)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    for ax in axes[-1]:
        ax.set_xlabel("segment")
    if n % ncols and nrows > 1:  # the empty cell's neighbour above needs its own x labels
        axes[-2][-1].xaxis.set_tick_params(labelbottom=True)
        axes[-2][-1].set_xlabel("segment")
    # the y-axis fits the curves from the second document on: before it a score rests on a few words (one corrected
    # word is +100 R1) and would flatten every other curve; a curve or band that leaves the panel is cut off
    # bands jump where a document starts early in the stream: a resample of whole documents may hold none before it,
    # so only its first segments (docs/reports.md)
    second = [note] if note else []
    if note and starts:
        second[0] += " (jumps at early documents: docs/reports.md)"
    if skip > 1:
        second.append(f"y-axis fits the curves from segment {skip} on")
    fig.suptitle(f"{block.dataset}: cumulative score minus the baseline's (model {block.model}, {n_seg} segments)"
                 + ("\n" + "; ".join(second) if second else ""), fontsize=11)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    order = [i for i, lb in enumerate(labels) if lb not in ("baseline (0)", "new document")]
    order += [i for i, lb in enumerate(labels) if lb in ("baseline (0)", "new document")]
    fig.legend([handles[i] for i in order], [labels[i] for i in order], loc="outside lower center",
               ncol=min(len(labels), 8), frameon=False, fontsize=10)
    save(fig, out, dpi=100)


_MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*", "<", ">"]


def settled_from(doc_ids: list[str]) -> int:
    """The first segment the y-range is fitted to: the first of the second document (a cumulative difference over
    the first few segments rests on a few words: one corrected word is +100 R1), at most a quarter of the stream in;
    1 (everything) on streams too short for that to matter."""
    n = len(doc_ids)
    first = next((i for i in range(1, n) if doc_ids[i] != doc_ids[0]), n)
    return 1 if n < 8 else min(first, n // 4) + 1


def _y_range(curves: list[list[float]], skip: int) -> tuple[float, float]:
    """The panel's y-limits: every curve from segment `skip` on, and 0, with a margin (a band wider than that, as
    bands are early in a stream, leaves the panel: the curves are what is read)."""
    values = [0.0] + [v for c in curves for v in c[skip - 1:] if math.isfinite(v)]
    low, high = min(values), max(values)
    pad = 0.06 * (high - low) or 1.0
    return low - pad, high + pad
