"""Peak memory of one `full` update (forward, backward, SGD step on one pair) against the parameter count.

Each size runs in a fresh process on CPU (fp32). The resident set (/proc/self/statm) is read after building
the model (parameters) and after the update with its gradients still held; `peak` is the process's maximum
resident set (ru_maxrss), which also covers the forward/backward activations of the pair — and, an upper
bound, the temporaries of building the model. Plain SGD keeps no optimiser state. Models are M2M100-shaped (NLLB's
architecture), random, with a 32k vocabulary.

    python scripts/update_memory.py            # prints one line per size
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys

SIZES = [(256, 3, 1024), (512, 6, 2048), (768, 6, 3072)]  # d_model, layers, ffn


def rss_mib() -> float:
    import os

    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def measure(d_model: int, layers: int, ffn: int) -> dict:
    import torch
    from transformers import M2M100Config, M2M100ForConditionalGeneration

    torch.set_num_threads(1)
    config = M2M100Config(vocab_size=32000, d_model=d_model, encoder_layers=layers, decoder_layers=layers,
                          encoder_attention_heads=8, decoder_attention_heads=8, encoder_ffn_dim=ffn,
                          decoder_ffn_dim=ffn, max_position_embeddings=256, dropout=0.0)
    before = rss_mib()
    net = M2M100ForConditionalGeneration(config).eval()
    params = sum(p.numel() for p in net.parameters())
    loaded = rss_mib()
    ids = torch.randint(4, 32000, (1, 30))
    opt = torch.optim.SGD(net.parameters(), lr=1e-2)
    loss = net(input_ids=ids, labels=ids).loss
    loss.backward()
    opt.step()
    after = rss_mib()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    param_mib = params * 4 / 2**20
    return {"parameters": params, "param_MiB": round(param_mib), "model_MiB": round(loaded - before),
            "after_update_MiB": round(after - before), "peak_MiB": round(peak - before),
            "after_update_per_param_MiB": round((after - before) / param_mib, 2),
            "peak_per_param_MiB": round((peak - before) / param_mib, 2)}


if __name__ == "__main__":
    if len(sys.argv) == 4:
        print(json.dumps(measure(*map(int, sys.argv[1:]))))
    else:
        for size in SIZES:
            out = subprocess.run([sys.executable, __file__, *map(str, size)], capture_output=True, text=True,
                                 check=True)
            print(size, out.stdout.strip())
