"""What makes a run's results trustworthy: no look-ahead, determinism, divergence caught at its step, and a
killed run resumed to the very outputs of an uninterrupted one."""

import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest
import torch
from conftest import tsv_of

from adaptsim.cli import main


@pytest.fixture
def two_docs(tmp_path, tiny_corpus):
    """Two documents of 12 segments each."""
    rows = [(f"doc{d}", i, *tiny_corpus[12 * d + i]) for d in range(2) for i in range(12)]
    return tsv_of(tmp_path / "two_docs.tsv", rows), rows


def common(model, tsv, *extra):
    return [f"model.path={model}", "dataset=tsv", f"dataset.path={tsv}", "decode.beam_size=2",
            "decode.max_length=20", "progress=false", "threads=1", *extra]


def run(out, *overrides, code=0):
    with pytest.raises(SystemExit) as exit_:
        main(["run", f"hydra.run.dir={out}", *overrides])
    assert exit_.value.code == code
    return out


def steps_of(out):
    def strict(constant):
        raise ValueError(f"{constant} is not JSON")
    return [json.loads(line, parse_constant=strict) for line in (out / "steps.jsonl").read_text().splitlines()]


TIMINGS = ("translate_s", "update_s")


def without_timings(steps):
    return [{k: v for k, v in s.items() if k not in TIMINGS} for s in steps]


def test_hypothesis_i_is_made_before_and_without_reference_i(tmp_path, tiny_model_dir, two_docs):
    tsv, rows = two_docs
    adapt = ["method=full", "method.lr=0.5", "reset=never"]
    full = steps_of(run(tmp_path / "full", *common(tiny_model_dir, tsv, *adapt)))
    i = 15  # in the second document, after adapting on 15 pairs
    prefix = run(tmp_path / "prefix", *common(tiny_model_dir, tsv_of(tmp_path / "p.tsv", rows[: i + 1]), *adapt))
    changed = [r if k != i else (*r[:3], "Ganz etwas anderes als die Referenz .") for k, r in enumerate(rows)]
    other = run(tmp_path / "other", *common(tiny_model_dir, tsv_of(tmp_path / "o.tsv", changed), *adapt))
    assert steps_of(prefix)[i]["hypothesis"] == full[i]["hypothesis"]  # the future is not needed
    assert steps_of(other)[i]["hypothesis"] == full[i]["hypothesis"]  # its own reference is not used
    none = steps_of(run(tmp_path / "none", *common(tiny_model_dir, tsv, "method=none")))
    assert [s["hypothesis"] for s in full] != [s["hypothesis"] for s in none]  # adaptation did change outputs


def test_two_runs_of_one_command_write_the_same_outputs(tmp_path, tiny_model_dir, two_docs):
    args = common(tiny_model_dir, two_docs[0], "method=lasso", "reset=never")
    a, b = run(tmp_path / "a", *args), run(tmp_path / "b", *args)
    assert without_timings(steps_of(a)) == without_timings(steps_of(b))
    assert (a / "curves.csv").read_bytes() == (b / "curves.csv").read_bytes()


@pytest.mark.parametrize("lr", ["1e30", "1e3"])  # (inf is refused before the run: tests/test_reliability.py)
def test_divergence_stops_the_run_with_one_line_at_its_step(tmp_path, tiny_model_dir, tiny_tsv, lr, capsys):
    out = run(tmp_path / "run", *common(tiny_model_dir, tiny_tsv, "method=full", f"method.lr={lr}"), code=1)
    err = capsys.readouterr().err.strip().splitlines()
    assert "adaptation diverged" in err[-1] and "on_divergence=rollback" in err[-1] and "Traceback" not in "".join(err)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "failed" and "diverged" in summary["error"]
    steps_of(out)  # what was written before it is valid JSON


def test_a_model_whose_outputs_are_not_finite_at_theta0_is_named_not_the_learning_rate(tmp_path, tiny_model_dir,
                                                                                       tiny_tsv, capsys):
    from safetensors.torch import load_file, save_file

    broken = tmp_path / "broken"
    shutil.copytree(tiny_model_dir, broken)
    weights = load_file(broken / "model.safetensors")
    name = next(n for n in weights if "layer_norm" in n and "decoder" in n)
    weights[name] = torch.full_like(weights[name], float("nan"))
    save_file(weights, broken / "model.safetensors", metadata={"format": "pt"})
    run(tmp_path / "run", *common(broken, tiny_tsv, "method=full"), code=1)
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "not finite before any update" in err and "method.lr" not in err


def test_resume_into_an_empty_directory_says_it_starts_a_new_run(tmp_path, tiny_model_dir, tiny_tsv):
    out = run(tmp_path / "typo", *common(tiny_model_dir, tiny_tsv, "method=none", "resume=true"))
    assert "no run to resume here: starting a new one" in (out / "adaptsim.log").read_text()
    assert json.loads((out / "summary.json").read_text())["status"] == "finished"


def test_divergence_rollback_restarts_the_document_and_is_counted(tmp_path, tiny_model_dir, tiny_tsv, capsys):
    out = run(tmp_path / "run", *common(tiny_model_dir, tiny_tsv, "method=full", "method.lr=1e30",
                                        "update.on_divergence=rollback"))
    steps, summary = steps_of(out), json.loads((out / "summary.json").read_text())
    assert summary["status"] == "finished" and summary["divergences"] == len(steps) == 6
    assert all(s["diverged"] and s["ppl_after"] is None for s in steps)
    # every segment is translated by θ0 again: the hypotheses are the baseline's
    none = steps_of(run(tmp_path / "none", *common(tiny_model_dir, tiny_tsv, "method=none")))
    assert [s["hypothesis"] for s in steps] == [s["hypothesis"] for s in none]
    with pytest.raises(SystemExit):
        main(["table", str(out)])
    assert "| full (diverged 6×) |" in capsys.readouterr().out


