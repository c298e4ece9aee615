"""Tiny random NLLB, M2M100, mBART-50, T5 and mT5 models for the architecture tests, built offline.

Each is saved with `save_pretrained` in a temporary directory, in the layout of the real checkpoint
(AutoTokenizer/AutoModelForSeq2SeqLM load it as they load the hub's), with a small sentencepiece
vocabulary trained on the tiny corpus and the checkpoint family's special-token conventions:

- NLLB: `NllbTokenizer` (a BPE tokenizers backend), fairseq ids <s>=0 <pad>=1 </s>=2 <unk>=3, then the
  pieces, then the 202 FLORES-200 codes (deu_Latn, eng_Latn, …) as special tokens; `M2M100Config`.
- M2M100: `M2M100Tokenizer` (sentencepiece.bpe.model + vocab.json, fairseq ids), `__de__` tokens.
- mBART-50: `MBart50Tokenizer` (Unigram), codes de_DE, en_XX; `MBartConfig` with learned positions.
- T5 (v1.0) and mT5 (gated-GELU, v1.1): `T5Tokenizer` (<pad>=0 </s>=1 <unk>=2); transformers 5 ties the
  output projection of both to `shared`.

Tokenizers are built from the sentencepiece model's pieces and scores read with the sentencepiece API
(transformers 5 would convert a `.model` file itself, but that needs protobuf, which adaptsim does not
depend on). Models are d_model 32, 2+2 layers, briefly trained (full-batch Adam) on the corpus with the
languages applied exactly as adaptsim applies them, so they translate something and can be adapted; the
multilingual ones also learn a copy task towards English (`eng`), so the target-language token decides
what comes out.
"""

from __future__ import annotations

import json
from pathlib import Path

import sentencepiece as spm
import torch

from adaptsim.models import Languages, Seq2SeqModel

# kind -> (languages towards German, languages towards English or None, a decoder tensor for `fixed`)
KINDS = {
    "nllb": (Languages("eng_Latn", "deu_Latn", ""), Languages("eng_Latn", "eng_Latn", ""),
             "model.decoder.layers.1.fc2.weight"),
    "m2m100": (Languages("__en__", "__de__", ""), Languages("__en__", "__en__", ""),
               "model.decoder.layers.1.fc2.weight"),
    "mbart50": (Languages("en_XX", "de_DE", ""), Languages("en_XX", "en_XX", ""),
                "model.decoder.layers.1.fc2.weight"),
    "t5": (Languages(None, None, "translate English to German: "), None,
           "decoder.block.1.layer.2.DenseReluDense.wo.weight"),
    "mt5": (Languages(None, None, "translate English to German: "), None,
            "decoder.block.1.layer.2.DenseReluDense.wo.weight"),
}
FAIRSEQ_SPECIALS = ["<s>", "<pad>", "</s>", "<unk>"]
SIZE = dict(d_model=32, layers=2, heads=2, ffn=64, positions=64)


def train_spm(texts: list[str], prefix: Path, model_type: str) -> list[tuple[str, float]]:
    """A sentencepiece model at prefix.model (ids <unk>=0 <s>=1 </s>=2, its defaults); its (piece, score)s."""
    spm.SentencePieceTrainer.train(sentence_iterator=iter(texts), model_prefix=str(prefix), vocab_size=150,
                                   model_type=model_type, character_coverage=1.0, hard_vocab_limit=False,
                                   num_threads=1, minloglevel=2)
    sp = spm.SentencePieceProcessor(model_file=f"{prefix}.model")
    return [(sp.id_to_piece(i), sp.get_score(i)) for i in range(sp.get_piece_size())]


