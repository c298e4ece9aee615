"""A refusal changes nothing, at any point (issue #79): a resume refused after its directory was claimed or by its
replay leaves every byte as it found them; an unreadable summary, a broken library, a full disk and a checkpoint cut
short are one line; every file adaptsim writes follows the umask. Grouped as the issue lists them; the cases that
held before it (a changed setting, file or model refused before anything is written) are tests/test_resume.py's."""

from __future__ import annotations

import errno
import json
import os
import shutil
import stat
import sys

import pytest
from conftest import tsv_of
from test_resume import cut, files, last_error, run

from adaptsim.errors import UserError


@pytest.fixture
def stream(tmp_path, tiny_corpus):
    rows = [(f"doc{d}", i, *tiny_corpus[5 * d + i]) for d in range(2) for i in range(5)]
    return tsv_of(tmp_path / "stream.tsv", rows)


@pytest.fixture
def interrupted(tmp_path, tiny_model_dir, stream, common):
    """(a full run's overrides, a run of `full` interrupted after 4 of its 10 steps)."""
    args = common(tiny_model_dir, stream, "method=full")
    return args, cut(run(tmp_path / "whole", *args), tmp_path / "cut", 4)


def rewrite_step(out, index: int, **fields) -> None:
    lines = (out / "steps.jsonl").read_text().splitlines(keepends=True)
    lines[index] = json.dumps({**json.loads(lines[index]), **fields}, ensure_ascii=False) + "\n"
    (out / "steps.jsonl").write_text("".join(lines))


# -- 1. a resume refused after the directory is claimed ----------------------------------------------------------
def test_a_resume_refused_after_the_claim_gives_every_record_back(interrupted, capsys, monkeypatch):
    from adaptsim.loop import simulation

    def gone(*args, **kwargs):
        raise UserError("the model went away")

    args, out = interrupted
    before = files(out)
    monkeypatch.setattr(simulation, "load", gone)  # refused after JobSummary, Hydra and the log wrote
    run(out, *args, "resume=true", code=1)
    assert last_error(capsys).endswith("the model went away")
    assert files(out) == before  # summary.json (its fingerprints), .hydra/*, adaptsim.log, steps, hyps


def test_a_broken_segmenter_is_refused_before_anything_is_written(tmp_path, tiny_model_dir, stream, common, capsys,
                                                                  monkeypatch):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "jieba.py").write_text('raise RuntimeError("a broken build")\n')
    monkeypatch.syspath_prepend(str(tmp_path / "lib"))
    monkeypatch.delitem(sys.modules, "jieba", raising=False)
    out = tmp_path / "zh"
    run(out, *common(tiny_model_dir, stream, "method=none", "metrics.lang=zh"), code=1)
    assert last_error(capsys).endswith("metrics.lang=zh: jieba is installed but does not load (RuntimeError: a broken "
                                       'build); reinstall it: pip install -e ".[cjk]"')
    assert not out.exists()


# -- 2. a resume refused by its replay ----------------------------------------------------------------------------
def test_a_resume_refused_by_its_replay_gives_steps_and_hypotheses_back(interrupted, capsys):
    args, out = interrupted
    rewrite_step(out, 1, ppl_before=123.0)
    with open(out / "steps.jsonl", "a") as f:
        f.write('{"index": 4, "doc_')  # a torn last line, which the resume cuts
    (out / "hyps.txt").write_text((out / "hyps.txt").read_text() + "a hypothesis without its step\n")
    before = files(out)
    run(out, *args, "resume=true", code=1)
    assert "cannot resume: step 2 replays to updates/perplexities" in last_error(capsys)
    assert files(out) == before


# -- 3. a refused new run leaves nothing in the way (tests/test_reliability.py: every command) ---------------------
def test_a_refused_new_run_leaves_a_directory_the_same_command_can_use(tmp_path, tiny_model_dir, stream, common,
                                                                      capsys):
    out = tmp_path / "new"
    args = common(tiny_model_dir, stream, "method=fixed")
    run(out, *args, "method.list=no-such-list", code=1)
    assert "method.list=no-such-list: no list of fixed tensors" in last_error(capsys)
    assert not out.exists()
    run(out, *common(tiny_model_dir, stream, "method=none"))


# -- 4. one line, never a traceback ---------------------------------------------------------------------------------
@pytest.mark.parametrize("summary,reason", [("", "empty"), ('{"status": "runn', "JSONDecodeError"),
                                            ("[]", "a JSON list, not an object")])
def test_an_unreadable_summary_is_one_line_and_changes_nothing(interrupted, capsys, summary, reason):
    args, out = interrupted
    (out / "summary.json").write_text(summary)
    before = files(out)
    run(out, *args, "resume=true", code=1)
    error = last_error(capsys)
    assert f"{out / 'summary.json'}:" in error and reason in error and "Traceback" not in capsys.readouterr().err
    assert files(out) == before


