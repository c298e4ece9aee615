"""Decoder-only language models (adaptsim/models/causal.py) on tiny models of the GPT-2, Llama, Qwen2 and Gemma families
built offline (tests/tiny_causal.py: two prompted plain, two through a chat template): what each adapter reports,
that the labels mask exactly the prompt, that context pairs go into the prompt in order, that translating is what
transformers' generate gives, the methods through the whole `run` command (what each trains, θ0 at every document
start), the simulated translator and `serve`, and that a seq2seq model refuses context in one line."""

from __future__ import annotations

import dataclasses
import json
import math
import re

import pytest
import torch
from omegaconf import OmegaConf
from tiny_causal import KINDS, build_net

from adaptsim import CONFIG_DIR, methods
from adaptsim.errors import UserError
from adaptsim.loop.learner import share
from adaptsim.models import Seq2SeqModel, load_model
from adaptsim.models.causal import CausalModel
from adaptsim.models.prompt import Prompt, model_config

SOURCE, REFERENCE = "The man sees the dog.", "Der Mann sieht den Hund."
CONTEXT = [("The woman likes the cat.", "Die Frau mag die Katze."),
           ("My friend buys a book.", "Mein Freund kauft ein Buch.")]


def load(causal_dirs, kind) -> CausalModel:
    return CausalModel.load(str(causal_dirs(kind)))


def method_cfg(name: str, **overrides):
    return OmegaConf.merge(OmegaConf.load(CONFIG_DIR / "method" / f"{name}.yaml"), overrides)


# -- the architectures --------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", [*KINDS, "gemma2", "mistral", "qwen3", "gemma3_text"])
def test_adapter_reports_blocks_embeddings_and_output_layer(causal_dirs, kind):
    if kind in KINDS:
        model = load(causal_dirs, kind)
    else:  # the other registered layouts, random, on Llama's tokenizer
        llama = load(causal_dirs, "llama")
        model = CausalModel(random_net(kind, len(llama.tokenizer)), llama.tokenizer)
    arch, net = model.arch, model.net
    assert arch.decoder_only and arch.encoder_layers == [] and len(arch.decoder_layers) == 2
    assert arch.output_layer is net.get_output_embeddings() and arch.constants == []
    named = model.named_parameters()
    source = next(n for n, roles in arch.embeddings.items() if "source" in roles)
    assert named[source] is net.get_input_embeddings().weight and "target" in arch.embeddings[source]
    tied = net.get_output_embeddings().weight is net.get_input_embeddings().weight
    assert (arch.embeddings[source] == {"source", "target", "output"}) == tied
    assert len(arch.embeddings) == 1 + (not tied) and tied == (kind not in ("llama", "mistral", "qwen3"))
    blocks = {id(p) for layer in arch.decoder_layers for p in layer.parameters()}
    assert not blocks & {id(named[n]) for n in arch.embeddings}
    assert model.max_tokens == 64  # half the position table: each side of a pair, prompt included


def random_net(kind, vocab):
    import transformers

    config_cls, net_cls = {"gemma2": ("Gemma2Config", "Gemma2ForCausalLM"),
                           "mistral": ("MistralConfig", "MistralForCausalLM"),
                           "qwen3": ("Qwen3Config", "Qwen3ForCausalLM"),
                           "gemma3_text": ("Gemma3TextConfig", "Gemma3ForCausalLM")}[kind]
    torch.manual_seed(1)
    config = getattr(transformers, config_cls)(vocab_size=vocab, hidden_size=32, intermediate_size=64,
                                               num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
                                               head_dim=16, max_position_embeddings=128)
    return getattr(transformers, net_cls)(config)


def test_lora_auto_adapts_the_attention_and_feed_forward_maps_gpt2s_conv1d_included(causal_dirs):
    from transformers.pytorch_utils import Conv1D

    for kind, per_block in (("gpt2", 4), ("llama", 7)):
        model = load(causal_dirs, kind)
        batch = model.pair(SOURCE, REFERENCE)
        with torch.no_grad():
            before = model.token_nll(batch)
        lora = methods.build(method_cfg("lora"), model)
        assert len(lora.modules) == 2 * per_block
        assert all(isinstance(model.net.get_submodule(n), (Conv1D, torch.nn.Linear)) for n in lora.modules)
        assert model.arch.output_layer not in [model.net.get_submodule(n) for n in lora.modules]
        with torch.no_grad():
            assert torch.equal(model.token_nll(batch), before)  # B = 0: the model starts as θ0


