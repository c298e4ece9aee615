#!/usr/bin/env bash
# The paper's comparison on real English–German data, in the paper's setting, with adaptsim's own commands.
#
#   bash scripts/experiments/realistic_ende.sh            # from the repository root, ../shared beside it
#
# 0. data splits (scripts/experiments/prepare_ende.py): ape-it (WMT16/17 APE, IT; the post-edit is the reference)
#    in file order, in blocks of APE_BLOCK triplets: the first APE_TEST_BLOCKS are a test stream, the next
#    APE_HELDOUT_BLOCKS held out for choosing settings, the rest joins general/ as training pairs (source →
#    post-edit, used only with TRAIN=1); held-out GNOME help topics (GNOME_HELDOUT, HELDOUT_SEGMENTS each) plus
#    those ape-it blocks make heldout.tsv, disjoint from every test stream;
# 1. the base model: an existing one (MODEL, small-ende-probe by default: no training), or with TRAIN=1 one
#    trained here on general/train + the ape-it training pairs (validation: newstest2018; for a GPU machine);
#    its BLEU on all of newstest2018 (beam 5), beside the rest;
# 2. on heldout.tsv only, never on a test stream, in the paper's setting (one stream): `fixed`'s tensor list
#    (select-fixed), and the ablations of lasso and bias (scripts/experiments/configs/method: lasso's second
#    output bias off / at 1e-2, λ, a smaller budget, an embedding budget that binds, hysteresis; bias at 0.1 and
#    1e-2; lasso and the baseline with a reset at every document); lasso's variant with the best R0+1 becomes
#    `lasso` on the test streams; what was tried goes to $RESULTS/selection.md and heldout_*.md; and on the
#    held-out GNOME topics alone, a diagnosis of lasso's recall there (scripts/experiments/diagnose/method: one
#    part of lasso changed at a time — no selection, no prox, no embedding rows, no second bias, hysteresis — and
#    neither selection nor prox);
# 3. the six methods (+experiment=paper_methods: one stream per test set, reset=never, corpus scope) on the TED
#    talks (all, or the first TED_TALKS), on GNOME help as one stream of topics (GNOME_TEST), on the ape-it test
#    blocks and on the first BC_ARTICLES Business Central test articles (on the last two with BEYOND's methods
#    too), in lockstep, one process per data set; the methods that need no held-out choice start beside step 2,
#    `fixed` and `lasso` join the same sweeps (resume=true) once step 2 is done; with PROBE, every stream's runs
#    also translate a general-domain probe along the stream (metrics.probe: forgetting);
# 4. per stream, as soon as its sweep is done: its text-free record into $RESULTS/runs/<stream> (summaries,
#    per-segment statistics, curves; no source, reference or hypothesis text), from which tables (absolute,
#    relative; † = the 95% bootstrap interval over documents excludes 0: talks, topics, ape-it blocks; ms per update,
#    bytes per stored document), the paper's findings checked with effect sizes beside the paper's and the power
#    to show them (`adaptsim findings --effects --power`), forgetting on the probe (`adaptsim forgetting`, with
#    PROBE) and curves with 95% bands
#    are made, so a finished stream never has to run twice; and R0 split by whether the stream has already
#    shown every piece of the word (scripts/experiments/r0_by_pieces.py, from the runs themselves).
# Run outputs go to $SWEEPS (they hold the test text: not committed). Every step is seeded. Run it again after
# an interruption: finished runs are left alone and interrupted ones resume where they stopped. The wall time of
# each stage of the last invocation goes to $RESULTS/timing.tsv, of each task of steps 2 and 3 to tasks.tsv.
#
# Settings (environment), defaults in brackets:
#   MODEL            a configs/model entry [small-ende-probe; TRAIN=1: realistic-cpu, on a GPU paper-transformer]
#   MODEL_NAME       the model's name in the outputs, and the fixed list's: configs/fixed_lists/<name>.yaml, or
#                    a path ending in .yaml [$MODEL]
#   MODEL_PATH       the model's directory [the configs/model entry's; TRAIN=1: ~/.cache/adaptsim/models/…]
#   MODEL_OVERRIDES  more overrides of the model for training and every run [none]
#   TRAIN            1: train MODEL's architecture first (MAX_STEPS, …; a GPU: DEVICE=cuda) [0]
#   TRAIN_OVERRIDES  more overrides for training only, e.g. "train.batch_tokens=8192" [none]
#   VOCAB            sentencepiece pieces of a trained model (per side, or joint) [8000]
#   MAX_STEPS        training updates [7500: about two hours of two cores for realistic-cpu, by bench_train.py]
#   LR, WARMUP       peak learning rate and the steps of warm-up to it [1e-3, 1000]
#   VALID_EVERY      validate and checkpoint every N steps [500]
#   TRAIN_PAIRS      use only the first N ape-it training pairs [all]
#   DEVICE           cpu | cuda [cpu]
#   APE_BLOCK, APE_TEST_BLOCKS, APE_HELDOUT_BLOCKS   [100, 20, 5: a 2,000-segment test stream]
#   GNOME_TEST       the GNOME help topics of the test stream, in file order [printing,power,color,disk,mouse]
#   GNOME_HELDOUT    held-out GNOME topics [a11y,user,bluetooth,sound,backup,sharing]
#   HELDOUT_SEGMENTS segments of each held-out GNOME topic [60]
#   HELDOUT_ARTICLES Business Central held-out articles (whole) added to heldout.tsv [0]
#   STREAMS          the test streams, in the order of the reports [ted gnome_help ape_it business_central]
#   TED_TALKS        TED talks of its stream, in file order [all 13]
#   BC_ARTICLES      Business Central test articles of its stream, in file order [100]
#   BEYOND           the methods beyond the paper run on ape_it and business_central [l2,lora,memory,tm]
#   PROBE            plain-format prefix of a forgetting probe for the test streams' runs, e.g.
#                    $SHARED/data/general/dev [none]; PROBE_SEGMENTS [200], PROBE_EVERY [1000]
#   FIXED_SEGMENTS   select-fixed simulates ~40 candidate lists: on the first N segments of each held-out
#                    document [30]
#   ABLATIONS        the held-out variants (configs in scripts/experiments/configs/method) [all of them]
#   DIAGNOSE         lasso's variants run on the held-out GNOME topics (scripts/experiments/diagnose/method) [all]
#   MAX_SEGMENTS     first N segments of each talk / topic / block (quick trials) [all]
#   DEV_SEGMENTS     first N segments of newstest2018 for the base model's BLEU (quick trials) [all]
#   JOBS             processes at once, one thread each [2]
#   RESULTS, SWEEPS  where tables, plots and figures go / where the runs go [docs/results, outputs/realistic_ende]
set -euo pipefail
cd "$(dirname "$0")/../.."

