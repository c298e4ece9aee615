"""Real sweeps (`adaptsim run -m`) on the tiny model, then `table` and `plot` on their directories.

Each sweep is one subprocess, run once per module and shared by the tests (they cost seconds each):
the default launcher through the paper_methods experiment, with half of its jobs failing (beam size
0 is refused), and submitit_local.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import curves_from_steps_are_the_stored_ones

from adaptsim.report import plot, table

METHODS = ["none", "full", "top"]


@pytest.fixture(scope="module")
def data_tsv(tmp_path_factory, tiny_corpus) -> Path:
    rows = ["doc_id\tseg_id\tsource\treference"]
    for i in range(8):  # 2 documents × 4 segments
        src, ref = tiny_corpus[i * 5 % len(tiny_corpus)]
        rows.append(f"doc{i // 4 + 1}\t{i % 4 + 1}\t{src}\t{ref}")
    path = tmp_path_factory.mktemp("sweep_data") / "tiny.tsv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def sweep(out: Path, model: Path, data: Path, *overrides: str,
          threads: str = "threads=1") -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "adaptsim", "run", "-m", f"model.path={model}", "model.name=tiny", "dataset=tsv",
           f"dataset.path={data}", "progress=false", threads, f"hydra.sweep.dir={out}", *overrides]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=out.parent)


def summaries(out: Path) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text()) for p in sorted(out.glob("*/summary.json"))}


@pytest.fixture(scope="module")
def basic(tmp_path_factory, tiny_model_dir, data_tsv) -> Path:
    """Default (sequential) launcher; the experiment lists six methods, the command line narrows them.

    Every method also runs with decode.beam_size=0, which fails (refused by adaptsim.loop.settings, in the job).
    """
    out = tmp_path_factory.mktemp("basic") / "sweep"
    proc = sweep(out, tiny_model_dir, data_tsv, "+experiment=paper_methods", f"method={','.join(METHODS)}",
                 "decode.beam_size=0,5")
    assert proc.returncode == 1, proc.stderr[-3000:]  # some jobs failed
    # it ends by saying where its outputs are (what the README's next step needs)
    assert proc.stderr.strip().splitlines()[-1] == (f"adaptsim run: the sweep's outputs are in {out} "
                                                    f"(python -m adaptsim table {out})")
    return out


@pytest.fixture(scope="module")
def submitit(tmp_path_factory, tiny_model_dir, data_tsv) -> Path:
    out = tmp_path_factory.mktemp("submitit") / "sweep"
    proc = sweep(out, tiny_model_dir, data_tsv, f"method={','.join(METHODS)}", "reset=never",  # as paper_methods
                 "hydra/launcher=submitit_local", threads="threads=null")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


def test_failed_jobs_do_not_lose_the_others(basic):
    runs = summaries(basic)
    assert list(runs) == [f"{2 * i + k}_{m}" for i, m in enumerate(METHODS) for k in (0, 1)]
    assert [s["status"] for s in runs.values()] == ["failed", "finished"] * len(METHODS)
    assert all(s["segments"] == 8 for s in runs.values() if s["status"] == "finished")
    assert (basic / "multirun.yaml").is_file()


def test_table_reports_failed_runs(basic, capsys):
    assert table.main([str(basic)]) == 0
    printed = capsys.readouterr()
    assert [ln.split(" | ")[0] for ln in printed.out.splitlines() if ln.startswith("| ")] == [
        "| method", "| baseline", "| full", "| top"]
    assert printed.err.count(": failed: ") == 3


@pytest.mark.slow
def test_submitit_local_sweep_matches_basic(basic, submitit):
    a, b = summaries(basic), summaries(submitit)
    assert list(b) == [f"{i}_{m}" for i, m in enumerate(METHODS)]
    for i, m in enumerate(METHODS):  # same jobs in other processes: the same results
        assert b[f"{i}_{m}"]["status"] == "finished"
        assert b[f"{i}_{m}"]["timing"]["threads"] == 1  # threads=null: one per parallel worker
        assert b[f"{i}_{m}"]["scores"] == pytest.approx(a[f"{2 * i + 1}_{m}"]["scores"])


@pytest.mark.parametrize("which", ["basic", pytest.param("submitit", marks=pytest.mark.slow)])
def test_table_numbers_equal_summaries(which, request, capsys):
    out = request.getfixturevalue(which)
    assert table.main([str(out), "--format", "csv", "--metrics", "BLEU,SBLEU,TER,R0,R1,R0+1,chrF"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [r["method"] for r in rows] == ["baseline", "full", "top"]
    for row in rows:
        scores = json.loads((Path(row["run_dir"]) / "summary.json").read_text())["scores"]
        for m in ("BLEU", "SBLEU", "TER", "R0", "R1", "R0+1", "chrF"):
            assert (float(row[m]) if row[m] else None) == scores[m]


def test_relative_table_uses_the_sweeps_baseline(basic, capsys):
    assert table.main([str(basic), "--relative", "--format", "csv"]) == 0
    rows = {r["method"]: r for r in csv.DictReader(io.StringIO(capsys.readouterr().out))}
    base = summaries(basic)["1_none"]["scores"]
    top = summaries(basic)["5_top"]["scores"]
    assert float(rows["baseline"]["BLEU"]) == base["BLEU"]
    assert float(rows["top"]["BLEU"]) == pytest.approx(100 * (top["BLEU"] - base["BLEU"]) / base["BLEU"])


def test_plot_from_sweep(basic, tmp_path, capsys):
    png = tmp_path / "curves.png"
    assert plot.main([str(basic), "--out", str(png), "--metrics", "R0,R1,R0+1,BLEU"]) == 0
    assert png.stat().st_size > 10_000 and png.read_bytes()[:4] == b"\x89PNG"


def test_a_record_without_its_curves_is_plotted_from_its_steps(basic, tmp_path):
    """A text-free export keeps no curves.csv: the curves are its steps summed, and the plot is the same figure."""
    finished = sorted(basic.glob("*/curves.csv"))
    assert len(finished) == len(METHODS)
    for path in finished:
        curves_from_steps_are_the_stored_ones(path.parent)
    bare = shutil.copytree(basic, tmp_path / "bare")
    for path in bare.rglob("curves.csv"):
        path.unlink()
    figures = {}
    for name, root in (("stored", basic), ("derived", bare)):
        figures[name] = tmp_path / f"{name}.png"
        assert plot.main([str(root), "--out", str(figures[name]), "--metrics", "R0,R1,R0+1,BLEU,TER,SBLEU"]) == 0
    assert figures["stored"].read_bytes() == figures["derived"].read_bytes()


def test_significance_on_a_real_sweep(basic, capsys):
    """A real run's steps.jsonl carries the statistics resampling needs, and they give the summary's scores."""
    assert table.main([str(basic), "--significance", "--ci", "--unit", "segment", "--resamples", "200",
                       "--format", "csv", "--metrics", "BLEU,SBLEU,TER,chrF,R0,R0+1"]) == 0
    rows = {r["method"]: r for r in csv.DictReader(io.StringIO(capsys.readouterr().out))}
    assert rows["full"]["significance"].startswith("test:exact|unit:segment|units:8|patterns:256|resamples:200|")
    for row in rows.values():
        assert float(row["BLEU low"]) <= float(row["BLEU"]) <= float(row["BLEU high"]) + 1e-9
    step = json.loads((basic / "1_none" / "steps.jsonl").read_text().splitlines()[0])
    assert set(step["stats"]) == {"bleu", "ter", "chrf"} and len(step["stats"]["bleu"]) == 10