# -- a pair: the prompt, then the target; the loss on the target only -------------------------------------
@pytest.mark.parametrize("kind", KINDS)
def test_labels_mask_exactly_the_prompt_and_the_loss_is_over_the_target(causal_dirs, kind):
    model = load(causal_dirs, kind)
    tok, prompt = model.tokenizer, model.prompt
    prompt_ids = prompt.ids(tok, SOURCE)
    target = prompt.target_ids(tok, REFERENCE, model.end)
    batch = model.pair(SOURCE, REFERENCE)
    ids, labels = batch["input_ids"][0].tolist(), batch["labels"][0].tolist()
    assert ids == prompt_ids + target and target[-1] == model.end
    assert labels == [-100] * len(prompt_ids) + target
    assert tok.decode(target[:-1]).strip() == REFERENCE
    assert model.tokenizer.convert_ids_to_tokens(target) == model.label_pieces(REFERENCE)
    with torch.no_grad():
        nll = model.token_nll(batch)
        logp = torch.log_softmax(model.net(input_ids=batch["input_ids"]).logits[0], -1)  # every position's
        by_hand = torch.stack([-logp[len(prompt_ids) + j - 1, t] for j, t in enumerate(target)])
        assert len(nll) == len(target) == len(model.label_pieces(REFERENCE))
        torch.testing.assert_close(nll, by_hand, rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(model.loss(batch), model.net(**batch).loss, rtol=1e-5, atol=1e-6)  # transformers'


@pytest.mark.parametrize("kind", [*KINDS, "gemma2"])
def test_the_token_nll_from_cached_output_inputs_is_the_models(causal_dirs, kind):
    """`bias` trains from the output layer's inputs computed once per pair: that must be the forward's loss exactly
    (Gemma 2 soft-caps the logits after the output layer)."""
    if kind == "gemma2":
        llama = load(causal_dirs, "llama")
        model = CausalModel(random_net(kind, len(llama.tokenizer)), llama.tokenizer)
        assert model.net.config.final_logit_softcapping
    else:
        model = load(causal_dirs, kind)
    model.add_output_bias().data.normal_()
    batch = model.pair(SOURCE, REFERENCE, CONTEXT)
    with torch.no_grad():
        nll = model.token_nll(batch)
        assert torch.equal(model.nll_from_output_inputs(model.output_inputs(batch), batch["labels"]), nll)
        assert len(nll) == len(model.label_pieces(REFERENCE))


@pytest.mark.parametrize("kind", ["llama", "qwen2"])  # a plain prompt and a chat template
def test_context_pairs_appear_in_the_prompt_in_order_and_change_its_ids(causal_dirs, kind):
    model = load(causal_dirs, kind)
    tok = model.tokenizer
    alone, quoted = model.pair(SOURCE, REFERENCE), model.pair(SOURCE, REFERENCE, CONTEXT)
    text = tok.decode(quoted["input_ids"][0][quoted["labels"][0] == -100])
    at = [text.index(s) for s in (CONTEXT[0][0], CONTEXT[0][1], CONTEXT[1][0], CONTEXT[1][1], SOURCE)]
    assert at == sorted(at), text
    assert "en: The woman likes the cat.\nde: Die Frau mag die Katze.\nen: My friend" in text
    assert model.prompt_tokens(SOURCE, CONTEXT) > model.prompt_tokens(SOURCE) == int((alone["labels"] == -100).sum())
    target = alone["labels"][0][alone["labels"][0] != -100]
    assert torch.equal(quoted["labels"][0][quoted["labels"][0] != -100], target)  # the same target, only later
    with torch.no_grad():
        assert not torch.equal(model.token_nll(quoted), model.token_nll(alone))
    assert model.chat == (kind == "qwen2") and ("<|im_start|>" in text) == model.chat


# -- translating ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("beams", [1, 4])
def test_translate_returns_what_generate_returns(causal_dirs, tiny_corpus, kind, beams):
    model = load(causal_dirs, kind)
    tok, net = model.tokenizer, model.net
    newlines = {i for i in range(len(tok)) if "\n" in tok.decode([i])}  # prompt.stop: line (the default)
    ends = sorted({model.end, net.config.eos_token_id} | newlines)
    for source, _ in tiny_corpus[:4]:
        for context in ((), CONTEXT[:1]):
            ids = torch.tensor([model.prompt.ids(tok, source, context)])
            out = net.generate(input_ids=ids, attention_mask=torch.ones_like(ids), num_beams=beams, max_new_tokens=20,
                               do_sample=False, early_stopping=True, eos_token_id=ends,
                               pad_token_id=model.end)[0, ids.shape[1]:].tolist()
            end = next((j for j, t in enumerate(out) if t in ends), len(out))
            hyp = model.translate(source, beam_size=beams, max_length=20, context=context)
            assert hyp.text == tok.decode(out[:end], skip_special_tokens=True).strip()
            assert hyp.pieces == tok.convert_ids_to_tokens(out[:end]) and hyp.cut == (end == len(out))
            if beams == 1:  # greedy: stopping at a newline only saves the tokens after it
                long = net.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=40,
                                    do_sample=False, eos_token_id=model.end, pad_token_id=model.end)
                assert tok.decode(long[0, ids.shape[1]:], skip_special_tokens=True).split("\n")[0].strip() == hyp.text


def test_a_plain_prompts_hypothesis_ends_at_the_first_newline(causal_dirs):
    model = load(causal_dirs, "gpt2")
    newline = model.tokenizer.convert_tokens_to_ids("Ċ")
    body = model._target_body("Der Mann sieht den Hund.")
    assert newline in model._stops and model.end in model._ends and newline not in model._ends
    hyp = model._hypothesis(body + [newline] + model._target_body("en: The cat."))
    assert hyp == ("Der Mann sieht den Hund.", model.tokenizer.convert_ids_to_tokens(body), False, False)
    assert model._hypothesis(body).cut and model._hypothesis(body + [model.end]).text == "Der Mann sieht den Hund."
    chat = load(causal_dirs, "qwen2")  # a chat reply ends at its first line too (prompt.stop: line), or only at its end
    assert chat._hypothesis(body + [newline] + body).text == "Der Mann sieht den Hund."
    assert with_prompt(chat, stop="end")._hypothesis(body + [newline]).cut


def with_prompt(model: CausalModel, **changes) -> CausalModel:
    """The model (its network and tokenizer) asked with its prompt changed."""
    return CausalModel(model.net, model.tokenizer, prompt=dataclasses.replace(model.prompt, **changes))


class Force:
    """A logits processor that makes generate write `ids` after a prompt of `start` tokens, whatever the model. The
    other beams of a beam search go on with other tokens, never with an end token (`ends`), so they never finish."""

    def __init__(self, ids: list[int], start: int, ends):
        self.ids, self.start, self.ends = ids, start, list(ends)

    def __call__(self, input_ids, scores):
        forced = torch.full_like(scores, -1e9)
        forced[:, self.ends] = -2e9
        forced[:, self.ids[min(input_ids.shape[1] - self.start, len(self.ids) - 1)]] = 0.0
        return forced


def forcing(monkeypatch, model: CausalModel, reply: str) -> None:
    """Every generate of `model` writes `reply`, then the end token (the search itself runs as ever)."""
    from transformers import LogitsProcessorList

    ids, generate = model._target_body(reply) + [model.end], model.net.generate

    def forced(*args, logits_processor, **kwargs):
        force = Force(ids, kwargs["input_ids"].shape[1], model._ends)
        return generate(*args, logits_processor=LogitsProcessorList([*logits_processor, force]), **kwargs)
    monkeypatch.setattr(model.net, "generate", forced)


@pytest.mark.parametrize("kind", ["qwen2", "gemma", "gpt2"])  # chat byte-level, chat sentencepiece, plain
@pytest.mark.parametrize("beams", [1, 3])
def test_a_reply_ends_at_its_first_line_or_at_the_end_token_as_prompt_stop_says(causal_dirs, monkeypatch, kind, beams):
    """An instruct model's note after its translation is no part of the hypothesis under `stop: line`; under `end` the
    whole reply is."""
    reply = "Übersetzung\nNote: a word."
    for stop in ("line", "end"):
        model = with_prompt(load(causal_dirs, kind), stop=stop)
        forcing(monkeypatch, model, reply)
        hyp = model.translate(SOURCE, beam_size=beams, max_length=30, context=CONTEXT[:1])
        assert hyp.text == ("Übersetzung" if stop == "line" else reply) and not hyp.cut, (stop, hyp)
        assert model.tokenizer.convert_tokens_to_string(hyp.pieces).strip() == hyp.text


