"""A sweep's text-free record, to commit: the reports (table, compare, plot, findings) read it as they read
the sweep, but it holds no source, reference or hypothesis text (the test data stays out of git).

    python scripts/experiments/export_runs.py SWEEP_DIR OUT_DIR [--without-logprobs]

A run already in OUT_DIR that the sweep does not hold finished stays: a stream too long for one sitting is run a
method or two at a time, each into its own sweep, and exported into one record (learning_curve.sh's
business_central_all). Copied per finished run (its records plain or compressed), written xz-compressed where
large: summary.json, .hydra/{config,overrides}.yaml and steps.jsonl.xz without the text fields (source, hypothesis,
their pieces and the reference's; the reference becomes a hash of it; the per-segment statistics, which the
bootstrap resamples, and the log-probabilities stay; timings and perplexities rounded, `ROUNDED`), with `R0_pieces`
added where the model has a target.spm: each R0 occurrence's class (its pieces shown by the stream before, or not)
and whether the hypothesis held it, no text, so that r0_by_pieces.py reads the record as it reads the sweep; the
sweep's multirun.yaml. Paths of the machine it ran on
stay as they are (they name ../shared, not its contents). No curves.csv: its every cell is the steps' statistics
summed, which `plot` does where a run has none (docs/design.md §6). --without-logprobs also leaves out the per-token
log-probabilities (CXMI's input; about half of the compressed size) where no report made from the export needs them.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from pathlib import Path

from omegaconf import OmegaConf
from r0_by_pieces import occurrences, stream_classes

from adaptsim.records import compress_records, read_record, record_file

TEXT = ("source", "hypothesis", "pieces", "ref_pieces")  # dropped (ref_pieces: the reference's pieces, its text);
# the reference is replaced by a hash of it
ROUNDED = {"translate_s": "{:.4f}", "update_s": "{:.4f}", "ppl_before": "{:.7g}", "ppl_after": "{:.7g}"}  # what no
# report reads finer (0.1 ms a step; perplexities, read by no report, to 7 digits): a quarter off the compressed record


def export_run(run: Path, out: Path, drop: tuple[str, ...] = ()) -> None:
    (out / ".hydra").mkdir(parents=True, exist_ok=True)
    for name in ("summary.json", ".hydra/config.yaml", ".hydra/overrides.yaml"):
        if (run / name).is_file():
            shutil.copyfile(run / name, out / name)
    steps = [json.loads(line) for line in filter(None, read_record(record_file(run, "steps.jsonl")).split("\n"))]
    summary = json.loads((run / "summary.json").read_text())
    spm = Path(summary.get("model_path") or "") / "target.spm"
    pieces = [None] * len(steps)
    if spm.is_file() and "R0" in summary.get("counts", {}):
        classes, words = stream_classes(summary, steps, OmegaConf.load(run / ".hydra" / "config.yaml").metrics, spm)
        pieces = occurrences(steps, classes, words)
    with open(out / "steps.jsonl", "w", encoding="utf-8") as dst:
        for step, found in zip(steps, pieces, strict=True):
            kept = {k: float(ROUNDED[k].format(v)) if k in ROUNDED and isinstance(v, float) else v
                    for k, v in step.items() if k not in TEXT and k not in drop}
            if found is not None:
                kept["R0_pieces"] = found
            # the reports pair runs segment by segment on (doc_id, seg_id, reference): a hash keeps that check
            kept["reference"] = "sha256:" + hashlib.sha256(step["reference"].encode()).hexdigest()[:16]
            dst.write(json.dumps(kept, ensure_ascii=False) + "\n")
    compress_records(out)  # committed records stay small (adaptsim/records/ COMPRESSIBLE)


def finished(run: Path) -> bool:
    path = run / "summary.json"
    return path.is_file() and json.loads(path.read_text()).get("status") == "finished"


def main() -> None:
    args = sys.argv[1:]
    drop = ("logprobs",) if "--without-logprobs" in args else ()
    sweep, out = (Path(a) for a in args if a != "--without-logprobs")
    new = out.with_name(out.name + ".new")  # the old record stays whole until the new one is
    shutil.rmtree(new, ignore_errors=True)
    new.mkdir(parents=True)
    shutil.copyfile(sweep / "multirun.yaml", new / "multirun.yaml")
    runs = sorted(d for d in sweep.iterdir() if finished(d))
    for run in runs:
        export_run(run, new / run.name, drop)
    kept = sorted(d for d in out.iterdir() if finished(d) and not (new / d.name).exists()) if out.is_dir() else []
    for run in kept:
        shutil.copytree(run, new / run.name)
    shutil.rmtree(out, ignore_errors=True)
    new.rename(out)
    print(f"export_runs.py: {len(runs)} finished runs of {sweep} → {out} (no text)"
          + (f"; kept {', '.join(d.name for d in kept)} exported before" if kept else ""))


if __name__ == "__main__":
    main()
