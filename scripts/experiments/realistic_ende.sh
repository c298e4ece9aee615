#!/usr/bin/env bash
# The paper's comparison on real English–German data, with adaptsim's own commands only.
#
#   bash scripts/experiments/realistic_ende.sh            # from the repository root, ../shared beside it
#
# 1. train an en→de base model on ../shared/data/general (WMT/Tatoeba/Multi30k/FLORES test sets, 54k pairs;
#    validation: newstest2018) and translate all of newstest2018 with it (its BLEU). ape-it/ is not used:
#    held out, it stays an unseen IT domain;
# 2. select-fixed on held-out GNOME help topics (not those of the test documents);
# 3. the six-method sweep on the TED talks and on GNOME help (documents = help topics);
# 4. tables (absolute and relative) and Figure-2 curves into docs/results/.
# Model weights go to the cache directory (MODEL_PATH), never into git. Every step is seeded; run again after
# an interruption and training resumes from its last checkpoint (raise MAX_STEPS to train longer).
#
# Settings (environment), defaults in brackets:
#   MODEL         a configs/model entry with an arch block [realistic-cpu, the 2-core CPU model; on a GPU:
#                 paper-transformer]
#   VOCAB         sentencepiece pieces per side [8000]
#   MAX_STEPS     training updates [2500, about 5.5 epochs]
#   LR, WARMUP    peak learning rate and the steps of warm-up to it [1e-3, 1000]
#   VALID_EVERY   validate and checkpoint every N steps [500]
#   MODEL_PATH    where the model is saved [~/.cache/adaptsim/models/realistic_ende-$MODEL]
#   DEVICE        cpu | cuda [cpu]
#   MAX_SEGMENTS  first N segments of each document in the sweeps [60]
#   JOBS          sweep jobs at once, one thread each [2]
#   RESULTS       where tables, plots and figures go [docs/results]
set -euo pipefail
cd "$(dirname "$0")/../.."

SHARED=${ADAPTSIM_SHARED:-$(cd .. && pwd)/shared}
MODEL=${MODEL:-realistic-cpu}
VOCAB=${VOCAB:-8000}
MAX_STEPS=${MAX_STEPS:-2500}
LR=${LR:-1e-3}
WARMUP=${WARMUP:-1000}
VALID_EVERY=${VALID_EVERY:-500}
DEVICE=${DEVICE:-cpu}
MAX_SEGMENTS=${MAX_SEGMENTS:-60}
JOBS=${JOBS:-2}
RESULTS=${RESULTS:-docs/results}
SWEEPS=${SWEEPS:-outputs/realistic_ende}
GNOME_TEST='[printing,power,color,disk,mouse]'
GNOME_HELDOUT='[a11y,user,bluetooth,sound,backup,sharing]'
GENERAL=$SHARED/data/general
export ADAPTSIM_SHARED=$SHARED

[ -d "$GENERAL" ] || { echo "realistic_ende.sh: $GENERAL not found (set ADAPTSIM_SHARED)" >&2; exit 1; }
mkdir -p "$RESULTS" "$SWEEPS"
MODEL_PATH=${MODEL_PATH:-${XDG_CACHE_HOME:-$HOME/.cache}/adaptsim/models/realistic_ende-$MODEL}
COMMON=(model="$MODEL" model.path="$MODEL_PATH" device="$DEVICE" progress=false)
SKIP=(dataset.on_too_long=skip)   # GNOME help has a 288-token reference; skipped segments are counted in summary.json

echo "== 1. base model: $MODEL → $MODEL_PATH"
python -m adaptsim train "${COMMON[@]}" model.vocab.size="$VOCAB" \
  train.source="$GENERAL/train.en" train.target="$GENERAL/train.de" \
  train.valid_source="$GENERAL/dev.en" train.valid_target="$GENERAL/dev.de" \
  train.max_steps="$MAX_STEPS" train.lr="$LR" train.warmup="$WARMUP" \
  train.valid_every="$VALID_EVERY" train.resume="$([ -d "$MODEL_PATH/last" ] && echo true || echo false)"

