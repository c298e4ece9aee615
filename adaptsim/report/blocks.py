"""Which runs may share a table, how their rows are named, and which run is the baseline.

The rule (docs/reports.md): a table compares methods on one model, so all runs must share the model
(its files' fingerprint; the path for runs recorded without one). Runs on the same data (same `data_fingerprint`, the
hash of the segments themselves) form one block; several data sets give several blocks, like the paper's Table 5. A data
set name that comes with two different fingerprints is refused (same name, different data: a changed file, a
different `limit`), and so is a block whose runs scored with different metric settings (signatures) or decoded
with different settings (`same_scoring`).
The baseline of a block is its `method=none` run, read from disk and never recomputed; several
baseline runs are one row if their scores agree (two sweeps each with `none`); if they disagree there
is no baseline (absolute tables still list them, relative tables and plots refuse). Runs joined token by token with
the baseline (CXMI) must also agree on the settings that decide how a reference scores (`check_joinable`).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

from adaptsim.errors import UserError
from adaptsim.launch.resume import FREE
from adaptsim.metrics.effort import RATES
from adaptsim.report.runs import Run

BASELINE = "none"
LOWER_IS_BETTER = {"TER", *RATES}  # TER and the translator's effort (KSMR, KSR, WSR, MAR)
PAPER_ORDER = ["none", "bias", "full", "lasso", "fixed", "top"]  # the paper's row order
ROW_ORDER = PAPER_ORDER + ["l2", "lora", "memory"]  # then the methods beyond the paper
# Config keys that do not change results: left out when telling two runs of one method apart.
# No method variant: not in a label (serve: its address).
_NOT_RESULTS = (*FREE, "hydra", "device", "save_offsets", "serve")
# settings that change what a reference scores or how a run's hypotheses come about: runs joined token by token
# with the baseline (CXMI) must agree on them
_SAME_SCORING = ("model", "decode", "update.dtype", "device")
# the signature parts that say how BLEU, SBLEU and TER tokenise (metrics.tokenize, TER's Asian options:
# adaptsim/metrics/sacre.py), named first where runs differ in them: BLEU into Chinese with 13a and with zh are two
# measurements
_TOKENISATION = ("BLEU.tok", "SBLEU.tok", "TER.norm", "TER.asian")


@dataclass
class Block:
    dataset: str
    fingerprint: str
    model: str
    model_path: str
    segments: int
    rows: list[tuple[str, Run]]  # (label, run), baseline first, then the paper's method order
    baseline: Run | None
    ambiguous: str | None = None  # why there is no baseline although there are method=none runs

    @property
    def caption(self) -> str:
        """What a report's block is about: the data, and the model by its name and the path that reached its files
        (one configs/model entry, e.g. base-ende's architecture, serves several checkpoints)."""
        return (f"{self.dataset} · {self.segments} segments · data {self.fingerprint} · model {self.model} "
                f"({self.model_path})")

    @property
    def adapted(self) -> list[tuple[str, Run]]:
        return [(label, run) for label, run in self.rows if run.method != BASELINE]

    def need_baseline(self, purpose: str) -> Run:
        """The baseline run, or a UserError saying how to provide one."""
        if self.baseline is None:
            raise UserError(self.ambiguous or f"dataset {self.dataset!r}: {purpose} needs a baseline run "
                            "(method=none) on the same data and model; add method=none to the sweep or pass "
                            "its run directory")
        return self.baseline


def blocks(runs: list[Run]) -> list[Block]:
    """Group runs into comparable blocks, or raise UserError saying why they are not comparable."""
    one_model(runs)
    by_data: dict[str, list[Run]] = defaultdict(list)
    for run in runs:
        by_data[run.fingerprint].append(run)
    names: dict[str, set[str]] = defaultdict(set)
    for run in runs:
        names[run.dataset].add(run.fingerprint)
    for name, fps in names.items():
        if len(fps) > 1:
            where = "; ".join(f"data {fp}: {by_data[fp][0].dir}" for fp in sorted(fps))
            raise UserError(f"dataset {name!r} has runs on different data ({where}); compare runs of one "
                            "data set, or give each its own name (dataset.name=…)")
    out = []
    for fp, group in by_data.items():
        same_scoring(group)
        baseline, group, ambiguous = _baseline(group)
        group.sort(key=lambda r: (r is not baseline, _order(r.method), r.method))
        first = group[0]
        out.append(Block(first.dataset, fp, first.model, first.model_path, first.summary.get("segments", 0),
                         list(zip(labels(group), group)), baseline, ambiguous))
    return sorted(out, key=lambda b: b.dataset)


def one_model(runs: list[Run]) -> None:
    """A model is known by its files (summary.json `model_fingerprint`), whatever path reached it; runs recorded
    before that fingerprint are known by their path (then all are)."""
    by_files = all(run.summary.get("model_fingerprint") for run in runs)
    models: dict[str, list[Run]] = defaultdict(list)
    for run in runs:
        models[run.summary["model_fingerprint"] if by_files else run.model_path].append(run)
    if len(models) > 1:
        listed = "; ".join(f"{g[0].model} at {g[0].model_path}{f' (files {key})' if by_files else ''} "
                           f"({len(g)} run{'s' * (len(g) > 1)}, e.g. {g[0].dir})" for key, g in models.items())
        raise UserError(f"runs use different models, and a table compares methods on one model: {listed}")


def same_scoring(group: list[Run], decoding: bool = True) -> None:
    """Refuse (one line, naming the first difference and two runs that differ in it) runs scored with other metric
    settings (their signatures: R's holds the stopword list's and the truecaser's text by content; a difference in
    BLEU's, SBLEU's or TER's tokenisation is named as one, the same in `table`, `compare`, `findings`, `plot`) or, with
    `decoding`, decoded otherwise (every `decode` setting): a table's rows, a finding, a forgetting curve would mix
    two measurements. (`compare` compares decodings on purpose, its labels naming them: decoding=False.)"""
    first = group[0]
    for run in group[1:]:
        _same(first, run, _tokenisation, "scored with different tokenisations", "scored with one metrics.tokenize",
              shared=True)
        _same(first, run, _signature_parts, "scored with different metric settings", "scored one way")
        if decoding:
            _same(first, run, _decoding, "decoded differently", "decoded one way")


def _same(first: Run, run: Run, parts, what: str, how: str, shared: bool = False) -> None:
    """One line naming the first of `parts` (a run → {key: value}) in which the two runs differ, if any (`shared`:
    of those both runs have)."""
    a, b = parts(first), parts(run)
    keys = sorted(a.keys() & b.keys() if shared else {*a, *b}, key=list(_TOKENISATION).index if shared else None)
    k = next((k for k in keys if a.get(k) != b.get(k)), None)
    if k is not None:
        raise UserError(f"runs {what} ({k}: {a.get(k, '(none)')} in {first.dir}, {b.get(k, '(none)')} in "
                        f"{run.dir}); compare runs {how}")


def _signature_parts(run: Run) -> dict[str, str]:
    """{metric.part: value} of a run's signatures ("R|lang:de|stop:iso-de|…": R.lang → de, R.stop → iso-de)."""
    out = {}
    for metric, signature in sorted((run.summary.get("signatures") or {}).items()):
        for n, part in enumerate(str(signature).split("|")):
            key, _, value = part.partition(":")
            out[f"{metric}.{key}" if value else f"{metric}.{n}"] = value or key
    return out


def _tokenisation(run: Run) -> dict[str, str]:
    """The tokenisation parts of a run's signatures, in `_TOKENISATION`'s order."""
    parts = _signature_parts(run)
    return {k: parts[k] for k in _TOKENISATION if k in parts}


def _decoding(run: Run) -> dict:
    return {k: v for k, v in run.config.items() if k.startswith("decode.")}


def _baseline(group: list[Run]) -> tuple[Run | None, list[Run], str | None]:
    """The block's baseline, the group without duplicate baselines, and why there is none if ambiguous."""
    found = [r for r in group if r.method == BASELINE]
    if not found:
        return None, list(group), None
    different = [r for r in found[1:] if r.scores != found[0].scores]
    if not different:
        return found[0], [r for r in group if r.method != BASELINE or r is found[0]], None
    a, b = found[0], different[0]
    keys = [k for k in sorted({*a.config, *b.config}) if repr(a.config.get(k)) != repr(b.config.get(k))]
    why = ", ".join(f"{k}: {a.config.get(k)} vs {b.config.get(k)}" for k in keys[:4]) or "same config"
    return None, list(group), (f"dataset {group[0].dataset!r}: baseline runs (method=none) with different "
                               f"scores ({why}): {a.dir} and {b.dir}; pass the directories of runs with one setting")


def _order(method: str) -> int:
    return ROW_ORDER.index(method) if method in ROW_ORDER else len(ROW_ORDER)


def check_joinable(base: Run, run: Run) -> None:
    """Refuse (one line) a pair of runs whose log-probabilities cannot be compared (CXMI): the θ0 side must be the
    baseline run (method=none), on the same data, model and settings of decoding and of the update's arithmetic."""
    if base.summary.get("method") != BASELINE:
        raise UserError(f"{base.dir}: CXMI compares every run with the baseline (method=none), which scores the "
                        f"references under θ0; this run's method is {base.summary.get('method')!r}")
    if base.fingerprint != run.fingerprint:
        raise UserError(f"{run.dir}: CXMI needs the baseline on the same data ({run.fingerprint} vs "
                        f"{base.fingerprint} in {base.dir})")
    a, b = base.summary.get("config") or {}, run.summary.get("config") or {}
    for key in _SAME_SCORING:
        va, vb = _setting(a, key), _setting(b, key)
        if va != vb:
            raise UserError(f"{run.dir}: CXMI needs the baseline with the same {key} ({vb!r} here, {va!r} in "
                            f"{base.dir})")


def _setting(config: dict, dotted: str):
    for part in dotted.split("."):
        config = (config or {}).get(part) if isinstance(config, dict) else None
    return config


def labels(runs: list[Run]) -> list[str]:
    """Method names ("baseline" for none); a run of a method that has several runs gets the settings where it departs
    from most of them (each setting's commonest value; where values tie, every run shows its own), so a sweep's rows
    read "icl", "icl (retrieval=fuzzy)", "icl (weights.name=lora)" ("method." left out; icl's weights method by its
    name, and its settings where runs of it differ); and every run the decoding where the runs were decoded
    differently (a beam-1 run beside a beam-5 baseline says so)."""
    out = []
    decoded = any(_decoding(r) != _decoding(runs[0]) for r in runs)
    for run in runs:
        same = runs if decoded else [r for r in runs if r.method == run.method]
        name = "baseline" if run.method == BASELINE else run.method
        keys = sorted({k for r in same for k in {*r.config, *run.config}
                       if not k.startswith(_NOT_RESULTS) and repr(r.config.get(k)) != repr(run.config.get(k))
                       and (r.method == run.method or k.startswith("decode."))})
        if "method.weights.name" in keys:  # icl's weights method: its name, and its settings where runs of it differ
            kin = [r for r in same if r.config.get("method.weights.name") == run.config.get("method.weights.name")]
            keys = [k for k in keys if not k.startswith("method.weights.") or k == "method.weights.name"
                    or any(repr(r.config.get(k)) != repr(run.config.get(k)) for r in kin)]
        keys = [k for k in keys if k.startswith("decode.") or _departs(run, same, k)]
        shown = [f"{k.removeprefix('method.')}={run.config.get(k)}" for k in keys]
        out.append(f"{name} ({', '.join(shown)})" if shown else name)
    for i, label in enumerate(out):
        if out.count(label) > 1:
            out[i] = f"{label} [{runs[i].dir.name}]"
    return out


def _departs(run: Run, same: list[Run], key: str) -> bool:
    """Whether `run`'s value of `key` is not the one most of `same` have (a tie: every value departs)."""
    counts = Counter(repr(r.config.get(key)) for r in same)
    top = max(counts.values())
    return counts[repr(run.config.get(key))] < top or list(counts.values()).count(top) > 1


def relative(value: float | None, base: float | None) -> float | None:
    """Difference to the baseline in percent of the baseline (paper Table 5); None if undefined."""
    if value is None or base is None or base == 0:
        return None
    return 100.0 * (value - base) / base


def best(values: list[float | None], metric: str) -> list[bool]:
    """Which values are the column's best (ties all marked; TER: lowest); none if fewer than two differ."""
    present = [v for v in values if v is not None]
    if len(present) < 2 or max(present) - min(present) <= 1e-9:
        return [False] * len(values)
    top = min(present) if metric.split(".")[-1] in LOWER_IS_BETTER else max(present)
    return [v is not None and abs(v - top) <= 1e-9 for v in values]
