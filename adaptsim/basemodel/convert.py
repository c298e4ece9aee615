"""A fairseq `transformer` checkpoint as a directory `run` loads (`adaptsim convert fairseq`, adaptsim/commands/
convert.py), without importing fairseq (fairseq 0.12.2 does not install on Python 3.11).

Where it goes, and why not MarianMTModel. transformers' Marian computes its sinusoidal positions with
another frequency formula (10000^(2k/d) instead of fairseq's exp(-k·ln(10000)/(d/2 − 1))) and from
position 0 instead of fairseq's padding_idx + 1, and does not store them, so no Marian checkpoint can
reproduce a fairseq model's logits. `FSMTForConditionalGeneration` is transformers' port of exactly this
architecture (post-norm, scaled embeddings, fairseq's sinusoidal table and offset, separate source/target
vocabularies, an output projection tied to the target embeddings or not), so the model is written as FSMT
and the tokenizer as Marian's (source.spm/target.spm + vocab.json [+ target_vocab.json]): the same
`save_pretrained` layout and tokenizer `run` reads for Marian models. adaptsim/models/arch.py `fsmt` describes it.

Supported: post-norm (`encoder/decoder_normalize_before` false, fairseq's `transformer` default and the
paper's setting), sinusoidal positions, no embedding layer norm, shared or separate embeddings. Anything
else (pre-norm, learned positions, layernorm_embedding, unequal encoder/decoder widths) stops with one line
naming the setting: FSMT cannot compute it, and a silently different network would be worse than none.
Embeddings: `share_all_embeddings` is FSMT's `tie_word_embeddings` (one matrix: source, target, output, as
in fairseq). FSMT cannot tie the output to the target embeddings alone (tying ties all three), so
`share_decoder_input_output_embed` without shared source embeddings becomes two equal matrices: the same
network, but `full`/`lasso` adapt the target embeddings and the output projection as separate tensors.

Dictionaries: fairseq's ids are <s>=0 <pad>=1 </s>=2 <unk>=3, then dict.txt's lines in order (`symbol
count [flags]`), then `madeupwordNNNN` fillers up to the embedding's rows (fairseq pads to a multiple of 8).
vocab.json maps those symbols to those ids; a sentencepiece piece missing from the dictionary becomes
<unk>, as in fairseq. The source gets </s> appended and the decoder starts with </s>, as in fairseq.

Reading: `torch.load(weights_only=True)` with argparse.Namespace allowed (fairseq < 0.10 keeps its settings
as `args`). fairseq ≥ 0.10 pickles an omegaconf `cfg`, which weights_only refuses: `--trust-checkpoint`
unpickles it fully (that runs code from the file: only for checkpoints you trust).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
from pathlib import Path

import torch

from adaptsim.errors import UserError

SPECIALS = ["<s>", "<pad>", "</s>", "<unk>"]  # fairseq Dictionary's first four symbols, ids 0..3
PAD, EOS, BOS = 1, 2, 0
_SKIPPED = re.compile(r"(^|\.)version$|embed_positions\._float_tensor$")  # bookkeeping, no weights


def load_checkpoint(path: Path, trust: bool) -> dict:
    if not path.is_file():
        raise UserError(f"{path}: no such checkpoint file")
    try:
        if trust:
            return torch.load(path, map_location="cpu", weights_only=False)
        with torch.serialization.safe_globals([argparse.Namespace]):
            return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:
        first = (str(e).strip().splitlines() or [""])[0][:160]
        hint = "" if trust else ("; a fairseq ≥ 0.10 checkpoint pickles its config: pass --trust-checkpoint if you "
                                 "trust the file")
        raise UserError(f"{path}: cannot read the checkpoint ({type(e).__name__}: {first}){hint}") from None


def settings(state: dict, path: Path) -> dict:
    """The model settings of a checkpoint: `cfg.model` (fairseq ≥ 0.10; a dict or, trusted, an omegaconf
    node) or `args` (older), as a plain dict, with the task's languages."""
    cfg = state.get("cfg")
    if cfg is not None:
        try:
            from omegaconf import OmegaConf

            if OmegaConf.is_config(cfg):
                cfg = OmegaConf.to_container(cfg, resolve=True)
        except ImportError:
            pass
        model, task = cfg.get("model"), cfg.get("task") or {}
    else:
        model = task = state.get("args")
    if model is None:
        raise UserError(f"{path}: neither `cfg.model` nor `args` in the checkpoint: not a fairseq checkpoint")
    model = dict(vars(model)) if isinstance(model, argparse.Namespace) else dict(model)
    task = dict(vars(task)) if isinstance(task, argparse.Namespace) else dict(task)
    model.setdefault("source_lang", task.get("source_lang"))
    model.setdefault("target_lang", task.get("target_lang"))
    return model


