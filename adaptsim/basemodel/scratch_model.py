"""Build a Marian model from scratch: a sentencepiece vocabulary written as Marian tokenizer files, and a
randomly initialised `MarianMTModel` from an architecture dict.

Layout written by `train_tokenizer` (what `MarianTokenizer.from_pretrained(dir)` reads, as in OPUS-MT and
../shared/models/small-ende-probe): `source.spm`, `target.spm`, `vocab.json` (piece → id; with separate
vocabularies also `target_vocab.json`) and `tokenizer_config.json`. Special ids follow the probe model:
`<pad>`=0 (also the decoder start token), `<unk>`=1, `</s>`=2, no `<s>`.
"""

from __future__ import annotations

import io
import json
import re
import shutil
from collections.abc import Iterable
from pathlib import Path

import sentencepiece as spm
from transformers import MarianConfig, MarianMTModel, MarianTokenizer

from adaptsim.errors import UserError

PAD, UNK, EOS = 0, 1, 2

# Shortcuts accepted in an `arch` dict besides MarianConfig's own keys.
_SHORTCUTS = {
    "heads": ("encoder_attention_heads", "decoder_attention_heads"),
    "ffn_dim": ("encoder_ffn_dim", "decoder_ffn_dim"),
}
# Keys of a model config's `arch` block that are about the vocabulary, not the network.
_VOCAB_KEYS = {"vocab_size", "shared_vocab"}


def _train_spm(texts: Iterable[str], prefix: Path, vocab_size: int, model_type: str, threads: int,
               max_sentences: int) -> int:
    """Train one sentencepiece model at `prefix`.model; return its size. The model is written from memory
    (`model_writer`): trained with a `model_prefix`, its bytes hold that (temporary) path, so identical trainings
    wrote different files and the model's fingerprint differed for identical weights."""
    model = io.BytesIO()
    try:
        _spm_train(texts, model, vocab_size, model_type, threads, max_sentences)
    except RuntimeError as e:  # sentencepiece's own check, the one setting a user can get wrong
        found = re.search(r"smaller than required_chars\. (\d+) vs (\d+)", str(e))
        if not found:
            raise
        raise UserError(f"model.vocab.size={vocab_size}: the training text has {int(found[2]) - 3} distinct "
                        f"characters, each a piece of its own besides 3 special ones; choose at least "
                        f"{found[2]}") from None
    Path(f"{prefix}.model").write_bytes(model.getvalue())
    return spm.SentencePieceProcessor(model_file=f"{prefix}.model").get_piece_size()


def _spm_train(texts: Iterable[str], model: io.BytesIO, vocab_size: int, model_type: str, threads: int,
               max_sentences: int) -> None:
    spm.SentencePieceTrainer.train(
        sentence_iterator=(t for t in texts if t.strip()),
        model_writer=model,
        vocab_size=vocab_size,
        model_type=model_type,
        character_coverage=1.0,
        pad_id=PAD, unk_id=UNK, eos_id=EOS, bos_id=-1,
        hard_vocab_limit=False,          # small corpora: fewer pieces than asked is fine
        input_sentence_size=max_sentences, shuffle_input_sentence=True,
        num_threads=threads,             # 1 = deterministic
        minloglevel=2,
    )


def _write_vocab(spm_file: Path, out: Path) -> None:
    sp = spm.SentencePieceProcessor(model_file=str(spm_file))
    vocab = {sp.id_to_piece(i): i for i in range(sp.get_piece_size())}
    out.write_text(json.dumps(vocab, ensure_ascii=False, indent=1), encoding="utf-8")


