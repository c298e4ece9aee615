#!/usr/bin/env bash
# What bf16 costs and changes (docs/performance.md, "bf16"): `full` on the first $DOCS Business
# Central articles with base-ende in four precisions — float32, update.dtype=bfloat16, decode.dtype=bfloat16, both —
# each a one-thread process, resumable; then per precision the seconds per segment (translate, update), how many
# hypotheses differ from float32's, and `adaptsim compare` against float32 (scores with 95% intervals).
#
#   bash scripts/experiments/bf16.sh            # from the repository root, ../shared beside it
set -euo pipefail
export ADAPTSIM_SHARED=${ADAPTSIM_SHARED:-$(cd .. && pwd)/shared}
OUT=${OUT:-outputs/bf16}
MODEL=${MODEL:-base-ende}
DATASET=${DATASET:-business-central}
DOCS=${DOCS:-6}
METHOD=${METHOD:-full}
mkdir -p "$OUT"
declare -A SETTINGS=([fp32]="" [update_bf16]="update.dtype=bfloat16" [decode_bf16]="decode.dtype=bfloat16"
                     [both_bf16]="update.dtype=bfloat16 decode.dtype=bfloat16")
for name in fp32 update_bf16 decode_bf16 both_bf16; do
  python -m adaptsim run method=$METHOD model=$MODEL dataset=$DATASET dataset.max_documents=$DOCS threads=1 \
    progress=false resume=true ${SETTINGS[$name]} hydra.run.dir="$OUT/$name" >>"$OUT/$name.log" 2>&1
done
python - "$OUT" <<'PY'
import json, statistics, sys
from pathlib import Path
out = Path(sys.argv[1])
def steps(name):
    return [json.loads(line) for line in (out / name / "steps.jsonl").read_text(encoding="utf-8").splitlines()]
base = steps("fp32")
for name in ("fp32", "update_bf16", "decode_bf16", "both_bf16"):
    s = steps(name)
    differ = sum(a["hypothesis"] != b["hypothesis"] for a, b in zip(base, s))
    print(f"{name:12} translate median {statistics.median(x['translate_s'] for x in s):.3f} s, update median "
          f"{statistics.median(x['update_s'] for x in s):.3f} s; hypotheses differing from fp32: {differ} of {len(s)}")
PY
python -m adaptsim compare "$OUT/fp32" "$OUT/update_bf16" "$OUT/decode_bf16" "$OUT/both_bf16"
