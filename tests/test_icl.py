"""method=icl's retrieval (which earlier post-edits a prompt quotes) and the CXMI of that context, on constructed
streams and log-probabilities, and end to end on tiny decoder-only models (tests/tiny_causal.py)."""

import json
import math
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
                           reads_context=not encoder_decoder, named_parameters=lambda: {},
                           over_length=lambda side, text: None)  # what a TM's reader asks


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


@pytest.mark.parametrize("retrieval", ["document", "fuzzy", "both", "random"])
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


@pytest.mark.parametrize("retrieval", ["fuzzy", "random"])
def test_restoring_theta0_empties_the_memory_as_tm_does(retrieval):
    contexts = walk(icl(retrieval=retrieval, k=3), reset_at=(3,))
    assert all(step >= 3 for c in contexts[3:] for *_, step in c)
    assert [len(c) for c in contexts] == [0, 1, 2, 0, 1, 2]  # k respected, the pool the document so far


def test_an_encoder_decoder_or_a_weights_setting_that_is_no_method_is_one_line():
    with pytest.raises(UserError, match="decoder-only"):
        build(icl_config(), fake_model(encoder_decoder=True))
    with pytest.raises(UserError, match="method.weights='lora': must be a method's config: choose it with "
                                        "method@method.weights=NAME"):
        icl(weights="lora")
    with pytest.raises(UserError, match="method.retrieval"):
        icl(retrieval="bm25")


def steps_in(context):
    return [label for *_, label in context]


def test_random_retrieval_is_k_of_the_same_pool_drawn_reproducibly_in_the_order_drawn():
    """The control for fuzzy: k of the pairs revealed before the segment (fuzzy's pool at threshold 0), drawn by the
    run's seed and the segment's index, not by a generator's state: a resumed run, whose replayed steps only reveal
    their pairs, draws what the uninterrupted run drew."""
    import random

    drawn = [steps_in(c) for c in walk(icl(retrieval="random", k=2))]
    assert drawn == [steps_in(c) for c in walk(icl(retrieval="random", k=2))]
    assert drawn == [random.Random(f"1:{i}").sample(range(i), min(2, i)) for i in range(len(STREAM))]
    everything = [sorted(steps_in(c)) for c in walk(icl(retrieval="fuzzy", k=10))]
    assert [sorted(steps_in(c)) for c in walk(icl(retrieval="random", k=10))] == everything == \
        [list(range(i)) for i in range(len(STREAM))]
    assert drawn != [steps_in(c) for c in walk(icl(retrieval="random", k=2, seed=2))]  # the run's seed
    for other in ("fuzzy", "document"):
        assert drawn != [steps_in(c) for c in walk(icl(retrieval=other, k=2))]
    resumed = icl(retrieval="random", k=2)
    for i, (doc, src, ref) in enumerate(STREAM[:5]):
        resumed.revealed(src, ref, doc, i)
    assert steps_in(resumed.context(STREAM[5][1], "b")) == drawn[5] == steps_in(resumed.context(STREAM[5][1], "b"))


# an external TM (tm's reader and checks): another translation of a stream source is no leak
TM = [("Open the file now.", "Öffne jetzt die Datei."), ("Open the file.", "Öffnen Sie die Datei."),
      ("Print all pages.", "Drucke alle Seiten.")]


def with_tm(tmp_path, entries=TM, external=(), **settings):
    path = tmp_path / "tm.tsv"
    path.write_text("source\treference\n" + "".join(f"{s}\t{t}\n" for s, t in entries), encoding="utf-8")
    return icl(external={"format": "tsv", "path": str(path), **dict(external)}, **settings)