def train_tokenizer(texts_src: Iterable[str], texts_tgt: Iterable[str], out_dir: str | Path, vocab_size: int,
                    shared: bool = True, source_lang: str = "en", target_lang: str = "de",
                    model_type: str = "unigram", threads: int = 1, max_sentences: int = 2_000_000,
                    model_max_length: int = 512) -> MarianTokenizer:
    """Train sentencepiece on the texts and write Marian tokenizer files to `out_dir`.

    shared=True: one vocabulary of `vocab_size` pieces trained on source and target text together
    (`source.spm` = `target.spm`); shared=False: one of `vocab_size` pieces per side (`target_vocab.json`,
    `separate_vocabs: true`; the model then needs `share_encoder_decoder_embeddings: false`).
    `vocab_size` is an upper bound: a small corpus may give fewer pieces.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / "_spm"
    tmp.mkdir(exist_ok=True)
    try:
        if shared:
            src, tgt = list(texts_src), list(texts_tgt)
            _train_spm(src + tgt, tmp / "joint", vocab_size, model_type, threads, max_sentences)
            shutil.copyfile(tmp / "joint.model", out / "source.spm")
            shutil.copyfile(tmp / "joint.model", out / "target.spm")
        else:
            _train_spm(texts_src, tmp / "src", vocab_size, model_type, threads, max_sentences)
            _train_spm(texts_tgt, tmp / "tgt", vocab_size, model_type, threads, max_sentences)
            shutil.copyfile(tmp / "src.model", out / "source.spm")
            shutil.copyfile(tmp / "tgt.model", out / "target.spm")
            _write_vocab(out / "target.spm", out / "target_vocab.json")
        _write_vocab(out / "source.spm", out / "vocab.json")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    tok = MarianTokenizer(
        source_spm=str(out / "source.spm"), target_spm=str(out / "target.spm"), vocab=str(out / "vocab.json"),
        target_vocab_file=None if shared else str(out / "target_vocab.json"), separate_vocabs=not shared,
        source_lang=source_lang, target_lang=target_lang, model_max_length=model_max_length,
    )
    tok.save_pretrained(str(out))  # writes tokenizer_config.json (spm/vocab files are already in place)
    return MarianTokenizer.from_pretrained(str(out))


def vocab_sizes(tokenizer: MarianTokenizer) -> tuple[int, int]:
    """(source vocabulary size, target vocabulary size)."""
    src = len(tokenizer.encoder)
    tgt = len(tokenizer.target_encoder) if tokenizer.separate_vocabs else src
    return src, tgt


def marian_config(arch: dict, tokenizer: MarianTokenizer) -> MarianConfig:
    """A MarianConfig from an architecture dict (MarianConfig keys, plus `heads` and `ffn_dim` for both sides)."""
    kw = {k: v for k, v in dict(arch).items() if k not in _VOCAB_KEYS}
    for short, longs in _SHORTCUTS.items():
        if short in kw:
            value = kw.pop(short)
            for key in longs:
                kw.setdefault(key, value)
    known = set(MarianConfig.__annotations__) | set(MarianConfig().to_dict())
    unknown = sorted(set(kw) - known)
    if unknown:
        raise UserError(f"model.arch: unknown architecture key(s) {', '.join(unknown)}")
    src_v, tgt_v = vocab_sizes(tokenizer)
    share = kw.get("share_encoder_decoder_embeddings", True)
    if tokenizer.separate_vocabs and share:
        raise UserError("model.vocab.shared=false (separate source/target vocabularies) needs "
                        "model.arch.share_encoder_decoder_embeddings=false")
    kw.setdefault("scale_embedding", True)
    if "activation_function" not in kw:  # no hidden default: the model config says which (configs/model/*.yaml)
        raise UserError("model.arch.activation_function is not set (relu, swish, gelu, …)")
    kw.update(vocab_size=src_v, decoder_vocab_size=tgt_v, pad_token_id=tokenizer.pad_token_id,
              eos_token_id=tokenizer.eos_token_id, decoder_start_token_id=tokenizer.pad_token_id,
              forced_eos_token_id=tokenizer.eos_token_id, bos_token_id=None)
    return MarianConfig(**kw)


def build_model(arch: dict, tokenizer: MarianTokenizer, seed: int | None = None) -> MarianMTModel:
    """A randomly initialised MarianMTModel for `tokenizer`'s vocabulary (seeded when `seed` is given)."""
    import torch

    if seed is not None:
        torch.manual_seed(seed)
    config = marian_config(arch, tokenizer)
    model = MarianMTModel(config)
    g = model.generation_config
    g.decoder_start_token_id, g.pad_token_id = config.decoder_start_token_id, config.pad_token_id
    g.eos_token_id, g.forced_eos_token_id = config.eos_token_id, config.eos_token_id
    return model


def count_parameters(model) -> int:
    """Number of distinct parameters (tied tensors counted once)."""
    return sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())