SHARED=${ADAPTSIM_SHARED:-$(cd .. && pwd)/shared}
TRAIN=${TRAIN:-0}
if [ "$TRAIN" = 1 ]; then MODEL=${MODEL:-realistic-cpu}; else MODEL=${MODEL:-small-ende-probe}; fi
MODEL_NAME=${MODEL_NAME:-$MODEL}
read -r -a MODEL_OVERRIDES <<<"${MODEL_OVERRIDES:-}"
read -r -a TRAIN_OVERRIDES <<<"${TRAIN_OVERRIDES:-}"
VOCAB=${VOCAB:-8000}
MAX_STEPS=${MAX_STEPS:-7500}
LR=${LR:-1e-3}
WARMUP=${WARMUP:-1000}
VALID_EVERY=${VALID_EVERY:-500}
DEVICE=${DEVICE:-cpu}
APE_BLOCK=${APE_BLOCK:-100}
APE_TEST_BLOCKS=${APE_TEST_BLOCKS:-20}
APE_HELDOUT_BLOCKS=${APE_HELDOUT_BLOCKS:-5}
GNOME_TEST=${GNOME_TEST:-printing,power,color,disk,mouse}
GNOME_HELDOUT=${GNOME_HELDOUT:-a11y,user,bluetooth,sound,backup,sharing}
HELDOUT_SEGMENTS=${HELDOUT_SEGMENTS:-60}
HELDOUT_ARTICLES=${HELDOUT_ARTICLES:-0}
BC_ARTICLES=${BC_ARTICLES:-100}
TED_TALKS=${TED_TALKS:-}
read -r -a STREAMS <<<"${STREAMS:-ted gnome_help ape_it business_central}"  # the order of the reports
FIXED_SEGMENTS=${FIXED_SEGMENTS:-30}
ABLATIONS=${ABLATIONS:-$(cd scripts/experiments/configs/method && ls -- *.yaml | sed 's/\.yaml$//' | paste -sd, -)}
DIAGNOSE=${DIAGNOSE-$(cd scripts/experiments/diagnose/method && ls -- *.yaml | sed 's/\.yaml$//' | paste -sd, -)}
JOBS=${JOBS:-2}
RESULTS=${RESULTS:-docs/results}
SWEEPS=${SWEEPS:-outputs/realistic_ende}
export ADAPTSIM_SHARED=$SHARED

