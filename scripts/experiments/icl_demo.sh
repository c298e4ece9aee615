#!/usr/bin/env bash
# In context against in weights on the demo stream (docs/beyond_paper.md, "In-context adaptation"): the decoder-only
# demo model (model=demo-lm, data/demo/lm) on the 4 demo documents, every document from θ0 (reset=document, the
# demo's default), icl quoting the document's last 3 post-edits, beside full, lasso, lora and tm in weights and icl
# with lora, with the baseline none; then the tables (R0 and R1 side by side, the document bootstrap) and what the
# context gave (cxmi).
#
#   bash scripts/experiments/icl_demo.sh     # from the repository root; offline, about 1 minute on one core
#
# Everything is generated demo text: the reports go to $RESULTS (default docs/results/icl), the runs to $OUT.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-outputs/icl_demo}
RESULTS=${RESULTS:-docs/results/icl}
mkdir -p "$OUT" "$RESULTS"
run() {  # sweep directory, overrides…
  python -m adaptsim run -m model=demo-lm progress=false threads=1 resume=true hydra/launcher=lockstep \
    hydra.sweep.dir="$OUT/$1" "${@:2}" >>"$OUT/$1.log" 2>&1
}
run weights 'method=none,full,lasso,lora,tm'
run context method=icl 'method.retrieval=document,fuzzy'
run both method=icl method@method.weights=lora
python -m adaptsim table "$OUT/weights" "$OUT/context" "$OUT/both" --significance > "$RESULTS/table.md"
python -m adaptsim table "$OUT/weights" "$OUT/context" "$OUT/both" --cost > "$RESULTS/cost.md"
python -m adaptsim cxmi "$OUT/weights" "$OUT/context" "$OUT/both" > "$RESULTS/cxmi.md"
cat "$RESULTS/table.md"