def build_tokenizer(kind: str, texts: list[str], work: Path):
    from transformers import M2M100Tokenizer, MBart50Tokenizer, NllbTokenizer, T5Tokenizer
    from transformers.tokenization_utils_base import generate_merges

    work.mkdir(parents=True, exist_ok=True)
    bpe = kind in ("nllb", "m2m100")
    pieces = train_spm(texts, work / "spm", "bpe" if bpe else "unigram")
    body = pieces[3:]  # without sentencepiece's own <unk> <s> </s>
    if kind == "nllb":
        vocab = {t: i for i, t in enumerate(FAIRSEQ_SPECIALS + [p for p, _ in body])}
        return NllbTokenizer(vocab=vocab, merges=generate_merges(vocab, dict(body)))
    if kind == "m2m100":
        vocab = {t: i for i, t in enumerate(FAIRSEQ_SPECIALS + [p for p, _ in body])}
        (work / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
        return M2M100Tokenizer(vocab_file=str(work / "vocab.json"), spm_file=str(work / "spm.model"))
    if kind == "mbart50":
        return MBart50Tokenizer(vocab=pieces)  # reorders to the fairseq ids and appends the codes itself
    return T5Tokenizer(vocab=[("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0)] + body, extra_ids=0)


def build_net(kind: str, tokenizer):
    from transformers import (
        M2M100Config,
        M2M100ForConditionalGeneration,
        MBartConfig,
        MBartForConditionalGeneration,
        MT5Config,
        MT5ForConditionalGeneration,
        T5Config,
        T5ForConditionalGeneration,
    )

    s = SIZE
    # M2M100's language tokens sit after its vocab.json, outside len(tokenizer); 8 "madeup words" follow
    vocab_size = (len(tokenizer.encoder) + len(tokenizer.lang_token_to_id) + tokenizer.num_madeup_words
                  if kind == "m2m100" else len(tokenizer))
    if kind in ("t5", "mt5"):
        cfg_cls, net_cls = ((T5Config, T5ForConditionalGeneration) if kind == "t5"
                            else (MT5Config, MT5ForConditionalGeneration))
        extra = {} if kind == "t5" else {"feed_forward_proj": "gated-gelu"}
        config = cfg_cls(vocab_size=vocab_size, d_model=s["d_model"], d_kv=s["d_model"] // s["heads"],
                         d_ff=s["ffn"], num_layers=s["layers"], num_decoder_layers=s["layers"], num_heads=s["heads"],
                         dropout_rate=0.0, pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
                         decoder_start_token_id=tokenizer.pad_token_id, **extra)
        return net_cls(config)
    cfg_cls, net_cls = ((M2M100Config, M2M100ForConditionalGeneration) if kind in ("nllb", "m2m100")
                        else (MBartConfig, MBartForConditionalGeneration))
    config = cfg_cls(vocab_size=vocab_size, d_model=s["d_model"], encoder_layers=s["layers"],
                     decoder_layers=s["layers"], encoder_attention_heads=s["heads"], decoder_attention_heads=s["heads"],
                     encoder_ffn_dim=s["ffn"], decoder_ffn_dim=s["ffn"], max_position_embeddings=s["positions"],
                     dropout=0.0, attention_dropout=0.0, activation_dropout=0.0, scale_embedding=True,
                     pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
                     bos_token_id=tokenizer.bos_token_id, decoder_start_token_id=tokenizer.eos_token_id,
                     tie_word_embeddings=True)
    return net_cls(config)


def _batch(model: Seq2SeqModel, pairs) -> dict[str, torch.Tensor]:
    items = [model.pair(s, t) for s, t in pairs]
    pad = model.tokenizer.pad_token_id

    def stack(key, fill):
        rows = [b[key][0] for b in items]
        out = torch.full((len(rows), max(len(r) for r in rows)), fill, dtype=torch.long)
        for i, r in enumerate(rows):
            out[i, :len(r)] = r
        return out
    return {"input_ids": stack("input_ids", pad), "attention_mask": stack("attention_mask", 0),
            "labels": stack("labels", -100)}


def build(kind: str, corpus: list[tuple[str, str]], out: Path, steps: int = 60, lr: float = 1e-2) -> Path:
    """Save a tiny trained model of `kind` to `out` and return it."""
    torch.manual_seed(1)
    to_de, to_en, _ = KINDS[kind]
    texts = [s for s, _ in corpus] + [t for _, t in corpus]
    tokenizer = build_tokenizer(kind, texts, out.parent / f"{out.name}_spm")
    net = build_net(kind, tokenizer)
    tasks = [(Seq2SeqModel(net, tokenizer, languages=to_de), corpus)]
    if to_en is not None:
        tasks.append((Seq2SeqModel(net, tokenizer, languages=to_en), [(s, s) for s, _ in corpus]))
    batches = [_batch(m, pairs) for m, pairs in tasks]
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    net.train()
    for _ in range(steps):
        loss = sum(net(**b).loss for b in batches)
        opt.zero_grad()
        loss.backward()
        opt.step()
    net.eval()
    net.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    return out
