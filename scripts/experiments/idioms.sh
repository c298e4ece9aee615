#!/usr/bin/env bash
# Idioms in a stream: the paper's six methods on Fadaee et al. (2018)'s English→German idiom test set with
# small-ende-probe, then LitTER over the stream and CXMI (docs/beyond_paper.md, "Idioms and context use").
#
#   bash scripts/experiments/idioms.sh        # from the repository root, ../shared beside it, after step 2 of
#                                              # realistic_ende.sh (lasso's held-out variant, fixed's list)
#
# The stream: one document per idiom (scripts/experiments/idiom_stream.py), the 965 of the 1,500 pairs whose
# labelled idiom is in the source (the other 535 dropped and counted), in the paper's
# setting (+experiment=paper_methods: one stream, reset=never, corpus scope), in two lockstep processes of one
# thread each (none, full, bias | fixed, top, lasso), resumable. `lasso` is the variant realistic_ende.sh chose on
# its held-out data ($SWEEPS/configs/method/lasso_heldout.yaml), `fixed` reads configs/fixed_lists. Run outputs
# (they hold the test text) go to $OUT; the text-free reports to $RESULTS.
set -euo pipefail
SHARED=${ADAPTSIM_SHARED:-$(cd .. && pwd)/shared}
export ADAPTSIM_SHARED=$SHARED
SWEEPS=${SWEEPS:-outputs/realistic_ende}
OUT=${OUT:-outputs/idioms}
RESULTS=${RESULTS:-docs/results/idioms}
mkdir -p "$OUT" "$RESULTS"
SEARCH="hydra.searchpath=[file://$PWD/scripts/experiments/configs,file://$(cd "$SWEEPS" && pwd)/configs]"
python scripts/experiments/idiom_stream.py "$OUT/fadaee_idioms.tsv" --idioms "$SHARED/data/idioms"
sweep() {  # directory name, methods
  python -m adaptsim run -m +experiment=paper_methods "$SEARCH" model=small-ende-probe dataset=idioms_fadaee \
    dataset.path="$(cd "$OUT" && pwd)/fadaee_idioms.tsv" progress=false hydra/launcher=lockstep threads=1 \
    resume=true method="$2" hydra.sweep.dir="$OUT/$1" 'hydra.sweep.subdir=${method.name}' >>"$OUT/$1.log" 2>&1
}
sweep a none,full,bias &
sweep b fixed,top,lasso_heldout &
wait
python -m adaptsim table "$OUT/a" "$OUT/b" --significance | tee "$RESULTS/table.md"
python -m adaptsim table "$OUT/a" "$OUT/b" --metrics R0,R1,R0+1,CXMI,CXMI/seg,CXMI.sent --significance --ci \
  | tee "$RESULTS/table_cxmi.md"
python -m adaptsim litter "$OUT/a" "$OUT/b" --preset paper | tee "$RESULTS/litter.md"
python -m adaptsim litter "$OUT/a" "$OUT/b" --preset adaptsim | tee "$RESULTS/litter_adaptsim.md"
python -m adaptsim cxmi "$OUT/a" "$OUT/b" --out "$RESULTS/cxmi.png" | tee "$RESULTS/cxmi.md"
