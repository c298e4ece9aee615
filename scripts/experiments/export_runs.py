"""A sweep's text-free record, to commit: the reports (table, compare, plot, findings) read it as they read
the sweep, but it holds no source, reference or hypothesis text (the test data stays out of git).

    python scripts/experiments/export_runs.py SWEEP_DIR OUT_DIR

Copied per run: summary.json, curves.csv, .hydra/{config,overrides}.yaml, and steps.jsonl without the text
fields (its per-segment statistics are what the bootstrap resamples); the sweep's multirun.yaml. Paths of
the machine it ran on stay as they are (they name ../shared, not its contents).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

TEXT = ("source", "reference", "hypothesis", "pieces")


def export_run(run: Path, out: Path) -> None:
    (out / ".hydra").mkdir(parents=True, exist_ok=True)
    for name in ("summary.json", "curves.csv", ".hydra/config.yaml", ".hydra/overrides.yaml"):
        if (run / name).is_file():
            shutil.copyfile(run / name, out / name)
    with open(run / "steps.jsonl", encoding="utf-8") as src, open(out / "steps.jsonl", "w", encoding="utf-8") as dst:
        for line in src:
            step = json.loads(line)
            dst.write(json.dumps({k: v for k, v in step.items() if k not in TEXT}, ensure_ascii=False) + "\n")


def main() -> None:
    sweep, out = Path(sys.argv[1]), Path(sys.argv[2])
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    shutil.copyfile(sweep / "multirun.yaml", out / "multirun.yaml")
    runs = sorted(d for d in sweep.iterdir() if (d / "summary.json").is_file())
    for run in runs:
        export_run(run, out / run.name)
    print(f"export_runs.py: {len(runs)} runs of {sweep} → {out} (no text)")


if __name__ == "__main__":
    main()