@pytest.mark.parametrize("kind", ["qwen2", "gpt2"])
def test_a_reasoning_block_is_not_the_hypothesis(causal_dirs, monkeypatch, kind):
    """A thinking model's reply opens with its reasoning: under `stop: end` the hypothesis is the reply after the
    block; under `stop: line` the line's end comes inside the block, so the hypothesis is empty and flagged as
    reasoning only (counted in summary.json), not '<think>'."""
    reply = "<think>\nThe user wants German.\n</think>\n\nÜbersetzung"
    for stop, text, reasoning in (("end", "Übersetzung", False), ("line", "", True)):
        model = with_prompt(load(causal_dirs, kind), stop=stop)
        forcing(monkeypatch, model, reply)
        hyp = model.translate(SOURCE, beam_size=2, max_length=100)
        assert (hyp.text, hyp.reasoning) == (text, reasoning), (stop, hyp)
        assert model.tokenizer.convert_tokens_to_string(hyp.pieces).strip() == hyp.text


def test_empty_and_reasoning_only_hypotheses_are_counted_and_warned(run_adaptsim, causal_dirs, tiny_tsv, monkeypatch):
    from adaptsim.models import causal

    hypothesis = causal.CausalModel._hypothesis

    def replies(self, generated):  # the first two replies of reasoning only, the third empty
        translation = hypothesis(self, generated)
        replies.n += 1
        return translation._replace(text="", pieces=[], reasoning=replies.n <= 2) if replies.n <= 3 else translation

    replies.n = 0
    monkeypatch.setattr(causal.CausalModel, "_hypothesis", replies)
    out, summary = run_adaptsim("empty", f"model.path={causal_dirs('qwen2')}", "dataset=tsv",
                                f"dataset.path={tiny_tsv}", "method=none")
    assert summary["empty_hypotheses"] == {"empty": 1, "reasoning_only": 2}
    said = f"3 of {summary['segments']} hypotheses are empty (2 replies of reasoning only"
    assert said in (out / "adaptsim.log").read_text()


def test_the_end_token_is_the_chat_templates_end_of_turn_or_the_end_of_sequence(causal_dirs):
    ends = {kind: load(causal_dirs, kind) for kind in KINDS}
    assert {k: m.tokenizer.convert_ids_to_tokens(m.end) for k, m in ends.items()} == {
        "gpt2": "<|endoftext|>", "llama": "</s>", "qwen2": "<|im_end|>", "gemma": "<end_of_turn>"}


def test_the_prompt_budget_leaves_out_pairs_from_the_front_and_refuses_a_source_alone_over_it(causal_dirs,
                                                                                              monkeypatch):
    """`model.prompt.max_tokens` (at most half the positions) bounds the prompt: the fewest first pairs are left out for
    it to fit; a prompt over it is refused in one line naming it, before the network computes anything."""
    model = load(causal_dirs, "llama")
    monkeypatch.setattr(model.net, "forward", lambda *a, **k: pytest.fail("the network ran"))
    context = CONTEXT * 3
    lengths = [model.prompt_tokens(SOURCE, context[n:]) for n in range(len(context) + 1)]  # n first pairs left out
    assert lengths == sorted(lengths, reverse=True) and lengths[0] > model.max_tokens == 64
    assert model.fitting(SOURCE, context) == next(n for n, tokens in enumerate(lengths) if tokens <= 64)
    assert with_prompt(model, max_tokens=10**6).max_tokens == 64  # half the position table
    budget = with_prompt(model, max_tokens=lengths[4])  # two pairs fit exactly
    assert budget.max_tokens == lengths[4] and budget.fitting(SOURCE, context) == 4
    assert with_prompt(model, max_tokens=lengths[4] - 1).fitting(SOURCE, context) == 5
    assert budget.fitting(SOURCE, context[4:]) == 0 and model.fitting(SOURCE, CONTEXT[:1]) == 0
    line = rf"^model.prompt.max_tokens={lengths[4]}: the prompt takes {lengths[3]} tokens, more than its budget of " \
           rf"{lengths[4]} \(at most half the model's 128 positions\); quote fewer context pairs \(method.k\)$"
    for call in (lambda: budget.translate(SOURCE, context=context[3:]),
                 lambda: budget.pair(SOURCE, REFERENCE, context[3:]),
                 lambda: budget.completions(SOURCE, context=context[3:]).propose("Der ")):
        with pytest.raises(UserError, match=line):
            call()
    alone = with_prompt(model, max_tokens=lengths[-1] - 1)  # the source's prompt alone is over it
    line = rf"^model.prompt.max_tokens={lengths[-1] - 1}: the prompt takes {lengths[-1]} tokens, .*; the source " \
           r"alone is over it: raise it \(a budget never leaves a segment out of the test set\)$"
    for call in (lambda: alone.fitting(SOURCE, context), lambda: alone.translate(SOURCE),
                 lambda: alone.pair(SOURCE, REFERENCE)):
        with pytest.raises(UserError, match=line):
            call()
    with pytest.raises(UserError, match=r"more than the model's 128 positions"):  # the pair's whole length
        model.pair(SOURCE, "Der Mann sieht den Hund. " * 20)


def test_the_length_check_names_the_bound_and_measures_a_reference_by_its_own_tokens(causal_dirs, tmp_path):
    """A reference is measured by its own tokens, not as a prompt around it, so a budget below its prompt's length
    does not refuse it; a source whose bare prompt is over the budget is refused naming model.prompt.max_tokens, also
    with on_too_long=skip (a budget never changes the test set); over half the positions a skip may leave it out."""
    from adaptsim.data import Dataset, Document, Segment, check_lengths

    model = load(causal_dirs, "llama")
    reference = "Der Mann sieht den Hund, und der Hund sieht den Mann."
    prompt = model.count_tokens(SOURCE)
    budget = with_prompt(model, max_tokens=prompt)
    assert model.count_tokens(reference) > prompt > len(model.pieces(reference))  # as a prompt it would be over
    assert budget.over_length("source", SOURCE) is None and budget.over_length("reference", reference) is None
    tight = with_prompt(model, max_tokens=prompt - 1)
    assert tight.over_length("source", SOURCE) == (prompt, prompt - 1, "model.prompt.max_tokens, the prompt's budget,",
                                                   False)
    long = "Der Mann sieht den Hund. " * 20
    assert model.over_length("reference", long) == (len(model.pieces(long)) + 1, 64, "half the model's 128 positions",
                                                     True)
    docs = Dataset([Document("d", [Segment("d", "1", SOURCE, reference, origin="d.tsv:2")])])
    with pytest.raises(UserError, match=rf"^d.tsv:2: source has {prompt} tokens, more than model.prompt.max_tokens, "
                                        rf"the prompt's budget, \({prompt - 1}\); raise it"):
        check_lengths(docs, {"format": "tsv", "on_too_long": "skip"}, tight.over_length)


