"""Per-architecture knowledge the adaptation methods need, one small function per architecture.

Methods never reach into a model's attribute names: they ask the `Architecture` for the ordered
encoder/decoder layers, which parameters are embeddings (and in which role), and the module whose
output are the logits (where `bias`/`lasso` add their second bias). Adding M2M100/NLLB/mBART means
writing one more function like `marian` and registering it in `ARCHITECTURES`.
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


def marian(model) -> Architecture:
    """transformers MarianMTModel (OPUS-MT and models saved by `adaptsim train`)."""
    inner = model.model
    names = {id(p): n for n, p in model.named_parameters()}
    roles: dict[str, set[str]] = {}
    for role, module in (("source", inner.encoder.embed_tokens), ("target", inner.decoder.embed_tokens),
                         ("output", model.lm_head)):
        roles.setdefault(names[id(module.weight)], set()).add(role)
    constants = [names[id(m.weight)] for m in (inner.encoder.embed_positions, inner.decoder.embed_positions)
                 if id(m.weight) in names]
    return Architecture(list(inner.encoder.layers), list(inner.decoder.layers), roles, model.lm_head, constants)


ARCHITECTURES = {"marian": marian}


def describe(model) -> Architecture:
    model_type = getattr(model.config, "model_type", None)
    if model_type not in ARCHITECTURES:
        raise UserError(f"model type {model_type!r} is not supported (supported: {', '.join(ARCHITECTURES)}); "
                        "add an adapter in adaptsim/arch/__init__.py")
    return ARCHITECTURES[model_type](model)
