"""The lean beam search (adaptsim/models/decode) gives exactly the hypotheses of transformers' `generate`: on trained
and untrained (random) Marian models, tied and untied, for several beam sizes, length penalties and maximum
lengths (so that hypotheses end by </s>, by the forced last token and by the length limit), with the methods'
hooks on modules acting on it (`bias`, `lora`), and on the real small-ende-probe model and TED when
../shared is there. Where it cannot reproduce `generate` (a hook on the whole network, another
architecture, a generation setting it does not implement) translation falls back to `generate`.

The models are on the session's device: `python -m pytest --device cuda tests/test_decode.py` on a GPU."""

from __future__ import annotations

import csv
import logging
from pathlib import Path

import pytest
import torch
from conftest import TINY_ARCH

from adaptsim import methods
from adaptsim.launch.hydra_app import compose
from adaptsim.models import Seq2SeqModel, decode

PROBE = Path(__file__).resolve().parents[2] / "shared" / "models" / "small-ende-probe"
TED = Path(__file__).resolve().parents[2] / "shared" / "data" / "ted" / "iwslt17.tst2016.en-de.tsv"
SETTINGS = [dict(beam_size=1, max_length=20), dict(beam_size=2, max_length=20), dict(beam_size=5, max_length=20),
            dict(beam_size=5, max_length=20, length_penalty=0.6), dict(beam_size=5, max_length=20, length_penalty=2.0),
            dict(beam_size=5, max_length=6, length_penalty=0.6), dict(beam_size=4, max_length=3, length_penalty=2.0)]


def sources(corpus) -> list[str]:
    return [s for s, _ in corpus[:12]] + ["", "dog dog dog the the", "Der Mann sieht den Hund."]


def assert_same_as_generate(model: Seq2SeqModel, texts: list[str], **settings) -> None:
    for text in texts:
        lean, generated = (model.translate(text, search=s, **settings) for s in ("lean", "generate"))
        assert lean == generated, (text, settings)


def random_model(tiny_model_dir, tied: bool, seed: int, end_bias: float = 0.0, device: str = "cpu") -> Seq2SeqModel:
    """An untrained Marian model: flat, arbitrary distributions, so beams tie and hit the length limit; with an
    `end_bias` on </s>, hypotheses of many lengths end close in score (what the length penalty decides)."""
    from transformers import MarianTokenizer

    from adaptsim.basemodel.scratch_model import build_model

    tokenizer = MarianTokenizer.from_pretrained(str(tiny_model_dir))
    net = build_model(dict(TINY_ARCH, share_encoder_decoder_embeddings=tied, tie_word_embeddings=tied), tokenizer, seed)
    net.final_logits_bias[0, tokenizer.eos_token_id] = end_bias
    return Seq2SeqModel(net, tokenizer, device)


@pytest.mark.parametrize("settings", SETTINGS)
def test_trained_models_tied_and_untied(tiny_model_dir, tiny_model_dir_untied, tiny_corpus, settings, device):
    for path in (tiny_model_dir, tiny_model_dir_untied):
        model = Seq2SeqModel.load(str(path), device)
        assert decode.lean_applies(model.net)
        assert_same_as_generate(model, sources(tiny_corpus), **settings)


@pytest.mark.parametrize("settings", SETTINGS)
def test_untrained_models(tiny_model_dir, tiny_corpus, settings, device):
    for tied, seed, end_bias in ((True, 3, 0.0), (False, 4, 0.0), (True, 7, 3.0), (False, 8, 3.5)):
        assert_same_as_generate(random_model(tiny_model_dir, tied, seed, end_bias, device), sources(tiny_corpus),
                                **settings)


def test_banned_tokens_of_the_generation_config(tiny_model_dir, tiny_corpus, device):
    """OPUS-MT configs ban the pad token (`bad_words_ids`); generate applies it, so must the lean search."""
    model = random_model(tiny_model_dir, True, 5, device=device)
    frequent = model.translate(tiny_corpus[0][0], beam_size=1, max_length=12).pieces[0]
    model.net.generation_config.bad_words_ids = [[model.tokenizer.pad_token_id],
                                                 [model.tokenizer.convert_tokens_to_ids(frequent)]]
    assert decode.lean_applies(model.net)
    assert frequent not in model.translate(tiny_corpus[0][0], beam_size=1, max_length=12).pieces
    assert_same_as_generate(model, sources(tiny_corpus)[:6], beam_size=3, max_length=12)


