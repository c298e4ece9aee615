#!/usr/bin/env bash
# The translator's effort (metrics.interactive): does the method that raises R1 also save keystrokes? The paper's
# six methods with a simulated translator, on the demo and on the ape-it post-edits with small-ende-probe
# (docs/beyond_paper.md, "The translator's effort").
#
#   bash scripts/experiments/interactive.sh   # from the repository root, ../shared beside it, after step 2 of
#                                             # realistic_ende.sh (lasso's held-out variant, fixed's list)
#
# Real stream: the first 4 documents of 100 ape-it segments (400 pairs) in the paper's setting (+experiment=
# paper_methods: one stream, reset=never), word level, then character level on the first 2 documents; each in two
# lockstep processes of one thread (none, full, bias | fixed, top, lasso), resumable. Run outputs (they hold the
# test text) go to $OUT; the text-free reports to $RESULTS.
set -euo pipefail
SHARED=${ADAPTSIM_SHARED:-$(cd .. && pwd)/shared}
export ADAPTSIM_SHARED=$SHARED
SWEEPS=${SWEEPS:-outputs/realistic_ende}
OUT=${OUT:-outputs/interactive}
RESULTS=${RESULTS:-docs/results/interactive}
mkdir -p "$OUT" "$RESULTS"
SEARCH="hydra.searchpath=[file://$PWD/scripts/experiments/configs,file://$(cd "$SWEEPS" && pwd)/configs]"
for level in word char; do  # the demo: 60 segments, 4 documents, its own model and fixed list
  python -m adaptsim run -m +experiment=paper_methods progress=false hydra/launcher=lockstep threads=1 resume=true \
    metrics.interactive=$level hydra.sweep.dir="$OUT/demo_$level" 'hydra.sweep.subdir=${method.name}' \
    >>"$OUT/demo_$level.log" 2>&1
done
sweep() {  # directory name, level, documents, methods
  python -m adaptsim run -m +experiment=paper_methods "$SEARCH" model=small-ende-probe model.name=small-ende-probe \
    dataset=ape_it dataset.split_every=100 dataset.max_documents="$3" dataset.on_too_long=skip progress=false \
    hydra/launcher=lockstep threads=1 resume=true metrics.interactive="$2" method="$4" hydra.sweep.dir="$OUT/$1" \
    'hydra.sweep.subdir=${method.name}' >>"$OUT/$1.log" 2>&1
}
for level in word char; do
  docs=$([ $level = word ] && echo 4 || echo 2)
  sweep ape_${level}_a $level $docs none,full,bias &
  sweep ape_${level}_b $level $docs fixed,top,lasso_heldout &
  wait
done
for level in word char; do
  python -m adaptsim table "$OUT/demo_$level" --metrics BLEU,R0,R1,R0+1,KSMR,KSR,WSR,MAR --significance --cost \
    | tee "$RESULTS/demo_$level.md"
  python -m adaptsim table "$OUT/ape_${level}_a" "$OUT/ape_${level}_b" --metrics BLEU,R0,R1,R0+1,KSMR,KSR,WSR,MAR \
    --significance --ci | tee "$RESULTS/ape_$level.md"
  python -m adaptsim table "$OUT/ape_${level}_a" "$OUT/ape_${level}_b" --metrics R1,KSMR,WSR,MAR --relative \
    --significance | tee "$RESULTS/ape_${level}_relative.md"
  python -m adaptsim plot "$OUT/ape_${level}_a" "$OUT/ape_${level}_b" --metrics KSMR,R1 --bands \
    --out "$RESULTS/ape_${level}_ksmr.png"
done
for level in word char; do  # what the translator's corrections cost the system
  python -m adaptsim table "$OUT/ape_${level}_a" "$OUT/ape_${level}_b" --metrics KSMR --cost | tee "$RESULTS/ape_${level}_cost.md"
done
