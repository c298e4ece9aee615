"""Significance and intervals for finished runs: read steps.jsonl, pair runs, call adaptsim.report.stats.

The options (`--resamples`, `--unit`, `--seed`, `--test`) and their defaults are defined here once and
shared by `table`, `compare` and `plot`. Runs are paired segment by segment, so they must be on the same
data (`data_fingerprint`) and their steps.jsonl must list the same segments with the same references.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from functools import partial

import numpy as np

from adaptsim.errors import UserError
from adaptsim.metrics import cxmi
from adaptsim.metrics.effort import RATES, SECONDS_PER_WORD, Effort, counting, numerators, seconds_per_word
from adaptsim.metrics.sacre import METRICS, SacreMetrics
from adaptsim.records import read_record, record_file
from adaptsim.report.blocks import check_joinable
from adaptsim.report.runs import Run
from adaptsim.report.stats import (
    ALPHA,
    EXACT_UNITS,
    FIRST_TRIALS,
    LEVEL,
    MAX_TRIALS,
    TESTS,
    UNITS,
    Result,
    Series,
    Settings,
    compare,
    distinct_outcomes,
    min_units,
    prefix_bands,
    ratio,
    units_of,
)

MARK = "†"  # a cell whose p is below ALPHA: whose interval of the difference excludes 0
UNSETTLED = "?"  # a cell whose Monte Carlo p still straddles ALPHA after the most trials: neither † nor not
FEW_UNITS = 10  # fewer resampling units than this: warn that the test can find only large differences
_SACRE_KIND = {"BLEU": "bleu", "TER": "ter", "chrF": "chrf"}


def add_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("significance (paired, on per-segment statistics in steps.jsonl)")
    g.add_argument("--resamples", type=int, default=1000,
                   help="bootstrap resamples: each run's score interval, learning-curve bands, --test ci/bs "
                   "(default: 1000)")
    g.add_argument("--trials", type=int, default=MAX_TRIALS,
                   help=f"the most random swap patterns of the randomisation test beyond {EXACT_UNITS} units: "
                   f"{FIRST_TRIALS:,} first, four times as many while Monte Carlo error could change a verdict "
                   f"(default: {MAX_TRIALS:,})")
    g.add_argument("--unit", choices=UNITS, default="document",
                   help="resampling unit (default: document, because segments of a document are not independent)")
    g.add_argument("--seed", type=int, default=12345, help="random seed (default: 12345, sacrebleu's)")
    g.add_argument("--test", choices=list(TESTS), default="auto",
                   help="auto: paired randomisation, exact (every swap pattern) up to "
                   f"{EXACT_UNITS} units, approximate beyond, its interval the test inverted (default); ar, exact: "
                   "either alone; ci: † when the 95%% bootstrap interval of the difference excludes 0; bs: paired "
                   "bootstrap with sacrebleu's statistic (Koehn 2004; about one-sided)")


def settings(args: argparse.Namespace) -> Settings:
    return Settings(args.resamples, args.unit, args.seed, args.test, args.trials)


class Steps:
    """A run's steps.jsonl, read once: segment identity and the raw rows."""

    def __init__(self, run: Run):
        path = record_file(run.dir, "steps.jsonl")
        if not path.is_file():
            raise UserError(f"{run.dir}: no steps.jsonl (significance needs the per-segment statistics)")
        try:
            self.rows = [json.loads(line) for line in read_record(path).splitlines() if line.strip()]
        except ValueError as e:
            raise UserError(f"{path}: unreadable ({e})") from None
        expected = run.summary.get("segments")
        if expected is not None and len(self.rows) != expected:
            raise UserError(f"{path}: {len(self.rows)} rows for {expected} segments in summary.json")
        self.run = run
        self.doc_ids = [str(r.get("doc_id")) for r in self.rows]
        self.identity = [(str(r.get("doc_id")), str(r.get("seg_id")), r.get("reference")) for r in self.rows]

    @classmethod
    def of(cls, run: Run) -> Steps:
        """The run's steps, read once per run however many reports of one command need them (a table with CXMI
        columns and --bands-by-match pairs the same runs three times)."""
        if run.steps is None:
            run.steps = cls(run)
        return run.steps

    def statistics(self, metric: str, baseline: Steps | None = None) -> np.ndarray:
        """Per-segment sufficient statistics of one metric (segments × columns); CXMI's are this run's joined with
        the `baseline` run's (adaptsim.metrics.cxmi)."""
        if metric in cxmi.METRICS:
            if baseline is None:
                raise UserError(f"{metric} needs a baseline run (method=none) beside {self.run.dir}")
            return cxmi.statistics(metric, self.cxmi_values(baseline))
        try:
            if metric in _SACRE_KIND:
                return np.array([r["stats"][_SACRE_KIND[metric]] for r in self.rows], dtype=float)
            if metric == "SBLEU":
                return np.array([[r["SBLEU"], 1] for r in self.rows], dtype=float)
            if metric in RATES:
                return np.array([numerators(Effort.of_record(r["effort"]))[metric] for r in self.rows], dtype=float)
            if metric == SECONDS_PER_WORD:
                return np.array([seconds_per_word(Effort.of_record(r["effort"])) for r in self.rows], dtype=float)
            return np.array([[r[f"{metric}_num"], r[f"{metric}_den"]] for r in self.rows], dtype=float)
        except (KeyError, TypeError):
            raise UserError(f"{self.run.dir}/steps.jsonl has no per-segment statistics for {metric} (written "
                            "before adaptsim recorded them, or the metric was not computed); re-run it, or "
                            f"leave {metric} out with --metrics") from None

    def curves(self) -> dict[str, list]:
        """The learning curves curves.csv holds, from the steps alone: each cell there is a metric's corpus score over
        the segments so far, so it is the metric's scorer on the running sums of its per-segment statistics (what
        a text-free export, which keeps no curves.csv, still has). The same columns as `Run.curves`."""
        first = self.rows[0] if self.rows else {}
        metrics = [k[:-4] for k in first if k.endswith("_num") and f"{k[:-4]}_den" in first]
        metrics += [m for m, kind in _SACRE_KIND.items() if kind in (first.get("stats") or {})]
        metrics += ["SBLEU"] * ("SBLEU" in first) + [*RATES] * ("effort" in first)
        out: dict[str, list] = {"doc_id": self.doc_ids}
        for metric in metrics:
            running = np.cumsum(self.statistics(metric), axis=0)
            out[metric] = [float(v) for v in np.asarray(scorer(metric)(running), dtype=float)]
        return out

    def cxmi_values(self, baseline: Steps) -> list:
        """Each segment's per-token P-CXMI against the baseline run (checked to be comparable)."""
        check_joinable(baseline.run, self.run)
        return cxmi.token_values(baseline.rows, self.rows, str(record_file(self.run.dir, "steps.jsonl")),
                                 cxmi.forced(self.run.summary.get("config") or {}))


