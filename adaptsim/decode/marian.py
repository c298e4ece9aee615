"""One decoding step of a Marian model (transformers `MarianMTModel`: OPUS-MT, `adaptsim train`, `adaptsim
convert`), incrementally, with a key/value cache.

The same operations as transformers' decoder forward with its cache, in the same order and on the same
modules, without what a general forward does around them at every token (masks rebuilt, cache classes,
output wrappers, the cross-attention keys and values recomputed for every beam). The modules are called, not
their weights, so forward hooks on them (the `bias` and `lasso` second bias on the output layer, `lora`'s
adapters) act as they do in the model's own forward. A hook on the whole network (`memory`) is not seen
here: such a model decodes with `generate` (adaptsim/decode/__init__.py).

Attention is `scaled_dot_product_attention` with no mask, as transformers calls it while decoding one source:
no padding, and one query position attends to every cached position.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.functional import scaled_dot_product_attention as sdpa


def supports(net) -> bool:
    return net.config.model_type == "marian"


class MarianStep:
    def __init__(self, net, input_ids: torch.Tensor, attention_mask: torch.Tensor, beams: int):
        """Encode the source(s) [batch, length] once and precompute each decoder layer's cross-attention keys and
        values, repeated for the `beams` beams of each source (as generate expands the encoder output)."""
        inner = net.model
        self.decoder, self.lm_head, self.final_bias = inner.decoder, net.lm_head, net.final_logits_bias
        self.heads = net.config.decoder_attention_heads
        encoded = inner.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        encoded = encoded.repeat_interleave(beams, dim=0)
        # contiguous, as transformers' cache stores them (its first update concatenates them to an empty tensor)
        self.cross = [tuple(self._split(proj(encoded)).contiguous() for proj in (layer.encoder_attn.k_proj,
                                                                                  layer.encoder_attn.v_proj))
                      for layer in self.decoder.layers]
        self.cache: list[tuple[torch.Tensor, torch.Tensor]] | None = None
        self.position = 0

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        """[beams, length, d] -> [beams, heads, length, d / heads]"""
        return x.view(x.shape[0], x.shape[1], self.heads, -1).transpose(1, 2)

    def _attend(self, attn: nn.Module, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        out = sdpa(q, k, v, attn_mask=None, dropout_p=0.0, scale=attn.scaling, is_causal=False)
        out = out.transpose(1, 2).contiguous()
        return attn.out_proj(out.reshape(out.shape[0], out.shape[1], -1).contiguous())

    def logits(self, tokens: torch.Tensor) -> torch.Tensor:
        dec = self.decoder
        x = dec.embed_tokens(tokens[:, None]) * dec.embed_scale
        positions = torch.arange(1, device=x.device) + self.position
        x = x + dec.embed_positions((x.shape[0], 1), self.position, position_ids=positions)
        cache = []
        for i, layer in enumerate(dec.layers):
            attn = layer.self_attn
            q, k, v = (self._split(proj(x)) for proj in (attn.q_proj, attn.k_proj, attn.v_proj))
            if self.cache is None:
                k, v = k.contiguous(), v.contiguous()
            else:
                k, v = torch.cat((self.cache[i][0], k), dim=-2), torch.cat((self.cache[i][1], v), dim=-2)
            cache.append((k, v))
            x = layer.self_attn_layer_norm(x + self._attend(attn, q, k, v))
            cross = layer.encoder_attn
            x = layer.encoder_attn_layer_norm(x + self._attend(cross, self._split(cross.q_proj(x)), *self.cross[i]))
            x = layer.final_layer_norm(x + layer.fc2(layer.activation_fn(layer.fc1(x))))
        self.cache, self.position = cache, self.position + 1
        return (self.lm_head(x) + self.final_bias)[:, -1, :].to(dtype=torch.float32)

    def reorder(self, beams: torch.Tensor) -> None:
        self.cache = [(k.index_select(0, beams), v.index_select(0, beams)) for k, v in self.cache]