def test_an_external_tm_is_searched_alone_or_ranked_with_the_stream(tmp_path):
    alone = walk(with_tm(tmp_path, pool="external", retrieval="fuzzy", k=1), reset_at=(3,))
    assert [steps_in(c) for c in alone] == [["tm line 3"], ["tm line 2"], ["tm line 3"], ["tm line 4"],
                                            ["tm line 2"], ["tm line 4"]]  # from the first segment, never emptied
    assert alone[4] == [("Open the file now.", "Öffne jetzt die Datei.", "tm line 2")]
    both = walk(with_tm(tmp_path, pool="both", retrieval="fuzzy", k=1))
    assert steps_in(both[2]) == [0]  # "Open the files.": the stream's "Open the file." and the TM's tie: the stream's
    assert steps_in(both[4]) == ["tm line 2"]  # an exact match in the TM beats the stream's nearest
    assert steps_in(walk(with_tm(tmp_path, pool="external", retrieval="both", k=1))[4]) == ["tm line 2", 3]
    drawn = [steps_in(c) for c in walk(with_tm(tmp_path, pool="both", retrieval="random", k=4))]
    assert [len(d) for d in drawn] == [3, 4, 4, 4, 4, 4] and all(isinstance(s, str) for s in drawn[0])
    assert all(set(d) <= {"tm line 2", "tm line 3", "tm line 4", *range(i)} for i, d in enumerate(drawn))
    assert any(isinstance(s, int) for s in drawn[5]) and any(isinstance(s, str) for s in drawn[5])
    assert with_tm(tmp_path, pool="both").info()["external"]["entries"] == 3


def test_a_tm_holding_a_pair_of_the_test_stream_is_refused_or_dropped_as_tm_does(tmp_path):
    from adaptsim.data.types import Segment

    segments = [Segment(doc, str(i), src, ref) for i, (doc, src, ref) in enumerate(STREAM)]
    leaking = [*TM, STREAM[1][1:]]  # "Close the window." with its post-edit: the test pair itself
    with pytest.raises(UserError, match=r"^method.external: the TM .*tm.tsv holds 1 target of the test stream's "
                                        r"references \(.*; line 5\): each would reveal its reference"):
        with_tm(tmp_path, leaking, pool="external", retrieval="fuzzy").check_stream(segments)
    method = with_tm(tmp_path, leaking, pool="external", retrieval="fuzzy", k=1,
                     external={"on_overlap": "drop"})
    method.check_stream(segments)
    assert steps_in(walk(method)[1]) != ["tm line 5"] and method.info()["external"]["overlap"]["pairs"] == 1


def test_pool_and_tm_settings_that_contradict_each_other_are_one_line(tmp_path):
    with pytest.raises(UserError, match=r"^method.pool=external: no TM to search: set method.external.format"):
        icl(pool="external", retrieval="fuzzy")
    with pytest.raises(UserError, match=r"^method.external names the TM .*tm.tsv, but method.pool=stream does not "
                                        r"search it: set method.pool=external or both$"):
        with_tm(tmp_path)
    with pytest.raises(UserError, match=r"^method.pool=external: retrieval=document quotes the stream's own"):
        with_tm(tmp_path, pool="external")
    with pytest.raises(UserError, match=r"^method.pool='tm': choose 'stream' \| 'external' \| 'both'$"):
        icl(pool="tm")
    with pytest.raises(UserError, match=r"^method.seed=-1: must be an integer ≥ 0$"):
        icl(retrieval="random", seed=-1)


