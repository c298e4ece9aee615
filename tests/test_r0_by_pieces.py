"""scripts/experiments/r0_by_pieces.py: the R0 occurrences a run won and lost against the baseline, and the same split
from the text-free record export_runs.py writes."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
from conftest import script_module

from adaptsim import PROJECT_ROOT
from adaptsim.records import read_record, record_file


def test_won_minus_lost_is_the_r0_difference_and_shows_a_loss_the_net_hides():
    r0 = script_module("scripts/experiments/r0_by_pieces.py")
    # per segment, in the words' sorted order, (class, hit): Datei 0, Ordner 1 | Drucker 0, Lager 1, Treiber 1
    base = [[(0, 1), (1, 0)], [(0, 0), (1, 1), (1, 1)]]
    run = [[(0, 0), (1, 1)], [(0, 1), (1, 0), (1, 1)]]
    wl = r0.won_lost(run, base)
    # pieces seen: Datei lost, Drucker won; a new piece: Ordner won, Lager lost
    assert wl.tolist() == [[1, 1], [1, 1]]
    diff = r0.class_stats(run)[:, :, 0].sum(axis=0) - r0.class_stats(base)[:, :, 0].sum(axis=0)
    assert (wl[:, 0] - wl[:, 1]).tolist() == diff.tolist() == [0, 0]  # R0 unchanged, four words changed


@pytest.mark.slow
def test_the_text_free_record_gives_the_split_the_sweep_gives(tmp_path):
    """export_runs.py keeps each R0 occurrence's class and hit (no text): r0_by_pieces.py prints the same tables from
    the record as from the sweep, whose hypotheses it reads; plot draws the same learning curves."""
    sweep, record = tmp_path / "sweep", tmp_path / "record"
    run = [sys.executable, "-m", "adaptsim", "run", "-m", "method=none,full", "dataset.max_documents=2",
           "decode.beam_size=2", "progress=false", "hydra/launcher=lockstep", f"hydra.sweep.dir={sweep}",
           "hydra.sweep.subdir=${method.name}"]
    subprocess.run(run, check=True, capture_output=True, cwd=PROJECT_ROOT)
    script = PROJECT_ROOT / "scripts" / "experiments"
    subprocess.run([sys.executable, script / "export_runs.py", sweep, record], check=True, capture_output=True)
    kept = [json.loads(line) for line in read_record(record_file(record / "full", "steps.jsonl")).splitlines()]
    assert all("hypothesis" not in s and "source" not in s and "R0_pieces" in s for s in kept)
    assert all(s["update_s"] == round(s["update_s"], 4) and s["ppl_after"] == float(f"{s['ppl_after']:.7g}")
               for s in kept)  # export_runs.ROUNDED
    # a record grows a method at a time: exporting a sweep of `none` alone keeps the `full` exported before
    only_none = tmp_path / "only_none"
    only_none.mkdir()
    shutil.copytree(sweep / "none", only_none / "none")
    shutil.copyfile(sweep / "multirun.yaml", only_none / "multirun.yaml")
    subprocess.run([sys.executable, script / "export_runs.py", only_none, record], check=True, capture_output=True)
    assert sorted(d.name for d in record.iterdir() if d.is_dir()) == ["full", "none"]
    tables = [subprocess.run([sys.executable, script / "r0_by_pieces.py", where, "--resamples", "200"], check=True,
                             capture_output=True, text=True).stdout for where in (sweep, record)]
    assert "| full |" in tables[0]
    assert tables[0].replace(sweep.name, "X") == tables[1].replace(record.name, "X")
    # the record keeps no curves.csv: plot sums its steps, and draws the sweep's figure
    assert not list(record.rglob("curves.csv*"))
    for where in (sweep, record):
        subprocess.run([sys.executable, "-m", "adaptsim", "plot", where, "--out", tmp_path / f"{where.name}.png"],
                       check=True, capture_output=True, cwd=PROJECT_ROOT)
    assert (tmp_path / "sweep.png").read_bytes() == (tmp_path / "record.png").read_bytes()