@pytest.mark.slow  # processes of their own (the quick subset: -m "not slow")
def test_a_run_killed_mid_document_resumes_to_the_uninterrupted_outputs(tmp_path, tiny_model_dir, two_docs):
    args = common(tiny_model_dir, two_docs[0], "method=lasso", "reset=never", "save_offsets=true")
    whole = run(tmp_path / "whole", *args)
    killed = tmp_path / "killed"
    proc = subprocess.Popen([sys.executable, "-m", "adaptsim", "run", f"hydra.run.dir={killed}", *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    steps = killed / "steps.jsonl"
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        if steps.exists() and steps.read_text().count("\n") >= 5:
            os.kill(proc.pid, signal.SIGKILL)
            break
        time.sleep(0.005)
    proc.wait()
    written = steps.read_text().count("\n")
    assert proc.returncode == -signal.SIGKILL and 5 <= written < 12, written  # killed inside document 1
    assert json.loads((killed / "summary.json").read_text())["status"] == "running"

    run(killed, *args, "resume=true")
    assert without_timings(steps_of(killed)) == without_timings(steps_of(whole))
    for name in ("hyps.txt", "curves.csv"):
        assert (killed / name).read_bytes() == (whole / name).read_bytes()
    for doc in ("doc0", "doc1"):
        path = f"offsets/{doc}.safetensors"
        assert (killed / path).read_bytes() == (whole / path).read_bytes()
    a, b = (json.loads((d / "summary.json").read_text()) for d in (killed, whole))
    assert a["timing"].pop("resumed_after_steps") == written
    assert a["config"].pop("resume") is True and b["config"].pop("resume") is False  # the settings of each start
    assert a.pop("overrides") == b.pop("overrides") + ["resume=true"]
    for s in (a, b):
        s.pop("timing"), s["cost"].pop("step_ms_median")  # timings
    assert a == b

    run(killed, *args, "resume=true")  # a finished run is left as it is
    assert without_timings(steps_of(killed)) == without_timings(steps_of(whole))


@pytest.mark.parametrize("cut", ["hyps.txt", "steps.jsonl"])
def test_a_run_killed_between_its_two_files_resumes(tmp_path, tiny_model_dir, two_docs, cut):
    """A kill between writing a step's line to steps.jsonl and to hyps.txt leaves them a line apart (or the
    other way round, after a torn write): the resumed run still ends as the uninterrupted one."""
    args = common(tiny_model_dir, two_docs[0], "method=full", "reset=never")
    whole = run(tmp_path / "whole", *args)
    killed = tmp_path / "killed"
    shutil.copytree(whole, killed)
    for name in ("steps.jsonl", "hyps.txt"):
        lines = (killed / name).read_text().splitlines(keepends=True)[:5]
        (killed / name).write_text("".join(lines[:4] if name == cut else lines))
    summary = json.loads((killed / "summary.json").read_text())
    (killed / "summary.json").write_text(json.dumps({**summary, "status": "interrupted"}))
    run(killed, *args, "resume=true")
    assert without_timings(steps_of(killed)) == without_timings(steps_of(whole))
    assert (killed / "hyps.txt").read_bytes() == (whole / "hyps.txt").read_bytes()


def test_resume_refuses_a_run_made_with_other_settings(tmp_path, tiny_model_dir, two_docs, capsys):
    out = run(tmp_path / "run", *common(tiny_model_dir, two_docs[0], "method=full"))
    summary = json.loads((out / "summary.json").read_text())
    (out / "summary.json").write_text(json.dumps({**summary, "status": "interrupted"}))
    run(out, *common(tiny_model_dir, two_docs[0], "method=full", "method.lr=0.5", "resume=true"), code=1)
    assert "cannot resume" in capsys.readouterr().err


def test_hypotheses_cut_at_max_length_are_flagged_and_counted(tmp_path, tiny_model_dir, tiny_tsv):
    short = run(tmp_path / "short", *common(tiny_model_dir, tiny_tsv, "method=none", "decode.max_length=2"))
    cut = [s for s in steps_of(short) if s.get("cut")]
    assert cut and all(len(s["pieces"]) <= 1 for s in cut)  # one token, then the end of sentence forced at 2
    assert json.loads((short / "summary.json").read_text())["cut_hypotheses"] == len(cut)
    long = run(tmp_path / "long", *common(tiny_model_dir, tiny_tsv, "method=none", "decode.max_length=200"))
    assert len([s for s in steps_of(long) if s.get("cut")]) < len(cut)
    assert json.loads((long / "summary.json").read_text())["cut_hypotheses"] < len(cut)


def test_an_interrupted_run_has_its_learning_curves_so_far(tmp_path, tiny_model_dir, two_docs, monkeypatch):
    from adaptsim.loop import simulation as simulate

    args = common(tiny_model_dir, two_docs[0], "method=full")
    whole = list(csv.DictReader((run(tmp_path / "whole", *args) / "curves.csv").open()))
    monkeypatch.setattr(simulate, "RSS_EVERY", 4)  # (every 100 segments in a real run)
    step = simulate.Simulation.step

    def interrupted_after_eleven(self, *a, **k):
        step(self, *a, **k)
        if self.index == 11:
            raise KeyboardInterrupt
    monkeypatch.setattr(simulate.Simulation, "step", interrupted_after_eleven)
    out = run(tmp_path / "cut", *args, code=130)
    assert json.loads((out / "summary.json").read_text())["status"] == "interrupted"
    # as far as the last checkpoint (written at segment 4, appended to at 8), the rows the whole run wrote
    assert list(csv.DictReader((out / "curves.csv").open())) == whole[:8]
