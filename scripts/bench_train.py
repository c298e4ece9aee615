"""Seconds per training step of Marian architectures on this machine: how big a base model can `adaptsim train`
afford? (Why docs/results.md uses model=realistic-cpu on 2 CPU cores.)

    python scripts/bench_train.py                       # the configs below, fp32
    python scripts/bench_train.py --bf16 --threads 2

One step = forward + backward + Adam on a synthetic batch of 128 sentences × 30 source / 32 target tokens
(~4,096 target tokens, `train.batch_tokens`' default). The candidates differ in depth, width and vocabulary:
8,000 pieces per side with separate embeddings (the models' configs) or one joint vocabulary with the
source, target and output embeddings tied (`vocab.shared: true`, `tie_word_embeddings: true`). Prints the
fastest of 3 steps after one warm-up step, and how many steps two hours buy at that speed.
"""

from __future__ import annotations

import argparse
import time

import torch
from transformers import MarianConfig, MarianMTModel

PAPER = dict(d_model=256, encoder_layers=6, decoder_layers=3, encoder_attention_heads=8, decoder_attention_heads=8,
             encoder_ffn_dim=1024, decoder_ffn_dim=1024)
CPU = {**PAPER, "encoder_layers": 3, "decoder_layers": 2}
SEPARATE = dict(vocab_size=8000, decoder_vocab_size=8000, share_encoder_decoder_embeddings=False,
                tie_word_embeddings=False)


def joint(size: int) -> dict:
    return dict(vocab_size=size, decoder_vocab_size=size, share_encoder_decoder_embeddings=True,
                tie_word_embeddings=True)


CONFIGS = {
    "paper-transformer (6+3)": {**PAPER, **SEPARATE},
    "realistic-cpu (3+2)": {**CPU, **SEPARATE},
    "3+2, joint 8k tied": {**CPU, **joint(8000)},
    "3+2, joint 16k tied": {**CPU, **joint(16000)},
    "4+3, joint 8k tied": {**CPU, "encoder_layers": 4, "decoder_layers": 3, **joint(8000)},
    "6+3, joint 8k tied": {**PAPER, **joint(8000)},
    "d128 (6+3)": {**PAPER, **SEPARATE, "d_model": 128, "encoder_ffn_dim": 512, "decoder_ffn_dim": 512,
                   "encoder_attention_heads": 4, "decoder_attention_heads": 4},
}


def step_seconds(arch: dict, bf16: bool) -> tuple[float, int]:
    cfg = MarianConfig(pad_token_id=0, decoder_start_token_id=0, eos_token_id=1, max_position_embeddings=256,
                       **arch)
    model = MarianMTModel(cfg).train()
    opt = torch.optim.Adam(model.parameters(), 1e-4)
    x, y = torch.randint(2, cfg.vocab_size, (128, 30)), torch.randint(2, cfg.vocab_size, (128, 32))
    times = []
    for _ in range(4):
        t = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = model(input_ids=x, labels=y).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
        times.append(time.perf_counter() - t)
    return min(times[1:]), sum(p.numel() for p in model.parameters())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bf16", action="store_true", help="bf16 autocast")
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    args = p.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    for name, arch in CONFIGS.items():
        s, n = step_seconds(arch, args.bf16)
        print(f"{name:26s} {n:>11,d} parameters  {s:.2f} s/step  {7200 / s:>6,.0f} steps in 2 h  "
              f"({'bf16' if args.bf16 else 'fp32'}, {torch.get_num_threads()} threads)", flush=True)


if __name__ == "__main__":
    main()