def test_icl_records_how_many_pairs_the_prompt_budget_left_out(run_adaptsim, causal_dirs, tiny_tsv):
    """A run whose budget holds one earlier pair of the document but not two: k = 2 quotes the last one, steps.jsonl
    says that one was left out (`dropped_pairs`, where any was), the one left out would not have fitted, and the summary
    counts them."""
    model = load(causal_dirs, "llama")
    rows = [line.split("\t") for line in tiny_tsv.read_text(encoding="utf-8").splitlines()[1:]]
    docs = [[(r[2], r[3]) for r in rows if r[0] == doc] for doc in dict.fromkeys(r[0] for r in rows)]
    budget = max(model.prompt_tokens(doc[j][0], doc[j - 1:j]) for doc in docs for j in range(1, len(doc)))
    out, summary = run_adaptsim("budget", f"model.path={causal_dirs('llama')}", "dataset=tsv",
                                f"dataset.path={tiny_tsv}", "method=icl", "method.k=2", "method.retrieval=document",
                                f"model.prompt.max_tokens={budget}")
    steps = [json.loads(line) for line in (out / "steps.jsonl").read_text().splitlines()]
    dropped = 0
    for s in steps:
        pair = docs[0 if s["doc_id"] == rows[0][0] else 1]
        j = [src for src, _ in pair].index(s["source"])
        quoted, left_out = len(s.get("context", [])), s.get("dropped_pairs", 0)
        assert s["prompt_tokens"] <= budget and quoted + left_out == min(2, j) and quoted == min(1, j), s
        if left_out:  # the pair before the first quoted one did not fit
            assert model.prompt_tokens(s["source"], pair[j - quoted - 1:j]) > budget
        dropped += left_out
    assert dropped == 2 and summary["cost"]["prompt"]["dropped_pairs"] == dropped


def test_lockstep_clones_translate_and_score_as_the_model(causal_dirs):
    model = load(causal_dirs, "qwen2")
    clone = share(model, {id(p) for p in model.net.parameters()})
    assert isinstance(clone, CausalModel) and clone.prompt == model.prompt and clone.net is not model.net
    batch = model.pair(SOURCE, REFERENCE)
    with torch.no_grad():
        assert torch.equal(clone.token_nll(batch), model.token_nll(batch))
    assert model.translate_together([model, clone], SOURCE, beam_size=2, max_length=20) == \
        [model.translate(SOURCE, beam_size=2, max_length=20)] * 2


# -- a prompt's keys and values, kept from translating for scoring with context ------------------------------------
def reading(model: CausalModel) -> list[int]:
    """The number of ids each forward of the model's network reads, from now on."""
    seen = []
    model.net.register_forward_pre_hook(lambda _m, _a, kwargs: seen.append(kwargs["input_ids"].shape[1]),
                                        with_kwargs=True)
    return seen


@pytest.mark.parametrize("kind", ["qwen2", "gpt2", "llama"])  # chat, absolute positions, plain
@pytest.mark.parametrize("beams", [1, 4])
def test_scoring_with_context_reuses_the_prompts_keys_and_values_and_gives_the_same_log_probabilities(
        causal_dirs, kind, beams):
    """After translating with context, the reference scored with that context reads only the prompt's last token and
    the target, and its log-probabilities are the whole forward's (float32, within 1e-5); the same again, and not
    where a gradient is wanted, for another prompt, or once a weight or a hook's tensor has changed."""
    model, fresh = load(causal_dirs, kind), load(causal_dirs, kind)
    batch, alone = model.pair(SOURCE, REFERENCE, CONTEXT[:1]), model.pair(SOURCE, REFERENCE)
    whole, target = batch["input_ids"].shape[1], int((batch["labels"] != -100).sum())
    seen = reading(model)
    model.translate(SOURCE, beam_size=beams, max_length=20, context=CONTEXT[:1])
    with torch.no_grad():
        seen.clear()
        reused, again = model.token_nll(batch), model.token_nll(batch)
        assert seen == [target + 1] * 2
        torch.testing.assert_close(reused, fresh.token_nll(batch), rtol=0, atol=1e-5)
        assert torch.equal(reused, again)
        model.token_nll(alone)  # another prompt: the whole sequence
    assert seen[-1] == alone["input_ids"].shape[1]
    with torch.enable_grad():
        model.token_nll(batch)
    assert seen[-1] == whole
    layer = model.arch.decoder_layers[0]
    shift = torch.zeros(model.net.config.hidden_size)
    layer.register_forward_hook(lambda _m, _i, out: (out[0] + shift, *out[1:]) if isinstance(out, tuple) else
                                out + shift)

    def translate():
        model.translate(SOURCE, beam_size=beams, max_length=20, context=CONTEXT[:1])
    translate()  # kept with the hook
    for change, reread in ((lambda: None, False), (lambda: shift.add_(0.1), True), (translate, False),
                           (lambda: model.net.get_input_embeddings().weight.mul_(1.01), True)):
        with torch.no_grad():
            change()
            seen.clear()
            model.token_nll(batch)
        assert seen == [whole if reread else target + 1], seen


def test_the_context_logprobs_of_an_icl_learner_reuse_the_prompt(causal_dirs):
    """What the loop records as `logprobs_context` (the learner's logprobs of the pair with context, right after
    translating with it) reads the target only, and rounds to the whole forward's values."""
    from adaptsim.launch.hydra_app import compose
    from adaptsim.loop.learner import Learner

    cfg = compose("run", ["method=icl"])
    model, fresh = load(causal_dirs, "qwen2"), load(causal_dirs, "qwen2")
    learner = Learner(model, method_cfg=cfg.method, update_cfg=cfg["update"], reset="document", seed=1)
    batch = model.pair(SOURCE, REFERENCE, CONTEXT[:1])
    seen = reading(model)
    model.translate(SOURCE, beam_size=2, max_length=20, context=CONTEXT[:1])
    seen.clear()
    reused = learner.logprobs(batch)
    assert seen == [int((batch["labels"] != -100).sum()) + 1]
    with torch.no_grad():
        assert reused == pytest.approx([-v for v in fresh.token_nll(batch).tolist()], abs=2e-5)