[ -d "$SHARED/data/general" ] || { echo "realistic_ende.sh: $SHARED/data/general not found (set ADAPTSIM_SHARED)" >&2; exit 1; }
mkdir -p "$RESULTS" "$SWEEPS/configs/method"
RESULTS=$(cd "$RESULTS" && pwd)
SWEEPS=$(cd "$SWEEPS" && pwd)
DATA=$SWEEPS/data
COMMON=(model="$MODEL" model.name="$MODEL_NAME" "${MODEL_OVERRIDES[@]}" device="$DEVICE" progress=false)
if [ "$TRAIN" = 1 ]; then
  MODEL_PATH=${MODEL_PATH:-${XDG_CACHE_HOME:-$HOME/.cache}/adaptsim/models/realistic_ende-$MODEL}
  COMMON+=(model.vocab.size="$VOCAB")
fi
[ -z "${MODEL_PATH:-}" ] || COMMON+=(model.path="$MODEL_PATH")
# the held-out variants (committed) and the chosen lasso (written by step 2) as method configs
SEARCH="hydra.searchpath=[file://$PWD/scripts/experiments/configs,file://$PWD/scripts/experiments/diagnose,file://$SWEEPS/configs]"
SKIP=(dataset.on_too_long=skip)  # GNOME help has a 288-token reference; skipped segments are counted in summary.json
LIMIT=(${MAX_SEGMENTS:+dataset.max_segments=$MAX_SEGMENTS})
FIRST=none,full,bias,top           # need no held-out choice: they start beside step 2
LATER=fixed,lasso_heldout          # fixed's list and lasso's variant come from step 2 (lasso_heldout is named lasso)
BEYOND=${BEYOND-l2,lora,memory,tm}  # on the ape-it and Business Central streams, last (runs are named by method,
                                     # so a sweep can grow by methods)
STAGE_START=$SECONDS
printf 'stage\tseconds\n' >"$RESULTS/timing.tsv"
stage_done() { printf '%s\t%d\n' "$1" $((SECONDS - STAGE_START)) >>"$RESULTS/timing.tsv"; STAGE_START=$SECONDS; }
log() { echo "[$(date +%H:%M:%S)] $*"; }

sweep() {  # a lockstep sweep in the paper's setting that resumes: directory name, overrides…
  local name=$1; shift
  log "sweep $name: $*"
  python -m adaptsim run -m +experiment=paper_methods "$SEARCH" "${COMMON[@]}" "${SKIP[@]}" hydra/launcher=lockstep \
    threads=1 resume=true "$@" hydra.sweep.dir="$SWEEPS/$name" 'hydra.sweep.subdir=${method.name}' \
    >>"$SWEEPS/$name.log" 2>&1 \
    || { echo "realistic_ende.sh: the $name sweep failed, see $SWEEPS/$name.log" >&2; return 1; }
}

