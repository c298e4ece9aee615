"""Lockstep runs (`hydra/launcher=lockstep`, adaptsim/loop/lockstep.py): a sweep's runs in one process, decoded
together, each writing exactly what it writes alone; frozen tensors shared between the runs, trained ones
private; settings the runs must share checked; a failing run closed as failed while the others finish.

The runs and models are on the session's device: `python -m pytest --device cuda tests/test_lockstep.py` on a GPU."""

from __future__ import annotations

import json
import socket

import pytest
import torch
from conftest import FIXED_TENSORS

from adaptsim.cli import main
from adaptsim.launch.hydra_app import compose
from adaptsim.models import Seq2SeqModel


def run(tmp_path, name: str, *overrides: str, launcher: str = "basic") -> int:
    with pytest.raises(SystemExit) as exit_:
        main(["run", "-m", f"hydra.sweep.dir={tmp_path / name}", f"hydra/launcher={launcher}", "progress=false",
              "decode.max_length=20", "threads=1", *overrides])
    return exit_.value.code


def steps(run_dir) -> list[dict]:
    return [{k: v for k, v in json.loads(line).items() if not k.endswith("_s")}
            for line in (run_dir / "steps.jsonl").read_text().splitlines()]


@pytest.fixture
def data(tiny_sweep, device):
    return [*tiny_sweep, f"device={device}"]


@pytest.mark.slow
@pytest.mark.parametrize("beam,varied,runs", [(5, ["reset=document,never"], 18), (4, ["reset=never", "seed=1,2"], 18),
                                              (2, ["reset=document"], 9)], ids=["beam5-resets", "beam4-seeds", "beam2"])
def test_each_run_writes_what_it_writes_alone(tmp_path, data, beam, varied, runs):
    """Every method (fixed with an explicit list; memory decodes with generate beside the others) at the default
    beam, at marian.STACK_ROWS (the fewest rows whose modules run stacked with the other runs') and below it (each
    run's on its own rows): hypotheses, updates, perplexities and scores are the solo run's, bit for bit. Runs
    reset per document and across documents, each at two beams and together in one sweep at the default, and a
    second seed beside the first (lora's adapters start from the seed's random numbers)."""
    sweep = ["method=none,full,bias,fixed,top,lasso,lora,l2,memory", f"decode.beam_size={beam}", *varied]
    assert run(tmp_path, "alone", *data, *sweep) == 0
    assert run(tmp_path, "lockstep", *data, *sweep, launcher="lockstep") == 0
    alone, together = sorted((tmp_path / "alone").glob("*_*")), sorted((tmp_path / "lockstep").glob("*_*"))
    assert [d.name for d in alone] == [d.name for d in together] and len(alone) == runs
    for a, b in zip(alone, together):
        assert steps(a) == steps(b), a.name
        sa, sb = (json.loads((d / "summary.json").read_text()) for d in (a, b))
        assert sb["status"] == "finished" and sb["timing"]["lockstep"] == runs
        assert without_timing(sa, a) == without_timing(sb, b), a.name  # every field: overrides, config, cost, ...
        for name in ("config.yaml", "overrides.yaml"):  # table and plot read the runs as any sweep's
            assert (a / ".hydra" / name).read_text() == (b / ".hydra" / name).read_text(), (a.name, name)
        assert log_lines(a) == log_lines(b), a.name  # each job's own lines, in its own log


def without_timing(summary, run_dir):
    """A summary as every launcher must write it: no timings (timing, *_s, *_ms*), process or sweep directory."""
    if isinstance(summary, dict):
        return {k: without_timing(v, run_dir) for k, v in summary.items()
                if k not in ("timing", "process") and not k.endswith("_s") and "_ms" not in k}
    return summary.replace(str(run_dir.parent), "SWEEP") if isinstance(summary, str) else summary


def log_lines(run_dir) -> list[str]:
    """The job's log, without times and the sweep's directory."""
    import re

    text = (run_dir / "adaptsim.log").read_text().replace(str(run_dir.parent), "SWEEP")
    return [re.sub(r"\d+\.\d+ s", "# s", line.split("] - ", 1)[-1]) for line in text.splitlines()]


def test_frozen_tensors_are_shared_and_trained_ones_private(tiny_model_dir, device):
    from adaptsim.loop.learner import cloned_learners

    base = Seq2SeqModel.load(str(tiny_model_dir), device)
    fixed = f"method.params=[{','.join(FIXED_TENSORS)}]"
    cfgs = [compose("run", [f"method={m}", "model.name=tiny", f"device={device}", *([fixed] if m == "fixed" else [])])
            for m in ("none", "top", "full", "fixed")]
    none, top, full, fixed = (s.model.named_parameters() for s in cloned_learners(base, cfgs))
    base_params = base.named_parameters()
    lower = "model.decoder.layers.0.fc1.weight"  # frozen by none, top and fixed
    assert none[lower] is top[lower] is fixed[lower] is base_params[lower]
    assert full[lower] is not base_params[lower] and torch.equal(full[lower], base_params[lower])
    upper = "model.decoder.layers.1.fc2.weight"  # trained by top, full and fixed: each its own
    assert len({id(p[upper]) for p in (none, top, full, fixed)}) == 4
    assert top[upper].requires_grad and not none[upper].requires_grad