def test_the_glossary_lists_the_terms_the_quoted_post_edits_corrected():
    """A pair's terms: the post-edit's content words (lowercased, stopwords out) its machine translation lacks, as
    the post-edit writes them; the glossary: the quoted pairs' terms in prompt order, each once, before the pairs."""
    method = icl(retrieval="document", k=3, glossary=True)
    assert method.corrected("Öffne jetzt die Datei sofort.", "Öffne die Akte.") == ("Datei", "sofort")
    for step, (src, ref, mt) in enumerate([("Open the file.", "Öffne die Datei.", "Öffne die Akte."),
                                           ("Print the page.", "Drucke die Seite.", "Drucke die Seite."),
                                           ("Open it now.", "Öffne die datei jetzt sofort.", "Öffne es.")]):
        method.revealed(src, ref, "a", step, hypothesis=mt)
    context = method.context("Open the files.", "a")
    assert context[0] == ("", "Datei, sofort", "glossary") and steps_in(context[1:]) == [0, 1, 2]
    assert method.context("x", "b") == []  # nothing quoted, nothing corrected: no glossary
    plain = icl(retrieval="document", k=3)
    plain.revealed("Open the file.", "Öffne die Datei.", "a", 0, hypothesis="Öffne die Akte.")
    assert steps_in(plain.context("Open the files.", "a")) == [0]  # glossary: false, the default
    with pytest.raises(UserError, match=r"^method.glossary=true: needs the machine translation each post-edit "
                                        r"corrected, which this loop does not give"):
        method.revealed("Open the file.", "Öffne die Datei.", "a", 3)


def test_a_tm_entry_brings_no_terms_to_the_glossary(tmp_path):
    method = with_tm(tmp_path, pool="both", retrieval="fuzzy", k=2, glossary=True)
    method.revealed("Print the page.", "Drucke die Seite.", "a", 0, hypothesis="Drucke das Blatt.")
    context = method.context("Print all pages.", "a")
    assert [c[2] for c in context] == ["glossary", 0, "tm line 4"] and context[0][1] == "Seite"


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


def test_random_icl_quotes_the_same_draws_alone_in_lockstep_and_resumed(tmp_path, causal_dirs, tiny_tsv):
    """The draws are seeded by the run's seed and the segment's index: a lockstep run and a resumed one (its first
    steps replayed, nothing drawn for them) quote what the run alone quotes."""
    import random
    import shutil

    from adaptsim.cli import main

    common = [f"model.path={causal_dirs('llama')}", "dataset=tsv", f"dataset.path={tiny_tsv}", "method=icl",
              "method.k=2", "reset=never", "progress=false", "decode.beam_size=2", "decode.max_length=20"]

    def run(*overrides):
        with pytest.raises(SystemExit) as exit_:
            main(["run", *overrides, *common])
        assert exit_.value.code == 0

    def steps(out):
        return [{k: v for k, v in s.items() if not k.endswith("_s")} for s in steps_of(out)]

    alone = tmp_path / "alone"
    run(f"hydra.run.dir={alone}", "method.retrieval=random")
    run("-m", f"hydra.sweep.dir={tmp_path / 'sweep'}", "hydra.sweep.subdir=${method.retrieval}",
        "hydra/launcher=lockstep", "method.retrieval=random,document")
    cut = tmp_path / "cut"  # interrupted after 3 of 6 steps
    shutil.copytree(alone, cut)
    for name in ("steps.jsonl", "hyps.txt"):
        (cut / name).write_text("".join((cut / name).read_text().splitlines(keepends=True)[:3]))
    (cut / "summary.json").write_text(json.dumps({**json.loads((alone / "summary.json").read_text()),
                                                  "status": "interrupted"}))
    run(f"hydra.run.dir={cut}", "method.retrieval=random", "resume=true")
    assert steps(tmp_path / "sweep" / "random") == steps(alone) == steps(cut)
    for i, step in enumerate(steps(alone)):  # the draw, or its end where the prompt had to be cut
        drawn, quoted = random.Random(f"1:{i}").sample(range(i), min(2, i)), step.get("context", [])
        assert quoted == drawn[len(drawn) - len(quoted):]
    document = steps(tmp_path / "sweep" / "document")
    assert [s.get("context") for s in steps(alone)] != [s.get("context") for s in document]


