"""NLLB/M2M100 (m2m_100), mBART-50 (mbart), T5 and mT5 on tiny random models built offline
(tests/tiny_multilingual.py; all tied like the real checkpoints, untied embeddings are covered by the
Marian tests): what each adapter reports, that the configured language tokens are what the
model reads and is trained on, that translation is forced into the configured language, and every method
through the whole `run` command, checking what it trains."""

from __future__ import annotations

import json

import pytest
import torch
from tiny_multilingual import KINDS, build

from adaptsim import CONFIG_DIR
from adaptsim.errors import UserError
from adaptsim.models import Languages, Seq2SeqModel


@pytest.fixture(scope="session")
def tiny_dirs(tmp_path_factory, tiny_corpus):
    """kind -> directory of its tiny model, built on first use."""
    built = {}

    def get(kind):
        if kind not in built:
            built[kind] = build(kind, tiny_corpus, tmp_path_factory.mktemp(kind) / "model")
        return built[kind]
    return get


def load(tiny_dirs, kind, languages=None):
    return Seq2SeqModel.load(str(tiny_dirs(kind)), languages=languages or KINDS[kind][0])


@pytest.mark.parametrize("kind", list(KINDS))
def test_adapter_reports_layers_embedding_roles_and_output_layer(tiny_dirs, kind):
    model = load(tiny_dirs, kind)
    arch, net = model.arch, model.net
    assert len(arch.encoder_layers) == len(arch.decoder_layers) == 2
    assert arch.output_layer is net.get_output_embeddings()
    named = model.named_parameters()
    # transformers 5 ties T5's and mT5's output projection to `shared` whatever the config says
    assert net.get_output_embeddings().weight is net.get_input_embeddings().weight
    assert list(arch.embeddings.values()) == [{"source", "target", "output"}]  # one matrix, three roles
    assert set(arch.embeddings) <= set(named)
    assert arch.constants == []  # M2M100's sinusoidal table is a buffer; mBART's positions and T5's bias are learned
    layer_params = {id(p) for layer in arch.encoder_layers + arch.decoder_layers for p in layer.parameters()}
    assert not layer_params & {id(named[n]) for n in arch.embeddings}
    assert model.max_tokens == (64 if kind not in ("t5", "mt5") else model.tokenizer.model_max_length)


@pytest.mark.parametrize("kind", ["nllb", "m2m100", "mbart50"])
def test_language_tokens_open_the_source_and_the_labels_and_are_forced_in_translation(tiny_dirs, kind):
    model = load(tiny_dirs, kind)
    tok = model.tokenizer
    src_id, tgt_id = (tok.convert_tokens_to_ids(t) for t in (KINDS[kind][0].source_token, KINDS[kind][0].target_token))
    batch = model.pair("The man sees the dog.", "Der Mann sieht den Hund.")
    ids, labels = batch["input_ids"][0].tolist(), batch["labels"][0].tolist()
    assert ids[0] == src_id and ids[-1] == tok.eos_token_id and ids.count(src_id) == 1
    assert labels[0] == tgt_id and labels[-1] == tok.eos_token_id and tgt_id not in labels[1:]
    assert tok.decode(labels[1:-1]) == "Der Mann sieht den Hund."
    assert model.count_tokens("The man sees the dog.") == len(ids)
    generated = []
    generate = model.net.generate
    model.net.generate = lambda **kw: generated.append(generate(**kw)) or generated[-1]
    hyp = model.translate("The man sees the dog.", beam_size=2, max_length=20)
    out = generated[0][0].tolist()
    assert out[0] == model.net.config.decoder_start_token_id and out[1] == tgt_id
    assert tgt_id not in tok.convert_tokens_to_ids(hyp.pieces) and hyp.text.startswith("Der")


def test_the_target_token_decides_the_language_of_the_translation(tiny_dirs, tiny_corpus):
    # the tiny NLLB model learnt German behind deu_Latn and copying behind eng_Latn
    de = load(tiny_dirs, "nllb", Languages("eng_Latn", "deu_Latn", ""))
    en = load(tiny_dirs, "nllb", Languages("eng_Latn", "eng_Latn", ""))
    sources = [s for s, _ in tiny_corpus[:6]]
    to_de = [de.translate(s, beam_size=2, max_length=20).text for s in sources]
    to_en = [en.translate(s, beam_size=2, max_length=20).text for s in sources]
    assert all(h.split()[0] in ("Der", "Die", "Das", "Mein") for h in to_de), to_de
    assert all(h.split()[0] in ("The", "My") for h in to_en), to_en


def test_t5_task_prefix_is_prepended_in_translation_and_loss(tiny_dirs):
    model = load(tiny_dirs, "t5")
    tok = model.tokenizer
    prefix = "translate English to German: "
    expected = tok(prefix + "The man sees the dog.").input_ids
    assert model.pair("The man sees the dog.", "Der Mann sieht den Hund.")["input_ids"][0].tolist() == expected
    plain = Seq2SeqModel.load(str(tiny_dirs("t5")))
    assert model.count_tokens("The man.") > plain.count_tokens("The man.")
    assert model.translate("The man sees the dog.", beam_size=2).text != "" and model.max_tokens > 64


def test_missing_or_unknown_language_tokens_stop_with_one_line(tiny_dirs):
    with pytest.raises(UserError, match="model.languages.target_token is not set"):
        Seq2SeqModel.load(str(tiny_dirs("nllb")))
    with pytest.raises(UserError, match="model.languages.target_token=xx_YY: not a token"):
        Seq2SeqModel.load(str(tiny_dirs("mbart50")), languages=Languages("en_XX", "xx_YY", ""))


