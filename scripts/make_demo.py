"""Regenerate the embedded demo: generated data in data/demo/ and the demo model in data/demo/model.

    python scripts/make_demo.py              # data + model (about 8 minutes on a 2-core CPU)
    python scripts/make_demo.py --data-only  # documents and test text only

Everything is seeded: the generator (adaptsim.synth) draws each set from its own seeded RNG, sentencepiece
and torch run single-threaded, and training stops after a fixed number of steps, so the same torch build on
the same kind of CPU gives the same files.

What it makes:
- data/demo/heldout.tsv: 4 more such documents (another seed), for `select-fixed` (configs/method/fixed.yaml).
- data/demo/docs.tsv: 4 software-domain documents × 15 segments (doc_id, seg_id, source, reference). Each
  document has 2 ambiguous focus terms (driver → Treiber, not Fahrer; table → Tabelle, not Tisch …) and 2
  new ones (directory → Verzeichnis …) that recur in it; `configs/dataset/demo.yaml` reads it.
- data/demo/general-test.tsv: 500 held-out general-domain pairs (the base model's own domain).
- data/demo/model/: the base model (configs/model/demo.yaml), trained on 100k generated pairs: general text
  plus 5 % software sentences whose software vocabulary excludes the documents' focus terms and every other
  ambiguous word's technical sense, plus RARE_COUNT software sentences per focus term. So the model knows
  Treiber and Verzeichnis as words but has seen driver → Treiber in 60 of the 3,742 training sentences with
  "driver" (the rest: Fahrer): it translates driver as Fahrer, and one correction can tip it over.
  With focus terms never seen at all, their German words are spelt from characters the model never learnt
  to produce, and three SGD steps at γ = 1e-2 cannot teach them (R1 did not move). Only the best
  checkpoint is kept.
- data/demo/manifest.json: the settings, focus terms, figures (training time, BLEU) and file hashes.
Training and validation text go to a work directory (outputs/demo-work, not committed).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SEED = 1
N_DOCS, SEGS_PER_DOC = 4, 15
N_TRAIN, SOFTWARE_SHARE = 100_000, 0.05
RARE_COUNT = 60  # training sentences per focus term: a rare sense (driver: 1.6 % of its sentences), not an unseen one
N_VALID, N_TEST = 500, 500
# `adaptsim train` settings for the demo (the architecture is in configs/model/demo.yaml)
TRAIN = {"train.max_steps": 1500, "train.batch_tokens": 2000, "train.lr": 2e-3, "train.warmup": 400,
         "train.valid_every": 300, "train.valid_bleu_sentences": 200, "train.valid_beam": 1,
         "train.label_smoothing": 0.1, "train.clip_norm": 1.0, "seed": SEED, "threads": 1}
DEMO = ROOT / "data" / "demo"


def write_tsv(path: Path, rows) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("doc_id\tseg_id\tsource\treference\n")
        for row in rows:
            assert not any("\t" in x or "\n" in x for x in row[2:])
            f.write("\t".join(map(str, row)) + "\n")


def write_text(path: Path, lines) -> None:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def make_data(work: Path) -> dict:
    from adaptsim.synth import Generator

    g = Generator(seed=SEED)
    docs = g.documents("software", n_docs=N_DOCS, segs_per_doc=SEGS_PER_DOC)
    doc_en = {en for d in docs for en, _ in d}
    focus = {k for d in docs for k in d.focus}
    # the software sentences in training may use the software-only vocabulary (terms "new" to general text)
    # except the documents' focus terms, which occur in RARE_COUNT sentences each; the technical senses of
    # the other ambiguous words stay unseen
    seen_terms = [t for t in g.terms("new") if t not in focus]
    train = g.corpus(N_TRAIN, software_share=SOFTWARE_SHARE, software_terms=seen_terms, exclude=doc_en,
                     rare_terms=sorted(focus), rare_count=RARE_COUNT)
    train_en = {en for en, _ in train}
    valid = g.sentences("general", N_VALID, seed=SEED + 1000, exclude=train_en | doc_en)
    test = g.sentences("general", N_TEST, seed=SEED + 2000, exclude=train_en | doc_en | {en for en, _ in valid})

    DEMO.mkdir(parents=True, exist_ok=True)
    write_tsv(DEMO / "docs.tsv", [(d.doc_id, i + 1, en, de) for d in docs for i, (en, de) in enumerate(d)])
    # held-out documents of the same kind (other seed, other sentences): where `select-fixed` chooses the
    # tensor list of method=fixed for the demo model, so the choice never sees the test documents
    heldout = g.documents("software", n_docs=N_DOCS, segs_per_doc=SEGS_PER_DOC, seed=SEED + 3000, exclude=doc_en)
    write_tsv(DEMO / "heldout.tsv", [(f"heldout-{d.doc_id}", i + 1, en, de)
                                     for d in heldout for i, (en, de) in enumerate(d)])
    write_tsv(DEMO / "general-test.tsv", [("general-test", i + 1, en, de) for i, (en, de) in enumerate(test)])
    work.mkdir(parents=True, exist_ok=True)
    for name, pairs in (("train", train), ("valid", valid)):
        write_text(work / f"{name}.en", [en for en, _ in pairs])
        write_text(work / f"{name}.de", [de for _, de in pairs])
    ambiguous, new = set(g.terms("ambiguous")), set(g.terms("new"))
    return {
        "generator": g, "docs": docs, "test": test,
        "info": {"seed": SEED, "documents": {d.doc_id: {"focus": d.focus, "segments": len(d)} for d in docs},
                 "training_pairs": len(train), "software_share": SOFTWARE_SHARE,
                 "software_terms_seen_in_training": seen_terms, "focus_term_training_sentences": RARE_COUNT,
                 "focus_terms_ambiguous": sorted(focus & ambiguous), "focus_terms_new": sorted(focus & new),
                 "validation_pairs": len(valid), "general_test_pairs": len(test)},
    }


def train_model(work: Path) -> dict:
    from adaptsim.basemodel.trainer import train
    from adaptsim.launch.hydra_app import compose

    overrides = ["model=demo", f"train.source={work}/train.en", f"train.target={work}/train.de",
                 f"train.valid_source={work}/valid.en", f"train.valid_target={work}/valid.de",
                 "train.out=data/demo/model", "train.overwrite=true", "progress=false",
                 *(f"{k}={v}" for k, v in TRAIN.items())]
    cfg = compose("train", overrides)
    t = time.perf_counter()
    summary = train(cfg)
    summary["wall_seconds"] = round(time.perf_counter() - t, 1)
    shutil.rmtree(DEMO / "model" / "last")  # optimizer state: not needed to run the demo, 2× the model's size
    info = DEMO / "model" / "training.json"  # no machine-specific paths in committed files
    info.write_text(info.read_text(encoding="utf-8").replace(str(ROOT) + "/", ""), encoding="utf-8")
    return summary


def term_recall(hyps, docs, g) -> dict:
    """Per focus-term kind: of the segments whose reference has a focus term's German form, the share whose
    hypothesis has one too (a quick lexical check; `adaptsim run` computes the paper's R0/R1)."""
    ambiguous = set(g.terms("ambiguous"))
    hit = {"ambiguous": [0, 0], "new": [0, 0]}
    i = 0
    for d in docs:
        for _, ref in d:
            for key in d.focus:
                forms = g.forms(key)
                word = lambda text: any(re.search(rf"\b{re.escape(f)}\b", text) for f in forms)  # noqa: E731
                if word(ref):
                    kind = "ambiguous" if key in ambiguous else "new"
                    hit[kind][0] += word(hyps[i])
                    hit[kind][1] += 1
            i += 1
    return {k: {"recall": round(a / b, 3) if b else None, "segments": b} for k, (a, b) in hit.items()}


def evaluate(data: dict) -> dict:
    import sacrebleu
    import torch
    from transformers import MarianMTModel, MarianTokenizer

    from adaptsim.basemodel.trainer import encode, translate

    path = str(DEMO / "model")
    tok, model = MarianTokenizer.from_pretrained(path), MarianMTModel.from_pretrained(path).eval()
    out = {}
    for name, pairs in (("general_test", data["test"]), ("docs_none", [p for d in data["docs"] for p in d])):
        t = time.perf_counter()
        with torch.inference_mode():
            hyps = translate(model, tok, encode(tok, [s for s, _ in pairs]), beam=5, device="cpu")
        out[name] = {"bleu_beam5": round(sacrebleu.corpus_bleu(hyps, [[r for _, r in pairs]]).score, 2),
                     "segments": len(pairs), "seconds": round(time.perf_counter() - t, 1)}
        if name == "docs_none":
            out[name]["focus_term_recall"] = term_recall(hyps, data["docs"], data["generator"])
            out[name]["examples"] = [{"source": s, "reference": r, "hypothesis": h}
                                     for (s, r), h in list(zip(pairs, hyps))[:3]]
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-only", action="store_true", help="write the documents and test text, train nothing")
    p.add_argument("--work", default="outputs/demo-work", help="where the training text goes (not committed)")
    args = p.parse_args()
    os.chdir(ROOT)
    import torch

    torch.set_num_threads(1)
    t0 = time.perf_counter()
    data = make_data(Path(args.work))
    print(f"data: {N_DOCS} documents × {SEGS_PER_DOC} segments, {N_TRAIN} training pairs "
          f"({time.perf_counter() - t0:.0f} s)", flush=True)
    manifest = {"data": data["info"]}
    if not args.data_only:
        import logging

        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
        summary = train_model(Path(args.work))
        manifest["training"] = {k: summary[k] for k in ("steps", "epochs", "best_step", "best_score", "best_metric",
                                                        "train_seconds", "wall_seconds", "parameters",
                                                        "training_pairs", "vocab_size")}
        manifest["evaluation"] = evaluate(data)
        files = sorted(f for f in (DEMO / "model").iterdir() if f.is_file())
        manifest["model_bytes"] = sum(f.stat().st_size for f in files)
    manifest["sha256"] = {str(f.relative_to(DEMO)): sha256(f) for f in sorted(DEMO.rglob("*"))
                          if f.is_file() and f.name != "manifest.json"}
    if args.data_only and (DEMO / "manifest.json").exists():  # keep the model's figures from the last full run
        old = json.loads((DEMO / "manifest.json").read_text(encoding="utf-8"))
        manifest = {**old, **manifest}
    (DEMO / "manifest.json").write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    ev = manifest.get("evaluation", {})
    print(json.dumps({"training": manifest.get("training"), "model_bytes": manifest.get("model_bytes"),
                      "general_test_bleu": ev.get("general_test", {}).get("bleu_beam5"),
                      "docs_none_bleu": ev.get("docs_none", {}).get("bleu_beam5"),
                      "focus_term_recall": ev.get("docs_none", {}).get("focus_term_recall"),
                      "total_seconds": round(time.perf_counter() - t0)}, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