def test_icl_quotes_an_external_tm_from_the_first_segment_and_refuses_one_holding_a_test_pair(
        run_adaptsim, causal_dirs, tiny_tsv, tiny_corpus, tmp_path, capsys):
    from adaptsim.cli import main

    def tm(name, entries):
        path = tmp_path / name
        path.write_text("source\treference\n" + "".join(f"{s}\t{t}\n" for s, t in entries), encoding="utf-8")
        return path

    settings = [f"model.path={causal_dirs('llama')}", "dataset=tsv", f"dataset.path={tiny_tsv}", "method=icl",
                "method.retrieval=fuzzy", "method.pool=external", "method.k=1", "method.external.format=tsv"]
    out, summary = run_adaptsim("icl-tm", *settings, f"method.external.path={tm('tm.tsv', tiny_corpus[1:4])}")
    assert all(s["context"] in (["tm line 2"], ["tm line 3"], ["tm line 4"]) for s in steps_of(out))
    external = summary["method_info"]["external"]
    assert external["entries"] == 3 and external["fingerprint"] and external["overlap"]["pairs"] == 0
    stream_pair = tiny_tsv.read_text().splitlines()[1].split("\t")[2:]
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        main(["run", f"hydra.run.dir={tmp_path / 'leak'}", "progress=false", *settings,
              f"method.external.path={tm('leak.tsv', [*tiny_corpus[1:4], stream_pair])}"])
    err = capsys.readouterr().err
    assert exit_.value.code == 1 and "method.external: the TM" in err
    assert "holds 1 target of the test stream's references" in err
    assert "Traceback" not in err


def test_icl_with_lora_trains_after_the_prompt_with_weights_with_prompt_and_resumes_to_the_same_steps(
        tmp_path, causal_dirs, tiny_tsv):
    """weights_with_prompt: the update reads the post-edit after the pairs the prompt quoted (the step's perplexity
    before it is that of the reference given the prompt, which the context's log-probabilities give), while the
    step's `logprobs` stay the pair's without context; a resumed run replays the same updates; the glossary is given
    each post-edit's machine translation by the loop."""
    import shutil

    from adaptsim.cli import main

    common = [f"model.path={causal_dirs('llama')}", "dataset=tsv", f"dataset.path={tiny_tsv}", "method=icl",
              "method@method.weights=lora", "method.weights.rank=2", "method.k=2", "reset=never", "progress=false",
              "decode.beam_size=2", "decode.max_length=20", "method.weights_with_prompt=true", "method.glossary=true"]

    def run(*overrides):
        with pytest.raises(SystemExit) as exit_:
            main(["run", *overrides, *common])
        assert exit_.value.code == 0

    alone = tmp_path / "alone"
    run(f"hydra.run.dir={alone}")
    steps = steps_of(alone)
    quoted = [s for s in steps if s.get("context")]
    assert quoted and all(s["updates"] for s in steps)
    assert any("glossary" in s["context"] for s in quoted)  # the terms the post-edits corrected, from the loop
    for s in quoted:  # the update's first forward is the reference after the prompt
        assert math.log(s["ppl_before"]) == pytest.approx(-np.mean(s["logprobs_context"]), abs=1e-4)
        assert s["logprobs"] != s["logprobs_context"]
    cut = tmp_path / "cut"  # interrupted after 3 of 6 steps, then resumed: every update replayed after its prompt
    shutil.copytree(alone, cut)
    for name in ("steps.jsonl", "hyps.txt"):
        (cut / name).write_text("".join((cut / name).read_text().splitlines(keepends=True)[:3]))
    (cut / "summary.json").write_text(json.dumps({**json.loads((alone / "summary.json").read_text()),
                                                  "status": "interrupted"}))
    run(f"hydra.run.dir={cut}", "resume=true")

    def measured(out):
        return [[s.get(k) for k in ("updates", "ppl_before", "ppl_after", "hypothesis", "context")]
                for s in steps_of(out)]
    assert measured(cut) == measured(alone)
    with pytest.raises(UserError, match="weights_with_prompt=true: the weights' method is none"):
        icl(weights_with_prompt=True)