# -- lockstep's runs of one function: each prompt once, or all in one generate ------------------------------------
def searches(models: list[CausalModel]) -> list[tuple[int, int]]:
    """(clone, prompts) of every generate the clones' networks run, from now on."""
    calls = []
    for k, model in enumerate(models):
        def counted(*args, generate=model.net.generate, k=k, **kwargs):
            calls.append((k, kwargs["input_ids"].shape[0]))
            return generate(*args, **kwargs)
        model.net.generate = counted
    return calls


@pytest.mark.parametrize("kind", ["qwen2", "llama", "gpt2"])  # chat, plain, absolute positions
@pytest.mark.parametrize("beams", [1, 4])
def test_lockstep_runs_of_the_same_weights_translate_their_prompts_in_one_generate_as_one_at_a_time(
        causal_dirs, kind, beams):
    """Four clones that share every tensor (icl without a weights method), three distinct prompts: with
    `model.prompt.batch` one generate over the three, left-padded, and each hypothesis (its token ids) the one its
    prompt gives alone; each clone keeps its prompt's keys and values from the batch, and scores its reference after
    it as the whole forward does. Without batch, one search per distinct prompt; a clone with a hook of its own
    (bias) searches apart."""
    model = with_prompt(load(causal_dirs, kind), batch=True)
    clones = [share(model) for _ in range(4)]
    contexts = [(), CONTEXT[:1], CONTEXT[1:], CONTEXT[:1]]
    decode = dict(beam_size=beams, max_length=20)
    alone = [model.translate(SOURCE, context=c, **decode) for c in contexts]
    calls = searches(clones)
    found = model.translate_runs(clones, SOURCE, contexts, **decode)
    assert [hyp for hyp, _ in found] == alone and calls == [(0, 3)]
    ids = model.tokenizer.convert_tokens_to_ids
    assert [ids(hyp.pieces) for hyp, _ in found] == [ids(hyp.pieces) for hyp in alone]
    assert len({seconds for _, seconds in found}) == 1  # each run's share of the one search
    with torch.no_grad():
        for clone, context in zip(clones[1:], contexts[1:]):
            batch = clone.pair(SOURCE, REFERENCE, context)
            seen = reading(clone)
            torch.testing.assert_close(clone.token_nll(batch), model.token_nll(batch), rtol=0, atol=1e-5)
            assert seen == [int((batch["labels"] != -100).sum()) + 1]
    assert clones[0]._kept is None  # no context: nothing kept
    clones = [share(model) for _ in range(4)]  # (new ones: `reading` hooked those)
    calls = searches(clones)
    clones[3].add_output_bias()  # (zero: the same translations) its own function now
    assert [hyp for hyp, _ in model.translate_runs(clones, SOURCE, contexts, **decode)] == alone
    assert sorted(calls) == [(0, 3), (3, 1)]
    calls.clear()
    model.prompt = dataclasses.replace(model.prompt, batch=False)  # the clones share their base's prompt
    assert [hyp for hyp, _ in model.translate_runs(clones[:3], SOURCE, contexts[:3], **decode)] == alone[:3]
    assert calls == [(0, 1)] * 3


def test_a_lockstep_sweep_with_batched_prompts_writes_the_hypotheses_of_its_runs_alone(tmp_path, causal_dirs,
                                                                                       tiny_tsv):
    """icl with k = 1, 2 and 3 over the stream, all on θ0's weights, in lockstep with `model.prompt.batch=true`:
    every run finishes with the hypotheses and context it has alone, and the context's log-probabilities within
    1e-4."""
    from adaptsim.cli import main

    sweep = [f"model.path={causal_dirs('llama')}", "dataset=tsv", f"dataset.path={tiny_tsv}", "method=icl",
             "method.k=1,2,3", "method.retrieval=both", "reset=never", "model.prompt.batch=true", "progress=false",
             "decode.max_length=20"]
    for name, launcher in (("alone", "basic"), ("lockstep", "lockstep")):
        with pytest.raises(SystemExit) as exit_:
            main(["run", "-m", f"hydra.sweep.dir={tmp_path / name}", f"hydra/launcher={launcher}", *sweep])
        assert exit_.value.code == 0
    runs = sorted(p.name for p in (tmp_path / "alone").iterdir() if (p / "steps.jsonl").exists())
    assert len(runs) == 3
    for run in runs:
        alone, together = ([json.loads(line) for line in (tmp_path / name / run / "steps.jsonl").open()]
                           for name in ("alone", "lockstep"))
        for a, b in zip(alone, together, strict=True):
            assert (a["hypothesis"], a["pieces"], a.get("context")) == (b["hypothesis"], b["pieces"], b.get("context"))
            assert a.get("logprobs_context", []) == pytest.approx(b.get("logprobs_context", []), abs=1e-4)


# -- loading ----------------------------------------------------------------------------------------------
def test_load_model_chooses_the_class_from_the_checkpoint(causal_dirs, tiny_model_dir):
    cfg = model_config("demo")
    cfg.path = str(causal_dirs("gemma"))
    assert isinstance(load_model(cfg), CausalModel)
    cfg.path = str(tiny_model_dir)
    assert isinstance(load_model(cfg), Seq2SeqModel)
    cfg.path, cfg.languages.target_token = str(causal_dirs("gemma")), "de_DE"
    with pytest.raises(UserError, match="is a decoder-only model: it is told the languages by its prompt"):
        load_model(cfg)