log "== 0. data splits → $DATA"
python scripts/experiments/prepare_ende.py "$DATA" --ape-block "$APE_BLOCK" --ape-test-blocks "$APE_TEST_BLOCKS" \
  --ape-heldout-blocks "$APE_HELDOUT_BLOCKS" --heldout-topics "$GNOME_HELDOUT" \
  --heldout-segments "$HELDOUT_SEGMENTS" --heldout-articles "$HELDOUT_ARTICLES" ${TRAIN_PAIRS:+--train-pairs "$TRAIN_PAIRS"}
cp "$DATA/split.json" "$RESULTS/split.json"
HELDOUT=(dataset=tsv dataset.name=heldout dataset.path="$DATA/heldout.tsv" dataset.on_duplicate_id=keep "${SKIP[@]}")
declare -A STREAM=([ted]="dataset=ted${TED_TALKS:+ dataset.max_documents=$TED_TALKS}" [gnome_help]="dataset=gnome_help dataset.documents=[$GNOME_TEST]"
                   [ape_it]="dataset=ape_it dataset.split_every=$APE_BLOCK dataset.max_documents=$APE_TEST_BLOCKS"
                   [business_central]="dataset=business-central dataset.max_documents=$BC_ARTICLES")
for name in "${STREAMS[@]}"; do
  [ -n "${STREAM[$name]:-}" ] || { echo "realistic_ende.sh: STREAMS: no stream $name (${!STREAM[*]})" >&2; exit 1; }
done
PROBING=(${PROBE:+"metrics.probe.path=$PROBE" "metrics.probe.segments=${PROBE_SEGMENTS:-200}"
         "metrics.probe.every=${PROBE_EVERY:-1000}"})
stage_done data

if [ "$TRAIN" = 1 ]; then
  log "== 1. base model: $MODEL trained → $MODEL_PATH"
  python -m adaptsim train "${COMMON[@]}" train.source="$DATA/train.en" train.target="$DATA/train.de" \
    train.valid_source="$SHARED/data/general/dev.en" train.valid_target="$SHARED/data/general/dev.de" \
    train.max_steps="$MAX_STEPS" train.lr="$LR" train.warmup="$WARMUP" train.valid_every="$VALID_EVERY" \
    train.resume=true "${TRAIN_OVERRIDES[@]}" hydra.run.dir="$SWEEPS/train/$(date +%Y-%m-%d_%H-%M-%S)"
else
  log "== 1. base model: $MODEL as it is (TRAIN=1 trains one)"
fi
stage_done model

