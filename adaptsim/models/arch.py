"""Per-architecture knowledge the adaptation methods need, one small function per architecture.

Methods never reach into a model's attribute names: they ask the `Architecture` for the ordered
encoder/decoder layers, which parameters are embeddings (and in which role), the module whose
output are the logits (where `bias`/`lasso` add their second bias) and the linear maps `lora` adapts by
default. A new architecture is one more function like `marian`, registered in `ARCHITECTURES` under its
`config.model_type`.

Decoder-only (causal) language models (GPT-2, Llama, Mistral, Qwen2/3, Gemma 1/2/3) have no encoder: their
`encoder_layers` is empty, their blocks are the decoder layers, and the one input embedding reads both the
source (in the prompt) and the target, so it has both roles (and "output" where lm_head is tied to it).

What is *not* here: how a multilingual model is told the languages (NLLB/M2M100's and mBART-50's
language tokens, T5's task prefix). That is a property of the checkpoint, not of the architecture (one
`m2m_100` architecture serves M2M100 with `__de__` and NLLB with `deu_Latn`), so it comes from the model
config (`model.languages`, adaptsim/models/ `Languages`). The adapter only says whether the
architecture is one whose checkpoints need a forced target-language token (`needs_target_token`), so a
config that forgets it stops with one line instead of translating into whatever language comes first.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import nn

from adaptsim.errors import UserError


@dataclass
class Architecture:
    encoder_layers: list[nn.Module]
    decoder_layers: list[nn.Module]
    # parameter name (as in model.named_parameters()) -> roles among {"source", "target", "output"};
    # a tied matrix has several roles but is one tensor.
    embeddings: dict[str, set[str]]
    output_layer: nn.Module  # its forward output are the logits (before any fixed final bias)
    # parameters that are not learned at all (e.g. sinusoidal position tables): never trained
    constants: list[str]
    # the longest input the position table accepts (tokens, with specials); None: relative positions,
    # no table to overflow (T5): the tokenizer's model_max_length is the limit then (adaptsim/models/)
    max_positions: int | None
    # multilingual checkpoints of this architecture translate into the language of the first target
    # token, which must be forced: model.languages.target_token is then required
    needs_target_token: bool = False
    # shell patterns over module names: the attention and feed-forward linear maps, what `lora` adapts with
    # `modules: auto` (not the output projection); a pattern may match nothing (T5 v1.0 has wi, v1.1 wi_0/wi_1)
    adapted_maps: tuple[str, ...] = ("*.q_proj", "*.k_proj", "*.v_proj", "*.out_proj", "*.fc1", "*.fc2")

    @property
    def decoder_only(self) -> bool:
        return not self.encoder_layers


def _roles(model, source: nn.Module, target: nn.Module, output: nn.Module) -> dict[str, set[str]]:
    """Parameter name -> roles. `named_parameters` lists a tied tensor once, under its first name, so a
    tied source/target/output matrix ends up as one entry with three roles."""
    names = {id(p): n for n, p in model.named_parameters()}
    roles: dict[str, set[str]] = {}
    for role, module in (("source", source), ("target", target), ("output", output)):
        roles.setdefault(names[id(module.weight)], set()).add(role)
    return roles


def _parameter_names(model, modules) -> list[str]:
    """The names of the parameters (not buffers) of `modules`: sinusoidal tables that a model keeps as
    parameters (Marian) are constants; where they are buffers (M2M100) nothing is listed."""
    names = {id(p): n for n, p in model.named_parameters()}
    return [names[id(p)] for m in modules for p in m.parameters(recurse=False) if id(p) in names]


def marian(model) -> Architecture:
    """transformers MarianMTModel (OPUS-MT and models saved by `adaptsim train` or `adaptsim convert`).
    Sinusoidal positions stored as a (frozen) parameter: constants."""
    inner = model.model
    return Architecture(list(inner.encoder.layers), list(inner.decoder.layers),
                        _roles(model, inner.encoder.embed_tokens, inner.decoder.embed_tokens, model.lm_head),
                        model.lm_head,
                        _parameter_names(model, (inner.encoder.embed_positions, inner.decoder.embed_positions)),
                        int(model.config.max_position_embeddings))


def m2m_100(model) -> Architecture:
    """M2M100ForConditionalGeneration: M2M100 and NLLB-200 (dense). One `shared` matrix is source, target
    and output embedding. Sinusoidal positions are a non-persistent buffer (no parameter: nothing to
    freeze); transformers offsets positions by padding_idx + 1, as fairseq does, so the table has
    max_position_embeddings + 2 rows and max_position_embeddings is the usable length."""
    inner = model.model
    return Architecture(list(inner.encoder.layers), list(inner.decoder.layers),
                        _roles(model, inner.encoder.embed_tokens, inner.decoder.embed_tokens, model.lm_head),
                        model.lm_head, [], int(model.config.max_position_embeddings), needs_target_token=True)


def mbart(model) -> Architecture:
    """MBartForConditionalGeneration (mBART-50, mBART-cc25 fine-tunes). Positions are *learned* (a
    trainable table with offset 2: they are adapted by `full`/`lasso` like any tensor, not constants).
    `final_logits_bias` is a zero buffer added after lm_head: the second bias of `bias`/`lasso` goes on
    lm_head's output, before it, which is the same sum."""
    inner = model.model
    return Architecture(list(inner.encoder.layers), list(inner.decoder.layers),
                        _roles(model, inner.encoder.embed_tokens, inner.decoder.embed_tokens, model.lm_head),
                        model.lm_head, [], int(model.config.max_position_embeddings), needs_target_token=True)