@pytest.mark.parametrize("method", ["bias", "lora"])
def test_hooks_on_modules_act_on_the_lean_search(tiny_model_dir, tiny_corpus, method, device):
    """`bias` adds its second bias with a hook on the output layer, `lora` its adapters with hooks on linear
    layers: with them non-zero, the translation changes, and lean and generate still agree."""
    model = Seq2SeqModel.load(str(tiny_model_dir), device)
    before = [model.translate(s, beam_size=3).text for s in sources(tiny_corpus)]
    built = methods.build(compose("run", [f"method={method}"]).method, model)
    torch.manual_seed(0)
    with torch.no_grad():
        for p in built.parameters().values():
            p.add_(torch.randn_like(p) * (3.0 if method == "bias" else 0.5))
    assert [model.translate(s, beam_size=3).text for s in sources(tiny_corpus)] != before
    assert_same_as_generate(model, sources(tiny_corpus), beam_size=3)


def test_a_hook_on_the_whole_network_falls_back_to_generate(tiny_model_dir, tiny_corpus, device):
    """`memory` rewrites the network's output: the lean search would not see it, so translation uses generate,
    and what the memory stored is what translating the stored source gives."""
    model = Seq2SeqModel.load(str(tiny_model_dir), device)
    memory = methods.build(compose("run", ["method=memory", "method.lam=1.0", "method.temperature=1.0"]).method, model)
    source, reference = "The driver buys the house.", "Die Lehrerin kauft den Schlüssel."
    memory.after_pair(model.pair(source, reference))
    assert not decode.lean_applies(model.net)
    assert model.translate(source, beam_size=2).text == reference


def test_generation_settings_it_does_not_reproduce_fall_back_to_generate(tiny_model_dir, tiny_corpus, device):
    model = random_model(tiny_model_dir, True, 6, device=device)
    model.net.generation_config.no_repeat_ngram_size = 1
    assert not decode.lean_applies(model.net)
    hyp = model.translate(tiny_corpus[0][0], beam_size=2, max_length=12)
    assert len(set(hyp.pieces)) == len(hyp.pieces)  # no token repeats: generate's processor ran
    assert hyp == model.translate(tiny_corpus[0][0], beam_size=2, max_length=12, search="generate")


def test_generate_is_bounded_by_decode_max_length_alone(tiny_model_dir, device):
    """The checkpoint's own generation max_length (32 here, 512 in OPUS-MT's) is not a second bound: a run that
    decodes with `generate` (memory, a hook on the network) is not told at each segment that two bounds are set, on
    the console or, where transformers' lines reach the root logger (CI=true), in the run's log."""
    said = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = said.append
    model = Seq2SeqModel.load(str(tiny_model_dir), device)
    logging.getLogger("transformers").addHandler(handler)
    try:
        generated = model.translate("The man sees the dog.", beam_size=2, max_length=40, search="generate")
    finally:
        logging.getLogger("transformers").removeHandler(handler)
    assert [r.getMessage() for r in said] == []
    assert generated == model.translate("The man sees the dog.", beam_size=2, max_length=40)


def test_an_unknown_search_is_refused(tiny_model_dir, device):
    with pytest.raises(ValueError, match="search='fast'"):
        Seq2SeqModel.load(str(tiny_model_dir), device).translate("The man sees the dog.", search="fast")


@pytest.mark.skipif(not (PROBE.is_dir() and TED.is_file()), reason="../shared is absent")
def test_real_model_and_data_the_first_ted_segments(device):
    model = Seq2SeqModel.load(str(PROBE), device)
    with open(TED, encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))[:20]
    assert_same_as_generate(model, [r["source"] for r in rows], beam_size=5)


@pytest.mark.parametrize("search", ["lean", "generate"])
def test_bfloat16_decoding_runs_the_products_in_bf16(search, device):
    """decode.dtype=bfloat16: the network's products run in bf16 (seen on a feed-forward layer's output), the
    weights stay float32, and on the demo model most hypotheses are those of float32 decoding."""
    model = Seq2SeqModel.load(str(Path(__file__).resolve().parents[1] / "data" / "demo" / "model"), device)
    seen = []
    hook = model.net.model.decoder.layers[0].fc1.register_forward_hook(lambda m, i, o: seen.append(o.dtype))
    texts = [row["source"] for row in csv.DictReader(open(Path(__file__).resolve().parents[1] / "data" / "demo" /
                                                          "docs.tsv", encoding="utf-8"), delimiter="\t")][:15]
    fp32 = [model.translate(t, search=search).text for t in texts]
    assert set(seen) == {torch.float32}
    seen.clear()
    bf16 = [model.translate(t, search=search, dtype="bfloat16").text for t in texts]
    hook.remove()
    assert set(seen) == {torch.bfloat16}
    assert {p.dtype for p in model.net.parameters()} == {torch.float32}
    assert sum(a == b for a, b in zip(fp32, bf16)) >= 12, list(zip(fp32, bf16))


def test_bfloat16_decoding_is_refused_with_the_simulated_translator():
    from adaptsim.errors import UserError
    from adaptsim.loop.settings import validate

    with pytest.raises(UserError, match="decode.dtype=bfloat16: the simulated translator's prefix search"):
        validate(compose("run", ["decode.dtype=bfloat16", "metrics.interactive=word"]), "run")