def _need(s: dict, key: str, path: Path):
    if s.get(key) is None:
        raise UserError(f"{path}: the checkpoint's settings lack `{key}`")
    return s[key]


def check_supported(s: dict, path: Path) -> None:
    """Refuse what FSMT cannot compute. Flags older fairseq versions did not have are absent there: absent
    means the feature did not exist, i.e. off."""
    for key, why in (("encoder_normalize_before", "pre-norm"), ("decoder_normalize_before", "pre-norm"),
                     ("encoder_learned_pos", "learned positions"), ("decoder_learned_pos", "learned positions"),
                     ("layernorm_embedding", "a layer norm on the embeddings"),
                     ("no_token_positional_embeddings", "no positions")):
        if s.get(key):
            raise UserError(f"{path}: {key}=True ({why}) is not supported: the converted model (transformers FSMT, "
                            "fairseq's post-norm transformer) cannot compute it")
    if _need(s, "encoder_embed_dim", path) != _need(s, "decoder_embed_dim", path):
        raise UserError(f"{path}: encoder_embed_dim={s['encoder_embed_dim']} ≠ decoder_embed_dim="
                        f"{s['decoder_embed_dim']} is not supported")


def read_dictionary(path: Path, rows: int, role: str) -> list[str]:
    """fairseq Dictionary symbols by id: the four specials, dict.txt's symbols, fillers up to `rows`."""
    if not path.is_file():
        raise UserError(f"--dict-{role} {path}: no such file")
    symbols = list(SPECIALS)
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        parts = line.rstrip().rsplit(" ", 2 if line.rstrip().endswith("#fairseq:overwrite") else 1)
        if len(parts) < 2 or not parts[1].lstrip("-").isdigit():
            raise UserError(f"{path}:{n}: expected `symbol count`, got {line[:60]!r}")
        if parts[0] in symbols[:4]:
            continue  # a dictionary may list a special again (#fairseq:overwrite): it keeps its id
        symbols.append(parts[0])
    if len(symbols) > rows:
        raise UserError(f"{path}: {len(symbols)} symbols but the checkpoint's {role} embedding has {rows} rows: "
                        "not this checkpoint's dictionary")
    symbols += [f"madeupword{i:04d}" for i in range(rows - len(symbols))]
    return symbols


def map_weights(sd: dict, s: dict, path: Path) -> tuple[dict, bool, bool]:
    """fairseq keys → FSMT keys; (weights, all embeddings shared)."""
    out, unknown = {}, []
    for key, value in sd.items():
        if _SKIPPED.search(key):
            continue
        if key in ("decoder.embed_out", "decoder.output_projection.weight"):
            out["model.decoder.output_projection.weight"] = value
        elif re.match(r"(encoder|decoder)\.(embed_tokens\.weight|layers\.\d+\.)", key):
            out["model." + key] = value
        else:
            unknown.append(key)
    if unknown:
        raise UserError(f"{path}: weights {', '.join(unknown[:4])} have no place in fairseq's post-norm transformer "
                        "(a pre-norm model has encoder.layer_norm.*): not supported")
    share_all = bool(s.get("share_all_embeddings"))
    if "model.decoder.embed_tokens.weight" not in out and share_all:
        out["model.decoder.embed_tokens.weight"] = out["model.encoder.embed_tokens.weight"]
    if "model.decoder.output_projection.weight" not in out:
        if not (share_all or s.get("share_decoder_input_output_embed")):
            raise UserError(f"{path}: no output projection (decoder.embed_out) and the embeddings are not shared")
        out["model.decoder.output_projection.weight"] = out["model.decoder.embed_tokens.weight"].clone()
    return out, share_all