def scores(runs: list[Run], metrics: list[str]) -> None:
    """Put the point values of the metrics computed from steps.jsonl (CXMI, against runs[0]) into each run's
    scores, so tables show them like the summary's."""
    wanted = [m for m in metrics if m in cxmi.METRICS]
    if not wanted:
        return
    steps = paired(runs)
    for s in steps:
        for m in wanted:
            total = s.statistics(m, steps[0]).sum(axis=0)
            s.run.derived[m] = float(total[0] / total[1]) if total[1] else None


def curves(run: Run) -> dict[str, list]:
    """The run's learning curves: its curves.csv where it has one, else the same derived from its steps (a text-free
    export keeps none: `Steps.curves`)."""
    if record_file(run.dir, "curves.csv").is_file():
        return run.curves()
    if not record_file(run.dir, "steps.jsonl").is_file():
        raise UserError(f"{run.dir}: no curves.csv, nor a steps.jsonl to sum them from (needed for learning curves)")
    return Steps.of(run).curves()


def scorer(metric: str):
    """Corpus score from summed statistics: sacrebleu's for BLEU/TER/chrF, a mean for SBLEU, recall otherwise."""
    if metric in _SACRE_KIND:
        return partial(SacreMetrics([m for m in METRICS if m in _SACRE_KIND]).vector, metric)
    return ratio(1.0 if metric in ("SBLEU", SECONDS_PER_WORD) or metric in cxmi.METRICS else 100.0)


