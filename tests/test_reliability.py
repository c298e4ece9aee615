"""Reliability: a run owns its directory, settings are checked before work starts, signals and
killed sweeps leave an honest record, checkpoints cannot run code, broken models, output directories and
invisible or NUL characters in the data stop with one line."""

from __future__ import annotations

import errno
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from adaptsim.cli import main
from adaptsim.errors import DataError, UserError
from adaptsim.launch.hydra_app import compose
from adaptsim.records import JobSummary, RecordWriter


def cli_inproc(capsys, *args) -> tuple[int, str]:
    """`adaptsim …` in this process: (exit code, stderr)."""
    with pytest.raises(SystemExit) as exit_:
        main(list(args))
    return exit_.value.code, capsys.readouterr().err


@pytest.fixture
def base(tiny_model_dir, tiny_tsv):
    return [f"model.path={tiny_model_dir}", "model.name=tiny", "dataset=tsv", f"dataset.path={tiny_tsv}",
            "decode.beam_size=2", "decode.max_length=20", "progress=false", "threads=1"]


def error_lines(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if ": error: " in ln or "Traceback" in ln]


# -- 1. a run owns its directory ------------------------------------------------------------------------
def test_a_run_refuses_a_directory_holding_another_run(tmp_path, base, capsys):
    out = tmp_path / "run"
    assert cli_inproc(capsys, "run", f"hydra.run.dir={out}", "method=none", *base)[0] == 0
    before = {name: (out / name).read_bytes() for name in ("steps.jsonl", "hyps.txt", "summary.json")}
    config = (out / ".hydra" / "config.yaml").read_bytes()
    code, err = cli_inproc(capsys, "run", f"hydra.run.dir={out}", "method=full", *base)
    assert code == 1
    assert error_lines(err) == [f"adaptsim run: error: {out}: holds another run's outputs (summary.json, "
                                "steps.jsonl); choose another hydra.run.dir (or leave it to the default)"]
    assert {name: (out / name).read_bytes() for name in before} == before  # nothing truncated or replaced
    assert (out / ".hydra" / "config.yaml").read_bytes() == config        # refused before Hydra wrote there


def test_a_job_claims_its_directory_and_resume_appends(tmp_path):
    JobSummary(tmp_path, {"method": "full"})
    with pytest.raises(UserError, match="holds another run's outputs"):
        JobSummary(tmp_path, {"method": "full"})  # e.g. a second run started into the same directory
    first = RecordWriter(tmp_path)
    first.step({"hypothesis": "a"})
    with pytest.raises(UserError, match="holds another run's outputs"):
        RecordWriter(tmp_path)
    first.close()
    again = RecordWriter(tmp_path, resume=True)  # the resume case: append, never truncate
    again.step({"hypothesis": "b"})
    again.close()
    assert [json.loads(ln)["hypothesis"] for ln in (tmp_path / "steps.jsonl").read_text().splitlines()] == ["a", "b"]
    assert (tmp_path / "hyps.txt").read_text() == "a\nb\n"


def started_together(*commands: list[str]) -> list[subprocess.CompletedProcess]:
    """`adaptsim …` commands started at the same moment (each its own process), once all have ended."""
    procs = [subprocess.Popen([sys.executable, "-m", "adaptsim", *c], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True) for c in commands]
    return [subprocess.CompletedProcess(p.args, p.wait(), None, p.stderr.read()) for p in procs]


@pytest.mark.slow  # processes of their own (the quick subset: -m "not slow")
def test_two_runs_started_together_into_one_directory_one_is_refused_before_it_writes(tmp_path, base):
    for attempt in range(2):
        out = tmp_path / f"run{attempt}"
        done = started_together(["run", f"hydra.run.dir={out}", "method=full", *base],
                                ["run", f"hydra.run.dir={out}", "method=none", *base])
        assert sorted(d.returncode for d in done) == [0, 1]
        loser = next(d for d in done if d.returncode == 1)
        [line] = error_lines(loser.stderr)  # (steps.jsonl too, where the other had started writing by then)
        assert re.fullmatch(rf"adaptsim run: error: {re.escape(str(out))}: holds another run's outputs \(summary.json"
                            r"(, steps.jsonl)?\); choose another hydra.run.dir \(or leave it to the default\)", line)
        summary = json.loads((out / "summary.json").read_text())
        recorded = (out / ".hydra" / "config.yaml").read_text()
        assert summary["status"] == "finished" and summary["config"]["method"]["name"] == summary["method"]
        assert f"name: {summary['method']}\n" in recorded.split("method:")[1]  # the winner's settings, not the loser's