def test_model_dtype_loads_the_weights_as_set_and_the_whole_loop_runs_on_bf16_weights(causal_dirs, run_adaptsim,
                                                                                     tiny_tsv, tiny_model_dir):
    """`model.dtype=bfloat16` forced on a CPU: every weight is bf16, the model translates and scores (in float32 from
    its bf16 logits), and a whole icl run finishes; auto on a CPU is float32; an encoder-decoder refuses anything but
    float32 in one line, a wrong value is refused by its rule."""
    cfg = model_config("demo-lm")
    cfg.path, cfg.dtype = str(causal_dirs("llama")), "bfloat16"
    model = load_model(cfg)
    assert {p.dtype for p in model.net.parameters()} == {torch.bfloat16}
    assert model.translate(SOURCE, beam_size=2, max_length=20, context=CONTEXT[:1]).pieces
    with torch.no_grad():
        nll = model.token_nll(model.pair(SOURCE, REFERENCE, CONTEXT[:1]))
    assert nll.dtype == torch.float32 and nll.isfinite().all()
    cfg.dtype = "auto"
    assert {p.dtype for p in load_model(cfg).net.parameters()} == {torch.float32}
    _, summary = run_adaptsim("bf16", f"model.path={causal_dirs('llama')}", "model.dtype=bfloat16", "dataset=tsv",
                              f"dataset.path={tiny_tsv}", "method=icl", "method.k=1")
    assert summary["status"] == "finished" and summary["segments"] == 6
    for path, dtype, line in ((tiny_model_dir, "bfloat16", "bfloat16: an encoder-decoder model loads float32 ("),
                              (causal_dirs("llama"), "half", "'half': choose 'auto' | 'float32' | 'bfloat16'")):
        cfg.path, cfg.dtype = str(path), dtype
        with pytest.raises(UserError, match="^" + re.escape(f"model.dtype={line}")):
            load_model(cfg)


def test_model_dtype_auto_is_the_stored_dtype_on_a_gpu_and_float32_on_a_cpu(causal_dirs, tmp_path):
    """The resolution itself, for cuda without a GPU: the safetensors header says what the file stores (before
    config.json, which may say otherwise), then config.json, then float32; a hub name is left to transformers."""
    import shutil

    from adaptsim.models.base import weights_dtype

    stored = tmp_path / "bf16"
    model = load(causal_dirs, "llama")
    model.net.to(torch.bfloat16).save_pretrained(str(stored))
    config = json.loads((stored / "config.json").read_text())
    (stored / "config.json").write_text(json.dumps(config | {"dtype": "float32"}))  # what data/demo/lm's says
    assert weights_dtype("auto", "cuda", str(stored)) == weights_dtype("auto", "cuda:1", stored) == torch.bfloat16
    assert weights_dtype("auto", "cpu", str(stored)) == torch.float32
    assert weights_dtype("float16", "cuda", str(stored)) == weights_dtype("float16", "cpu", "x/y") == torch.float16
    assert weights_dtype("float32", "cuda", str(stored)) == torch.float32
    named = tmp_path / "named"  # no weights file to read: config.json says
    named.mkdir()
    shutil.copy(stored / "config.json", named / "config.json")
    (named / "config.json").write_text(json.dumps(config | {"dtype": "float16"}))
    assert weights_dtype("auto", "cuda", str(named)) == torch.float16
    (named / "config.json").write_text(json.dumps({k: v for k, v in config.items() if k != "dtype"}))
    assert weights_dtype("auto", "cuda", str(named)) == torch.float32  # nothing says
    assert weights_dtype("auto", "cuda", str(causal_dirs("llama"))) == torch.float32  # saved float32
    assert weights_dtype("auto", "cuda", "Qwen/Qwen2.5-0.5B-Instruct") == "auto"
    assert weights_dtype("auto", "cpu", "Qwen/Qwen2.5-0.5B-Instruct") == torch.float32
    with pytest.raises(UserError, match=r"^model.dtype='fp16': choose 'auto' \| 'float32' \| 'bfloat16' \| 'float16'$"):
        weights_dtype("fp16", "cuda", str(stored))


def test_a_seq2seq_model_refuses_context_in_one_line(tiny_model_dir):
    model = Seq2SeqModel.load(str(tiny_model_dir))
    line = r"need a model that reads context: a decoder-only model \(model=demo-lm offline, or a causal LM.s config "
    for call in (lambda: model.translate(SOURCE, beam_size=2, context=CONTEXT),
                 lambda: model.translate_together([model], SOURCE, context=CONTEXT),
                 lambda: model.pair(SOURCE, REFERENCE, CONTEXT),
                 lambda: model.completions(SOURCE, context=CONTEXT)):
        with pytest.raises(UserError, match=line) as e:
            call()
        assert "\n" not in str(e.value)


@pytest.mark.parametrize("name", ["qwen2.5-0.5b-instruct", "llama-3.2-1b-instruct", "gemma-2-2b-it"])
def test_the_llm_configs_name_a_hub_model_and_a_chat_prompt(name):
    cfg = model_config(name)
    prompt = Prompt.from_config(cfg.prompt)
    assert cfg.path.count("/") == 1 and cfg.name == name and cfg.source_lang == "en"
    assert prompt.chat == "auto" and prompt.target_prefix == "" and "{source}" in prompt.query
    assert prompt.source_lang == "English" and prompt.target_lang == "German"
    assert ("date_string" in dict(prompt.chat_vars)) == name.startswith("llama")


