"""One decoding step of a Marian model (transformers `MarianMTModel`: OPUS-MT, `adaptsim train`, `adaptsim
convert`), incrementally, with a key/value cache — for one model, or for K models decoding the same source in
lockstep (adaptsim/loop/lockstep.py).

The same operations as transformers' decoder forward with its cache, in the same order and on the same
modules, without what a general forward does around them at every token (masks rebuilt, cache classes,
output wrappers, the cross-attention keys and values recomputed for every beam). Modules are called, not
their weights, so forward hooks on them (the `bias` and `lasso` second bias on the output layer, `lora`'s
adapters) act as they do in the model's own forward. A hook on the whole network (`memory`) is not seen
here: such a model decodes with `generate` (adaptsim/models/decode/__init__.py).

Attention is `scaled_dot_product_attention` with no mask, as transformers calls it while decoding one source:
no padding, and one query position attends to every cached position.

K models: their beams are stacked (model k's rows are k·beams … (k+1)·beams − 1). At every module position,
the models whose module holds the *same* parameter tensors (frozen tensors that lockstep shares between the
models, adaptsim/loop/lockstep.py) are computed in one call on their stacked rows: the weights are read once for
all of them, which is what a step on a CPU waits for. A row of a matrix product is the same whatever other
rows are computed with it once there are at least `STACK_ROWS` (checked for MKL on two x86 CPUs; fewer rows take
another kernel), so with beams of at least that size the stacked models decode exactly as each alone; with
smaller beams each model's modules are called on its own rows (tests/test_lockstep.py).
"""

from __future__ import annotations

import copy

import torch
from torch import nn
from torch.nn.functional import scaled_dot_product_attention as sdpa

from adaptsim.models.decode import hooks

STACK_ROWS = 4  # the fewest rows per model for which stacking models' rows leaves every row's product unchanged


def supports(net) -> bool:
    return net.config.model_type == "marian"


class Stacked:
    """modules[k] applied to model k's rows, one call per group of modules with the same parameters."""

    def __init__(self, modules: list[nn.Module], rows: int):
        self.modules, self.rows = modules, rows
        groups: dict[tuple, list[int]] = {}
        for k, m in enumerate(modules):
            own = rows < STACK_ROWS or hooks.needs_own_call(m)
            key = ("own", k) if own else tuple(id(t) for t in (*m.parameters(), *m.buffers()))
            groups.setdefault(key, []).append(k)
        self.groups = [(modules[ks[0]], ks, self._index(ks)) for ks in groups.values()]

    def _index(self, runs: list[int]):
        if runs == list(range(runs[0], runs[-1] + 1)):
            return slice(runs[0] * self.rows, (runs[-1] + 1) * self.rows)
        device = next(self.modules[0].parameters()).device
        return torch.cat([torch.arange(k * self.rows, (k + 1) * self.rows, device=device) for k in runs])

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        if len(self.modules) == 1:
            return self.modules[0](x)
        out = None
        for module, runs, index in self.groups:
            rows = x[index]
            if len(runs) == 1:  # one model: its module as it is called in the model's own forward
                y = module(rows)
            else:  # the shared weights once; each model's (plain) forward hooks on its own rows
                y = module.forward(rows)
                if any(hooks.forward_hooks(self.modules[k]) for k in runs):
                    parts, inputs = list(y.split(self.rows)), rows.split(self.rows)
                    for i, k in enumerate(runs):
                        for hook in hooks.forward_hooks(self.modules[k]):
                            result = hook(self.modules[k], (inputs[i],), parts[i])
                            parts[i] = parts[i] if result is None else result
                    y = torch.cat(parts)
            if len(self.groups) == 1:
                return y
            if out is None:
                out = y.new_empty((x.shape[0], *y.shape[1:]))
            out[index] = y
        return out