def convert(checkpoint: Path, dict_src: Path, dict_tgt: Path, spm_src: Path, spm_tgt: Path, out: Path,
            trust: bool = False) -> Path:
    from transformers import FSMTConfig, FSMTForConditionalGeneration, MarianTokenizer

    state = load_checkpoint(checkpoint, trust)
    s = settings(state, checkpoint)
    check_supported(s, checkpoint)
    sd = state.get("model")
    if not isinstance(sd, dict):
        raise UserError(f"{checkpoint}: no `model` weights in the checkpoint")
    weights, share_all = map_weights(sd, s, checkpoint)
    src_rows = weights["model.encoder.embed_tokens.weight"].shape[0]
    tgt_rows = weights["model.decoder.embed_tokens.weight"].shape[0]
    layers = {side: len({k.split(".")[3] for k in weights if k.startswith(f"model.{side}.layers.")})
              for side in ("encoder", "decoder")}
    for side in layers:
        if layers[side] != _need(s, f"{side}_layers", checkpoint):
            raise UserError(f"{checkpoint}: {side}_layers={s[f'{side}_layers']} but the weights have {layers[side]}")
    for spm_file, flag in ((spm_src, "--spm"), (spm_tgt, "--spm-tgt")):
        if not spm_file.is_file():
            raise UserError(f"{flag} {spm_file}: no such file")
    src_symbols = read_dictionary(dict_src, src_rows, "src")
    tgt_symbols = read_dictionary(dict_tgt, tgt_rows, "tgt")

    config = FSMTConfig(
        langs=[s.get("source_lang") or "src", s.get("target_lang") or "tgt"],
        src_vocab_size=src_rows, tgt_vocab_size=tgt_rows, d_model=s["encoder_embed_dim"],
        encoder_layers=layers["encoder"], decoder_layers=layers["decoder"],
        encoder_attention_heads=_need(s, "encoder_attention_heads", checkpoint),
        decoder_attention_heads=_need(s, "decoder_attention_heads", checkpoint),
        encoder_ffn_dim=_need(s, "encoder_ffn_embed_dim", checkpoint),
        decoder_ffn_dim=_need(s, "decoder_ffn_embed_dim", checkpoint),
        activation_function=s.get("activation_fn") or "relu",  # fairseq's only choice before the flag existed
        max_position_embeddings=max(_need(s, "max_source_positions", checkpoint),
                                    _need(s, "max_target_positions", checkpoint)),
        scale_embedding=not s.get("no_scale_embedding"), tie_word_embeddings=share_all,
        dropout=float(s.get("dropout") or 0.0), attention_dropout=float(s.get("attention_dropout") or 0.0),
        activation_dropout=float(s.get("activation_dropout") or 0.0),
        pad_token_id=PAD, bos_token_id=BOS, eos_token_id=EOS, decoder_start_token_id=EOS, forced_eos_token_id=EOS)
    net = FSMTForConditionalGeneration(config)
    missing, unexpected = net.load_state_dict(weights, strict=False)
    missing = [k for k in missing if "embed_positions" not in k]
    if missing or unexpected:
        raise UserError(f"{checkpoint}: weights do not fit the settings (missing {missing[:3]}, "
                        f"unexpected {unexpected[:3]})")
    # positions: FSMT computes fairseq's sinusoidal table itself (and does not save it)
    g = net.generation_config
    g.decoder_start_token_id, g.pad_token_id, g.eos_token_id, g.bos_token_id = EOS, PAD, EOS, BOS

    out.mkdir(parents=True, exist_ok=True)
    separate = src_symbols != tgt_symbols or not share_all
    shutil.copyfile(spm_src, out / "source.spm")
    shutil.copyfile(spm_tgt, out / "target.spm")
    (out / "vocab.json").write_text(json.dumps({p: i for i, p in enumerate(src_symbols)}, ensure_ascii=False),
                                    encoding="utf-8")
    if separate:
        (out / "target_vocab.json").write_text(json.dumps({p: i for i, p in enumerate(tgt_symbols)},
                                                          ensure_ascii=False), encoding="utf-8")
    tokenizer = MarianTokenizer(source_spm=str(out / "source.spm"), target_spm=str(out / "target.spm"),
                                vocab=str(out / "vocab.json"), separate_vocabs=separate,
                                target_vocab_file=str(out / "target_vocab.json") if separate else None,
                                source_lang=config.langs[0], target_lang=config.langs[1],
                                model_max_length=config.max_position_embeddings)
    tokenizer.save_pretrained(str(out))
    net.save_pretrained(str(out))
    return out