def paired(runs: list[Run]) -> list[Steps]:
    """Every run's steps, refusing (one line) runs that are not on the same segments as the first."""
    first = runs[0]
    for run in runs[1:]:
        if run.fingerprint != first.fingerprint:
            raise UserError(f"{run.dir} is on different data from {first.dir} (data_fingerprint {run.fingerprint} "
                            f"vs {first.fingerprint}); paired tests need runs on the same data")
    steps = [Steps.of(run) for run in runs]
    for s in steps[1:]:
        if s.identity != steps[0].identity:
            raise UserError(f"{s.run.dir}/steps.jsonl lists other segments or references than "
                            f"{first.dir}/steps.jsonl; paired tests need the same segments in the same order")
    return steps


def check_effort(runs: list[Run], metrics: list[str]) -> None:
    """The translator's effort compares only between runs whose simulated translator worked and was counted alike:
    the same level, counting and correction cap (summary.json cost.interactive); one line naming two runs that
    differ. A translator's measured effort (`adaptsim serve`) compares with any simulated translator's."""
    if not any(m in RATES for m in metrics):
        return
    def human(run: Run) -> bool:  # a translator's effort, measured in `adaptsim serve`'s page
        return (counting(run.summary) or {}).get("costs") == "human"

    for run in runs[1:]:  # a translator's effort compares with a simulated one's: what the simulation is checked by
        if counting(run.summary) != counting(runs[0].summary) and human(run) == human(runs[0]):
            raise UserError(f"{run.dir} and {runs[0].dir}: the simulated translators differ (metrics.interactive, "
                            f"interactive_costs, max_corrections: {_how(run)} vs {_how(runs[0])}); their effort does "
                            "not compare")


def _how(run: Run) -> str:
    how = counting(run.summary)
    return "off" if how is None else ", ".join(str(v) for v in how.values())


def analyse(runs: list[Run], metrics: list[str], cfg: Settings, command: str, warn: bool = True,
            settle=None) -> Result:
    """Scores, intervals, and differences to runs[0] (the baseline) with p-values, for every metric (`warn`: say
    when there are few units to resample; `settle`: stats.compare's, which Monte Carlo p values to draw on)."""
    check_effort(runs, metrics)
    steps = paired(runs)
    index, n_units = units_of(steps[0].doc_ids, cfg.unit)
    if warn:
        warn_few(n_units, cfg, command)
    series = [Series(m, scorer(m), [s.statistics(m, steps[0]) for s in steps]) for m in metrics]
    return compare(series, index, n_units, cfg, settle)


def bands(runs: list[Run], metrics: list[str], ends: list[int], cfg: Settings, command: str) -> dict[str, list]:
    """Per metric, the learning-curve band of each of runs[1:] against runs[0] at the prefix ends
    (adaptsim.report.stats.prefix_bands)."""
    steps = paired(runs)
    index, n_units = units_of(steps[0].doc_ids, cfg.unit)
    warn_few(n_units, cfg, command)
    return {m: prefix_bands(Series(m, scorer(m), [s.statistics(m, steps[0]) for s in steps]), index, n_units, ends, cfg)
            for m in metrics}


