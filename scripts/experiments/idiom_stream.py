"""The English→German idiom stream of the LitTER experiment (docs/beyond_paper.md, "Idioms").

    python scripts/experiments/idiom_stream.py OUT.tsv [--idioms ../shared/data/idioms]

Fadaee, Bisazza & Monz (2018)'s idiom test set (WMT news sentences, 1,500 pairs, 68 idioms; `.info` gives each
line's idiom) as one stream in which idioms recur: grouped into one document per idiom, idioms in the order of
their first line, each idiom's lines in file order. Only lines whose labelled idiom occurs in the source are kept
(located as `adaptsim litter` locates a span: adaptsim.metrics.litter.IdiomList, lemmas and the `gap` of
configs/litter/presets.yaml, on the detokenised source the dataset config reads); the others are dropped and
counted: LitTER scores the words of an idiom as they stand in the source, and a line whose label is not there
("to take it easy" on "…it is easy to take trains…") has none. Writes a TSV for `dataset=idioms_fadaee` with
the columns doc_id (the idiom), seg_id (the line number in the original files), source, reference (still
Moses-tokenised: the dataset config detokenises them) and spans (the idiom, located again by `adaptsim litter`).
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

from sacremoses import MosesDetokenizer

from adaptsim.data.textio import read_lines
from adaptsim.metrics.litter import IdiomList
from adaptsim.report.resources import presets


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--idioms", type=Path, default=Path(__file__).resolve().parents[3] / "shared/data/idioms",
                    help="the folder with fadaee.idiom_test.{en,de,info} (default: ../shared/data/idioms)")
    args = ap.parse_args()
    prefix = args.idioms / "fadaee.idiom_test"
    sources, references = read_lines(f"{prefix}.en"), read_lines(f"{prefix}.de")
    idioms = [line.split("\t")[1] for line in read_lines(f"{prefix}.info")]
    assert len(sources) == len(references) == len(idioms), "the three files must be parallel"
    matcher = IdiomList([], "en", presets()["gap"])
    detokenize = MosesDetokenizer(lang="en").detokenize
    groups: dict[str, list[int]] = {}
    for i, idiom in enumerate(idioms):
        if matcher.locate(idiom, detokenize(sources[i].split())) is not None:
            groups.setdefault(idiom, []).append(i)
    kept = sum(map(len, groups.values()))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, delimiter="\t", lineterminator="\n", quoting=csv.QUOTE_NONE, escapechar="\\")
        w.writerow(["doc_id", "seg_id", "source", "reference", "spans"])
        for idiom, lines in groups.items():
            for i in lines:
                w.writerow([idiom, i + 1, sources[i], references[i], idiom])
    print(f"{args.out}: {kept} segments, {len(groups)} idioms (documents); {len(sources) - kept} of {len(sources)} "
          f"lines dropped: their labelled idiom is not in the source")


if __name__ == "__main__":
    main()
