#!/usr/bin/env bash
# The GPU check, in one device call of at most ~10 minutes (docs/development.md, "The GPU check"). Made here with
# scripts/device/pack.sh, run there as `bash scripts/device/gpu.sh` with carry [".carry"]. Its parts, each logged
# and each going on after another's failure:
#   tests    the tests that take a device, with --device $DEVICE (tests/conftest.py), beside the training
#   train    base-ende's recipe (configs/model/base-ende-gpu.yaml, base-ende's tokenizer and data, bf16) for the
#            minutes the other parts leave, checkpointing every minute, so a cut-off run still returns a model
#   compare  the paper's six methods on the first Business Central articles with the trained model: on $DEVICE in
#            lockstep and alone, and on the CPU (one process per method), then scripts/device/compare.py: the
#            first difference of every pair, per-segment times beside each other
#   model    the trained model in fp16, tarred and cut in pieces under 16 MiB (files come back at most 16 MiB each):
#            here, `cat model.tar.part-* | tar -x -C DIR`
# $OUT gets device.log (all of it), tests.log, train_log.jsonl, compare.md, records.tar.gz (the sweeps' records,
# text included: never commit it) and model.tar.part-*: 8 files at most come back.
# Settings (environment): DEVICE [cuda], OUT [$OUT, else device-out], CARRY [.carry], BUDGET_S [570: the whole
# script], TEST_S [240], COMPARE_S [170], MODEL_CONFIG [base-ende-gpu], TRAIN_ARGS [base-ende's recipe],
# TRAIN_MINUTES [what the budget leaves], TRAIN_RESUME [empty; 1: go on with the model a call before left on
# the warm machine, PARTS="train model"], TESTS [the device tests], PARTS [tests train compare model],
# FIXED_LIST [configs/fixed_lists/base-ende.yaml: the same tensor names and shapes], CPU_JOBS [6: the CPU sweep's
# processes at once, one a method]
set -uo pipefail
cd "$(dirname "$0")/../.."
START=$(date +%s)
DEVICE=${DEVICE:-cuda}
OUT=${OUT:-device-out}
CARRY=${CARRY:-.carry}
BUDGET_S=${BUDGET_S:-570}
TEST_S=${TEST_S:-240}
COMPARE_S=${COMPARE_S:-170}
MODEL_CONFIG=${MODEL_CONFIG:-base-ende-gpu}
PARTS=${PARTS:-tests train compare model}
TESTS=${TESTS:-tests/test_lockstep.py tests/test_decode.py tests/test_resume.py tests/test_methods.py tests/test_update.py tests/test_train.py}
FIXED_LIST=${FIXED_LIST:-configs/fixed_lists/base-ende.yaml}
CPU_JOBS=${CPU_JOBS:-6}
# base-ende's recipe (its README): Adam 0.9/0.98, lr 7e-4, 1,000 warm-up steps, ~6,000-token batches, label
# smoothing 0.1, gradient norm 1.0, bf16 autocast with fp32 weights
TRAIN_ARGS=${TRAIN_ARGS:-train.lr=7e-4 train.warmup=1000 train.batch_tokens=6000 train.label_smoothing=0.1 train.clip_norm=1.0 train.dtype=bfloat16 train.valid_every=1000000 train.valid_bleu_sentences=200}
WORK=${WORK:-/tmp/adaptsim-device}
MODEL=$WORK/model
mkdir -p "$OUT" "$WORK"
exec > >(tee -a "$OUT/device.log") 2>&1
left() { echo $((BUDGET_S - ($(date +%s) - START))); }
part() { echo; echo "== $1 ($(($(date +%s) - START)) s in, $(left) s left)"; }
wants() { [[ " $PARTS " == *" $1 "* ]]; }

part "set-up"
if [ -d "$CARRY/wheels" ] && ! python3 -c "import hydra, sacremoses, stopwordsiso, rapidfuzz" 2>/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$WORK/site" "$CARRY"/wheels/*.whl \
    || echo "set-up: the wheels did not install"
fi
export PYTHONPATH="$WORK/site:$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 XDG_CONFIG_HOME=$WORK/xdg
mkdir -p "$XDG_CONFIG_HOME/adaptsim/fixed_lists"
cp "$FIXED_LIST" "$XDG_CONFIG_HOME/adaptsim/fixed_lists/$MODEL_CONFIG.yaml"  # fixed's list, by the model's name
[ -f "$CARRY/commit.txt" ] && echo "commit $(cat "$CARRY/commit.txt")"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo "no nvidia-smi"
python3 -c "import sys, torch, transformers, sacrebleu; print('python', sys.version.split()[0], '| torch', torch.__version__,
  '| cuda', torch.version.cuda, '| transformers', transformers.__version__, '| sacrebleu', sacrebleu.__version__)"

