"""The data splits of the realistic English–German experiment (scripts/experiments/realistic_ende.sh).

    python scripts/experiments/prepare_ende.py OUT [--ape-block 100 --ape-test-blocks 20 --ape-heldout-blocks 5]
        [--heldout-topics a11y,user,bluetooth,sound,backup,sharing --heldout-segments 60] [--train-pairs N]
        [--heldout-articles N]

ape-it (WMT16/17 APE, IT domain) has no documents: it is read in file order, detokenised, and cut into blocks of
`--ape-block` triplets (`dataset.split_every`, so the sweep's document-level bootstrap resamples blocks). Blocks
1…T are the test stream (the sweep reads them itself, `dataset.max_documents=T`), the next H blocks are held out
for choosing `lasso`'s and `fixed`'s settings, and the rest goes into training as source → post-edit pairs.
Writes into OUT:

- train.en, train.de: ../shared/data/general/train, then the ape-it training blocks (the first `--train-pairs`
  pairs of that, if given: for quick trials);
- heldout.tsv: the first `--heldout-segments` segments of each held-out GNOME help topic, then the held-out ape-it
  blocks (documents `ape/<block>`), then the first `--heldout-articles` articles of Business Central's held-out
  file, whole (dataset=business-central-heldout; documents `bc/<article>`); what select-fixed and the lasso grid
  run on, never the test streams;
- split.json: the counts and which ape-it blocks went where.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from omegaconf import OmegaConf

from adaptsim.data import load_documents
from adaptsim.data.textio import read_lines
from adaptsim.launch.hydra_app import compose


def one_line(text: str) -> str:
    return " ".join(text.split())  # no tab or newline inside a TSV cell or a line of training text


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--ape-block", type=int, default=100)
    ap.add_argument("--ape-test-blocks", type=int, default=20)
    ap.add_argument("--ape-heldout-blocks", type=int, default=5)
    ap.add_argument("--heldout-topics", default="a11y,user,bluetooth,sound,backup,sharing")
    ap.add_argument("--heldout-segments", type=int, default=60)
    ap.add_argument("--train-pairs", type=int, default=None)
    ap.add_argument("--heldout-articles", type=int, default=0)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)

    ape = load_documents(compose("run", ["dataset=ape_it", f"dataset.split_every={args.ape_block}"]).dataset)
    first_train = args.ape_test_blocks + args.ape_heldout_blocks
    if len(ape) <= first_train:
        raise SystemExit(f"prepare_ende.py: ape-it has {len(ape)} blocks of {args.ape_block}; test + held-out "
                         f"take {first_train}")
    heldout_ape, train_ape = ape[args.ape_test_blocks:first_train], ape[first_train:]

    general = Path(OmegaConf.create({"shared": "${adaptsim_shared:}"}).shared) / "data" / "general" / "train"
    ape_pairs = [(s.source, s.reference) for doc in train_ape for s in doc.segments][:args.train_pairs]
    for side, lang in enumerate(("en", "de")):
        lines = read_lines(f"{general}.{lang}") + [one_line(p[side]) for p in ape_pairs]
        (args.out / f"train.{lang}").write_text("".join(line + "\n" for line in lines), encoding="utf-8")

    topics = args.heldout_topics.split(",")
    gnome = load_documents(compose("run", ["dataset=gnome_help", f"dataset.documents=[{','.join(topics)}]",
                                           f"dataset.max_segments={args.heldout_segments}"]).dataset)
    articles = load_documents(compose("run", ["dataset=business-central-heldout",
                                              f"dataset.max_documents={args.heldout_articles}"]).dataset) \
        if args.heldout_articles else []
    rows = ["doc_id\tseg_id\tsource\treference"]  # TSV without quoting, as adaptsim reads it
    for doc_id, doc in [*((d.doc_id, d) for d in gnome), *((f"ape/{d.doc_id.split('/')[-1]}", d) for d in heldout_ape),
                        *((f"bc/{d.doc_id}", d) for d in articles)]:
        rows += [f"{doc_id}\t{s.seg_id}\t{one_line(s.source)}\t{one_line(s.reference)}" for s in doc.segments]
    (args.out / "heldout.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")

    split = {"general_pairs": len(read_lines(f"{general}.en")), "ape_block": args.ape_block,
             "ape_test_blocks": [1, args.ape_test_blocks],
             "ape_heldout_blocks": [args.ape_test_blocks + 1, first_train],
             "ape_train_blocks": [first_train + 1, len(ape)], "ape_train_pairs": len(ape_pairs),
             "heldout_gnome_topics": topics, "heldout_articles": len(articles),
             "heldout_segments": sum(len(d.segments) for d in [*gnome, *heldout_ape, *articles])}
    (args.out / "split.json").write_text(json.dumps(split, indent=1) + "\n")
    print(json.dumps(split))


if __name__ == "__main__":
    main()