@pytest.mark.slow  # processes of their own (the quick subset: -m "not slow")
def test_two_sweeps_started_together_into_one_directory_one_is_refused(tmp_path, base):
    sweep = tmp_path / "sweep"
    done = started_together(*(["run", "-m", f"hydra.sweep.dir={sweep}", "method=full,none", f"method.lr={lr}", *base]
                              for lr in (0.05, 0.01)))
    assert sorted(d.returncode for d in done) == [0, 1]
    loser = next(d for d in done if d.returncode == 1)
    assert error_lines(loser.stderr) == [f"adaptsim run: error: {sweep}: holds another sweep (.adaptsim-sweep.json); "
                                         "choose another hydra.sweep.dir"]
    winner = next(d for d in done if d.returncode == 0)
    lr = float(next(a for a in winner.args if a.startswith("method.lr=")).split("=")[1])
    summaries = [json.loads(p.read_text()) for p in sweep.glob("*/summary.json")]
    assert sorted(s["method"] for s in summaries) == ["full", "none"]
    for s in summaries:
        assert s["status"] == "finished" and s["config"]["method"]["lr"] == lr and f"method.lr={lr}" in s["overrides"]


def test_resuming_a_sweep_that_is_still_going_is_refused(tmp_path, base, capsys):
    sweep = tmp_path / "sweep"
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        sweep.mkdir()
        (sweep / ".adaptsim-sweep.json").write_text(json.dumps(
            {"status": "running", "process": {"pid": sleeper.pid, "host": __import__("socket").gethostname()}}))
        code, err = cli_inproc(capsys, "run", "-m", f"hydra.sweep.dir={sweep}", "method=none", "resume=true", *base)
        assert code == 1 and error_lines(err) == [
            f"adaptsim run: error: {sweep}: the sweep is still going (process {sleeper.pid}); cannot resume it until "
            f"that process has ended (kill {sleeper.pid} stops it as interrupted)"]
    finally:
        sleeper.kill()
        sleeper.wait()
    code, _ = cli_inproc(capsys, "run", "-m", f"hydra.sweep.dir={sweep}", "method=none", "resume=true", *base)
    assert code == 0 and json.loads((sweep / "0_none" / "summary.json").read_text())["status"] == "finished"


def test_a_sweep_whose_jobs_collide_in_one_directory_exits_1_and_records_the_refused_job(tmp_path, base, capsys):
    sweep = tmp_path / "sweep"
    code, err = cli_inproc(capsys, "run", "-m", f"hydra.sweep.dir={sweep}", "hydra.sweep.subdir=${method.name}",
                           "method=full", "method.lr=0.01,0.1", *base)
    assert code == 1 and len(error_lines(err)) == 1 and "holds another run's outputs" in err
    assert json.loads((sweep / "full" / "summary.json").read_text())["config"]["method"]["lr"] == 0.01
    [refused] = [json.loads(line) for line in (sweep / "failed.jsonl").read_text().splitlines()]
    assert refused["job"] == str(sweep / "full") and "holds another run's outputs" in refused["error"]


def test_default_run_directories_differ_within_a_second():
    dirs = {str(compose(name, hydra_node=True).hydra[mode].dir)
            for name in ("run", "bench") for mode in ("run", "sweep") for _ in range(3)}
    assert len(dirs) == 12


# -- 3. settings are checked when the configuration is composed -------------------------------------------
def composed(*overrides):
    return compose("run", overrides)


