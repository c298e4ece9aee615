"""Zero-shot recall split by whether the stream has already shown a word's pieces (realistic_ende.sh, step 4).

    python scripts/experiments/r0_by_pieces.py SWEEP [--spm TARGET.spm] [--out R0_BY_PIECES.md]

A word counted by R0 occurs for the first time in the stream's references, but its sentencepiece pieces may
not: "Datei" is new after "Dateien" (▁Datei en) was corrected, and an update on that correction raised ▁Datei.
Each R0 occurrence is put in one of two classes — every piece of the word seen in an earlier reference of the
stream ("pieces seen") or not ("a new piece") — and R0 of every run of SWEEP is reported per class against the
baseline (`none`), with document-bootstrap intervals and p-values (adaptsim.report.stats, the `table` machinery).
Why: on real post-edits (ape-it) no method lost R0, against the paper's finding; this tells whether the
zero-shot penalty is absent there or hidden by a gain on words the stream's pieces already cover. A second table
counts, per class, the R0 occurrences each run won and lost against the baseline.

Reads the runs' steps.jsonl — from a sweep, its references and hypotheses with the word pipeline and counting scope
the runs used (.hydra/config.yaml, summary.json; adaptsim.metrics.roles); from a text-free record
(export_runs.py), the `R0_pieces` it keeps per step instead: each R0 occurrence's class and whether the hypothesis
held it, in the order of the words (the same in every run of the stream), no text — and checks that its R0 counts
equal the runs' own.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import sentencepiece
from omegaconf import OmegaConf

from adaptsim.metrics.roles import Roles
from adaptsim.records import read_record, record_file
from adaptsim.report.significance import significant
from adaptsim.report.stats import Series, Settings, compare, ratio, units_of

CLASSES = ("pieces seen", "a new piece")


def load_run(path: Path) -> tuple[dict, list[dict], object]:
    summary = json.loads((path / "summary.json").read_text())
    steps = [json.loads(line) for line in read_record(record_file(path, "steps.jsonl")).splitlines()]
    return summary, steps, OmegaConf.load(path / ".hydra" / "config.yaml").metrics


def piece_classes(references: list[str], levels, pieces) -> list[dict[str, int]]:
    """Per segment: each R0 word → 0 (every piece in an earlier reference) or 1 (a piece new to the stream)."""
    seen: set[str] = set()
    out = []
    for reference, level in zip(references, levels, strict=True):
        out.append({w: int(not set(pieces(w)) <= seen) for w in level[0]})
        seen.update(pieces(reference))
    return out


def occurrences(steps: list[dict], classes: list[dict[str, int]], words) -> list[list[tuple[int, int]]]:
    """Per segment: (class, whether the hypothesis holds it) of each R0 word, in the words' sorted order — what the
    split needs, without the text (export_runs.py keeps it as `R0_pieces`)."""
    out = []
    for step, cls in zip(steps, classes, strict=True):
        held = words(step["hypothesis"])
        out.append([(cls[w], int(w in held)) for w in sorted(cls)])
    return out


def stream_classes(summary: dict, steps: list[dict], metrics, spm: Path):
    """Each segment's R0 words classed by the target pieces of `spm` (the runs' content words and R0's counting in
    their scope, as their evaluator built them), and the word pipeline that finds them in a hypothesis."""
    if not spm.is_file():
        raise SystemExit(f"r0_by_pieces.py: {spm}: no such sentencepiece model (give --spm)")
    references = [s["reference"] for s in steps]
    roles = Roles(metrics, references, [str(s["doc_id"]) for s in steps], summary["metrics_scope"])
    sp = sentencepiece.SentencePieceProcessor(model_file=str(spm))
    return piece_classes(references, roles.levels, lambda text: sp.encode(text, out_type=str)), roles.words


def class_stats(found: list[list[tuple[int, int]]]) -> np.ndarray:
    """segments × (class, num/den): R0 hits and occurrences of each class."""
    out = np.zeros((len(found), len(CLASSES), 2))
    for i, segment in enumerate(found):
        for c, hit in segment:
            out[i, c] += (hit, 1)
    return out


def won_lost(found: list[list[tuple[int, int]]], base: list[list[tuple[int, int]]]) -> np.ndarray:
    """(class, won/lost): R0 occurrences the baseline missed and this run hit, and the reverse. A difference in R0
    is won − lost; the paper's zero-shot loss is the lost column, which a gain elsewhere can hide."""
    out = np.zeros((len(CLASSES), 2))
    for segment, b in zip(found, base, strict=True):
        for (c, hit), (_, was) in zip(segment, b, strict=True):
            out[c] += (hit and not was, was and not hit)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("sweep", type=Path)
    ap.add_argument("--spm", help="the model's target sentencepiece model [target.spm in the runs' model directory]")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--json", type=Path, help="also write the table's figures (the learning curve reads them)")
    ap.add_argument("--resamples", type=int, default=1000)
    args = ap.parse_args()
    runs = {}
    for path in sorted(p.parent for p in args.sweep.glob("*/summary.json")):
        summary, steps, metrics = load_run(path)
        if summary["status"] == "finished":
            runs[summary["method"]] = (summary, steps, metrics)
    if "none" not in runs:
        raise SystemExit(f"r0_by_pieces.py: no finished baseline (method none) in {args.sweep}")
    summary, steps, metrics = runs["none"]
    references = [s["reference"] for s in steps]
    text = "hypothesis" in steps[0]  # a sweep; else a text-free record, with the occurrences it kept
    if text:
        classes, words = stream_classes(summary, steps, metrics,
                                        Path(args.spm or Path(summary["model_path"]) / "target.spm"))

    names = ["none"] + sorted(m for m in runs if m != "none")
    stats, found = {}, {}
    for m in names:
        m_summary, m_steps, _ = runs[m]
        if [s["reference"] for s in m_steps] != references:
            raise SystemExit(f"r0_by_pieces.py: {m}'s references differ from the baseline's")
        if not text and any("R0_pieces" not in s for s in m_steps):
            raise SystemExit(f"r0_by_pieces.py: {m}: a text-free record without R0_pieces (exported before "
                             "export_runs.py kept them): run it on the sweep")
        found[m] = occurrences(m_steps, classes, words) if text else [s["R0_pieces"] for s in m_steps]
        stats[m] = class_stats(found[m])
        hits, total = stats[m][:, :, 0].sum(), stats[m][:, :, 1].sum()
        recorded = m_summary["counts"]["R0"]
        if (hits, total) != (recorded["num"], recorded["den"]):
            raise SystemExit(f"r0_by_pieces.py: {m}: R0 {hits:.0f}/{total:.0f} here, "
                             f"{recorded['num']}/{recorded['den']} in its summary.json")
    index, n_units = units_of([s["doc_id"] for s in steps], "document")
    series = [Series(c, ratio(100.0), [stats[m][:, k] for m in names]) for k, c in enumerate(CLASSES)]
    # the reports' default test (exact at few documents): a percentile interval over 5 documents marks too much
    result = compare(series, index, n_units, Settings(args.resamples, "document", 1, "auto"))

    total = stats["none"][:, :, 1].sum(axis=0)
    lines = [f"R0 by class of the word, {args.sweep.name}: Δ in points against the baseline [95% CI], "
             "†: differs at p < 0.05 (the test the signature below names)", "",
             "| method | " + " | ".join(f"{c} ({100 * n / total.sum():.0f} %, {n:.0f})" for c, n in zip(CLASSES, total))
             + " |", "|:--|--:|--:|"]
    lines.append("| baseline | " + " | ".join(f"{result.scores[0][c].score:.2f}" for c in CLASSES) + " |")
    for r, m in enumerate(names[1:], start=1):
        cells = []
        for c in CLASSES:
            d = result.differences[r][c]
            cells.append(f"{d.diff:+.2f} [{d.ci[0]:+.2f}, {d.ci[1]:+.2f}]{'†' if significant(d.p) else ''}")
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    lines += ["", f"`{result.signature}`", "",
              "R0 occurrences won (the baseline missed, the method hit) and lost (the reverse), in points of all R0 "
              "occurrences (Δ R0 = won − lost)", "",
              "| method | " + " | ".join(f"{c} {x}" for c in (*CLASSES, "all") for x in ("won", "lost")) + " |",
              "|:--|" + "--:|" * (2 * len(CLASSES) + 2)]
    for m in names[1:]:
        wl = 100 * won_lost(found[m], found["none"]) / total.sum()
        cells = [f"{v:.2f}" for row in (*wl, wl.sum(axis=0)) for v in row]
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out:
        args.out.write_text(text)
    if args.json:
        figures = {"signature": str(result.signature), "occurrences": dict(zip(CLASSES, total.tolist())),
                   "baseline": {c: result.scores[0][c].score for c in CLASSES},
                   "differences": {m: {c: {"diff": (d := result.differences[r][c]).diff, "ci": list(d.ci), "p": d.p}
                                       for c in CLASSES} for r, m in enumerate(names[1:], start=1)}}
        args.json.write_text(json.dumps(figures, indent=1) + "\n")


if __name__ == "__main__":
    main()