def test_a_full_disk_while_saving_a_checkpoint_is_one_line_and_leaves_no_tmp(tmp_path, tiny_model_dir, monkeypatch):
    from transformers import MarianMTModel, MarianTokenizer

    from adaptsim.basemodel.trainer import save_checkpoint

    model, tokenizer = MarianMTModel.from_pretrained(tiny_model_dir), MarianTokenizer.from_pretrained(tiny_model_dir)

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(model, "save_pretrained", full)
    with pytest.raises(UserError, match=rf"^{tmp_path / 'last'}: cannot write the checkpoint \(No space left"):
        save_checkpoint(model, tokenizer, tmp_path / "last", state={"step": 1})
    assert list(tmp_path.iterdir()) == []


def test_a_checkpoint_cut_short_is_one_line(tmp_path, tiny_model_dir):
    from adaptsim.basemodel.trainer import resume_model

    shutil.copytree(tiny_model_dir, tmp_path / "last")
    weights = tmp_path / "last" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])
    with pytest.raises(UserError, match=rf"^{tmp_path / 'last'}: cannot load the checkpoint \(.*train.overwrite=true"):
        resume_model(tmp_path)


# -- 5. every file follows the umask ------------------------------------------------------------------------------
@pytest.mark.parametrize("umask", [0o002, 0o077])
def test_safetensors_files_follow_the_umask(tmp_path, tiny_model_dir, stream, common, umask):
    from transformers import MarianMTModel, MarianTokenizer

    from adaptsim.basemodel.trainer import save_checkpoint

    model, tokenizer = MarianMTModel.from_pretrained(tiny_model_dir), MarianTokenizer.from_pretrained(tiny_model_dir)
    previous = os.umask(umask)
    try:
        save_checkpoint(model, tokenizer, tmp_path / "last", state={"step": 1})
        out = run(tmp_path / "run", *common(tiny_model_dir, stream, "method=bias", "save_offsets=true"))
    finally:
        os.umask(previous)
    written = [tmp_path / "last" / "model.safetensors", *sorted((out / "offsets").glob("*.safetensors"))]
    assert len(written) == 3 and {stat.S_IMODE(p.stat().st_mode) for p in written} == {0o666 & ~umask}
    assert stat.S_IMODE((out / "steps.jsonl").stat().st_mode) == 0o666 & ~umask  # as every other record


# -- 6. resume checks the hypotheses -------------------------------------------------------------------------------
def test_a_resume_refuses_an_edited_hypothesis_and_changes_nothing(interrupted, capsys):
    args, out = interrupted
    rewrite_step(out, 2, hypothesis="ein ganz anderer Satz")
    before = files(out)
    run(out, *args, "resume=true", code=1)
    error = last_error(capsys)
    assert "cannot resume: step 3's hypothesis scores" in error and "its record was changed" in error
    assert files(out) == before


# -- 7. a killed run's pid given to another process --------------------------------------------------------------
def test_a_killed_run_whose_pid_another_process_has_now_is_resumed(interrupted, capsys):
    import socket
    import subprocess

    from adaptsim.records import recorded_process, this_process

    args, out = interrupted
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        summary = json.loads((out / "summary.json").read_text())
        started = this_process()["started"]  # (a start that is not the other process's: this one's)
        process = {"pid": other.pid, "host": socket.gethostname(), "started": started}
        summary |= {"status": "running", "process": process}
        (out / "summary.json").write_text(json.dumps(summary))
        assert recorded_process(summary) is None  # not "still going": that pid is another process now
        run(out, *args, "resume=true")
        assert json.loads((out / "summary.json").read_text())["status"] == "finished"
    finally:
        other.kill()
        other.wait()


# -- 7. a sweep resumed with another command line ------------------------------------------------------------------
def test_a_sweep_resumed_with_other_jobs_is_refused_before_hydra_writes(tmp_path, tiny_model_dir, stream, common,
                                                                        capsys):
    from test_resume import sweep

    args = common(tiny_model_dir, stream)
    out = sweep(tmp_path / "sweep", *args, "method=none,bias")
    before = files(out)
    sweep(out, *args, "method=none,full", "resume=true", code=1)  # bias's job replaced by full's
    assert last_error(capsys).endswith(f"{out}: the resumed sweep replaces method=bias with full; resume it with its "
                                       "own jobs (more values, or some of them), or start the other sweep in another "
                                       "hydra.sweep.dir")
    sweep(out, *args, "method=none,bias", "seed=1,2", "resume=true", code=1)  # a new dimension: every job another
    assert "the resumed sweep sweeps seed, which it did not" in last_error(capsys)
    assert files(out) == before
    sweep(out, *args, "method=none,bias", "resume=true", "threads=2")  # a setting a resume may change: not refused
    record = (out / "multirun.yaml").read_bytes()
    sweep(out, *args, "method=none", "resume=true")  # some of its jobs: allowed, and its record keeps them all
    assert (out / "multirun.yaml").read_bytes() == record
