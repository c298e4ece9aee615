#!/usr/bin/env bash
# Resident memory and speed of a long `train` under jemalloc with its decay off, with jemalloc's own decay (10 s)
# and with a 60 s decay (docs/performance.md, "The allocator"): the paper-transformer (40k vocabularies) on
# base-ende's training corpus (../shared/data/base-train, 618,688 pairs), 6,000-token bf16 batches, no validation,
# MINUTES of wall clock each, the arms side by side on one thread each (so each is slowed alike by the others).
#   bash scripts/experiments/train_memory.sh [MINUTES=65] [WORK=/tmp/train_memory]
# Writes WORK/<arm>/rss.tsv (seconds, resident MB every 30 s), WORK/<arm>/training.json and WORK/summary.tsv.
set -euo pipefail
cd "$(dirname "$0")/../.."
MINUTES=${1:-65}
WORK=${2:-/tmp/train_memory}
DATA=../shared/data/base-train
JEMALLOC=$(python -c "from adaptsim.allocator import jemalloc_library as j; print(j() or '')")
[ -n "$JEMALLOC" ] || { echo "libjemalloc.so.2 is not installed (apt-get install libjemalloc2)"; exit 1; }
mkdir -p "$WORK"
for side in en de; do
  [ -s "$WORK/train.$side" ] || zcat "$DATA/train.$side.gz" > "$WORK/train.$side"
done
COMMON=(model=paper-transformer "train.source=$WORK/train.en" "train.target=$WORK/train.de" threads=1
        progress=true progress_every=300 train.dtype=bfloat16 train.batch_tokens=6000 train.valid_every=1000000
        train.overwrite=true)
# One vocabulary for both arms (sentencepiece on 300,000 sampled pairs), written by a one-step training.
if [ ! -s "$WORK/tokenizer/source.spm" ]; then
  python -m adaptsim train "${COMMON[@]}" "model.path=$WORK/tokenizer" train.max_steps=1 allocator=system \
    model.vocab.max_sentences=300000 "hydra.run.dir=$WORK/tokenizer_run" > "$WORK/tokenizer.log" 2>&1
fi

ARMS=(decay_off decay_10s decay_60s)
declare -A CONF=([decay_off]="dirty_decay_ms:-1,muzzy_decay_ms:-1" [decay_10s]="dirty_decay_ms:10000,muzzy_decay_ms:0"
                 [decay_60s]="dirty_decay_ms:60000,muzzy_decay_ms:0")
pids=()
for arm in "${ARMS[@]}"; do
  mkdir -p "$WORK/$arm"
  # the allocator chosen here, not by adaptsim's re-execution (ADAPTSIM_ALLOCATOR marks the process as placed)
  LD_PRELOAD=$JEMALLOC MALLOC_CONF=${CONF[$arm]} ADAPTSIM_ALLOCATOR=jemalloc \
    python -m adaptsim train "${COMMON[@]}" "model.path=$WORK/$arm/model" "train.tokenizer=$WORK/tokenizer" \
    "train.max_minutes=$MINUTES" train.max_steps=null "hydra.run.dir=$WORK/$arm" > "$WORK/$arm/console.log" 2>&1 &
  pid=$!
  pids+=("$pid")
  ( start=$(date +%s); echo -e "seconds\trss_mb" > "$WORK/$arm/rss.tsv"
    while kill -0 "$pid" 2>/dev/null; do
      rss=$(awk '/VmRSS/ {print int($2 / 1024)}' "/proc/$pid/status" 2>/dev/null || true)
      [ -n "$rss" ] && echo -e "$(( $(date +%s) - start ))\t$rss" >> "$WORK/$arm/rss.tsv"
      sleep 30
    done ) &
done
wait "${pids[@]}"
sleep 1
python - "$WORK" "${ARMS[@]}" <<'EOF'
import csv, json, sys
from pathlib import Path

work = Path(sys.argv[1])
rows = ["arm\tsteps\ttokens_per_s\tpeak_rss_mb\trss_mb_at_10_30_60_min"]
for arm in sys.argv[2:]:
    t = json.loads((work / arm / "model" / "training.json").read_text())
    rss = [(int(r["seconds"]), int(r["rss_mb"])) for r in csv.DictReader(open(work / arm / "rss.tsv"), delimiter="\t")]
    at = [next((m for s, m in rss if s >= 60 * minute), None) for minute in (10, 30, 60)]
    rows.append(f"{arm}\t{t['steps']}\t{t['tokens_per_s']}\t{t['peak_rss_mb']}\t{'/'.join(map(str, at))}")
(work / "summary.tsv").write_text("\n".join(rows) + "\n")
print("\n".join(rows))
EOF