def test_chat_vars_reach_the_template_as_yaml_typed_them(causal_dirs):
    """Qwen3's template leaves out its empty thinking block unless `enable_thinking is false`: a boolean, which the text
    "False" is not (every chat_vars value was made a text)."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(causal_dirs("qwen2")))
    tokenizer.chat_template = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
                               "{% endfor %}<|im_start|>assistant\n"
                               "{% if enable_thinking is defined and enable_thinking is false %}<think>\n\n</think>\n\n"
                               "{% endif %}")
    block = OmegaConf.merge(model_config("qwen2.5-0.5b-instruct").prompt,
                            {"chat_vars": {"enable_thinking": False, "date_string": "26 Jul 2024"}})
    prompt = Prompt.from_config(block)
    assert dict(prompt.chat_vars) == {"enable_thinking": False, "date_string": "26 Jul 2024"}
    assert "<think>" in tokenizer.decode(prompt.ids(tokenizer, "The man sees the dog."))
    with pytest.raises(UserError, match=r"^model.prompt.chat_vars.tools=.*: expected a text, a number, true, false"):
        Prompt.from_config(OmegaConf.merge(block, {"chat_vars": {"tools": [{"name": "x"}]}}))


# Qwen3's chat template, as far as thinking goes: with `enable_thinking` false it writes an empty thinking block after
# the assistant's header, so that the reply is the answer itself (the model's own template has more: tools, history)
QWEN3_CHAT = ("{%- for m in messages %}{{- '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>' + '\\n' }}"
              "{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}"
              "{%- if enable_thinking is defined and enable_thinking is false %}{{- '<think>\\n\\n</think>\\n\\n' }}"
              "{%- endif %}{%- endif %}")


def test_a_qwen3_style_template_renders_an_empty_thinking_block_with_thinking_off(causal_dirs):
    """`model.prompt.chat_vars.enable_thinking=false` (YAML's false, on the command line as in a config) reaches the
    template as a boolean: the prompt ends with the empty thinking block, and the reply starts with the translation.
    Without it, with true, or with the text "false", the prompt ends at the assistant's header."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(causal_dirs("qwen2")))
    tokenizer.chat_template = QWEN3_CHAT
    block = model_config("qwen2.5-0.5b-instruct").prompt
    header, think = "<|im_start|>assistant\n", "<|im_start|>assistant\n<think>\n\n</think>\n\n"

    def rendered(*overrides: str) -> str:
        prompt = Prompt.from_config(OmegaConf.merge(block, OmegaConf.from_dotlist(list(overrides))))
        text = tokenizer.decode(prompt.ids(tokenizer, SOURCE, CONTEXT[:1]))
        assert text.startswith("<|im_start|>user\nTranslate the following English text into German.") and SOURCE in text
        assert tokenizer.convert_ids_to_tokens(prompt.end_id(tokenizer)) == "<|im_end|>"
        return text

    assert rendered("chat_vars.enable_thinking=false").endswith(think)
    for off in ((), ("chat_vars.enable_thinking=true",), ("chat_vars.enable_thinking='false'",)):
        text = rendered(*off)
        assert text.endswith(header) and "<think>" not in text, off


# -- the simulated translator ----------------------------------------------------------------------------------
def test_completions_keep_what_the_translator_validated(causal_dirs):
    model = load(causal_dirs, "gemma")  # sentencepiece, chat template
    system = model.completions(SOURCE, beam_size=2, max_length=20, context=CONTEXT[:1])
    for validated in ("Der ", "Der Mann ", "Der Mann si"):
        proposal = system.propose(validated)
        assert proposal.startswith(validated) and "\n" not in proposal and "<end_of_turn>" not in proposal
    assert system.calls == 3


# -- whole runs -------------------------------------------------------------------------------------------
def expected_trainable(model: CausalModel, method: str) -> int:
    named = model.named_parameters()
    total = sum(p.numel() for p in named.values())
    vocab = model.arch.output_layer.weight.shape[0]
    source = next(n for n, roles in model.arch.embeddings.items() if "source" in roles)
    if method == "lora":  # rank · (in + out) per adapted map: counted on a model of its own (lora hooks it)
        lora = methods.build(method_cfg("lora"), load_model_like(model))
        return sum(8 * sum(model.net.get_submodule(n).weight.shape) for n in lora.modules)
    return {"none": 0, "memory": 0, "full": total, "l2": total, "tm": total, "bias": vocab, "lasso": total + vocab,
            "top": sum(p.numel() for p in model.arch.decoder_layers[-1].parameters()),
            "fixed": named[FIXED].numel() + named[source].numel() if method == "fixed" else None}[method]


def load_model_like(model: CausalModel) -> CausalModel:
    return CausalModel(build_net(model.net.config.model_type, model.tokenizer), model.tokenizer)


FIXED = "model.layers.1.mlp.down_proj.weight"
EXTRA = {"fixed": [f"method.params=[{FIXED}]"], "memory": ["method.temperature=1.0", "method.lam=0.5"],
         "lasso": ["method.budget_fraction=0.2", "method.embedding_budget_fraction=0.05"]}


def check_run(model: CausalModel, out, summary, method: str) -> None:
    """Finished, trained what the method trains, and began every document at θ0: a document's first step measured
    its pair under the base model."""
    assert summary["status"] == "finished" and summary["segments"] == 6, method
    assert summary["trainable_parameters"] == expected_trainable(model, method), method
    changed = [d["changed_parameters"] for d in summary["per_document"]]
    assert all((c == 0) if method in ("none", "memory") else (0 < c <= summary["trainable_parameters"])
               for c in changed), (method, changed)
    steps = [json.loads(line) for line in (out / "steps.jsonl").read_text().splitlines()]
    assert all(len(s["logprobs"]) == len(s["ref_pieces"]) == len(model.label_pieces(s["reference"])) for s in steps)
    firsts = [s for i, s in enumerate(steps) if i == 0 or steps[i - 1]["doc_id"] != s["doc_id"]]
    assert len(firsts) == 2
    with torch.no_grad():
        for step in firsts:
            theta0 = math.exp(float(model.loss(model.pair(step["source"], step["reference"]))))
            assert math.isclose(step["ppl_before"], theta0, rel_tol=1e-5), (method, step["doc_id"])


def test_every_method_runs_on_a_decoder_only_model(run_adaptsim, causal_dirs, tiny_tsv):
    model = load(causal_dirs, "llama")  # untied: the output projection is a tensor of its own
    for method in ("none", "full", "bias", "top", "fixed", "lasso", "lora", "l2", "tm", "memory"):
        out, summary = run_adaptsim(method, f"model.path={causal_dirs('llama')}", "dataset=tsv",
                                    f"dataset.path={tiny_tsv}", f"method={method}", *EXTRA.get(method, []))
        check_run(model, out, summary, method)


@pytest.mark.parametrize("kind", [k for k in KINDS if k != "llama"])
def test_full_lora_and_bias_run_on_every_family(run_adaptsim, causal_dirs, tiny_tsv, kind):
    model = load(causal_dirs, kind)
    for method in ("full", "lora", "bias"):
        out, summary = run_adaptsim(f"{kind}-{method}", f"model.path={causal_dirs(kind)}", "dataset=tsv",
                                    f"dataset.path={tiny_tsv}", f"method={method}")
        check_run(model, out, summary, method)
        assert summary["model_parameters"] == sum(p.numel() for p in model.net.parameters())


def test_the_simulated_translator_works_on_sentencepiece_and_byte_level_vocabularies(run_adaptsim, causal_dirs,
                                                                                      tiny_tsv, tiny_corpus):
    """A word begun is spelt in the vocabulary's own alphabet: sentencepiece's ▁ + the word, byte-level BPE's UTF-8
    bytes after the space byte (none before a chat reply's first word, which starts a line), exactly as the tokenizer
    writes the word after the prompt; a whole session of the simulated translator runs on each family, and every
    proposal keeps what the translator validated."""
    data = ["dataset=tsv", f"dataset.path={tiny_tsv}", "method=bias", "metrics.interactive=char"]
    for kind in ("llama", "gpt2", "qwen2"):
        _, summary = run_adaptsim(f"interactive-{kind}", f"model.path={causal_dirs(kind)}", *data)
        assert summary["status"] == "finished" and summary["cost"]["interactive"], kind
    for kind in ("gpt2", "qwen2"):
        model = load(causal_dirs, kind)
        index = model.piece_index()
        assert index.byte_level
        for word in ("Übersetzung", "Treiber"):
            first = model._space_before_target()  # gpt2's plain prompt: " " before the target; qwen2's chat: a line
            written = "".join(model.pieces(word))
            assert index.spelling(word, after_space=first) == written, (kind, word)
            assert index.spelling(word) == "Ġ" + index.spelling(word, after_space=False)  # the space byte, then it
        source, reference = tiny_corpus[0]
        completions = model.completions(source, beam_size=2, max_length=40)
        proposals = [completions.propose(reference[:k]) for k in range(1, len(reference) + 1)]
        assert all(p.startswith(reference[:k]) for k, p in enumerate(proposals, start=1)), kind
        assert any(len(p) > k for k, p in enumerate(proposals, start=1)), kind  # something offered beyond


def test_serve_translates_completes_and_adapts_on_a_decoder_only_model(causal_dirs, tiny_tsv, tmp_path):
    pytest.importorskip("httpx")
    from starlette.testclient import TestClient

    from adaptsim.commands.serve import configs
    from adaptsim.serve.app import create_app
    from adaptsim.serve.state import ServeSession

    def session(kind, name):
        argv = [f"serve.dir={tmp_path / name}", f"model.path={causal_dirs(kind)}", "dataset=tsv",
                f"dataset.path={tiny_tsv}", "method=bias", "decode.beam_size=2", "decode.max_length=20"]
        return ServeSession(configs(argv), argv)

    served = session("gemma", "gemma")  # sentencepiece, chat template
    client = TestClient(create_app(served, "token", ["testserver"], 4096), headers={"X-Adaptsim-Token": "token"})
    state = client.get("/api/state").json()
    assert state["hypothesis"] and "<end_of_turn>" not in state["hypothesis"]
    done = client.post("/api/complete", json={"position": 0, "prefix": "Der Mann"}).json()
    assert done["completion"].startswith("Der Mann")
    while not (state := client.get("/api/state").json())["finished"]:
        response = client.post("/api/validate", json={"position": state["position"], "text": state["hypothesis"],
                                                       "effort": {"keystrokes": 0, "mouse_actions": 1,
                                                                  "word_strokes": 0, "seconds": 1.0,
                                                                  "accepted_completions": 0,
                                                                  "completion_requests": 0}})
        assert response.status_code == 200, response.text
    served.close()
    assert json.loads((tmp_path / "gemma" / "bias" / "summary.json").read_text())["status"] == "finished"
    byte_level = session("gpt2", "gpt2")  # a byte-level vocabulary is spelt too (adaptsim/models/decode/prefix.py)
    client = TestClient(create_app(byte_level, "token", ["testserver"], 4096), headers={"X-Adaptsim-Token": "token"})
    done = client.post("/api/complete", json={"position": 0, "prefix": "Der M"}).json()
    assert done["completion"].startswith("Der M")
    byte_level.close()


def test_a_checkpoints_repetition_penalty_never_reaches_decoding(causal_dirs, tiny_corpus, tmp_path):
    """Issue #78: Qwen2.5-Instruct ships repetition_penalty 1.05, which transformers applies to every prompt token:
    the post-edits icl quotes. A checkpoint's score-changing generation settings are reset to neutral (and recorded),
    so its hypotheses are those of the same weights without them."""
    import shutil

    kind = KINDS[0]
    penalised = tmp_path / "penalised"
    shutil.copytree(causal_dirs(kind), penalised)
    config = json.loads((penalised / "generation_config.json").read_text())
    (penalised / "generation_config.json").write_text(json.dumps(
        {**config, "repetition_penalty": 5.0, "no_repeat_ngram_size": 1}))
    plain, odd = load(causal_dirs, kind), CausalModel.load(str(penalised))
    assert odd.reset_generation == {"repetition_penalty": 5.0, "no_repeat_ngram_size": 1} and not plain.reset_generation
    from transformers import GenerationConfig

    assert odd.net.generation_config.repetition_penalty == GenerationConfig().repetition_penalty  # neutral
    for source, _ in tiny_corpus[:4]:
        for context in ((), CONTEXT):
            assert odd.translate(source, beam_size=2, max_length=20, context=context).text == \
                plain.translate(source, beam_size=2, max_length=20, context=context).text


def test_lora_adapters_are_float32_and_learn_on_bf16_weights_as_on_float32(causal_dirs):
    """Issue #78: adapters made in the weights' dtype rounded most of each SGD step away on bf16 weights (an LLM
    with model.dtype=auto on a GPU). Float32 adapters on bf16 weights change as many entries as on float32 weights,
    and lower the pair's loss about as much (bf16 forwards: within a tenth of the float32 drop)."""
    from adaptsim.loop.update import Updater

    def trained(dtype: str):
        cfg = model_config("demo-lm")
        cfg.path, cfg.dtype = str(causal_dirs("llama")), dtype
        model = load_model(cfg)
        torch.manual_seed(0)
        lora = methods.build(method_cfg("lora"), model)
        batch = model.pair(SOURCE, REFERENCE)
        with torch.no_grad():
            before = model.token_nll(batch).mean().item()
        start = {n: p.detach().clone() for n, p in lora.parameters().items()}
        updater = Updater(model, lora, ppl_threshold=0.0, min_updates=3, max_updates=3)
        updater(batch)
        with torch.no_grad():
            after = model.token_nll(batch).mean().item()
        delta = torch.cat([(p.detach() - start[n]).flatten() for n, p in sorted(lora.parameters().items())])
        return {p.dtype for p in lora.parameters().values()}, int((delta != 0).sum()), delta, before - after

    (dtypes32, changed32, delta32, drop32), (dtypes16, changed16, delta16, drop16) = map(trained, ("float32",
                                                                                                  "bfloat16"))
    assert dtypes32 == dtypes16 == {torch.float32}
    assert changed16 >= 0.99 * changed32 and drop32 > 0 and drop16 > 0
    assert torch.nn.functional.cosine_similarity(delta32, delta16, dim=0) >= 0.95
