"""Does padding training batches to a few lengths help bf16 training on the CPU? oneDNN builds kernels per tensor
shape, and length-bucketed batches come in many shapes; padding every batch's length up to a multiple of M gives
fewer shapes but more (masked) work.

    python scripts/bench_train_shapes.py --multiple 1      # exact lengths (what `adaptsim train` does)
    python scripts/bench_train_shapes.py --multiple 16     # lengths padded up to a multiple of 16

The paper's architecture (base-ende's shape: 6/3 layers, d_model 256, one tied 16k vocabulary; random weights),
`--steps` batches of about 6,000 tokens with random lengths 8–100 (the same lengths for every --multiple at one
--seed), forward + backward + Adam under bf16 autocast, one thread. Prints real (unpadded) target tokens per CPU
second of the process: comparable between runs beside other load, unlike wall time.
"""

from __future__ import annotations

import argparse
import random
import time

import torch
from transformers import MarianConfig, MarianMTModel


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--multiple", type=int, default=1)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batch-tokens", type=int, default=6000)
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    cfg = MarianConfig(vocab_size=16000, decoder_vocab_size=16000, d_model=256, encoder_layers=6, decoder_layers=3,
                       encoder_attention_heads=8, decoder_attention_heads=8, encoder_ffn_dim=1024,
                       decoder_ffn_dim=1024, share_encoder_decoder_embeddings=True, tie_word_embeddings=True,
                       pad_token_id=0, decoder_start_token_id=0, max_position_embeddings=256)
    model = MarianMTModel(cfg)
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    rng = random.Random(args.seed)
    lengths = [rng.randint(8, 100) for _ in range(args.steps)]

    def step(length: int) -> int:
        padded = -(-length // args.multiple) * args.multiple
        rows = max(1, args.batch_tokens // padded)
        x = torch.randint(1, 16000, (rows, padded))
        x[:, length:] = 0
        y = torch.randint(1, 16000, (rows, padded))
        labels = y.clone()
        labels[:, length:] = -100
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = model(input_ids=x, attention_mask=x.ne(0).long(), decoder_input_ids=y, labels=labels).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
        return rows * length

    start = time.process_time()
    tokens = sum(step(n) for n in lengths)
    seconds = time.process_time() - start
    shapes = len({-(-n // args.multiple) * args.multiple for n in lengths})
    print(f"--multiple {args.multiple}: {args.steps} steps, {shapes} distinct lengths, "
          f"{tokens / seconds:.0f} real target tokens per CPU second ({seconds:.1f} s)")


if __name__ == "__main__":
    main()
