"""The allocator: a command asked for jemalloc re-executes itself under it where it is installed (train's default;
`run`'s is glibc's), says so in one log line, and computes exactly what glibc's allocator computes."""

import json
import subprocess
import sys

import pytest

from adaptsim import allocator

TIMINGS = ("translate_s", "update_s")


def run(out, *overrides):
    done = subprocess.run([sys.executable, "-m", "adaptsim", "run", "method=full", "dataset.max_documents=1",
                           "progress=false", f"hydra.run.dir={out}", *overrides],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:]
    steps = [{k: v for k, v in json.loads(line).items() if k not in TIMINGS}
             for line in (out / "steps.jsonl").read_text(encoding="utf-8").splitlines()]
    return done.stdout, steps


@pytest.mark.skipif(allocator.jemalloc_library() is None, reason="libjemalloc2 is not installed")
def test_jemalloc_same_outputs_as_glibc(tmp_path):
    log_j, steps_j = run(tmp_path / "jemalloc", "allocator=jemalloc")
    log_s, steps_s = run(tmp_path / "system")
    assert "allocator: jemalloc (dirty_decay_ms:60000,muzzy_decay_ms:0" in log_j
    assert "allocator: system (allocator=system)" in log_s
    assert len(steps_j) == 15 and steps_j == steps_s  # hypotheses, perplexities, log-probabilities, scores


def test_the_setting_is_read_from_the_command_line_before_hydra():
    assert allocator.requested("run", ["method=full", "allocator=jemalloc"]) == "jemalloc"
    assert allocator.requested("train", ["++allocator=system"]) == "system"
    assert allocator.requested("bench", []) == "system"  # configs/run.yaml
    assert allocator.requested("train", []) == "jemalloc"  # configs/train.yaml


def test_without_the_library_the_log_says_what_to_install(monkeypatch):
    monkeypatch.setattr(allocator, "jemalloc_library", lambda: None)
    monkeypatch.setattr(allocator, "active", lambda: "system")
    assert "apt install libjemalloc2" in allocator.describe("jemalloc")


def test_a_bad_allocator_is_one_line(tmp_path):
    done = subprocess.run([sys.executable, "-m", "adaptsim", "run", "allocator=tcmalloc",
                           f"hydra.run.dir={tmp_path / 'out'}"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 1 and "allocator='tcmalloc': choose 'jemalloc' | 'system'" in done.stderr
    assert "Traceback" not in done.stderr + done.stdout
