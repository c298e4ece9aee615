"""The floor of one beam-search step on this machine: the matrix products of a Marian model's decoding step alone.

    python scripts/bench_weight_floor.py --model ../shared/models/small-ende-probe --beam 5

Runs, in a loop, exactly the products one decoding step makes (per decoder layer: self-attention q, k, v, out;
cross-attention q, out; fc1, fc2; then the output layer) on `beam` rows, with the model's own weights, and prints
the CPU milliseconds per step. Each weight is another tensor, so the step reads all of them as decoding does:
when this is close to the time the products take inside adaptsim's decoder, decoding waits on reading the
weights, and no bookkeeping change can make it faster.
"""

from __future__ import annotations

import argparse
import time

import torch
from torch.nn.functional import linear

from adaptsim.models import Seq2SeqModel


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--beam", type=int, default=5)
    ap.add_argument("--steps", type=int, default=500)
    args = ap.parse_args()
    torch.set_num_threads(1)
    net = Seq2SeqModel.load(args.model).net
    layers = net.model.decoder.layers
    d = net.config.d_model
    x = torch.randn(args.beam, 1, d)
    products = [m for layer in layers for m in (layer.self_attn.q_proj, layer.self_attn.k_proj, layer.self_attn.v_proj,
                                                layer.self_attn.out_proj, layer.encoder_attn.q_proj,
                                                layer.encoder_attn.out_proj)]

    @torch.inference_mode()
    def step():
        for m in products:
            linear(x, m.weight, m.bias)
        for layer in layers:
            linear(linear(x, layer.fc1.weight, layer.fc1.bias), layer.fc2.weight, layer.fc2.bias)
        linear(x, net.lm_head.weight)

    for _ in range(50):
        step()
    start = time.process_time()
    for _ in range(args.steps):
        step()
    ms = (time.process_time() - start) / args.steps * 1000
    weights = sum(m.weight.numel() for m in products) + sum(lay.fc1.weight.numel() + lay.fc2.weight.numel()
                                                           for lay in layers) + net.lm_head.weight.numel()
    print(f"{len(products) + 2 * len(layers) + 1} products per step on {args.beam} rows, {weights * 4 / 2**20:.1f} MiB "
          f"of weights: {ms:.2f} ms per step")


if __name__ == "__main__":
    main()