log "== 2, 3. held-out choices and ablations (on $DATA/heldout.tsv, one stream) and the sweeps, $JOBS at once"
# The work of steps 2 and 3 as tasks with dependencies, JOBS of them at once, in this order of priority.
task_select_fixed() {
  # writes configs/fixed_lists/$MODEL_NAME.yaml, which method=fixed reads for this model (it checks names and
  # shapes); chosen in the setting it is used in (reset=never)
  grep -qs '"status": "finished"' "$SWEEPS/select_fixed/summary.json" && return
  if python -c "import json, sys; from adaptsim.records import alive, recorded_process as p
pid = p(json.load(open(sys.argv[1]))); sys.exit(0 if pid is not None and alive(pid) else 1)" \
      "$SWEEPS/select_fixed/summary.json" 2>/dev/null; then
    echo "realistic_ende.sh: select-fixed is still running in $SWEEPS/select_fixed (another invocation?)" >&2
    return 1
  fi
  rm -rf "$SWEEPS/select_fixed"  # failed, interrupted or killed: select-fixed starts again
  python -m adaptsim select-fixed "${COMMON[@]}" "${HELDOUT[@]}" dataset.max_segments="$FIXED_SEGMENTS" reset=never \
    threads=1 \
    hydra.run.dir="$SWEEPS/select_fixed" >"$SWEEPS/select_fixed.log" 2>&1
}
ABLATION_LIST=(${ABLATIONS//,/ })
HALF=$(( (${#ABLATION_LIST[@]} + 1) / 2 ))
FIRST_HALF=$(IFS=,; echo "${ABLATION_LIST[*]:0:$HALF}")
SECOND_HALF=$(IFS=,; echo "${ABLATION_LIST[*]:$HALF}")
task_heldout() { sweep heldout method="none,full,bias,lasso${FIRST_HALF:+,$FIRST_HALF}" "${HELDOUT[@]}"; }
task_heldout_more() { [ -z "$SECOND_HALF" ] || sweep heldout_more method="$SECOND_HALF" "${HELDOUT[@]}"; }
task_heldout_reset() { sweep heldout_reset method=none,lasso reset=document "${HELDOUT[@]}"; }
task_heldout_gnome() {  # held-out GNOME topics only: the first documents of heldout.tsv, so the same stream's prefix
  [ -z "$DIAGNOSE" ] || sweep heldout_gnome method="none,full,lasso,$DIAGNOSE" "${HELDOUT[@]}" \
    "dataset.documents=[$GNOME_HELDOUT]"
}
task_choose() {
  python scripts/experiments/choose_lasso.py "$SWEEPS/heldout" "$SWEEPS/heldout_more" "$SWEEPS/select_fixed" \
    "$SWEEPS/configs/method/lasso_heldout.yaml" "$RESULTS/selection.md"
}
# shellcheck disable=SC2086
first() { local -; set -f; sweep "$1" method="$FIRST" ${STREAM[$1]} "${LIMIT[@]}" "${PROBING[@]}"; }  # set -f: [..] is no glob
later() {  # the same sweep with more methods (the finished ones are left alone), then its text-free record
  local -; set -f
  # shellcheck disable=SC2086
  sweep "$1" method="$FIRST,$LATER${2:+,$2}" ${STREAM[$1]} "${LIMIT[@]}" "${PROBING[@]}"
  python scripts/experiments/export_runs.py "$SWEEPS/$1" "$RESULTS/runs/$1"
}
task_dev() {
  python -m adaptsim run "${COMMON[@]}" threads=1 method=none dataset=plain dataset.path="$SHARED/data/general/dev" \
    dataset.name=general_dev ${DEV_SEGMENTS:+dataset.max_segments=$DEV_SEGMENTS} "${SKIP[@]}" resume=true \
    hydra.run.dir="$SWEEPS/general_dev" >"$SWEEPS/general_dev.log" 2>&1
  python -c "import json,sys; print('general/dev BLEU %.1f' % json.load(open(sys.argv[1]))['scores']['BLEU'])" \
    "$SWEEPS/general_dev/summary.json" >"$RESULTS/general_dev_bleu.txt"
}
declare -A DEPS=([select_fixed]="" [heldout]="" [heldout_more]="" [heldout_reset]="" [heldout_gnome]="" [dev]=""
                 [choose]="select_fixed heldout heldout_more")
TASKS=(select_fixed heldout)
for name in "${STREAMS[@]}"; do  # what finishes a whole stream first
  eval "task_${name}_first() { first $name; }; task_${name}_later() { later $name; }"
  DEPS[${name}_first]=""
  DEPS[${name}_later]="${name}_first choose"
  TASKS+=("${name}_first")
  [ ${#TASKS[@]} != 3 ] || TASKS+=(heldout_more choose)
  TASKS+=("${name}_later")
  case $name in ape_it|business_central)
    [ -z "$BEYOND" ] || { eval "task_${name}_beyond() { later $name $BEYOND; }"
                          DEPS[${name}_beyond]="${name}_later"; TASKS+=("${name}_beyond"); } ;;
  esac
done
[ ${#STREAMS[@]} -gt 0 ] || TASKS+=(heldout_more choose)
TASKS+=(heldout_reset dev heldout_gnome)

declare -A STATE PID STARTED
for t in "${TASKS[@]}"; do STATE[$t]=pending; done
printf 'task\tseconds\n' >"$RESULTS/tasks.tsv"  # each task's wall time in this invocation (two at a time)
stop_tasks() {  # background tasks ignore SIGINT: stop them, so that a rerun does not meet them still running
  for t in "${!PID[@]}"; do pkill -TERM -P "${PID[$t]}" 2>/dev/null; kill -TERM "${PID[$t]}" 2>/dev/null; done
  wait; exit 130
}
trap stop_tasks INT TERM
failed=0
while :; do
  running=0 pending=0
  for t in "${TASKS[@]}"; do
    if [ "${STATE[$t]}" = running ]; then
      if kill -0 "${PID[$t]}" 2>/dev/null; then running=$((running + 1)); continue; fi
      if wait "${PID[$t]}"; then
        STATE[$t]=done; log "done: $t"; printf '%s\t%d\n' "$t" $((SECONDS - STARTED[$t])) >>"$RESULTS/tasks.tsv"
      else STATE[$t]=failed; failed=1; echo "realistic_ende.sh: $t failed (its log is in $SWEEPS)" >&2; fi
    fi
  done
  for t in "${TASKS[@]}"; do
    [ "${STATE[$t]}" = pending ] || continue
    ready=1
    for d in ${DEPS[$t]}; do
      case ${STATE[$d]} in done) ;; failed) STATE[$t]=failed; ready=0; break ;; *) ready=0 ;; esac
    done
    [ "${STATE[$t]}" = pending ] || continue
    pending=$((pending + 1))
    if [ $ready = 1 ] && [ $running -lt "$JOBS" ]; then
      log "start: $t"; STARTED[$t]=$SECONDS; "task_$t" & PID[$t]=$!
      STATE[$t]=running; running=$((running + 1)); pending=$((pending - 1))
    fi
  done
  [ $running -gt 0 ] || [ $pending -gt 0 ] || break
  [ $running -gt 0 ] || { echo "realistic_ende.sh: no task can start (a dependency is not a task)" >&2; exit 1; }
  wait -n 2>/dev/null || true  # until a task ends (its status is kept for the wait above)
done
[ $failed = 0 ] || exit 1
cat "$RESULTS/general_dev_bleu.txt"
stage_done selection_and_sweeps

log "== 4. tables, findings and curves → $RESULTS (from the text-free records)"
RUNS=("${STREAMS[@]/#/$RESULTS/runs/}")
TABLE=(--significance --cost)
python -m adaptsim table "${RUNS[@]}" "${TABLE[@]}" | tee "$RESULTS/tables_absolute.md"
python -m adaptsim table "${RUNS[@]}" --relative "${TABLE[@]}" | tee "$RESULTS/tables_relative.md"
python -m adaptsim findings "${RUNS[@]}" --effects --power | tee "$RESULTS/findings.md"
if [ -n "${PROBE:-}" ]; then
  python -m adaptsim forgetting "${RUNS[@]}" | tee "$RESULTS/forgetting.md"
  for name in "${STREAMS[@]}"; do
    python -m adaptsim forgetting "$RESULTS/runs/$name" --out "$RESULTS/forgetting_$name.png" >/dev/null
  done
fi
python -m adaptsim table "$SWEEPS/heldout_reset" --relative --significance | tee "$RESULTS/heldout_reset.md"
[ -z "$DIAGNOSE" ] || python -m adaptsim table "$SWEEPS/heldout_gnome" --relative --significance \
  | tee "$RESULTS/heldout_gnome.md"
for name in heldout "${STREAMS[@]}"; do python scripts/experiments/r0_by_pieces.py "$SWEEPS/$name"; done \
  | tee "$RESULTS/r0_by_pieces.md"
for name in "${STREAMS[@]}"; do
  python -m adaptsim plot "$RESULTS/runs/$name" --bands --out "$RESULTS/curves_$name.png"
done
if [ "$TRAIN" = 1 ]; then
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
fi
stage_done reports
awk -F'\t' 'NR > 1 { t += $2 } END { printf "total %d s\n", t }' "$RESULTS/timing.tsv" | tee -a "$RESULTS/timing.tsv"