def test_settings_the_runs_must_share_are_checked(tmp_path, data, capsys):
    assert run(tmp_path, "beams", *data, "method=none,full", "decode.beam_size=2,5", launcher="lockstep") == 1
    err = capsys.readouterr().err
    assert "the runs differ in decode.beam_size (2 vs 5)" in err and "{" not in err  # the key, not whole dicts
    for d in (tmp_path / "beams").glob("*_*"):
        assert json.loads((d / "summary.json").read_text())["status"] == "failed"


def test_a_failing_run_fails_alone(tmp_path, data, capsys):
    """full with an absurd learning rate diverges (update.on_divergence=stop); none goes on to the end."""
    assert run(tmp_path, "diverge", *data, "method=full,none", "method.lr=1e30", "decode.beam_size=5",
               launcher="lockstep") == 1
    full, none = (json.loads((tmp_path / "diverge" / d / "summary.json").read_text()) for d in ("0_full", "1_none"))
    assert full["status"] == "failed" and "diverged" in full["error"]
    assert none["status"] == "finished" and none["segments"] == 6 and len(steps(tmp_path / "diverge" / "1_none")) == 6
    err = capsys.readouterr().err
    assert "diverged" in err and "Traceback" not in err


def test_when_every_run_fails_the_sweep_ends_with_one_line_each(tmp_path, data, capsys):
    assert run(tmp_path, "all", *data, "method=full,lasso", "method.lr=1e30", "decode.beam_size=5",
               launcher="lockstep") == 1
    err = capsys.readouterr().err
    assert err.count("adaptsim run: error:") == 2 and "Traceback" not in err


def test_other_commands_are_refused_in_one_line(tmp_path, data, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["bench", "-m", f"hydra.sweep.dir={tmp_path / 'bench'}", "hydra/launcher=lockstep", "method=none,bias",
              "segments=2", *data])
    err = capsys.readouterr().err
    assert exit_.value.code == 1 and "runs `adaptsim run` sweeps only" in err and "Traceback" not in err



def test_an_interrupted_sweep_resumes_to_the_uninterrupted_outputs(tmp_path, data):
    """resume=true in the interrupted sweep's directory: a finished run is left alone, and each interrupted run
    replays the steps it wrote (a different number for each) before joining the others' search."""
    import shutil

    sweep = [*data, "method=none,full,lasso", "reset=never", "decode.beam_size=5"]
    assert run(tmp_path, "whole", *sweep, launcher="lockstep") == 0
    shutil.copytree(tmp_path / "whole", tmp_path / "cut")
    for name, kept in (("1_full", 2), ("2_lasso", 4)):
        d = tmp_path / "cut" / name
        lines = (d / "steps.jsonl").read_text().splitlines(keepends=True)
        (d / "steps.jsonl").write_text("".join(lines[:kept]) + lines[kept][:20])  # and half a line
        summary = json.loads((d / "summary.json").read_text())
        (d / "summary.json").write_text(json.dumps({**summary, "status": "interrupted"}))
    untouched = (tmp_path / "cut" / "0_none" / "summary.json").read_bytes()

    assert run(tmp_path, "cut", *sweep, "resume=true", launcher="lockstep") == 0
    assert (tmp_path / "cut" / "0_none" / "summary.json").read_bytes() == untouched
    for name, kept in (("1_full", 2), ("2_lasso", 4)):
        a, b = tmp_path / "whole" / name, tmp_path / "cut" / name
        assert steps(a) == steps(b) and (a / "hyps.txt").read_bytes() == (b / "hyps.txt").read_bytes()
        sa, sb = (json.loads((d / "summary.json").read_text()) for d in (a, b))
        assert sb["status"] == "finished" and sb["timing"]["resumed_after_steps"] == kept
        assert sa["scores"] == sb["scores"] and sa["per_document"] == sb["per_document"]


def test_a_job_refused_at_its_claim_refuses_the_sweep_before_it_starts(tmp_path, data, capsys):
    """A lockstep resume that one job's claim would refuse (here: its run is still going, another process holds it)
    is refused before Hydra starts, naming that job, and nothing in the sweep changes (#65: it once closed the other
    jobs as failed and rewrote every .hydra/)."""
    assert run(tmp_path, "s", *data, "method=none,full", "dataset.max_documents=1", launcher="lockstep") == 0
    first = tmp_path / "s" / "0_none" / "summary.json"
    summary = json.loads(first.read_text())
    first.write_text(json.dumps({**summary, "status": "running", "process": {"pid": 1, "host": socket.gethostname()}}))
    before = {p: p.read_bytes() for p in (tmp_path / "s").rglob("*") if p.is_file()}
    capsys.readouterr()
    assert run(tmp_path, "s", *data, "method=none,full", "dataset.max_documents=1", "resume=true",
               launcher="lockstep") == 1
    assert capsys.readouterr().err.strip().endswith("0_none: the run is still going (process 1); cannot resume it "
                                                    "until that process has ended (kill 1 stops it as interrupted)")
    assert {p: p.read_bytes() for p in (tmp_path / "s").rglob("*") if p.is_file()} == before
