"""Find and load runs under sweep or run directories, and say which runs failed or are missing.

A run directory holds `summary.json` or Hydra's `.hydra/config.yaml` (docs/design.md §6). A sweep directory
holds `multirun.yaml`; from it the jobs the sweep should have produced are recomputed the way Hydra's
basic sweeper expands them, so a job that never got a directory (sweep interrupted, cluster job lost)
is reported too, not silently left out of a table.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from omegaconf import OmegaConf

from adaptsim.errors import UserError
from adaptsim.launch.jobs import basic_sweep_jobs
from adaptsim.records import JOB_KEYS, RUN_KEYS, alive, read_record, record_file, recorded_process
from adaptsim.rules import flatten

# what the reports need from a finished run's summary.json (its schema: adaptsim/records/)
READ_KEYS = ("method", "dataset", "model_path", "data_fingerprint", "segments", "scores", "signatures")
assert set(READ_KEYS) <= {*JOB_KEYS, *RUN_KEYS}
_SKIP = {".hydra", ".submitit"}


@dataclass
class Run:
    dir: Path
    summary: dict
    config: dict = field(default_factory=dict)  # flattened composed config {"method.lr": 0.01, …}; {} without .hydra
    overrides: list[str] = field(default_factory=list)
    derived: dict = field(default_factory=dict)  # scores computed from steps.jsonl by a report (CXMI)
    steps: object = field(default=None, repr=False)  # its steps.jsonl once read (adaptsim.report.significance.Steps)

    # a run that diverged (update.on_divergence=rollback) is never shown as a normal row of its method
    method = property(lambda self: self.summary.get("method", "?") + (
        f" (diverged {self.summary['divergences']}×)" if self.summary.get("divergences") else ""))
    model = property(lambda self: self.summary.get("model", "?"))
    model_path = property(lambda self: str(self.summary.get("model_path", "?")))
    dataset = property(lambda self: self.summary.get("dataset", "?"))
    fingerprint = property(lambda self: self.summary.get("data_fingerprint", "?"))
    scores = property(lambda self: {**(self.summary.get("scores") or {}), **self.derived})

    def curves(self) -> dict[str, list]:
        """curves.csv as columns: metric -> cumulative scores (NaN where none yet), "doc_id" -> ids."""
        path = record_file(self.dir, "curves.csv")
        rows = list(csv.DictReader(io.StringIO(read_record(path), newline="")))
        if not rows:
            raise UserError(f"{path}: no rows")
        out: dict[str, list] = {"doc_id": [r["doc_id"] for r in rows]}
        for key in rows[0]:
            if key not in ("segment", "doc_id"):
                out[key] = [float(r[key]) if r[key] not in ("", None) else math.nan for r in rows]
        return out


@dataclass
class Problem:
    where: Path
    what: str

    def __str__(self) -> str:
        return f"{self.where}: {self.what}"


@dataclass
class Found:
    runs: list[Run]          # finished runs
    problems: list[Problem]  # failed, unfinished or missing runs


def discover(paths: list[str | Path]) -> Found:
    """Load every run below `paths` (sweep or run directories, searched recursively)."""
    run_dirs: dict[Path, None] = {}
    sweeps: dict[Path, None] = {}
    for p in map(Path, paths):
        if p.is_file() and p.name == "summary.json":
            p = p.parent
        if not p.is_dir():
            raise UserError(f"{p}: no such directory")
        before = len(run_dirs) + len(sweeps)
        for d, dirnames, filenames in os.walk(p):
            here = Path(d).resolve()
            if "multirun.yaml" in filenames:
                sweeps[here] = None
            if "summary.json" in filenames or (here / ".hydra" / "config.yaml").is_file():
                run_dirs[here] = None
                dirnames[:] = []
            else:
                dirnames[:] = sorted(n for n in dirnames if n not in _SKIP)
        if len(run_dirs) + len(sweeps) == before:
            raise UserError(f"{p}: no runs below it (no summary.json or .hydra/config.yaml)")
    runs, problems = [], []
    for d in run_dirs:
        run, problem = _load(d)
        if run or problem:
            (runs if run else problems).append(run or problem)
    present = [_job_key(_overrides(d)) for d in run_dirs]
    for s in sweeps:
        problems += _missing_jobs(s, [o for d, o in zip(run_dirs, present) if d.is_relative_to(s)])
    return Found(runs, problems)


def finished_runs(paths: list[str | Path], command: str) -> Found:
    """`discover`, with every failed, unfinished or missing run reported on stderr, and nothing finished
    an error: what `table` and `plot` both start with."""
    found = discover(paths)
    for problem in found.problems:
        print(f"adaptsim {command}: {problem}", file=sys.stderr)
    if not found.runs:
        raise UserError("no finished runs in " + " ".join(map(str, paths)))
    return found


def _load(d: Path) -> tuple[Run | None, Problem | None]:
    path = d / "summary.json"
    if not path.is_file():
        return None, Problem(d, "no summary.json: the job was killed before it started, or is still starting")
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        return None, Problem(d, f"unreadable summary.json ({e})")
    if summary.get("command", "run") not in ("run", "bench", "serve"):  # serve: a translator's run (docs/serve.md)
        return None, None  # another command's job (train, select-fixed): not a run to report on
    status = summary.get("status")
    if status == "failed":
        lines = [ln.strip() for ln in str(summary.get("error", "")).splitlines() if ln.strip()]
        return None, Problem(d, f"failed: {lines[-1][:300] if lines else 'no error recorded'}")
    if status != "finished" or not summary.get("scores"):
        return None, Problem(d, f"unfinished (status {status!r}): {_why_unfinished(summary)}")
    missing = [k for k in READ_KEYS if k not in summary]
    if missing:
        return None, Problem(d, f"summary.json lacks {', '.join(missing)} (not a run's summary, or a foreign one)")
    return Run(d, summary, _config(d, summary), _overrides(d, summary)), None


# --- run liveness (adaptsim.records.RecordWriter records the process of a running run) ---------------
def _why_unfinished(summary: dict) -> str:
    """SIGKILL leaves `running` behind: a run whose recorded process is gone (on this host) was killed."""
    if summary.get("status") == "interrupted":
        return str(summary.get("error") or "interrupted")
    pid = recorded_process(summary)
    if pid is not None:
        return f"still running (pid {pid})" if alive(pid) else f"killed (its process {pid} is gone)"
    return "still running, or killed"


# --- end of run liveness --------------------------------------------------------------------------------


def _config(d: Path, summary: dict) -> dict:
    """The run's settings as its summary.json records them (runs before that record: .hydra/config.yaml, which
    a second process started into the same directory could overwrite)."""
    if "config" in summary:
        return flatten(summary["config"])
    path = d / ".hydra" / "config.yaml"
    if not path.is_file():
        return {}
    return flatten(OmegaConf.to_container(OmegaConf.load(path), resolve=False))


def _overrides(d: Path, summary: dict | None = None) -> list[str]:
    if summary and "overrides" in summary:
        return list(summary["overrides"])
    path = d / ".hydra" / "overrides.yaml"
    return [str(o) for o in OmegaConf.load(path)] if path.is_file() else []


def _job_key(overrides) -> frozenset[str]:
    """A job's overrides as the settings they make: `resume` left out (a resumed run's outputs are the uninterrupted
    run's), true/false in one spelling; so a job rerun alone into its sweep (with the same settings) counts."""
    out = set()
    for o in map(str, overrides):
        key, _, value = o.partition("=")
        if key.lstrip("+~") != "resume":
            out.add(f"{key}={value.lower() if value.lower() in ('true', 'false') else value}")
    return frozenset(out)


def _missing_jobs(sweep: Path, present: list[frozenset[str]]) -> list[Problem]:
    """Jobs the sweep's basic sweeper would have launched that have no run directory."""
    try:
        hydra = OmegaConf.to_container(OmegaConf.load(sweep / "multirun.yaml"), resolve=False)["hydra"]
        expanded = basic_sweep_jobs(hydra["sweeper"].get("_target_"), hydra["sweeper"].get("params"),
                                    hydra["overrides"]["task"])
        if expanded is None:
            return []  # another sweeper (optuna, …) chooses its jobs itself: nothing to recompute
        jobs = [_job_key(j) for j in expanded]
    except Exception as e:  # a hand-edited or foreign multirun.yaml: say so, do not guess
        return [Problem(sweep, f"cannot tell which jobs the sweep should have ({type(e).__name__}: {e})")]
    common = frozenset.intersection(*jobs) if jobs else frozenset()
    return [Problem(sweep, f"job {' '.join(sorted(job - common)) or '(the only one)'} has no run directory "
                           "(never started, or lost)")
            for job in jobs if job not in present]