def test_model_configs_load_from_a_local_directory_and_set_their_language_tokens():
    from omegaconf import OmegaConf

    from adaptsim.models import languages_from_config

    def compose(name):
        common = OmegaConf.load(CONFIG_DIR / "model" / "_common.yaml")
        own = OmegaConf.load(CONFIG_DIR / "model" / f"{name}.yaml")
        own.pop("defaults")
        return OmegaConf.create({"model": OmegaConf.merge(common, own)}).model

    expected = {"nllb-200-distilled-600M": Languages("eng_Latn", "deu_Latn", ""),
                "m2m100_418M": Languages("__en__", "__de__", ""),
                "mbart-large-50-many-to-many-mmt": Languages("en_XX", "de_DE", ""),
                "opus-mt-en-de": Languages(None, None, "")}
    for name, languages in expected.items():
        assert languages_from_config(compose(name)) == languages


@pytest.mark.slow  # every method on five architectures (the quick subset: -m "not slow")
@pytest.mark.parametrize("kind", list(KINDS))
def test_every_method_runs_on_the_architecture_and_trains_what_it_should(run_adaptsim, tmp_path, tiny_dirs, tiny_tsv,
                                                                           kind):
    languages, _, fixed_tensor = KINDS[kind]
    model = load(tiny_dirs, kind)
    named = model.named_parameters()
    total = sum(p.numel() for p in named.values())
    vocab = model.arch.output_layer.weight.shape[0]
    top = {id(p) for layer in (model.arch.encoder_layers[-1], model.arch.decoder_layers[-1])
           for p in layer.parameters()}
    source_emb = next(n for n, roles in model.arch.embeddings.items() if "source" in roles)
    common = [f"model.path={tiny_dirs(kind)}", "dataset=tsv", f"dataset.path={tiny_tsv}",
              f"model.languages.source_token={languages.source_token or 'null'}",
              f"model.languages.target_token={languages.target_token or 'null'}",
              f"model.languages.source_prefix='{languages.source_prefix}'"]
    expected = {"none": 0, "full": total, "bias": vocab, "top": sum(p.numel() for p in named.values() if id(p) in top),
                "fixed": named[fixed_tensor].numel() + named[source_emb].numel(), "lasso": total + vocab}
    for method, trainable in expected.items():
        extra = {"fixed": [f"method.params=[{fixed_tensor}]"],
                 "lasso": ["method.budget_fraction=0.2", "method.embedding_budget_fraction=0.05"]}.get(method, [])
        out, s = run_adaptsim(method, *common, f"method={method}", *extra)
        assert s["status"] == "finished" and s["segments"] == 6, method
        assert s["trainable_parameters"] == trainable, method
        changed = [d["changed_parameters"] for d in s["per_document"]]
        assert all((c == 0) if method == "none" else (0 < c <= trainable) for c in changed), (method, changed)
        steps = [json.loads(line) for line in (out / "steps.jsonl").read_text().splitlines()]
        assert all(step["hypothesis"] for step in steps), method
        if languages.target_token:  # the forced token is generated but is no piece of the hypothesis
            assert all(languages.target_token not in step["pieces"] for step in steps)
    assert (tmp_path / "fixed" / "summary.json").is_file()


@pytest.mark.parametrize("kind", list(KINDS))
def test_the_token_nll_from_cached_output_inputs_is_the_models(tiny_dirs, kind):
    """`bias` trains from the output layer's inputs computed once per pair: on every architecture that must be
    the forward's loss exactly (T5 rescales the decoder output before the output layer, Marian and mBART add
    a fixed final bias after it)."""
    model = load(tiny_dirs, kind)
    model.add_output_bias().data.normal_()  # a second bias that is not zero, as after some updates
    batch = model.pair("The man sees the dog.", "Der Mann sieht den Hund.")
    with torch.no_grad():
        nll = model.token_nll(batch)
        assert torch.equal(model.nll_from_output_inputs(model.output_inputs(batch), batch["labels"]), nll)
        assert len(nll) == len(model.label_pieces("Der Mann sieht den Hund.")) == batch["labels"].numel()


def test_a_checkpoint_for_another_language_pair_is_refused_before_it_loads(tmp_path):
    """Issue #76: the README's own-model example kept model=demo, so an OPUS-MT en→fr directory ran as en→de and was
    scored with German stopwords. A Marian tokenizer names its pair (tokenizer_config.json); a run whose
    model.source_lang / target_lang differ is refused in one line, before the weights load."""
    import shutil

    from omegaconf import OmegaConf

    from adaptsim import DATA_DIR
    from adaptsim.models import load_model
    from adaptsim.models.base import check_languages

    model = tmp_path / "opus-mt-en-fr"
    shutil.copytree(DATA_DIR / "demo" / "model", model)
    config = json.loads((model / "tokenizer_config.json").read_text())
    (model / "tokenizer_config.json").write_text(json.dumps({**config, "target_lang": "fr"}))
    (model / "model.safetensors").write_bytes(b"")  # never read: the refusal comes first
    cfg = OmegaConf.create({"path": str(model), "source_lang": "en", "target_lang": "de", "dtype": "float32"})
    with pytest.raises(UserError, match=r"^model.target_lang=de, but the model at model.path=.*opus-mt-en-fr is "
                                        r"en→fr \(its tokenizer_config.json\)"):
        load_model(cfg)
    check_languages(OmegaConf.merge(cfg, {"path": str(DATA_DIR / "demo" / "model"), "target_lang": "de_DE"}))
    import subprocess
    import sys

    out = tmp_path / "run"  # `run` refuses with the settings, before its directory is claimed: nothing written
    done = subprocess.run([sys.executable, "-m", "adaptsim", "run", f"model.path={model}", f"hydra.run.dir={out}"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode != 0 and "but the model at model.path=" in done.stderr and not out.exists()