if wants tests; then  # beside the training (tiny models: they take little of the GPU), so it gets those minutes too
  part "tests on $DEVICE, in the background"
  # pyproject's addopts ask pytest-xdist for a worker per core: 4 on a GPU, none on CPU (the dry run shares its
  # cores with the training); where xdist is not installed, addopts without it
  workers=(-o "addopts=-q")
  if python3 -c "import xdist" 2>/dev/null; then workers=(-n 0); [ "$DEVICE" = cpu ] || workers=(-n 4); fi
  (timeout "$TEST_S" python3 -m pytest --device "$DEVICE" -rfE -p no:cacheprovider "${workers[@]}" $TESTS \
     > "$OUT/tests.log" 2>&1; echo "tests: exit $? (124: cut at ${TEST_S} s)" >> "$OUT/tests.log") &
  tests=$!
fi

if wants train; then
  part "train $MODEL_CONFIG on $DEVICE"
  data=$WORK/base-train
  mkdir -p "$data"
  for side in en de; do [ -s "$data/train.$side" ] || xz -dc "$CARRY/base-train/train.$side.xz" > "$data/train.$side"; done
  reserve=40  # the model's packing, and the comparison, come after
  if wants compare; then reserve=$((reserve + COMPARE_S)); fi
  # 45 s of what is left go to start-up and the last save
  minutes=${TRAIN_MINUTES:-$(awk -v s="$(( $(left) - reserve ))" 'BEGIN { m = (s - 45) / 60; printf "%.2f", m > 0.1 ? m : 0.1 }')}
  start=(train.overwrite=true)
  if [ -n "${TRAIN_RESUME:-}" ] && [ -f "$MODEL/train_log.jsonl" ]; then  # a second call on the warm machine
    start=(train.resume=true)  # max_minutes counts the earlier calls' time too
    minutes=$(tail -n 1 "$MODEL/train_log.jsonl" | python3 -c "import json, sys; print(round(json.load(sys.stdin)['elapsed_s'] / 60 + $minutes, 2))")
  fi
  echo "training until $minutes minutes"
  timeout $(( $(left) - reserve )) python3 -m adaptsim train model="$MODEL_CONFIG" model.path="$MODEL" \
    device="$DEVICE" threads=4 progress=false "${start[@]}" train.tokenizer="$CARRY/base-ende-tok" \
    train.source="$data/train.en" train.target="$data/train.de" \
    train.valid_source="$CARRY/valid/dev.en" train.valid_target="$CARRY/valid/dev.de" \
    train.max_steps=null train.max_minutes="$minutes" train.checkpoint_minutes=1 $TRAIN_ARGS
  echo "train: exit $?"
  cp "$MODEL/train_log.jsonl" "$OUT/" 2>/dev/null
fi

if wants tests; then
  wait $tests
  part "tests"; tail -n 25 "$OUT/tests.log"
fi

if wants compare; then
  part "compare on $DEVICE and cpu"
  if [ -f "$MODEL/config.json" ]; then
    run=(python3 -m adaptsim run -m +experiment=paper_methods model="$MODEL_CONFIG" model.path="$MODEL"
         dataset=business-central dataset.path="$CARRY/bc.tsv" progress=false 'hydra.sweep.subdir=${method.name}')
    rm -rf "$WORK/sweeps"
    until=$(( $(date +%s) + COMPARE_S ))  # every sweep of the comparison ends by then
    remaining() { echo $(( until - $(date +%s) )); }
    timeout "$(remaining)" "${run[@]}" device=cpu threads=1 hydra/launcher=joblib hydra.launcher.n_jobs="$CPU_JOBS" \
      hydra.sweep.dir="$WORK/sweeps/cpu" > "$WORK/cpu.log" 2>&1 &
    cpu=$!
    timeout "$(( $(remaining) / 2 ))" "${run[@]}" device="$DEVICE" hydra/launcher=lockstep \
      hydra.sweep.dir="$WORK/sweeps/lockstep"
    echo "lockstep: exit $?"
    timeout "$(remaining)" "${run[@]}" device="$DEVICE" hydra.sweep.dir="$WORK/sweeps/alone"
    echo "alone: exit $?"
    wait $cpu; echo "cpu: exit $?"; tail -n 5 "$WORK/cpu.log"
    python3 scripts/device/compare.py "$WORK/sweeps/cpu" "$WORK/sweeps/lockstep" "$WORK/sweeps/alone" | tee "$OUT/compare.md"
    tar -czf "$OUT/records.tar.gz" -C "$WORK" sweeps
  else
    echo "compare: no trained model in $MODEL"
  fi
fi

if wants model && [ -f "$MODEL/config.json" ]; then
  part "model"
  python3 scripts/device/fp16.py "$MODEL" "$WORK/fp16" && cp "$MODEL/training.json" "$WORK/fp16/" 2>/dev/null
  cp "$MODEL/train_log.jsonl" "$WORK/fp16/" 2>/dev/null
  tar -cf - -C "$WORK/fp16" . | split -b 15M -d - "$OUT/model.tar.part-"
  ls -l "$OUT"
fi
part "done"
