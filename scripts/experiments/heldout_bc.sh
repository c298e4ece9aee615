#!/usr/bin/env bash
# base-ende's misses on Business Central, examined on held-out articles only (never the test stream).
#
#   bash scripts/experiments/heldout_bc.sh     # from the repository root, ../shared beside it
#
# On the first ARTICLES held-out Business Central articles (one stream, the paper's setting: reset=never, R0/R1
# counted over the stream), in lockstep, one thread:
#   heldout_bc:        none, full, lasso; lasso without budgets (diagnose/lasso_dense: the prox alone) and with a
#                      weaker prox (λ 0.01) — does lasso learn too little on this model (finding 4)?
#   heldout_bc_reset:  full with a reset at every document, counted over the same stream (metrics.scope=corpus),
#                      so its R0 is the same quantity — is what full carries across articles what offsets the
#                      zero-shot loss (finding 2)?
# then tables relative to `none` with document-bootstrap intervals, the reset run against the same method carried
# across articles (`adaptsim compare`), the paper's findings on this stream with effects and power, and R0 split by
# whether the stream has shown every piece of the word, with the occurrences each run won and lost against the
# baseline (r0_by_pieces.py) → $RESULTS. Runs (with text) go to $SWEEPS; they resume.
#   ARTICLES [30]  MODEL [base-ende]  RESULTS [docs/results/base-ende/heldout]  SWEEPS [outputs/heldout_bc]
set -euo pipefail
cd "$(dirname "$0")/../.."
export ADAPTSIM_SHARED=${ADAPTSIM_SHARED:-$(cd .. && pwd)/shared}
ARTICLES=${ARTICLES:-30}
MODEL=${MODEL:-base-ende}
RESULTS=${RESULTS:-docs/results/base-ende/heldout}
SWEEPS=${SWEEPS:-outputs/heldout_bc}
mkdir -p "$RESULTS" "$SWEEPS"
SEARCH="hydra.searchpath=[file://$PWD/scripts/experiments/diagnose,file://$PWD/scripts/experiments/heldout_bc]"
sweep() {  # directory name, overrides…
  local name=$1; shift
  echo "[$(date +%H:%M:%S)] sweep $name: $*"
  python -m adaptsim run -m +experiment=paper_methods "$SEARCH" model="$MODEL" dataset=business-central-heldout \
    dataset.max_documents="$ARTICLES" dataset.on_too_long=skip threads=1 progress=false resume=true \
    hydra/launcher=lockstep "$@" hydra.sweep.dir="$SWEEPS/$name" 'hydra.sweep.subdir=${method.name}' \
    >>"$SWEEPS/$name.log" 2>&1 || { echo "heldout_bc.sh: the $name sweep failed, see $SWEEPS/$name.log" >&2; exit 1; }
}
sweep heldout_bc method=none,full,lasso,lasso_dense,lasso_lam0.01_bias0.01
sweep heldout_bc_reset method=full reset=document metrics.scope=corpus
echo "[$(date +%H:%M:%S)] reports → $RESULTS"
python -m adaptsim table "$SWEEPS/heldout_bc" --relative --significance --cost | tee "$RESULTS/heldout_bc.md"
python -m adaptsim compare "$SWEEPS/heldout_bc_reset/full" "$SWEEPS/heldout_bc/full" "$SWEEPS/heldout_bc/none" \
  | tee "$RESULTS/heldout_bc_reset.txt"
python -m adaptsim findings "$SWEEPS/heldout_bc" --effects --power | tee "$RESULTS/findings.md"
python scripts/experiments/r0_by_pieces.py "$SWEEPS/heldout_bc" | tee "$RESULTS/r0_by_pieces.md"
