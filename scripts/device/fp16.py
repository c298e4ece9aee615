"""A trained model's directory with its weights stored in fp16 (half the bytes: what comes back from a device call,
at most 16 MiB a file, and what is committed); `adaptsim run` loads it in float32 as any model.

    python scripts/device/fp16.py MODEL_DIR OUT_DIR
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import torch
from transformers import MarianMTModel

TOKENIZER = ("source.spm", "target.spm", "vocab.json", "target_vocab.json", "tokenizer_config.json",
             "special_tokens_map.json")


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    source, out = map(Path, argv)
    model = MarianMTModel.from_pretrained(str(source), dtype=torch.float32)
    out.mkdir(parents=True, exist_ok=True)
    model.to(torch.float16).save_pretrained(str(out))
    for name in TOKENIZER:
        if (source / name).is_file():
            shutil.copyfile(source / name, out / name)
    print(f"fp16.py: {sum(p.numel() for p in model.parameters()):,} parameters → {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
