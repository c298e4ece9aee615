"""The embedded decoder-only demo model (data/demo/lm, scripts/make_demo_lm.py) and its config (model=demo-lm).

What method=icl relies on: a focus term whose translation an earlier post-edit of the document showed is more
often translated that way with those pairs in the prompt than without them. Loaded with transformers directly
(float32, one thread), prompted with adaptsim.models.prompt.Prompt from configs/model/demo-lm.yaml, greedy.
"""

from __future__ import annotations

import json

import pytest
import torch
from conftest import script_module

from adaptsim import DATA_DIR

LM = DATA_DIR / "demo" / "lm"


@pytest.fixture(scope="module")
def script():
    return script_module("scripts/make_demo_lm.py")


@pytest.fixture(scope="module")
def lm():
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(1)
    tok = AutoTokenizer.from_pretrained(LM)
    model = AutoModelForCausalLM.from_pretrained(LM, dtype=torch.float32).eval()
    return tok, model


@pytest.fixture(scope="module")
def prompt():
    from adaptsim.launch.hydra_app import compose
    from adaptsim.models.prompt import Prompt

    cfg = compose("run", ["model=demo-lm"])
    assert cfg.model.path == str(LM)
    return Prompt.from_config(cfg.model.prompt)


@pytest.fixture(scope="module")
def icl_k():
    """The earlier pairs method=icl quotes (configs/method/icl.yaml)."""
    from adaptsim.launch.hydra_app import compose

    return compose("run", ["model=demo-lm", "method=icl"]).method.k


@pytest.fixture(scope="module")
def stream():
    """The demo documents (data/demo/docs.tsv) with their focus terms (data/demo/manifest.json)."""
    from adaptsim.synth.generator import SynthDocument

    rows = [line.split("\t") for line in (DATA_DIR / "demo" / "docs.tsv").read_text(encoding="utf-8").splitlines()[1:]]
    pairs = {}
    for doc_id, _, source, reference in rows:
        pairs.setdefault(doc_id, []).append((source, reference))
    focus = json.loads((DATA_DIR / "demo" / "manifest.json").read_text(encoding="utf-8"))["data"]["documents"]
    return [SynthDocument(doc_id, p, focus[doc_id]["focus"]) for doc_id, p in pairs.items()]


def test_the_files_are_the_ones_the_manifest_lists():
    manifest = json.loads((LM / "manifest.json").read_text(encoding="utf-8"))
    files = sorted(f.name for f in LM.iterdir() if f.is_file() and f.name != "manifest.json")
    assert files == sorted(manifest["sha256"]), "data/demo/lm holds other files than its manifest lists"
    script = script_module("scripts/make_demo_lm.py")
    assert {f: script.sha256(LM / f) for f in files} == manifest["sha256"]
    assert manifest["model_bytes"] == sum((LM / f).stat().st_size for f in files) < 2_500_000


def test_the_config_prompt_is_the_one_the_model_was_trained_with(prompt, lm):
    manifest = json.loads((LM / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["prompt"] == {k: getattr(prompt, k) for k in manifest["prompt"]}
    assert prompt.uses_chat(lm[0]) is False
    tok = lm[0]
    ids = prompt.ids(tok, "The man sees the dog.", [("A dog sleeps.", "Ein Hund schläft.")])
    assert ids[0] == tok.bos_token_id and tok.unk_token_id not in ids  # every character of the template is known
    assert tok.decode(ids, skip_special_tokens=True) == \
        "en: A dog sleeps. de: Ein Hund schläft. en: The man sees the dog. de:"


def test_it_translates_general_text_without_context(script, lm, prompt):
    tok, model = lm
    hyp = script.greedy(model, tok, [prompt.ids(tok, "The old man sees the dog.")])
    assert hyp == ["Der alte Mann sieht den Hund."]


def test_a_term_corrected_in_an_earlier_post_edit_is_more_often_right_with_that_context(script, lm, prompt, stream,
                                                                                       icl_k):
    """The cases: a focus term in a reference whose translation one of the k post-edits before it corrected (the
    term is in that reference and not in the model's translation of it without context), k being method=icl's.
    Each is translated with and without those k pairs; the claim holds if more are right with them, by a one-sided
    sign test at 5 %."""
    from adaptsim.synth import Generator

    tok, model = lm
    g = Generator(seed=1)  # its lexicon: the German forms of a focus term
    segments = [(d, i) for d, doc in enumerate(stream) for i in range(len(doc))]
    hyps = {}
    for k in (0, icl_k):
        prompts = [prompt.ids(tok, stream[d][i][0], stream[d][max(0, i - k):i]) for d, i in segments]
        hyps[k] = dict(zip(segments, script.greedy(model, tok, prompts)))
    cases = [o for o in script.occurrences(g, stream, icl_k, hyps[0]) if o["corrected"]]
    right = {k: [script.has_term(g, o["term"], hyps[k][o["doc"], o["seg"]]) for o in cases] for k in hyps}
    gained = sum(w and not wo for w, wo in zip(right[icl_k], right[0]))
    lost = sum(wo and not w for w, wo in zip(right[icl_k], right[0]))
    p = script.sign_test(gained, lost)
    summary = (f"{len(cases)} cases: right without context {sum(right[0])}, with the {icl_k} pairs "
               f"{sum(right[icl_k])} (gained {gained}, lost {lost}, p = {p:.3f})")
    assert len(cases) >= 30 and len({o["term"] for o in cases}) >= 5, summary
    assert gained > lost and p < 0.05, summary


def test_the_demo_runs_icl_offline_with_the_models_config(run_adaptsim):
    """`adaptsim run model=demo-lm method=icl`, as the README gives it, on each demo document's first segments."""
    out, summary = run_adaptsim("demo-icl", "model=demo-lm", "method=icl", "dataset.max_segments=5")
    steps = [json.loads(line) for line in (out / "steps.jsonl").read_text().splitlines()]
    assert summary["status"] == "finished" and summary["segments"] == 4 * 5 and summary["trainable_parameters"] == 0
    for first in range(0, 20, 5):  # each document quotes its own last k = 3 post-edits
        quoted = [[j - first for j in s.get("context", [])] for s in steps[first:first + 5]]
        assert quoted == [[], [0], [0, 1], [0, 1, 2], [1, 2, 3]]
    assert all(s["hypothesis"] for s in steps)
