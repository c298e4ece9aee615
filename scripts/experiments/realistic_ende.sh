#!/usr/bin/env bash
# The paper's comparison on real English–German data (issue 8), with adaptsim's own commands only.
#
#   bash scripts/experiments/realistic_ende.sh            # from the repository root, ../shared beside it
#
# 1. train an en→de base model on ../shared/data/general (WMT/Tatoeba/Multi30k/FLORES test sets, 54k pairs;
#    validation: newstest2018). ape-it/ is not used for training: it stays an unseen IT domain.
# 2. select-fixed on held-out GNOME help topics (not those of the test documents);
# 3. the six-method sweep on the TED talks and on GNOME help (documents = help topics);
# 4. tables (absolute and relative) and Figure-2 curves into docs/results/.
# Model weights go to the cache directory (MODEL_PATH), never into git. Every step is seeded; run again after
# an interruption and training resumes from its last checkpoint (raise MAX_STEPS to train longer).
#
# Settings (environment): MODEL (a configs/model entry with an arch block; default realistic-cpu, the 2-core
# CPU model; paper-transformer on a GPU), VOCAB (sentencepiece size per side, default 8000), MAX_STEPS
# (training updates, default 4000), LR / WARMUP (peak learning rate 1e-3 after 1000 steps), VALID_EVERY (500),
# MODEL_PATH (where the model is saved), DEVICE (cpu | cuda), MAX_SEGMENTS (per document in the sweeps, default 60), RESULTS (default docs/results).
set -euo pipefail
cd "$(dirname "$0")/../.."

SHARED=${ADAPTSIM_SHARED:-$(cd .. && pwd)/shared}
MODEL=${MODEL:-realistic-cpu}
VOCAB=${VOCAB:-8000}
MAX_STEPS=${MAX_STEPS:-4000}
LR=${LR:-1e-3}
WARMUP=${WARMUP:-1000}
VALID_EVERY=${VALID_EVERY:-500}
DEVICE=${DEVICE:-cpu}
MAX_SEGMENTS=${MAX_SEGMENTS:-60}
RESULTS=${RESULTS:-docs/results}
SWEEPS=${SWEEPS:-outputs/realistic_ende}
GNOME_TEST='[printing,power,color,disk,mouse]'
GNOME_HELDOUT='[a11y,user,bluetooth,sound,backup,sharing]'
GENERAL=$SHARED/data/general
export ADAPTSIM_SHARED=$SHARED

[ -d "$GENERAL" ] || { echo "realistic_ende.sh: $GENERAL not found (set ADAPTSIM_SHARED)" >&2; exit 1; }
mkdir -p "$RESULTS" "$SWEEPS"
MODEL_PATH=${MODEL_PATH:-${XDG_CACHE_HOME:-$HOME/.cache}/adaptsim/models/realistic_ende-$MODEL}
CONFIGS=$PWD/$SWEEPS/configs   # the generated method config of step 2, found through hydra.searchpath
COMMON=(model="$MODEL" model.path="$MODEL_PATH" device="$DEVICE" progress=false)

echo "== 1. base model: $MODEL → $MODEL_PATH"
python -m adaptsim train "${COMMON[@]}" model.vocab.size="$VOCAB" \
  train.source="$GENERAL/train.en" train.target="$GENERAL/train.de" \
  train.valid_source="$GENERAL/dev.en" train.valid_target="$GENERAL/dev.de" \
  train.max_steps="$MAX_STEPS" train.lr="$LR" train.warmup="$WARMUP" \
  train.valid_every="$VALID_EVERY" train.resume="$([ -d "$MODEL_PATH/last" ] && echo true || echo false)"

echo "== 2. select-fixed on held-out GNOME topics $GNOME_HELDOUT"
python -m adaptsim select-fixed "${COMMON[@]}" name=realistic output="$CONFIGS/method/fixed_realistic.yaml" \
  dataset=gnome_help "dataset.documents=$GNOME_HELDOUT" dataset.max_segments="$MAX_SEGMENTS" \
  hydra.run.dir="$SWEEPS/select_fixed"

echo "== 3. sweeps"
METHODS=none,full,bias,fixed_realistic,top,lasso
python -m adaptsim run -m +experiment=paper_methods method=$METHODS "${COMMON[@]}" "hydra.searchpath=[file://$CONFIGS]" \
  dataset=ted dataset.max_segments="$MAX_SEGMENTS" hydra.sweep.dir="$SWEEPS/ted"
python -m adaptsim run -m +experiment=paper_methods method=$METHODS "${COMMON[@]}" "hydra.searchpath=[file://$CONFIGS]" \
  dataset=gnome_help "dataset.documents=$GNOME_TEST" dataset.max_segments="$MAX_SEGMENTS" \
  hydra.sweep.dir="$SWEEPS/gnome_help"

echo "== 4. tables and curves → $RESULTS"
python -m adaptsim table "$SWEEPS/ted" "$SWEEPS/gnome_help" | tee "$RESULTS/tables_absolute.md"
python -m adaptsim table "$SWEEPS/ted" "$SWEEPS/gnome_help" --relative | tee "$RESULTS/tables_relative.md"
python -m adaptsim plot "$SWEEPS/ted" --out "$RESULTS/curves_ted.png"
python -m adaptsim plot "$SWEEPS/gnome_help" --out "$RESULTS/curves_gnome_help.png"
cp "$MODEL_PATH/training.json" "$RESULTS/training.json"