class MarianStep:
    def __init__(self, nets: list, input_ids: torch.Tensor, attention_mask: torch.Tensor, beams: int):
        """Encode the source [1, length] with each model once (once per group of models with the same encoder) and
        precompute each decoder layer's cross-attention keys and values, repeated for the beams (as generate
        expands the encoder output)."""
        self.heads = nets[0].config.decoder_attention_heads
        decoders = [net.model.decoder for net in nets]
        self.embed = Stacked([d.embed_tokens for d in decoders], beams)
        self.embed_scale, self.positions = decoders[0].embed_scale, decoders[0].embed_positions
        self.layers = [_Layer([d.layers[i] for d in decoders], beams) for i in range(len(decoders[0].layers))]
        self.lm_head = Stacked([net.lm_head for net in nets], beams)
        self.final_bias = (nets[0].final_logits_bias if len(nets) == 1 else
                           torch.cat([net.final_logits_bias.expand(beams, -1) for net in nets])[:, None, :])
        encoded = _encode(nets, input_ids, attention_mask)
        encoded = [e.repeat_interleave(beams, dim=0) for e in encoded]
        # contiguous, as transformers' cache stores them (its first update concatenates them to an empty tensor)
        self.cross = [tuple(torch.cat([self._split(proj(e)).contiguous() for proj, e in zip(projs, encoded)])
                            for projs in ([lay.encoder_attn.k_proj for lay in layer.layers],
                                          [lay.encoder_attn.v_proj for lay in layer.layers]))
                      for layer in self.layers]
        self.cache: list[tuple[torch.Tensor, torch.Tensor]] | None = None
        self.position = 0

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        """[beams, length, d] -> [beams, heads, length, d / heads]"""
        return x.view(x.shape[0], x.shape[1], self.heads, -1).transpose(1, 2)

    def _attend(self, out_proj: Stacked, scaling: float, q, k, v) -> torch.Tensor:
        out = sdpa(q, k, v, attn_mask=None, dropout_p=0.0, scale=scaling, is_causal=False)
        out = out.transpose(1, 2).contiguous()
        return out_proj(out.reshape(out.shape[0], out.shape[1], -1).contiguous())

    def logits(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens[:, None]) * self.embed_scale
        positions = torch.arange(1, device=x.device) + self.position
        x = x + self.positions((x.shape[0], 1), self.position, position_ids=positions)
        cache = []
        for i, layer in enumerate(self.layers):
            q, k, v = (self._split(proj(x)) for proj in (layer.q, layer.k, layer.v))
            if self.cache is None:
                k, v = k.contiguous(), v.contiguous()
            else:
                k, v = torch.cat((self.cache[i][0], k), dim=-2), torch.cat((self.cache[i][1], v), dim=-2)
            cache.append((k, v))
            x = layer.self_norm(x + self._attend(layer.out, layer.scaling, q, k, v))
            x = layer.cross_norm(x + self._attend(layer.cross_out, layer.scaling, self._split(layer.cross_q(x)),
                                                  *self.cross[i]))
            x = layer.final_norm(x + layer.fc2(layer.activation(layer.fc1(x))))
        self.cache, self.position = cache, self.position + 1
        return (self.lm_head(x) + self.final_bias)[:, -1, :].to(dtype=torch.float32)

    def truncated(self, length: int) -> MarianStep:
        """A copy whose cache holds only the first `length` positions (a shorter prefix of the same tokens)."""
        step = copy.copy(self)
        step.cache = None if length == 0 else [(k[:, :, :length], v[:, :, :length]) for k, v in self.cache]
        step.position = length
        return step

    def reorder(self, beams: torch.Tensor) -> None:
        self.cache = [(k.index_select(0, beams), v.index_select(0, beams)) for k, v in self.cache]


class _Layer:
    """The modules of one decoder layer, stacked over the models."""

    def __init__(self, layers: list[nn.Module], beams: int):
        self.layers = layers
        self.q, self.k, self.v, self.out = (Stacked([getattr(lay.self_attn, n) for lay in layers], beams)
                                            for n in ("q_proj", "k_proj", "v_proj", "out_proj"))
        self.cross_q, self.cross_out = (Stacked([getattr(lay.encoder_attn, n) for lay in layers], beams)
                                        for n in ("q_proj", "out_proj"))
        self.self_norm, self.cross_norm, self.final_norm, self.fc1, self.fc2 = (
            Stacked([getattr(lay, n) for lay in layers], beams)
            for n in ("self_attn_layer_norm", "encoder_attn_layer_norm", "final_layer_norm", "fc1", "fc2"))
        self.scaling, self.activation = layers[0].self_attn.scaling, layers[0].activation_fn


def _encode(nets: list, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> list[torch.Tensor]:
    """Each model's encoder output; models whose encoder has the same parameters and no hooks share one."""
    done: dict[tuple, torch.Tensor] = {}
    out = []
    for k, net in enumerate(nets):
        encoder = net.model.encoder
        hooked = any(hooks.has_forward_hooks(m) for m in encoder.modules())
        key = ("own", k) if hooked else tuple(id(p) for p in encoder.parameters())
        if key not in done:
            done[key] = encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        out.append(done[key])
    return out
