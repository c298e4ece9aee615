"""LitTER's check on the 94 proverbs of ../shared/data/idioms (docs/beyond_paper.md): per preset and dictionary
set, how many literal German renderings are flagged against the idiomatic ones as references, and how many
idiomatic ones against the literal (false alarms).

    python scripts/experiments/litter_proverbs.py [--idioms ../shared/data/idioms]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from adaptsim.data.textio import read_lines
from adaptsim.metrics.litter import Dictionary, IdiomList, Litter
from adaptsim.report.resources import SWITCHES, presets


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--idioms", type=Path, default=Path(__file__).resolve().parents[3] / "shared/data/idioms")
    d = ap.parse_args().idioms
    sources, literal, idiomatic = (read_lines(d / f"proverbs.{n}") for n in ("en", "literal.de", "idiomatic.de"))
    muse = [{"path": str(d / "muse.en-de.dict"), "format": "hunalign", "from": "en", "to": "de"},
            {"path": str(d / "muse.de-en.dict"), "format": "hunalign", "from": "de", "to": "en"}]
    wiktionary = [{"path": str(d / "wiktionary.en-de.txt"), "format": "wiktionary", "from": "en", "to": "de"}]
    every = presets()
    spans = [IdiomList([], "en", every["gap"]).locate(s, s) for s in sources]  # each proverb is its own span
    print("| preset | dictionaries | stopwords | literal flagged | idiomatic flagged |\n|---|---|---|--:|--:|")
    for name, specs in (("MUSE both ways", muse), ("MUSE + Wiktionary", muse + wiktionary),
                        ("Wiktionary alone", wiktionary)):
        dictionary = Dictionary.load(specs, "en", "de")
        for preset, stopwords in (("paper", False), ("adaptsim", True), ("adaptsim", False)):
            switches = {**{k: every[preset][k] for k in SWITCHES}, "stopwords": stopwords}
            scorer = Litter(dictionary, "en", "de", **switches)
            counts = [sum(scorer.error(w, r, h) is True for w, r, h in zip(spans, refs, hyps))
                      for refs, hyps in ((idiomatic, literal), (literal, idiomatic))]
            print(f"| {preset} | {name} | {'on' if stopwords else 'off'} | {counts[0]}/94 | {counts[1]}/94 |")


if __name__ == "__main__":
    main()
