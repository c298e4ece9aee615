#!/usr/bin/env bash
# In context against in weights on the demo stream (docs/beyond_paper.md, "In-context adaptation"): the decoder-only
# demo model (model=demo-lm, data/demo/lm) on the 4 demo documents, every document from θ0 (reset=document, the
# demo's default): the baseline none; full, lasso, lora and tm in weights; icl quoting 3 earlier post-edits chosen
# three ways — the document's last 3 (recent), the 3 most similar (fuzzy) and 3 drawn at random from the same pool
# (random: the control that tells relevant examples from any examples) —, fuzzy over the stream and an in-domain TM
# (the demo's held-out documents, data/demo/heldout.tsv: no test pair), recent with the glossary of corrected terms;
# icl with lora, training on the pair alone and after the prompt. Then the tables (the exact test over documents,
# prompt tokens per segment), what each context gave (cxmi) and the R0/R1 occurrences each run gained and lost
# against the baseline (compare --flips).
#
#   bash scripts/experiments/icl_demo.sh     # from the repository root; offline, a few minutes on one core
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
run weights 'method=none,full,lasso,lora,tm' 'hydra.sweep.subdir=${method.name}'
run context method=icl 'method.retrieval=document,fuzzy,random' 'hydra.sweep.subdir=${method.retrieval}'
run tm method=icl method.retrieval=fuzzy method.pool=both method.external.format=tsv \
  method.external.path=data/demo/heldout.tsv 'hydra.sweep.subdir=fuzzy+tm'
run glossary method=icl method.glossary=true 'hydra.sweep.subdir=document+glossary'
run both method=icl method@method.weights=lora 'method.weights_with_prompt=false,true' \
  'hydra.sweep.subdir=lora_with_prompt_${method.weights_with_prompt}'
ALL=("$OUT/weights" "$OUT/context" "$OUT/tm" "$OUT/glossary" "$OUT/both")
python -m adaptsim table "${ALL[@]}" --significance > "$RESULTS/table.md"
python -m adaptsim table "${ALL[@]}" --cost > "$RESULTS/cost.md"
python -m adaptsim cxmi "${ALL[@]}" > "$RESULTS/cxmi.md"
RUNS=()
for sweep in "${ALL[@]}"; do
  for run in "$sweep"/*/; do
    if [ -f "$run/summary.json" ] && [ "$run" != "$OUT/weights/none/" ]; then RUNS+=("${run%/}"); fi
  done
done
python -m adaptsim compare "$OUT/weights/none" "${RUNS[@]}" --flips --metrics R0,R1 > "$RESULTS/flips.md"
cat "$RESULTS/table.md"