@pytest.mark.parametrize("overrides, message", [
    (["reset=documents"], "reset='documents': choose 'document' | 'never'"),
    (["update.clip_norm=-1"], "update.clip_norm=-1: must be a number > 0"),
    (["update.clip_norm=0"], "update.clip_norm=0: must be a number > 0"),
    (["update.min_updates=4"], "update.min_updates=4: must be ≤ update.max_updates=3"),
    (["method=none", "update.max_updates=abc"], "update.max_updates='abc': must be an integer ≥ 1"),
    (["update.max_updates=2.5"], "update.max_updates=2.5: must be an integer ≥ 1"),
    (["update.ppl_threshold=0"], "update.ppl_threshold=0: must be a number ≥ 1 (a perplexity is never below 1)"),
    (["update.ppl_threshold=nan"], "update.ppl_threshold=nan: must be a number ≥ 1"),
    (["update.ppl_threshold=0.5"], "update.ppl_threshold=0.5: must be a number ≥ 1"),
    (["decode.length_penalty=inf"], "decode.length_penalty=inf: must be a finite number"),
    (["metrics.sacrebleu=[BLEU,bleu]"], "metrics.sacrebleu=['BLEU', 'bleu']: must be a list of BLEU"),
    (["method=lasso", "method.budget_fraction=2"], "method.budget_fraction=2: must be a number in [0, 1]"),
    (["method=lora", "method.rank=0"], "method.rank=0: must be an integer ≥ 1"),
    (["method=memory", "method.lam=1.5"], "method.lam=1.5: must be a number in [0, 1]"),
    (["method=fixed", "method.embedding_rows=target"], "method.embedding_rows='target': choose 'source' | 'pair'"),
    (["method=full", "+method.alpha=1"], "method=full: got an unexpected keyword argument 'alpha'"),
    (["method=full", "method.lr=-0.01"], "method.lr=-0.01: must be a number > 0"),
    (["method=bias", "method.lr=0"], "method.lr=0: must be a number > 0"),
    (["method=full", "method.lr=inf"], "method.lr=inf: must be a number > 0"),
    (["decode.beam_size=0"], "decode.beam_size=0: must be an integer ≥ 1"),
    (["decode.max_length=0"], "decode.max_length=0: must be an integer ≥ 1"),
    (["threads=0"], "threads=0: must be null (torch's default) or an integer ≥ 1"),
    (["threads=two"], "threads='two': must be null"),
    (["device=gpu"], "device='gpu': choose cpu | cuda | cuda:N"),
    (["metrics.k_max=0"], "metrics.k_max=0: must be an integer ≥ 1"),
    (["metrics.scope=documents"], "metrics.scope='documents': choose null | 'document' | 'corpus'"),
    (["+resets=never"], "resets='never': unknown setting"),
    (["+decode.beams=4"],
     "decode.beams=4: unknown setting; decode.* are: beam_size, dtype, length_penalty, max_length"),
])
def test_invalid_settings_are_one_line_naming_key_value_and_rule(overrides, message):
    from adaptsim.loop.settings import validate

    with pytest.raises(UserError) as e:
        validate(composed(*overrides))
    assert str(e.value).startswith(message) and "\n" not in str(e.value)


def test_valid_settings_pass(caplog):
    from adaptsim.loop.settings import validate

    for overrides in ([], ["method=none"], ["+experiment=paper_methods"], ["threads=2", "metrics.scope=corpus"],
                      ["metrics.sacrebleu=[]"],
                      ["update.min_updates=0", "update.max_updates=1"]):
        validate(composed(*overrides))
    validate(composed("decode.max_length=2"))
    assert "decode.max_length=2" in caplog.text  # legal, but said: hypotheses are cut off


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message on a machine without CUDA")
def test_cuda_without_cuda_is_one_line():
    from adaptsim.loop.settings import validate

    with pytest.raises(UserError, match=r"^device='cuda:1': CUDA is not available here .*use device=cpu$"):
        validate(composed("device=cuda:1"))


def test_validation_comes_before_loading_anything(tmp_path, capsys):
    """No model and no data there: the bad setting is what is reported, before the run's directory is claimed (a
    typo must not leave a directory that refuses the corrected command)."""
    out = tmp_path / "out"
    code, err = cli_inproc(capsys, "run", "method=none", "update.max_updates=abc", f"model.path={tmp_path}/none",
                           "dataset=tsv", f"dataset.path={tmp_path}/none.tsv", f"hydra.run.dir={out}")
    assert code == 1
    assert error_lines(err) == ["adaptsim run: error: update.max_updates='abc': must be an integer ≥ 1"]
    assert not out.exists()


