"""The embedded demo (scripts/make_demo.py): committed documents, model and their configs."""

from __future__ import annotations

import json

import pytest
from conftest import script_module

from adaptsim import DATA_DIR

DEMO = DATA_DIR / "demo"
needs_demo = pytest.mark.skipif(not (DEMO / "docs.tsv").exists(), reason="data/demo not generated")
needs_model = pytest.mark.skipif(not (DEMO / "model" / "config.json").exists(), reason="demo model not trained")


def _make_demo():
    return script_module("scripts/make_demo.py")


def _compose(config: str, *overrides: str):
    from adaptsim.launch.hydra_app import compose

    return compose(config, overrides)


@needs_demo
def test_demo_documents_are_what_the_generator_makes():
    from adaptsim.synth import Generator

    m = _make_demo()
    docs = Generator(seed=m.SEED).documents("software", n_docs=m.N_DOCS, segs_per_doc=m.SEGS_PER_DOC)
    expected = ["doc_id\tseg_id\tsource\treference"] + [f"{d.doc_id}\t{i + 1}\t{en}\t{de}"
                                                        for d in docs for i, (en, de) in enumerate(d)]
    assert (DEMO / "docs.tsv").read_text(encoding="utf-8").splitlines() == expected


@needs_demo
def test_dataset_demo_config_reads_the_documents():
    from adaptsim.data import load_documents

    cfg = _compose("run")
    assert cfg.dataset.name == "demo" and cfg.model.name == "demo"
    docs = load_documents(cfg.dataset)
    assert [len(d) for d in docs] == [15, 15, 15, 15]
    assert all(s.source and s.reference for d in docs for s in d.segments)


@needs_model
def test_demo_model_is_small_loads_and_translates_general_text():
    import torch
    from transformers import MarianMTModel, MarianTokenizer

    path = _compose("run").model.path
    files = [f for f in (DEMO / "model").iterdir() if f.is_file()]
    assert sum(f.stat().st_size for f in files) < 7_000_000
    assert not (DEMO / "model" / "last").exists()  # no optimizer state committed
    tok, model = MarianTokenizer.from_pretrained(path), MarianMTModel.from_pretrained(path).eval()
    with torch.no_grad():
        out = model.generate(**tok(["The old man sees the dog."], return_tensors="pt"), num_beams=2, max_new_tokens=30)
    assert tok.decode(out[0], skip_special_tokens=True) == "Der alte Mann sieht den Hund."
    manifest = json.loads((DEMO / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["evaluation"]["general_test"]["bleu_beam5"] >= 60


@needs_model
def test_full_adaptation_acquires_the_demo_vocabulary(tmp_path):
    """What the demo is for: fine-tuning on each correction raises one-shot recall and BLEU over no adaptation."""
    from adaptsim.loop.simulation import simulate
    from adaptsim.records import JobSummary

    scores = {m: simulate(_compose("run", f"method={m}", "progress=false", "threads=1"),
                          JobSummary(tmp_path / m, {}))["scores"]
              for m in ("none", "full")}
    assert scores["full"]["R1"] > scores["none"]["R1"] + 1
    assert scores["full"]["BLEU"] > scores["none"]["BLEU"] + 1
