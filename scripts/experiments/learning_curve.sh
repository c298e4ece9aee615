#!/usr/bin/env bash
# One point of the base model's learning curve: does the zero-shot penalty (the paper's finding 2) need a stronger
# model? A checkpoint of base-ende (or any model of its architecture and vocabulary) on the streams of the curve,
# in the paper's setting (+experiment=paper_methods: reset=never, beam 5, lasso and fixed as chosen on held-out
# data; fixed's list is the configs/model entry's), then its text-free record, findings, tables and R0 split by
# whether the stream has shown the word's pieces (r0_by_pieces.py, from the runs' own hypotheses).
#
#   bash scripts/experiments/learning_curve.sh NAME [MODEL_DIR]     # from the repository root, ../shared beside it
#   python scripts/experiments/learning_curve.py                     # the curve's table and figure, every point
#
# e.g. NAME=base-ende-e1.4 MODEL_DIR=../shared/models/base-ende-e1.4; without MODEL_DIR the configs/model entry's
# own weights (NAME=base-ende, NAME=small-ende-probe MODEL=small-ende-probe). Run it again after an interruption:
# finished runs are left alone, interrupted ones resume where they stopped. One process, one thread; each
# invocation's wall time per stream goes to $RESULTS/$NAME/timing.tsv (a killed one writes none), and
# learning_curve.py's cost table times every run from its own records, resumed or not.
# Settings (environment), defaults in brackets:
#   MODEL      the configs/model entry (architecture, vocabulary, fixed's list) [base-ende]
#   STREAMS    gnome_help_20 (20 GNOME help topics, 795 segments), business_central (the first 100 test
#              articles, 3,648 segments) and/or business_central_all (all 338, 13,336 segments; ~8 CPU-hours for
#              the six methods, so one or two METHODS an invocation, each into the same record: export_runs.py keeps
#              the runs an earlier invocation exported) [gnome_help_20 business_central]
#   METHODS    [none,full,bias,fixed,top,lasso]; none,full,lasso suffice for the curve itself
#   SWEEPS     the runs (they hold the test text: not committed) [outputs/curve]
#   RESULTS    the text-free records and tables [docs/results/curve]
set -euo pipefail
cd "$(dirname "$0")/../.."
NAME=${1:?usage: learning_curve.sh NAME [MODEL_DIR]}
MODEL_DIR=${2:-}
MODEL=${MODEL:-base-ende}
read -r -a STREAMS <<<"${STREAMS:-gnome_help_20 business_central}"
METHODS=${METHODS:-none,full,bias,fixed,top,lasso}
SWEEPS=${SWEEPS:-outputs/curve}/$NAME
RESULTS=${RESULTS:-docs/results/curve}/$NAME
GNOME_20=accounts,status,contacts,look,display,screen,wacom,session,privacy,clock,tips,gnome,multitasking,parental,remote,about,touchscreen,hardware,quick,video
declare -A STREAM=([gnome_help_20]="dataset=gnome_help dataset.documents=[$GNOME_20]"
                   [business_central]="dataset=business-central dataset.max_documents=100"
                   [business_central_all]="dataset=business-central")
export OMP_NUM_THREADS=1
mkdir -p "$SWEEPS" "$RESULTS"
[ -f "$RESULTS/timing.tsv" ] || printf 'stream\tmethods\tseconds\n' >"$RESULTS/timing.tsv"
log() { echo "[$(date +%H:%M:%S)] $*"; }
all_six() { for m in none full bias fixed top lasso; do [ -f "$1/$m/summary.json" ] || return 1; done; }

for stream in "${STREAMS[@]}"; do
  [ -n "${STREAM[$stream]:-}" ] || { echo "learning_curve.sh: STREAMS: no stream $stream (${!STREAM[*]})" >&2; exit 1; }
  log "$NAME on $stream: $METHODS → $SWEEPS/$stream"
  start=$SECONDS
  set -f  # [..] is no glob
  # shellcheck disable=SC2086
  python -m adaptsim run -m +experiment=paper_methods model="$MODEL" ${MODEL_DIR:+model.path="$(realpath "$MODEL_DIR")"} \
    ${STREAM[$stream]} method="$METHODS" dataset.on_too_long=skip threads=1 progress=false resume=true \
    hydra/launcher=lockstep 'hydra.sweep.subdir=${method.name}' hydra.sweep.dir="$SWEEPS/$stream" \
    >>"$SWEEPS/$stream.log" 2>&1 \
    || { echo "learning_curve.sh: the $stream sweep failed, see $SWEEPS/$stream.log" >&2; exit 1; }
  set +f
  printf '%s\t%s\t%d\n' "$stream" "$METHODS" $((SECONDS - start)) >>"$RESULTS/timing.tsv"
  python scripts/experiments/export_runs.py "$SWEEPS/$stream" "$RESULTS/runs/$stream" --without-logprobs
  python scripts/experiments/r0_by_pieces.py "$RESULTS/runs/$stream" --out "$RESULTS/r0_by_pieces_$stream.md" \
    --json "$RESULTS/r0_by_pieces_$stream.json"  # from the record: every run exported so far
  if all_six "$RESULTS/runs/$stream"; then
    python -m adaptsim findings "$RESULTS/runs/$stream" --effects --power >"$RESULTS/findings_$stream.md"
    python -m adaptsim table "$RESULTS/runs/$stream" --relative --significance --cost >"$RESULTS/tables_$stream.md"
  fi
  log "$NAME on $stream: done in $((SECONDS - start)) s"
done