def test_train_checks_device_and_threads_first(tmp_path):
    from adaptsim.basemodel.trainer import train

    for setting, message in (("device=gpu", "device='gpu': choose cpu | cuda | cuda:N"),
                             ("threads=0", "threads=0: must be null")):
        cfg = compose("train", [f"train.source={tmp_path}/none.en", f"train.target={tmp_path}/none.de",
                                f"train.out={tmp_path}/model", setting])
        with pytest.raises(UserError, match=f"^{message}"):
            train(cfg)


# -- 5. resuming training does not unpickle code ------------------------------------------------------------
class _Payload:
    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return exec, (f"open({str(self.marker)!r}, 'w').write('pwned')",)


def test_train_resume_refuses_a_checkpoint_that_would_run_code(tmp_path, tiny_model_dir, tiny_corpus):
    import shutil

    from adaptsim.basemodel.trainer import STATE, train

    text = tmp_path / "text"
    text.mkdir()
    (text / "a.en").write_text("".join(s + "\n" for s, _ in tiny_corpus))
    (text / "a.de").write_text("".join(t + "\n" for _, t in tiny_corpus))
    out, marker = tmp_path / "model", tmp_path / "pwned"
    shutil.copytree(tiny_model_dir, out / "last")
    torch.save({"optimizer": _Payload(marker), "trainer": {"step": 1}}, out / "last" / STATE)
    cfg = compose("train", [f"train.source={text}/a.en", f"train.target={text}/a.de", f"train.out={out}",
                            "train.resume=true", "progress=false"])
    with pytest.raises(UserError, match=f"^{out / 'last' / STATE}: not a trainer state adaptsim can load safely"):
        train(cfg)
    assert not marker.exists()


