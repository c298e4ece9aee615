"""method=icl's retrieval (which earlier post-edits a prompt quotes) and the CXMI of that context, on constructed
streams and log-probabilities, and end to end on tiny decoder-only models (tests/tiny_causal.py)."""

import json
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

from adaptsim.errors import UserError
from adaptsim.methods import build
from adaptsim.metrics import cxmi


def fake_model(encoder_decoder: bool = False):
    """What InContext looks at of a model (nothing is trained with weights=none)."""
    return SimpleNamespace(net=SimpleNamespace(config=SimpleNamespace(model_type="marian" if encoder_decoder
                                                                      else "llama")),
                           reads_context=not encoder_decoder, named_parameters=lambda: {})


def icl_config(*overrides):
    from adaptsim.launch.hydra_app import compose

    return compose("run", ["method=icl", *overrides]).method


def icl(**settings):
    return build(OmegaConf.merge(icl_config(), settings), fake_model())


STREAM = [("a", "Open the file.", "Öffne die Datei."), ("a", "Close the window.", "Schließe das Fenster."),
          ("a", "Open the files.", "Öffne die Dateien."), ("b", "Print the page.", "Drucke die Seite."),
          ("b", "Open the file now.", "Öffne die Datei jetzt."), ("b", "Print the pages.", "Drucke die Seiten.")]


def walk(method, reset_at=()):
    """The contexts the method gives along STREAM, each pair revealed after its segment (as the loop does)."""
    contexts = []
    for i, (doc, src, ref) in enumerate(STREAM):
        if i in reset_at:
            method.start_document({})
        contexts.append(method.context(src, doc))
        method.revealed(src, ref, doc, i)
    return contexts


@pytest.mark.parametrize("retrieval", ["document", "fuzzy", "both"])
def test_no_pair_is_quoted_before_its_segment_was_post_edited(retrieval):
    for i, context in enumerate(walk(icl(retrieval=retrieval, k=5))):
        assert all(step < i for _, _, step in context)
        assert all((s, t) == STREAM[step][1:] for s, t, step in context)  # each the post-edit revealed then


def test_document_retrieval_quotes_the_documents_last_k_oldest_first():
    contexts = walk(icl(retrieval="document", k=2))
    assert [[step for *_, step in c] for c in contexts] == [[], [0], [0, 1], [], [3], [3, 4]]


def test_fuzzy_retrieval_quotes_the_most_similar_sources_best_last():
    contexts = walk(icl(retrieval="fuzzy", k=2))
    # "Open the file now." is closest to "Open the file." (0), then "Open the files." (2)
    assert [step for *_, step in contexts[4]] == [2, 0]
    assert [step for *_, step in contexts[5]][-1] == 3  # "Print the pages." ← "Print the page."
    high = walk(icl(retrieval="fuzzy", k=2, threshold=90.0))
    assert [step for *_, step in high[5]] == [3]  # only matches ≥ 90


def test_both_adds_the_fuzzy_matches_the_document_does_not_already_give():
    contexts = walk(icl(retrieval="both", k=1))
    assert [step for *_, step in contexts[4]] == [0, 3]  # the best fuzzy match, then the document's last pair
    assert [step for *_, step in contexts[5]] == [3, 4]
    assert [step for *_, step in contexts[1]] == [0]  # the best match is the document's last pair: quoted once
    assert len(walk(icl(retrieval="both", k=2))[5]) == 4


def test_restoring_theta0_empties_the_memory_as_tm_does():
    contexts = walk(icl(retrieval="fuzzy", k=3), reset_at=(3,))
    assert all(step >= 3 for c in contexts[3:] for *_, step in c)


def test_an_encoder_decoder_or_a_weights_setting_that_is_no_method_is_one_line():
    with pytest.raises(UserError, match="decoder-only"):
        build(icl_config(), fake_model(encoder_decoder=True))
    with pytest.raises(UserError, match="method.weights='lora': must be a method's config: choose it with "
                                        "method@method.weights=NAME"):
        icl(weights="lora")
    with pytest.raises(UserError, match="method.retrieval"):
        icl(retrieval="bm25")


def test_context_cxmi_is_the_papers_difference_on_one_model():
    """CXMI.sent = mean over sentences of (mean log-prob with context − without), as docmt_cxmi.py computes it; a
    step whose prompt quoted nothing counts 0 (the paper's first sentence of a document)."""
    rows = [{"prompt_tokens": 10, "logprobs": [-1.0, -2.0]},  # no context
            {"prompt_tokens": 30, "logprobs": [-1.0, -3.0, -0.5], "logprobs_context": [-0.5, -1.0, -0.5]},
            {"prompt_tokens": 40, "logprobs": [-4.0], "logprobs_context": [-5.0]}]
    values = cxmi.context_values(rows)
    assert [v.tolist() for v in values] == [[0.0, 0.0], [0.5, 2.0, 0.0], [-1.0]]
    per_sentence = [0.0, (2.5 / 3), -1.0]
    sent = cxmi.statistics("CXMI.sent", values)
    assert sent[:, 0].sum() / sent[:, 1].sum() == pytest.approx(np.mean(per_sentence))
    seg = cxmi.statistics("CXMI/seg", values)
    assert seg[:, 0].sum() / seg[:, 1].sum() == pytest.approx((0 + 2.5 - 1) / 3)
    token = cxmi.statistics("CXMI", values)
    assert token[:, 0].sum() / token[:, 1].sum() == pytest.approx(1.5 / 6)
    assert cxmi.reads_context(rows) and not cxmi.reads_context(rows[:1])


