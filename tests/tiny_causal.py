"""Tiny random decoder-only models of the GPT-2, Llama, Qwen2 and Gemma families for tests/test_causal.py, built
offline and saved with `save_pretrained` (AutoTokenizer/AutoModelForCausalLM load them as they load the hub's).

Tokenizers are each family's own class over a vocabulary trained on the tiny corpus:

- GPT-2 and Qwen2: byte-level BPE (the `tokenizers` library's trainer, all 256 byte symbols in the alphabet, so a
  newline is a token as in the real vocabularies); GPT-2's <|endoftext|> is its begin and end of sequence, Qwen2 has
  no begin token and a ChatML chat template with <|im_start|> and <|im_end|> (what Qwen2.5-Instruct writes);
- Llama and Gemma: sentencepiece BPE with byte fallback (<0x0A> is the newline), read into LlamaTokenizer /
  GemmaTokenizer from its pieces and scores (as tests/tiny_multilingual.py does for NLLB). Llama: <unk> <s> </s>, no
  chat template (a plain prompt); Gemma: its ids <pad>=0 <eos>=1 <bos>=2 <unk>=3, <start_of_turn>/<end_of_turn>
  special tokens and a Gemma-style chat template.

So two families are prompted plain and two through a chat template (adaptsim/models/prompt.py `chat: auto`), two
tokenizers are byte-level and two sentencepiece. Models: 2 blocks, width 32, 2 heads, positions 128, tied
embeddings (GPT-2, Qwen2, Gemma) or not (Llama), briefly trained (full-batch Adam) on the corpus's pairs as
adaptsim lays them out with the default prompt, so that they translate something and end it.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from adaptsim.models.causal import CausalModel

KINDS = ("gpt2", "llama", "qwen2", "gemma")
CHATML = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
          "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
GEMMA_CHAT = ("{{ bos_token }}{% for m in messages %}<start_of_turn>{{ 'model' if m['role'] == 'assistant' else "
              "m['role'] }}\n{{ m['content'] }}<end_of_turn>\n{% endfor %}"
              "{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}")
BYTES = [f"<0x{i:02X}>" for i in range(256)]
SIZE = dict(hidden=32, layers=2, heads=2, ffn=64, positions=128)


def texts_of(corpus) -> list[str]:
    """What the vocabularies are trained on: both sides, the target also as it follows a prompt (after a space)."""
    return [s for s, _ in corpus] + [t for _, t in corpus] + [" " + t for _, t in corpus] + ["en: de:"]


def byte_level(corpus, work: Path):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(texts_of(corpus), trainers.BpeTrainer(
        vocab_size=400, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), special_tokens=["<|endoftext|>"],
        show_progress=False))
    merges = [tuple(m) for m in json.loads(tok.to_str())["model"]["merges"]]
    return tok.get_vocab(), merges


def sentencepiece(corpus, work: Path, specials: list[str]):
    from tiny_multilingual import train_spm
    from transformers.tokenization_utils_base import generate_merges

    work.mkdir(parents=True, exist_ok=True)
    body = train_spm(texts_of(corpus), work / "spm", "bpe")[3:]  # without sentencepiece's <unk> <s> </s>
    vocab = {t: i for i, t in enumerate(specials + BYTES + [p for p, _ in body])}
    return vocab, generate_merges(vocab, dict(body))


def build_tokenizer(kind: str, corpus, work: Path):
    from transformers import GemmaTokenizer, GPT2Tokenizer, LlamaTokenizer, Qwen2Tokenizer

    if kind == "gpt2":
        return GPT2Tokenizer(*byte_level(corpus, work))
    if kind == "qwen2":
        tok = Qwen2Tokenizer(*byte_level(corpus, work))
        tok.add_special_tokens({"additional_special_tokens": ["<|im_start|>", "<|im_end|>"]})
        tok.chat_template = CHATML
        return tok
    if kind == "llama":
        return LlamaTokenizer(*sentencepiece(corpus, work, ["<unk>", "<s>", "</s>"]))
    tok = GemmaTokenizer(*sentencepiece(corpus, work, ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>"]))
    tok.add_special_tokens({"additional_special_tokens": ["<start_of_turn>", "<end_of_turn>"]})
    tok.chat_template = GEMMA_CHAT
    return tok


def build_net(kind: str, tokenizer, seed: int = 1):
    from transformers import (
        GemmaConfig,
        GemmaForCausalLM,
        GPT2Config,
        GPT2LMHeadModel,
        LlamaConfig,
        LlamaForCausalLM,
        Qwen2Config,
        Qwen2ForCausalLM,
    )

    torch.manual_seed(seed)
    s, vocab = SIZE, len(tokenizer)
    ids = dict(bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
               pad_token_id=tokenizer.pad_token_id)
    if kind == "gpt2":
        return GPT2LMHeadModel(GPT2Config(vocab_size=vocab, n_embd=s["hidden"], n_layer=s["layers"],
                                          n_head=s["heads"], n_inner=s["ffn"], n_positions=s["positions"],
                                          resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, **ids))
    common = dict(vocab_size=vocab, hidden_size=s["hidden"], intermediate_size=s["ffn"],
                  num_hidden_layers=s["layers"], num_attention_heads=s["heads"], num_key_value_heads=1,
                  max_position_embeddings=s["positions"], **ids)
    if kind == "llama":
        return LlamaForCausalLM(LlamaConfig(**common, tie_word_embeddings=False))
    if kind == "qwen2":
        return Qwen2ForCausalLM(Qwen2Config(**common, tie_word_embeddings=True))
    return GemmaForCausalLM(GemmaConfig(**common, head_dim=s["hidden"] // s["heads"]))


def batch_of(model: CausalModel, pairs) -> dict[str, torch.Tensor]:
    """The pairs as adaptsim lays them out (`CausalModel.pair`), right-padded into one batch."""
    items = [model.pair(s, t) for s, t in pairs]
    width = max(b["input_ids"].shape[1] for b in items)

    def stack(key, fill):
        out = torch.full((len(items), width), fill, dtype=torch.long)
        for i, b in enumerate(items):
            out[i, :b[key].shape[1]] = b[key][0]
        return out
    return {"input_ids": stack("input_ids", 0), "attention_mask": stack("attention_mask", 0),
            "labels": stack("labels", -100)}


def build(kind: str, corpus, out: Path, steps: int = 60, lr: float = 1e-2) -> Path:
    """Save a tiny model of `kind`, briefly trained on `corpus`, to `out` and return it."""
    tokenizer = build_tokenizer(kind, corpus, out.parent / f"{out.name}_spm")
    net = build_net(kind, tokenizer)
    batch = batch_of(CausalModel(net, tokenizer), corpus)
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    net.train()
    for _ in range(steps):
        loss = net(**batch).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    net.eval()
    net.generation_config.max_length = 32
    net.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    return out
