#!/usr/bin/env bash
# Every committed findings table, regenerated from its text-free records (`adaptsim findings --effects --power`):
# after a change to the verdicts' rules, one command remakes them all, and `git diff docs/results` shows what moved.
# small-ende-probe's GNOME help and ape-it records live only in git's history (commit d10b5d2 left them out of the
# tree); they are taken from there into a temporary directory, read, and removed.
#
#   bash scripts/experiments/findings_tables.sh        # from anywhere in the repository
set -euo pipefail
cd "$(dirname "$0")/../.."
R=docs/results
findings() { local out=$1; shift; python -m adaptsim findings "$@" --effects --power >"$out"; echo "$out"; }

history=$(mktemp -d)
trap 'rm -rf "$history"' EXIT
git archive d10b5d2^ "$R/runs/ape_it" "$R/runs/gnome_help" | tar -x -C "$history"
findings "$R/findings.md" "$history/$R/runs/ape_it" "$history/$R/runs/gnome_help" "$R/runs/ted"

B=$R/base-ende
findings "$B/findings.md" "$B/runs/ape_it" "$B/runs/business_central" "$B/runs/gnome_help" "$B/runs/ted"
for stream in gnome_help_20 gnome_help_pages; do
  findings "$B/findings_$stream.md" "$B/runs/$stream"
done
for stream in heldout_ape_it heldout_ape_it_next heldout_bc heldout_bc_next; do
  findings "$B/heldout/findings_$stream.md" "$B/heldout/runs/$stream"
done
for record in "$R"/curve/*/runs/*/; do  # a learning-curve point with all six methods
  name=$(basename "$(dirname "$(dirname "$record")")") stream=$(basename "$record")
  if [ -f "$record/bias/summary.json" ] && [ -f "$record/top/summary.json" ]; then
    findings "$R/curve/$name/findings_$stream.md" "$record"
  fi
done
