"""Shared test fixtures: a tiny English→German corpus and tiny Marian models trained on it in about a second.

- `tiny_corpus`: list of (source, reference) pairs, 48 short sentences ("The man sees the dog." →
  "Der Mann sieht den Hund.").
- `tiny_model_dir`: Path to a saved MarianMTModel + MarianTokenizer (one shared unigram sentencepiece
  vocabulary of about 70 pieces, <pad>=0 <unk>=1 </s>=2,
  shared source/target embeddings tied to the output projection, like OPUS-MT), d_model 32, 2+2 layers,
  2 heads, FFN 64, trained for 40 full-batch Adam steps on `tiny_corpus`, so it emits `</s>` and
  translates most corpus sentences exactly (and some not: there is something left to adapt).
- `tiny_model_dir_untied`: the same but with separate source embeddings, target embeddings and output
  projection (`share_encoder_decoder_embeddings=False`, `tie_word_embeddings=False`, like the paper).
- `tiny_tsv`: a TSV file (doc_id, seg_id, source, reference) with 2 documents × 3 segments of `tiny_corpus`.

The model directories are session-scoped and shared: copy one before changing files in it.
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest
import torch

torch.set_num_threads(1)

_SUBJECTS = [("The man", "Der Mann"), ("The woman", "Die Frau"), ("The child", "Das Kind"),
             ("The driver", "Der Fahrer"), ("My friend", "Mein Freund"), ("The teacher", "Die Lehrerin")]
_VERBS = [("sees", "sieht"), ("likes", "mag"), ("finds", "findet"), ("buys", "kauft")]
_OBJECTS = [("the dog", "den Hund"), ("the cat", "die Katze"), ("the house", "das Haus"),
            ("the table", "den Tisch"), ("a book", "ein Buch"), ("the key", "den Schlüssel")]

TINY_ARCH = dict(d_model=32, encoder_layers=2, decoder_layers=2, heads=2, ffn_dim=64, activation_function="swish",
                 max_position_embeddings=64, dropout=0.0)


def make_tiny_corpus() -> list[tuple[str, str]]:
    # 48 of the 144 combinations; every subject, verb and object occurs with several others
    return [(f"{s} {v} {o}.", f"{S} {V} {O}.")
            for i, (s, S) in enumerate(_SUBJECTS) for j, (v, V) in enumerate(_VERBS)
            for k, (o, O) in enumerate(_OBJECTS) if (i + j + k) % 3 == 0]


def _train_briefly(model, tokenizer, pairs, steps: int = 40, lr: float = 1e-2) -> None:
    src, tgt = [p[0] for p in pairs], [p[1] for p in pairs]
    batch = tokenizer(src, text_target=tgt, return_tensors="pt", padding=True)
    batch["labels"][batch["labels"] == tokenizer.pad_token_id] = -100
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    for _ in range(steps):
        loss = model(**batch).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()


def _build(out: Path, pairs, tied: bool, tok_dir: Path) -> Path:
    from transformers import MarianTokenizer

    from adaptsim.basemodel.scratch_model import build_model

    shutil.copytree(tok_dir, out)
    tokenizer = MarianTokenizer.from_pretrained(str(out))
    arch = dict(TINY_ARCH, share_encoder_decoder_embeddings=tied, tie_word_embeddings=tied)
    model = build_model(arch, tokenizer, seed=1)
    _train_briefly(model, tokenizer, pairs)
    model.generation_config.max_length = 32
    model.save_pretrained(str(out))
    return out


@pytest.fixture(scope="session")
def tiny_corpus() -> list[tuple[str, str]]:
    return make_tiny_corpus()


@pytest.fixture(scope="session")
def _tiny_tokenizer_dir(tmp_path_factory, tiny_corpus) -> Path:
    from adaptsim.basemodel.scratch_model import train_tokenizer

    out = tmp_path_factory.mktemp("tiny_tokenizer")
    train_tokenizer([s for s, _ in tiny_corpus], [t for _, t in tiny_corpus], out, vocab_size=150)
    return out


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory, tiny_corpus, _tiny_tokenizer_dir) -> Path:
    torch.manual_seed(1)
    return _build(tmp_path_factory.mktemp("tiny") / "model", tiny_corpus, True, _tiny_tokenizer_dir)


@pytest.fixture(scope="session")
def tiny_model_dir_untied(tmp_path_factory, tiny_corpus, _tiny_tokenizer_dir) -> Path:
    torch.manual_seed(1)
    return _build(tmp_path_factory.mktemp("tiny_untied") / "model", tiny_corpus, False, _tiny_tokenizer_dir)


def script_module(relative: str):
    """A script of the repository (`scripts/…`, not a package) imported as a module, for testing its functions."""
    from adaptsim import PROJECT_ROOT

    spec = importlib.util.spec_from_file_location(Path(relative).stem, PROJECT_ROOT / relative)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def tsv_of(path: Path, rows) -> Path:
    """A TSV stream of (doc_id, seg_id, source, reference) rows."""
    path.write_text("doc_id\tseg_id\tsource\treference\n" + "".join(f"{d}\t{i}\t{s}\t{r}\n" for d, i, s, r in rows))
    return path


@pytest.fixture
def tiny_tsv(tmp_path, tiny_corpus) -> Path:
    rows = ["doc_id\tseg_id\tsource\treference"]
    for d, doc in enumerate(("doc1", "doc2")):
        for s in range(3):
            src, ref = tiny_corpus[(d * 3 + s) * 7 % len(tiny_corpus)]
            rows.append(f"{doc}\t{s + 1}\t{src}\t{ref}")
    path = tmp_path / "tiny.tsv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def run_adaptsim(tmp_path):
    """`run_adaptsim(name, *overrides)`: `adaptsim run` in-process into tmp_path/name with a short beam search;
    asserts exit code 0 and returns (run directory, summary)."""
    import json

    from adaptsim.cli import main

    def run(name: str, *overrides: str):
        out = tmp_path / name
        with pytest.raises(SystemExit) as exit_:
            main(["run", f"hydra.run.dir={out}", "progress=false", "decode.beam_size=2", "decode.max_length=20",
                  *overrides])
        assert exit_.value.code == 0
        return out, json.loads((out / "summary.json").read_text())
    return run



FIXED_TENSORS = ["model.decoder.layers.1.fc2.weight", "model.encoder.layers.0.fc1.weight"]


@pytest.fixture
def tiny_sweep(tmp_path, tiny_model_dir, tiny_tsv) -> list[str]:
    """Overrides for a sweep over every method on the tiny model and data: `fixed` reads its tensor list from the
    file that model.name names (a sweep over methods cannot give `method.params` to fixed alone)."""
    from omegaconf import OmegaConf

    from adaptsim.model import Seq2SeqModel

    chosen = tmp_path / "tiny.yaml"
    signature = Seq2SeqModel.load(str(tiny_model_dir)).signature()
    OmegaConf.save({"model": {"name": "tiny", "signature": signature}, "params": FIXED_TENSORS}, chosen)
    return [f"model.path={tiny_model_dir}", f"model.name={chosen}", "dataset=tsv", f"dataset.path={tiny_tsv}"]