# -- 6. interrupted and killed runs are not shown as live or finished -------------------------------------
def _wait_for(predicate, timeout: float, what: str):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def _summary(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


@pytest.fixture
def long_tsv(tmp_path, tiny_corpus) -> Path:
    """Long enough (1,440 segments) that a run is still going when the test stops it."""
    rows = ["doc_id\tseg_id\tsource\treference"]
    rows += [f"d{i // 48}\t{i}\t{s}\t{r}" for i, (s, r) in enumerate(tiny_corpus * 30)]
    path = tmp_path / "long.tsv"
    path.write_text("\n".join(rows) + "\n")
    return path


def _started(run_dir: Path):
    steps = run_dir / "steps.jsonl"
    return _summary(run_dir / "summary.json").get("status") == "running" and steps.exists() and steps.stat().st_size


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_sigint_and_sigterm_mark_the_run_interrupted(tmp_path, tiny_model_dir, long_tsv, capsys, sig, code):
    """The signal comes from another thread of this process once the run has written a step."""
    import threading

    def stray(signum, frame):  # the signal must land inside the run; if it does not, fail, don't die
        raise AssertionError(f"{signal.Signals(signum).name} arrived outside the run")

    out = tmp_path / "run"
    sender = threading.Thread(target=lambda: (_wait_for(lambda: _started(out), 60, "the run to start"),
                                              os.kill(os.getpid(), sig)), daemon=True)
    previous = signal.signal(sig, stray)
    try:
        sender.start()
        if sig == signal.SIGINT:
            signal.signal(sig, signal.default_int_handler)  # Python's own: KeyboardInterrupt
        exit_code, err = cli_inproc(capsys, "run", f"hydra.run.dir={out}", f"model.path={tiny_model_dir}",
                                    "dataset=tsv", f"dataset.path={long_tsv}", "method=full", "decode.beam_size=2",
                                    "decode.max_length=20", "progress=false", "threads=1")
        sender.join()
    finally:
        signal.signal(sig, previous)
    assert exit_code == code and "adaptsim run: interrupted" in err and "Traceback" not in err
    summary = _summary(out / "summary.json")
    assert summary["status"] == "interrupted" and summary["error"] == f"interrupted by {sig.name}"
    assert summary["segments"] == 1440 and "process" not in summary
    lines = (out / "steps.jsonl").read_text().splitlines()
    assert 0 < len(lines) < 1440 and all(json.loads(ln) for ln in lines)


def test_reports_tell_a_killed_run_from_a_running_one(tmp_path):
    from adaptsim.report.runs import discover

    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    for name, pid in (("killed", gone.pid), ("live", os.getpid())):
        JobSummary(tmp_path / name, {"method": "full"})
        data = json.loads((tmp_path / name / "summary.json").read_text())
        assert data["process"]["pid"] == os.getpid()
        data["process"]["pid"] = pid  # as if that process had written it
        (tmp_path / name / "summary.json").write_text(json.dumps(data))
    found = discover([tmp_path])
    assert not found.runs
    problems = {p.where.name: p.what for p in found.problems}
    assert problems == {"killed": f"unfinished (status 'running'): killed (its process {gone.pid} is gone)",
                        "live": f"unfinished (status 'running'): still running (pid {os.getpid()})"}


# -- 4. killing a parallel sweep stops its workers -----------------------------------------------------------
def _group(pgid: int) -> list[int]:
    """Live (not zombie) processes of a process group."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            out.append(int(stat.parent.name))
    return out


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds the sweep's processes in /proc")
def test_killing_a_joblib_sweep_stops_its_workers(tmp_path, tiny_model_dir, long_tsv):
    sweep = tmp_path / "sweep"
    proc = subprocess.Popen(
        [sys.executable, "-m", "adaptsim", "run", "-m", "method=none,full", "hydra/launcher=joblib", "threads=1",
         "hydra.launcher.n_jobs=2", f"model.path={tiny_model_dir}", "dataset=tsv", f"dataset.path={long_tsv}",
         "decode.beam_size=2", "decode.max_length=20", "progress=false", f"hydra.sweep.dir={sweep}"],
        stdout=subprocess.DEVNULL, stderr=open(tmp_path / "stderr", "w"), start_new_session=True)  # own group
    jobs = [sweep / "0_none", sweep / "1_full"]
    try:
        started = _wait_for(lambda: proc.poll() is not None or [j for j in jobs if _started(j)], 90, "a job to start")
        assert proc.poll() is None, (tmp_path / "stderr").read_text()[-3000:]
        worker = _summary(started[0] / "summary.json")["process"]["pid"]
        assert worker != proc.pid and worker in _group(proc.pid)
        proc.kill()  # SIGKILL: nothing in the main process can react
        proc.wait()
        _wait_for(lambda: not _group(proc.pid), 20, "the workers to exit")
        for j in started:
            assert _summary(j / "summary.json")["status"] == "interrupted"
    finally:
        for pid in _group(proc.pid):  # whatever is left of this test's own process group
            os.kill(pid, signal.SIGKILL)


# -- 7. broken models and output directories are one line -----------------------------------------------------
@pytest.mark.parametrize("damage", ["only_config", "empty_weights", "truncated_weights"])
def test_broken_model_directory_names_the_file(tmp_path, tiny_model_dir, damage):
    import shutil

    from adaptsim.models import Seq2SeqModel

    model = tmp_path / "model"
    if damage == "only_config":
        model.mkdir()
        shutil.copy(tiny_model_dir / "config.json", model)
        where = model
    else:
        shutil.copytree(tiny_model_dir, model)
        weights = model / "model.safetensors"
        data = weights.read_bytes()
        weights.write_bytes(b"" if damage == "empty_weights" else data[:len(data) // 2])
        where = weights
    with pytest.raises(UserError) as e:
        Seq2SeqModel.load(str(model))
    assert str(e.value).startswith(f"{where}: cannot load the ") and "\n" not in str(e.value)


def test_a_file_in_the_way_of_the_run_directory(tmp_path, base, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code, err = cli_inproc(capsys, "run", f"hydra.run.dir={blocker}", *base)
    assert code == 1 and error_lines(err) == [f"adaptsim run: error: {blocker}: a file is in the way of the run "
                                              "directory"]
    code, err = cli_inproc(capsys, "run", f"hydra.run.dir={blocker}/run", *base)
    assert code == 1 and error_lines(err) == [f"adaptsim run: error: {blocker}/run: {blocker} is a file, "
                                              "not a directory"]


def test_a_full_disk_never_leaves_half_a_line(tmp_path, base, capsys, monkeypatch):
    """The third step's write runs out of space halfway: steps.jsonl keeps two whole lines, one error line."""
    import adaptsim.records.steps as steps

    real_write, calls = os.write, []

    def write(fd, data):
        if os.path.basename(os.readlink(f"/proc/self/fd/{fd}")) == "steps.jsonl":
            calls.append(len(data))
            if len(calls) == 3:
                real_write(fd, data[:len(data) // 2])
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)

    monkeypatch.setattr(steps.os, "write", write)
    out = tmp_path / "run"
    code, err = cli_inproc(capsys, "run", f"hydra.run.dir={out}", "method=none", *base)
    assert code == 1
    assert error_lines(err) == [f"adaptsim run: error: {out / 'steps.jsonl'}: cannot write (No space left on device)"]
    lines = (out / "steps.jsonl").read_bytes().split(b"\n")
    assert lines[-1] == b"" and len(lines) == 3 and all(json.loads(ln) for ln in lines[:-1])
    assert len((out / "hyps.txt").read_text().splitlines()) == 2
    assert json.loads((out / "summary.json").read_text())["status"] == "failed"


def test_a_full_disk_while_writing_the_curves_is_one_line_and_leaves_no_temporary_file(tmp_path, base, capsys,
                                                                                       monkeypatch):
    """curves.csv is written at the end (temp file + rename): out of space there was a traceback and a
    curves.csv.tmp left behind."""
    import adaptsim.metrics.curves as curves

    def full(rows, path, append=False):
        Path(path).with_name("curves.csv.tmp").write_text("segment,doc")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(curves, "write_curves", full)
    out = tmp_path / "run"
    code, err = cli_inproc(capsys, "run", f"hydra.run.dir={out}", "method=none", *base)
    assert code == 1
    assert error_lines(err) == [f"adaptsim run: error: {out / 'curves.csv'}: cannot write (No space left on device)"]
    assert not (out / "curves.csv.tmp").exists()
    assert json.loads((out / "summary.json").read_text())["status"] == "failed"


# -- 8. invisible characters and NUL bytes in the data -------------------------------------------------------
def _tsv(tmp_path, source: str) -> Path:
    path = tmp_path / "data.tsv"
    path.write_bytes(f"doc_id\tseg_id\tsource\treference\nd\t1\tThe man sees the dog.\tDer Mann sieht den Hund.\n"
                     f"d\t2\t{source}\tDie Frau mag die Katze.\n".encode())
    return path


@pytest.mark.parametrize("invisible", ["\u200b", "\u200b\u200d \ufeff", "\x07\u00ad", "\u2060\u00a0\u200e"])
def test_segments_of_invisible_characters_count_as_empty(tmp_path, invisible):
    from adaptsim.data import load_documents

    opts = {"name": "t", "format": "tsv", "path": str(_tsv(tmp_path, invisible))}
    with pytest.raises(DataError, match=r"data\.tsv:3: empty source"):
        load_documents(opts)
    docs = load_documents({**opts, "on_empty": "skip"})
    assert sum(map(len, docs)) == 1 and docs.skipped["empty"] == 1


def test_nul_bytes_are_a_data_error_naming_file_and_line(tmp_path):
    from adaptsim.data import load_documents

    path = _tsv(tmp_path, "The\x00woman likes the cat.")
    with pytest.raises(DataError, match=rf"^{path}:3: NUL byte"):
        load_documents({"name": "t", "format": "tsv", "path": str(path)})
    jsonl = tmp_path / "data.jsonl"
    jsonl.write_text('{"doc_id": "d", "seg_id": "1", "source": "a\\u0000b", "reference": "x"}\n')
    with pytest.raises(DataError, match=rf"^{jsonl}:1: NUL character in the source"):
        load_documents({"name": "t", "format": "jsonl", "path": str(jsonl)})


# -- every command records its end the same way ---------------------------------------------------------------
@pytest.mark.parametrize("command,overrides", [
    ("run", ["dataset.path=/no/such/file.tsv"]),
    ("bench", ["dataset.path=/no/such/file.tsv"]),
    ("select-fixed", ["dataset.path=/no/such/file.tsv"]),
    ("train", ["train.source=/no/such/file.en", "train.target=/no/such/file.de", "model=demo", "train.out=/tmp/x"]),
])
def test_every_command_refused_before_it_begins_leaves_no_directory(tmp_path, capsys, base, command, overrides):
    """A refusal changes nothing: no failed run directory that would refuse the same command once the cause is
    fixed (issue #79, 3); the command said why, in one line."""
    out = tmp_path / command
    args = [a for a in base if not a.startswith("dataset.path")] if command != "train" else ["threads=1"]
    overrides = [o.replace("/tmp/x", str(tmp_path / "model")) for o in overrides]
    code, err = cli_inproc(capsys, command, f"hydra.run.dir={out}", *args, *overrides)
    assert code == 1 and len(error_lines(err)) == 1 and "/no/such/file" in error_lines(err)[0]
    assert not out.exists()
    if command == "run":  # the cause fixed, the same command into the same directory
        code, _ = cli_inproc(capsys, command, f"hydra.run.dir={out}", *base, "method=none")
        assert code == 0 and json.loads((out / "summary.json").read_text())["status"] == "finished"


def test_a_job_that_fails_after_it_began_records_the_failure(tmp_path, capsys, base, monkeypatch):
    from adaptsim.loop import simulation

    def broken(self, i, *args, **kwargs):  # the second step's scores cannot be computed
        if i == 1:
            raise UserError("the second step failed")
        return scored(self, i, *args, **kwargs)

    scored = simulation.Simulation.scored
    monkeypatch.setattr(simulation.Simulation, "scored", broken)
    out = tmp_path / "run"
    code, err = cli_inproc(capsys, "run", f"hydra.run.dir={out}", *base, "method=none")
    summary = json.loads((out / "summary.json").read_text())
    assert code == 1 and summary["status"] == "failed" and summary["error"] == "the second step failed"
    assert "process" not in summary  # a finished job no longer names a process to check
    assert len((out / "hyps.txt").read_text().splitlines()) == 1


def test_a_finished_command_says_so_in_its_summary(tmp_path, capsys, base):
    out = tmp_path / "bench"
    code, _ = cli_inproc(capsys, "bench", f"hydra.run.dir={out}", *base, "segments=2", "method=none")
    summary = json.loads((out / "summary.json").read_text())
    assert code == 0 and summary["command"] == "bench" and summary["status"] == "finished"
    assert summary["segments"] == 2 and summary["method"] == "none"


def test_reports_leave_other_commands_jobs_alone(tmp_path):
    """train and select-fixed jobs have a summary.json too: `table outputs/` must not list them as broken runs."""
    from adaptsim.report.runs import discover

    for command in ("train", "select-fixed"):
        JobSummary(tmp_path / command, {"command": command}).close("finished")
    found = discover([tmp_path])
    assert found.runs == [] and found.problems == []


def test_bench_with_no_segments_names_the_setting(tmp_path, capsys, base):
    code, err = cli_inproc(capsys, "bench", f"hydra.run.dir={tmp_path / 'bench'}", *base, "segments=0", "method=none")
    assert code == 1 and error_lines(err) == ["adaptsim bench: error: segments=0: must be an integer ≥ 1"]


@pytest.mark.parametrize("setting, message", [("budget=-1", "budget=-1: must be a number ≥ 0"),
                                              ("budget_fraction=2", "budget_fraction=2: must be a number in [0, 1]"),
                                              ("prefixes=0", "prefixes=0: must be an integer ≥ 1")])
def test_select_fixed_settings_are_checked_before_any_work(tmp_path, capsys, setting, message):
    """No model or data there: the setting is what is reported."""
    code, err = cli_inproc(capsys, "select-fixed", setting, f"model.path={tmp_path}/none",
                           f"hydra.run.dir={tmp_path / 'sf'}")
    assert code == 1 and error_lines(err) == [f"adaptsim select-fixed: error: {message}"]
