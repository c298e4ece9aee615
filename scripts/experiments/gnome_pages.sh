#!/usr/bin/env bash
# GNOME help long enough to answer: its pages as the documents of resampling (dataset.group_by=null) instead of its
# five test topics, whose 5 units no test can resolve (docs/reports.md, "Few documents").
#   heldout  none and full on the six held-out topics' pages (a11y, backup, bluetooth, sharing, sound, user: the
#            topics fixed's list was chosen on, never the test stream), and page_dependence.py on them: whether
#            pages of one topic vary alike, which would make pages the wrong unit. The choice is made here.
#   test     the paper's six methods on the five test topics' 76 pages (the same 718 segments in the same order as
#            the topic stream, so with reset=never the same computation; only the documents differ), exported
#            text-free, with findings and the relative table.
# Rerun to resume. Settings (environment): PARTS [heldout test], SWEEPS [outputs/sweeps/gnome_pages],
# RESULTS [docs/results/base-ende], MODEL [base-ende]
set -euo pipefail
cd "$(dirname "$0")/../.."
PARTS=${PARTS:-heldout test}
SWEEPS=${SWEEPS:-outputs/sweeps/gnome_pages}
RESULTS=${RESULTS:-docs/results/base-ende}
MODEL=${MODEL:-base-ende}
export OMP_NUM_THREADS=1
pages() { echo "dataset.documents=[$(printf "'%s[.-]*'," "$@" | sed 's/,$//')]"; }
run=(python -m adaptsim run -m +experiment=paper_methods model="$MODEL" dataset=gnome_help dataset.group_by=null
     dataset.on_too_long=skip threads=1 progress=false resume=true compress=true hydra/launcher=lockstep
     'hydra.sweep.subdir=${method.name}')
mkdir -p "$RESULTS/heldout" "$RESULTS/runs"
if [[ " $PARTS " == *" heldout "* ]]; then
  "${run[@]}" "$(pages a11y backup bluetooth sharing sound user)" method=none,full hydra.sweep.dir="$SWEEPS/heldout"
  python scripts/experiments/page_dependence.py "$SWEEPS/heldout" | tee "$RESULTS/heldout/gnome_page_dependence.md"
fi
if [[ " $PARTS " == *" test "* ]]; then
  "${run[@]}" "$(pages color disk mouse power printing)" hydra.sweep.dir="$SWEEPS/test"
  python scripts/experiments/export_runs.py "$SWEEPS/test" "$RESULTS/runs/gnome_help_pages"
  python -m adaptsim findings "$RESULTS/runs/gnome_help_pages" --effects --power | tee "$RESULTS/findings_gnome_help_pages.md"
  python -m adaptsim table "$RESULTS/runs/gnome_help_pages" --relative --significance --cost \
    | tee "$RESULTS/tables_gnome_help_pages.md"
fi