def test_context_cxmi_refuses_a_model_without_prompts():
    with pytest.raises(UserError, match="reads context"):
        cxmi.context_values([{"logprobs": [-1.0]}])


# -- icl on a tiny decoder-only model, end to end (tests/tiny_causal.py) ------------------------------------
def steps_of(out):
    return [json.loads(line) for line in (out / "steps.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("kind", ["llama", "qwen2"])  # a plain prompt and a chat template
def test_icl_quotes_the_documents_earlier_post_edits_and_records_what_the_context_gave(
        run_adaptsim, causal_dirs, tiny_tsv, kind):
    from adaptsim.models.causal import CausalModel

    out, summary = run_adaptsim(f"icl-{kind}", f"model.path={causal_dirs(kind)}", "dataset=tsv",
                                f"dataset.path={tiny_tsv}", "method=icl", "method.k=2")
    steps = steps_of(out)
    assert summary["status"] == "finished" and summary["trainable_parameters"] == 0
    assert all(d["changed_parameters"] == 0 for d in summary["per_document"])
    model = CausalModel.load(str(causal_dirs(kind)))
    for i, step in enumerate(steps):
        earlier = [j for j in range(i) if steps[j]["doc_id"] == step["doc_id"]][-2:]
        quoted = step.get("context", [])  # the document's last k, each revealed before this segment, as many as fit
        assert quoted == earlier[len(earlier) - len(quoted):]
        if len(quoted) < len(earlier):
            more = [(steps[j]["source"], steps[j]["reference"]) for j in earlier[len(earlier) - len(quoted) - 1:]]
            assert model.prompt_tokens(step["source"], more) > model.max_tokens
        pairs = [(steps[j]["source"], steps[j]["reference"]) for j in quoted]
        assert step["prompt_tokens"] == model.prompt_tokens(step["source"], pairs) <= model.max_tokens
        if quoted:  # the reference scored with the context by θ_{i−1} = θ0, on the same tokens as without
            with torch.no_grad():
                nll = model.token_nll(model.pair(step["source"], step["reference"], context=pairs))
            assert step["logprobs_context"] == pytest.approx([-v for v in nll.tolist()], abs=1e-4)
            assert len(step["logprobs_context"]) == len(step["logprobs"])
            assert step["prompt_tokens"] > model.prompt_tokens(step["source"])
    cost = summary["cost"]["prompt"]
    assert cost["context_pairs_per_segment"] == pytest.approx(sum(len(s.get("context", [])) for s in steps) / 6)
    assert summary["method_info"]["retrieval"] == "document" and summary["method_info"]["weights"] == "none"


def test_icl_with_weights_adapts_in_context_and_in_weights(run_adaptsim, causal_dirs, tiny_tsv, capsys):
    from adaptsim.cli import main

    out, summary = run_adaptsim("icl-lora", f"model.path={causal_dirs('llama')}", "dataset=tsv",
                                f"dataset.path={tiny_tsv}", "method=icl", "method@method.weights=lora",
                                "method.weights.rank=2", "method.retrieval=both")
    alone, alone_summary = run_adaptsim("lora", f"model.path={causal_dirs('llama')}", "dataset=tsv",
                                        f"dataset.path={tiny_tsv}", "method=lora", "method.rank=2")
    # the weights learn each pair as lora alone does (the update is on the pair without context): the same updates
    # and perplexities, step for step, while the hypotheses come from prompts with context
    measured = ("updates", "ppl_before", "ppl_after", "logprobs")
    assert [[s[k] for k in measured] for s in steps_of(out)] == [[s[k] for k in measured] for s in steps_of(alone)]
    assert summary["trainable_parameters"] == alone_summary["trainable_parameters"] > 0
    assert summary["method_info"]["weights_info"] == alone_summary["method_info"]
    assert all(s["updates"] for s in steps_of(out)) and any("context" in s for s in steps_of(out))
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:  # the context's CXMI needs no baseline run
        main(["cxmi", str(out)])
    report = capsys.readouterr().out
    assert exit_.value.code == 0 and "CXMI of the prompt's context" in report and "| icl |" in report


def test_cxmi_reads_a_byte_level_models_words(run_adaptsim, causal_dirs, tiny_tsv, capsys):
    """Qwen's and GPT-2's byte-level BPE writes no ▁: the report groups its pieces into words by their bytes (Ġ is the
    space) instead of failing, so the word roles of a real LLM's run are reported (it exited 1 on every one)."""
    from adaptsim.cli import main
    from adaptsim.metrics.cxmi import is_byte_level

    out, _ = run_adaptsim("icl-qwen2-words", f"model.path={causal_dirs('qwen2')}", "dataset=tsv",
                          f"dataset.path={tiny_tsv}", "method=icl", "method.k=2")
    assert all(is_byte_level(s["ref_pieces"]) for s in steps_of(out))
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        main(["cxmi", str(out)])
    captured = capsys.readouterr()
    assert exit_.value.code == 0, captured.err
    assert "CXMI of the prompt's context" in captured.out and "| icl |" in captured.out


def test_icl_on_an_encoder_decoder_is_one_line(tmp_path, tiny_model_dir, tiny_tsv, capsys):
    from adaptsim.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(["run", f"hydra.run.dir={tmp_path / 'x'}", f"model.path={tiny_model_dir}", "dataset=tsv",
              f"dataset.path={tiny_tsv}", "method=icl", "progress=false"])
    err = capsys.readouterr().err
    assert exit_.value.code == 1 and "decoder-only model" in err and "Traceback" not in err


@pytest.mark.parametrize("weights", ["bias", "lasso", "lora"])
def test_the_context_logprobs_are_the_models_whatever_the_weights_method_keeps_between_pairs(causal_dirs, weights):
    """`bias` scores the output layer's inputs its `start_pair` kept: the reference with context must be scored on its
    own, not on the pair adapted before it."""
    from adaptsim.launch.hydra_app import compose
    from adaptsim.loop.learner import Learner
    from adaptsim.models.causal import CausalModel

    cfg = compose("run", ["method=icl", f"method@method.weights={weights}"])
    model = CausalModel.load(str(causal_dirs("llama")))
    learner = Learner(model, method_cfg=cfg.method, update_cfg=cfg["update"], reset="document", seed=1)
    learner.start_document(0)
    learner.adapt(model.pair("The man sees the dog.", "Der Mann sieht den Hund."), "step 1")
    context = [("The man sees the dog.", "Der Mann sieht den Hund.")]
    batch = model.pair("My friend buys a book today.", "Mein Freund kauft heute ein Buch.", context=context)
    with torch.no_grad():
        direct = [-v for v in model.token_nll(batch).tolist()]
    assert learner.logprobs(batch) == pytest.approx(direct, abs=1e-4)


def test_icl_in_lockstep_writes_what_each_run_writes_alone_and_quotes_what_fits(tmp_path, causal_dirs, tiny_tsv):
    """k = 1 and 3, fuzzy and document (up to 6 pairs) over the whole stream: the longer prompts are cut to what the
    model's positions allow (the first pairs left out), in lockstep as alone, and no run fails for another's."""
    from adaptsim.cli import main
    from adaptsim.models.causal import CausalModel

    sweep = [f"model.path={causal_dirs('llama')}", "dataset=tsv", f"dataset.path={tiny_tsv}", "method=icl",
             "method.retrieval=both", "method.k=1,3", "reset=never", "progress=false", "decode.max_length=20"]
    for name, launcher in (("alone", "basic"), ("lockstep", "lockstep")):
        with pytest.raises(SystemExit) as exit_:
            main(["run", "-m", f"hydra.sweep.dir={tmp_path / name}", f"hydra/launcher={launcher}", *sweep])
        assert exit_.value.code == 0
    model = CausalModel.load(str(causal_dirs("llama")))
    for run, k in (("0_icl", 1), ("1_icl", 3)):
        alone, together = (steps_of(tmp_path / name / run) for name in ("alone", "lockstep"))
        assert [{k: v for k, v in s.items() if not k.endswith("_s")} for s in alone] == \
            [{k: v for k, v in s.items() if not k.endswith("_s")} for s in together]
        assert all(s["prompt_tokens"] <= model.max_tokens for s in alone)
        method, cut = icl(retrieval="both", k=k), 0
        for i, s in enumerate(alone):  # what the method chose, and the end of it that was quoted
            chosen = [step for *_, step in method.context(s["source"], s["doc_id"])]
            assert chosen[len(chosen) - len(s.get("context", [])):] == s.get("context", [])
            cut += len(chosen) > len(s.get("context", []))
            method.revealed(s["source"], s["reference"], s["doc_id"], i)
        assert (cut > 0) == (k == 3)  # k=3 of both would quote up to 6 pairs: more than 64 positions hold


def test_every_method_can_be_the_weights_method_or_says_why_in_one_line(causal_dirs):
    """Composed as a Hydra default, the inner method's interpolations (fixed's list: ${model.name}, tm's languages)
    resolve against the run's config."""
    from adaptsim import CONFIG_DIR
    from adaptsim.models.causal import CausalModel

    for name in sorted(p.stem for p in (CONFIG_DIR / "method").glob("*.yaml") if p.stem != "icl"):
        cfg = icl_config(f"method@method.weights={name}", f"model.path={causal_dirs('llama')}")
        try:
            method = build(cfg, CausalModel.load(str(causal_dirs("llama"))))
        except UserError as e:  # fixed: no tensor list chosen for this model
            assert name == "fixed" and str(e).startswith("method.weights.") or "fixed_lists" in str(e), (name, e)
            continue
        assert method.inner.name == name and method.info()["weights"] == name