def t5(model) -> Architecture:
    """T5ForConditionalGeneration / MT5ForConditionalGeneration. Layers are `block`s; the relative
    attention bias lives in block 0 of each stack and is shared by all blocks (it is trained
    by `full`/`lasso`/`fixed`; `top` trains the last block's own tensors, and the shared bias stays frozen).
    T5 v1.0 ties the output projection to `shared` (and rescales the decoder output by d_model^-0.5
    before it, inside the model); T5 v1.1/mT5 have a separate `lm_head`: roles say which. No position
    table (relative positions), so no constants and no max_positions."""
    return Architecture(list(model.encoder.block), list(model.decoder.block),
                        _roles(model, model.encoder.embed_tokens, model.decoder.embed_tokens, model.lm_head),
                        model.lm_head, [], None, adapted_maps=("*.q", "*.k", "*.v", "*.o", "*.wi", "*.wi_0",
                                                                "*.wi_1", "*.wo"))


def fsmt(model) -> Architecture:
    """FSMTForConditionalGeneration: transformers' port of fairseq's post-norm `transformer`, what
    `adaptsim convert fairseq` writes. Source embeddings, target embeddings and `decoder.output_projection`
    are three matrices, or one when `tie_word_embeddings` (transformers 5 ties all three together);
    fairseq's sinusoidal positions are frozen parameters (constants).
    Given `labels` alone FSMT shifts the source into the decoder, so pairs carry decoder_input_ids."""
    inner = model.model
    return Architecture(list(inner.encoder.layers), list(inner.decoder.layers),
                        _roles(model, inner.encoder.embed_tokens, inner.decoder.embed_tokens,
                               inner.decoder.output_projection),
                        inner.decoder.output_projection,
                        _parameter_names(model, (inner.encoder.embed_positions, inner.decoder.embed_positions)),
                        int(model.config.max_position_embeddings))


def gpt2(model) -> Architecture:
    """GPT2LMHeadModel: blocks `transformer.h`; learned positions `wpe` (trained by `full`/`lasso` like any tensor,
    as mBART's); `lm_head` tied to `wte`. Its linear maps are transformers' `Conv1D` (weight stored in × out, which
    `lora` handles): `attn.c_attn` (q, k and v in one map: one adapter over all three, as peft adapts it),
    `attn.c_proj`, `mlp.c_fc`, `mlp.c_proj`."""
    inner = model.transformer
    return Architecture([], list(inner.h), _roles(model, inner.wte, inner.wte, model.lm_head), model.lm_head, [],
                        int(model.config.n_positions),
                        adapted_maps=("*.attn.c_attn", "*.attn.c_proj", "*.mlp.c_fc", "*.mlp.c_proj"))


def llama(model) -> Architecture:
    """LlamaForCausalLM and the models laid out as it is: `model.embed_tokens`, blocks `model.layers`, `model.norm`,
    `lm_head` (tied to the embeddings or not: roles say which). Mistral, Qwen2 (biases on q, k, v), Qwen3 (norms on
    q and k), Gemma (embeddings scaled by √d inside the model, a buffer), Gemma 2 (logits soft-capped after lm_head:
    adaptsim/models/causal.py applies the cap where it computes logits from lm_head's inputs, as the forward does) and
    Gemma 3's text model. Rotary positions are buffers: no constants; `max_position_embeddings` is the longest
    sequence, prompt and target together."""
    inner = model.model
    return Architecture([], list(inner.layers), _roles(model, inner.embed_tokens, inner.embed_tokens, model.lm_head),
                        model.lm_head, [], int(model.config.max_position_embeddings),
                        adapted_maps=("*.q_proj", "*.k_proj", "*.v_proj", "*.o_proj", "*.gate_proj", "*.up_proj",
                                      "*.down_proj"))


ARCHITECTURES = {"marian": marian, "m2m_100": m2m_100, "mbart": mbart, "t5": t5, "mt5": t5, "fsmt": fsmt,
                 "gpt2": gpt2, "llama": llama, "mistral": llama, "qwen2": llama, "qwen3": llama, "gemma": llama,
                 "gemma2": llama, "gemma3_text": llama}


def describe(model) -> Architecture:
    model_type = getattr(model.config, "model_type", None)
    if model_type not in ARCHITECTURES:
        raise UserError(f"model type {model_type!r} is not supported (supported: {', '.join(ARCHITECTURES)}); "
                        "add an adapter in adaptsim/models/arch.py")
    return ARCHITECTURES[model_type](model)
