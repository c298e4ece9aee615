"""`adaptsim convert fairseq CHECKPOINT.pt --dict-src dict.en.txt --dict-tgt dict.de.txt --spm spm.model --out DIR`:
a fairseq `transformer` checkpoint as a directory `run` loads (model.path=DIR), without importing fairseq
(fairseq 0.12.2 does not install on Python 3.11).

What is converted, and why as FSMT: adaptsim/basemodel/convert.py.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from adaptsim.basemodel.convert import convert


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="adaptsim convert", description=__doc__.split("\n\n")[0])
    parser.add_argument("kind", choices=["fairseq"], help="the checkpoint's toolkit")
    parser.add_argument("checkpoint", type=Path)
    parser.add_argument("--dict-src", type=Path, required=True, help="fairseq source dictionary (dict.en.txt)")
    parser.add_argument("--dict-tgt", type=Path, required=True, help="fairseq target dictionary (dict.de.txt)")
    parser.add_argument("--spm", type=Path, required=True, help="the sentencepiece model the data was encoded with")
    parser.add_argument("--spm-tgt", type=Path, help="the target side's, if it had its own (default: --spm)")
    parser.add_argument("--out", type=Path, required=True, help="the model directory to write (model.path=…)")
    parser.add_argument("--trust-checkpoint", action="store_true",
                        help="unpickle the checkpoint fully (needed for fairseq ≥ 0.10's config; runs code from it)")
    a = parser.parse_args(argv)
    out = convert(a.checkpoint, a.dict_src, a.dict_tgt, a.spm, a.spm_tgt or a.spm, a.out, a.trust_checkpoint)
    print(f"wrote {out}: python -m adaptsim run model.path={out} …")
    return 0