def unresolvable(n_units: int, cfg: Settings) -> str | None:
    """Why no difference can be significant with so few units (adaptsim.report.stats, "No p below what the units
    can resolve"), or None."""
    test = cfg.effective(n_units)
    if n_units >= min_units(test):
        return None
    outcomes = "resamples" if test in ("ci", "bs") else "randomisations"
    d = distinct_outcomes(test, n_units)
    return (f"{n_units} {cfg.unit}{'s' if n_units != 1 else ''}: only {d} distinct {outcomes}, so p ≥ {1 / d:.3g} "
            f"and no difference is marked (that needs at least {min_units(test)} {cfg.unit}s)")


def warn_few(n_units: int, cfg: Settings, command: str) -> None:
    few = unresolvable(n_units, cfg)
    if few or n_units < FEW_UNITS:
        print(f"adaptsim {command}: "
              + (few or f"only {n_units} {cfg.unit}s to resample: the test can find only large differences significant")
              + ("; and --unit segment treats the segments of a document as independent, which they are not"
                 if cfg.unit == "segment" else "; more documents are the remedy"),
              file=sys.stderr)


def bound(v: float, digits: int = 1, signed: bool = True) -> str:
    """An interval's end as the reports print it: ±∞ where the test cannot bound it (too few units to reject); an
    end of exactly 0 unsigned (a "−0.0" reads as an interval that excludes 0)."""
    if math.isinf(v):
        return "+∞" if v > 0 else "−∞"
    if v == 0:
        return f"{0.0:.{digits}f}"
    return f"{v:+.{digits}f}" if signed else f"{v:.{digits}f}"


def significant(p: float | None) -> bool:
    return p is not None and not np.isnan(p) and p < ALPHA


def mark(diff) -> str:
    """A difference's mark: UNSETTLED where Monte Carlo error still straddles ALPHA, MARK where p < ALPHA, else ""."""
    return UNSETTLED if diff.straddles(ALPHA) else MARK if significant(diff.p) else ""


def cell(result: Result, run: int, metric: str, digits: int = 1, tested: bool = True) -> str:
    """One score as the reports print it: the value, † if it differs from run 0's (`tested`: a row that is compared
    with the baseline at all), the 95% interval ("–": none)."""
    est = result.scores[run][metric]
    if np.isnan(est.score):
        return "–"
    diff = result.differences[run].get(metric) if run else None
    shown = mark(diff) if tested and diff else ""
    return f"{est.score:.{digits}f}{shown} [{est.ci[0]:.{digits}f}, {est.ci[1]:.{digits}f}]"


def footer(result: Result) -> str:
    """The note under a report: what † means, and, with too few units, that it cannot appear."""
    cfg = result.settings
    test = cfg.effective(result.units)
    meaning = (f"the {LEVEL:.0%} interval of the difference to the baseline excludes 0" if test == "ci"
               else f"differs from the baseline at p < {ALPHA}")
    few = unresolvable(result.units, cfg)
    pairs = ""
    if test == "exact":
        # a swap pattern and its mirror image (every unit swapped the other way) give the same |δ'|: the distinct
        # randomisations are half the patterns, the count the note on too few units names too
        draws = f"all {2 ** (result.units - 1):,} distinct randomisations"
        pairs = f": {2 ** result.units:,} swap patterns in mirror-image pairs"
    elif test == "ar":
        used = [d.trials for ds in result.differences for d in ds.values() if d.trials]
        low, high = min(used, default=0), max(used, default=0)
        draws = f"{low:,}{'' if low == high else f'–{high:,}'} random swap patterns"
    else:
        draws = f"{cfg.resamples} resamples"
    unsettled = (f"; {UNSETTLED}: p within Monte Carlo error of {ALPHA} after {cfg.trials:,} trials"
                 if result.unsettled() else "")
    return (f"{MARK}: {meaning} ({TESTS[test]}, {draws} of {result.units} {cfg.unit}s{pairs})" + unsettled
            + (f"; {few}" if few else ""))