echo "== 1b. the base model on general/dev (newstest2018, beam 5, no adaptation), beside steps 2 and 3"
{ python -m adaptsim run "${COMMON[@]}" threads=1 method=none dataset=plain dataset.path="$GENERAL/dev" \
    dataset.name=general_dev "${SKIP[@]}" hydra.run.dir="$SWEEPS/general_dev" >"$SWEEPS/general_dev.log" 2>&1
  python -c "import json,sys; print('general/dev BLEU %.1f' % json.load(open(sys.argv[1]))['scores']['BLEU'])" \
    "$SWEEPS/general_dev/summary.json" >"$RESULTS/general_dev_bleu.txt"; } &
DEV=$!

echo "== 2. select-fixed on held-out GNOME topics $GNOME_HELDOUT"
# writes configs/fixed_lists/$MODEL.yaml, which method=fixed reads for this model (it checks names and shapes)
python -m adaptsim select-fixed "${COMMON[@]}" "${SKIP[@]}" threads=1 \
  dataset=gnome_help "dataset.documents=$GNOME_HELDOUT" dataset.max_segments="$MAX_SEGMENTS" \
  hydra.run.dir="$SWEEPS/select_fixed"

echo "== 3. sweeps"
METHODS=none,full,bias,fixed,top,lasso
PARALLEL=(hydra/launcher=joblib hydra.launcher.n_jobs="$JOBS" threads=1)   # JOBS single-threaded jobs at once
python -m adaptsim run -m +experiment=paper_methods method=$METHODS "${COMMON[@]}" "${SKIP[@]}" "${PARALLEL[@]}" \
  dataset=ted dataset.max_segments="$MAX_SEGMENTS" hydra.sweep.dir="$SWEEPS/ted"
python -m adaptsim run -m +experiment=paper_methods method=$METHODS "${COMMON[@]}" "${SKIP[@]}" "${PARALLEL[@]}" \
  dataset=gnome_help "dataset.documents=$GNOME_TEST" dataset.max_segments="$MAX_SEGMENTS" \
  hydra.sweep.dir="$SWEEPS/gnome_help"

wait $DEV || { echo "realistic_ende.sh: general/dev failed, see $SWEEPS/general_dev.log" >&2; exit 1; }
cat "$RESULTS/general_dev_bleu.txt"

echo "== 4. tables and curves → $RESULTS"
python -m adaptsim table "$SWEEPS/ted" "$SWEEPS/gnome_help" | tee "$RESULTS/tables_absolute.md"
python -m adaptsim table "$SWEEPS/ted" "$SWEEPS/gnome_help" --relative | tee "$RESULTS/tables_relative.md"
python -m adaptsim plot "$SWEEPS/ted" --out "$RESULTS/curves_ted.png"
python -m adaptsim plot "$SWEEPS/gnome_help" --out "$RESULTS/curves_gnome_help.png"
# the training record without paths or example sentences (those are from ../shared, which stays out of git)
python - "$MODEL_PATH" "$RESULTS/training.json" <<'PY'
import json, sys
from pathlib import Path
model = Path(sys.argv[1])
summary = json.loads((model / "training.json").read_text())
keep = ("steps", "epochs", "best_step", "best_score", "best_metric", "train_seconds", "parameters", "training_pairs",
        "validation_pairs", "vocab_size")
out = {k: summary[k] for k in keep} | {"train": {k: v for k, v in summary["config"]["train"].items() if "source" not in k
                                               and "target" not in k and k != "out"},
                                      "arch": summary["config"]["model"]["arch"], "vocab": summary["config"]["model"]["vocab"]}
out["validations"] = [{k: r[k] for k in ("step", "epoch", "train_nll", "valid_loss", "valid_bleu", "elapsed_s") if k in r}
                      for r in map(json.loads, (model / "train_log.jsonl").read_text().splitlines())]
Path(sys.argv[2]).write_text(json.dumps(out, indent=1) + "\n")
PY
