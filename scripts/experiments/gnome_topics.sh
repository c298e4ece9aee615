#!/usr/bin/env bash
# GNOME help long enough to answer: a second test stream of 20 topics, the GNOME topics that no other experiment
# reads. The five-topic test stream (printing, power, color, disk, mouse) gives 5 documents, too few for any test at
# the 5 % level (docs/reports.md, "Few documents"), and its pages are not independent units
# (heldout/gnome_page_dependence.md). This stream takes every topic of 20 to 64 segments outside the held-out
# topics (a11y, user, bluetooth, sound, backup, sharing) and the first test stream: 20 topics, 795 segments, in
# file order. The five topics of over 150 segments (net, shell, files, keyboard, nautilus) are left out for the
# compute they take (1,397 segments, about two hours more); topics under 20 segments are pages rather than topics.
# The paper's six methods with base-ende, exported text-free, with findings and the relative table.
# Rerun to resume. Settings (environment): SWEEPS [outputs/sweeps], RESULTS [docs/results/base-ende], MODEL [base-ende]
set -euo pipefail
cd "$(dirname "$0")/../.."
SWEEPS=${SWEEPS:-outputs/sweeps}
RESULTS=${RESULTS:-docs/results/base-ende}
MODEL=${MODEL:-base-ende}
TOPICS=accounts,status,contacts,look,display,screen,wacom,session,privacy,clock,tips,gnome,multitasking,parental,remote,about,touchscreen,hardware,quick,video
export OMP_NUM_THREADS=1
python -m adaptsim run -m +experiment=paper_methods model="$MODEL" dataset=gnome_help "dataset.documents=[$TOPICS]" \
  dataset.on_too_long=skip threads=1 progress=false resume=true compress=true hydra/launcher=lockstep \
  'hydra.sweep.subdir=${method.name}' hydra.sweep.dir="$SWEEPS/gnome_help_20"
python scripts/experiments/export_runs.py "$SWEEPS/gnome_help_20" "$RESULTS/runs/gnome_help_20"
python -m adaptsim findings "$RESULTS/runs/gnome_help_20" --effects --power | tee "$RESULTS/findings_gnome_help_20.md"
python -m adaptsim table "$RESULTS/runs/gnome_help_20" --relative --significance --cost | tee "$RESULTS/tables_gnome_help_20.md"
