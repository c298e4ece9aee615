"""A run directory that never lies (adaptsim/launch/resume.py, docs/design.md §6): a resume with anything that can
change an
output refused before anything is written, the directory left byte for byte; a model known by its files; a resumed
run's summary the uninterrupted run's, for every method.

The runs are on the session's device: `python -m pytest --device cuda tests/test_resume.py` on a GPU."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import tsv_of

from adaptsim.cli import main
from adaptsim.launch.jobs import SWEEP_CLAIM


@pytest.fixture
def stream(tmp_path, tiny_corpus):
    """Two documents of 5 alike segments (tm finds matches ≥ 75 in them)."""
    return tsv_of(tmp_path / "stream.tsv",
                  [(f"doc{d}", i, *tiny_corpus[5 * d + i]) for d in range(2) for i in range(5)])


def run(out, *overrides, code=0, command="run"):
    with pytest.raises(SystemExit) as exit_:
        main([command, f"hydra.run.dir={out}", *overrides])
    assert exit_.value.code == code
    return out


def sweep(out, *overrides, code=0, launcher="basic"):
    with pytest.raises(SystemExit) as exit_:
        main(["run", "-m", f"hydra.sweep.dir={out}", f"hydra/launcher={launcher}", *overrides])
    assert exit_.value.code == code
    return out


def files(d) -> dict:
    """Every file below `d`, as bytes."""
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def cut(whole, out, keep: int):
    """`whole`'s run as a run interrupted after `keep` steps (as a kill leaves it, summary `interrupted`)."""
    shutil.copytree(whole, out)
    for name in ("steps.jsonl", "hyps.txt"):
        (out / name).write_text("".join((out / name).read_text().splitlines(keepends=True)[:keep]))
    summary = json.loads((out / "summary.json").read_text())
    (out / "summary.json").write_text(json.dumps({**summary, "status": "interrupted"}))
    return out


def last_error(capsys) -> str:
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    return err[-1]


# -- resume is all or nothing ---------------------------------------------------------------------------------------
CHANGES = {  # each kind of setting: what is changed, the key the refusal must name
    "decoding": (["decode.beam_size=1"], "decode.beam_size: 2 → 1"),
    "metrics": (["metrics.case=lower"], "metrics.case: truecase → lower"),
    "update": (["method.lr=0.5"], "method.lr: 0.01 → 0.5"),
    "seed": (["seed=2"], "seed: 1 → 2"),
}


@pytest.mark.parametrize("kind", CHANGES)
def test_a_resume_with_another_setting_is_refused_and_changes_nothing(tmp_path, tiny_model_dir, stream, common, capsys,
                                                                      kind):
    args = common(tiny_model_dir, stream, "method=full")
    out = cut(run(tmp_path / "whole", *args), tmp_path / "cut", 3)
    before = files(out)
    changed, named = CHANGES[kind]
    run(out, *args, *changed, "resume=true", code=1)
    error = last_error(capsys)
    assert "cannot resume with other settings than its own" in error and named in error
    assert files(out) == before  # summary.json, .hydra/{config,hydra,overrides}.yaml, steps.jsonl: byte for byte
    run(out, *args, "resume=true")  # and the run is still there to resume with its own settings
    assert json.loads((out / "summary.json").read_text())["status"] == "finished"


def test_a_setting_that_cannot_change_an_output_may_change(tmp_path, tiny_model_dir, stream, common):
    args = common(tiny_model_dir, stream, "method=full")
    whole = run(tmp_path / "whole", *args)
    out = cut(whole, tmp_path / "cut", 3)
    run(out, *args, "resume=true", "progress=true", "malloc_tuning=false")
    assert (out / "steps.jsonl").read_text().count("\n") == (whole / "steps.jsonl").read_text().count("\n")
    assert json.loads((out / "summary.json").read_text())["config"]["malloc_tuning"] is False


def test_threads_may_change_on_resume(tmp_path, tiny_model_dir, stream, common):
    args = common(tiny_model_dir, stream, "method=none")  # (no update: the replay's arithmetic cannot differ)
    out = cut(run(tmp_path / "whole", *args), tmp_path / "cut", 3)
    run(out, *args, "resume=true", "threads=2")
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "finished" and summary["timing"]["threads"] == 2


def test_the_same_settings_naming_other_files_are_refused_and_change_nothing(tmp_path, tiny_model_dir,
                                                                              tiny_model_dir_untied, stream, common,
                                                                              capsys):
    """Another model, other data, another external TM at the paths the run recorded: the replay cannot see a TM
    consulted only before translating, nor the data after the interruption, nor (always) another model."""
    model = tmp_path / "model"
    shutil.copytree(tiny_model_dir, model)
    tm = tmp_path / "tm.tsv"
    tm.write_text("source\treference\nThe man sees the dog.\tDer Mann erblickt den Hund.\n")  # no stream pair
    args = common(model, stream, "method=tm", "method.external.format=tsv", f"method.external.path={tm}")
    out = cut(run(tmp_path / "whole", *args), tmp_path / "cut", 3)
    before = files(out)
    originals = {p: p.read_bytes() for p in (tm, stream)}
    for what, change in (("method.external.path", lambda: tm.write_text("source\treference\nA.\tB.\n")),
                         ("dataset.path", lambda: stream.write_text(stream.read_text().replace("dog", "cat"))),
                         ("model_fingerprint", lambda: (shutil.rmtree(model),
                                                        shutil.copytree(tiny_model_dir_untied, model)))):
        change()
        run(out, *args, "resume=true", code=1)
        error = last_error(capsys)
        said = "the same settings name other files now" if what == "model_fingerprint" else "a file it read has changed"
        assert said in error and f"{what}: " in error, error
        assert files(out) == before
        for path, data in originals.items():  # back to the run's own files: the next kind alone differs
            path.write_bytes(data)
        shutil.rmtree(model), shutil.copytree(tiny_model_dir, model)
    other = [a if not a.startswith("model.path=") else f"model.path={tiny_model_dir_untied}" for a in args]
    run(out, *other, "resume=true", code=1)  # another model by another path: its files name it
    assert "model_fingerprint: " in last_error(capsys) and files(out) == before
    run(out, *args, "resume=true")  # its own files again: resumed
    assert json.loads((out / "summary.json").read_text())["status"] == "finished"


def test_data_changed_in_a_folder_no_setting_names_is_refused(tmp_path, tiny_model_dir, tiny_corpus, common, capsys):
    """The paper's own data set is a folder of corpus files (dataset=autodesk): no setting names its files, so only
    the segments read tell that one has changed. Refused before anything is written, naming the data; with the
    folder as it was, the run resumes, and a finished run is checked without loading its model."""
    from adaptsim.data.readers.autodesk import END, FIELD

    folder = tmp_path / "autodesk"
    folder.mkdir()
    for d in range(2):
        pairs = tiny_corpus[5 * d:5 * d + 5]
        (folder / f"doc{d}.txt").write_text("".join(f"{s}{FIELD}{r}{FIELD}{r}{END}" for s, r in pairs))
    args = [a for a in common(tiny_model_dir, folder) if a != "dataset=tsv"] + ["dataset=autodesk"]
    whole = run(tmp_path / "whole", *args)
    out = cut(whole, tmp_path / "cut", 3)
    before = files(out)
    original = (folder / "doc1.txt").read_text()
    (folder / "doc1.txt").write_text(original.replace("dog", "cat"))
    run(out, *args, "resume=true", code=1)
    error = last_error(capsys)
    assert "the same settings name other files now" in error and "data_fingerprint: " in error, error
    assert files(out) == before
    (folder / "doc1.txt").write_text(original)
    run(out, *args, "resume=true")
    assert json.loads((out / "summary.json").read_text())["status"] == "finished"
    import adaptsim.models

    finished = files(whole)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(adaptsim.models, "load_model", lambda *_: pytest.fail("the model was loaded"))
        run(whole, *args, "resume=true")
    assert "finished already; nothing to resume" in capsys.readouterr().err and files(whole) == finished


@pytest.mark.slow  # two sweeps of two runs, each refused and resumed (about 25 s on 2 cores)
def test_a_resumed_sweep_with_another_setting_is_refused_before_hydra_writes(tmp_path, tiny_model_dir, stream, common,
                                                                             capsys):
    for launcher in ("basic", "lockstep"):
        args = [*common(tiny_model_dir, stream), "method=none,full", "hydra.sweep.subdir=${method.name}"]
        out = sweep(tmp_path / launcher, *args, launcher=launcher)
        cut(out / "full", tmp_path / "cut", 3)
        shutil.rmtree(out / "full")
        shutil.move(tmp_path / "cut", out / "full")
        before = files(out)
        sweep(out, *args, "resume=true", "decode.beam_size=1", code=1, launcher=launcher)
        error = last_error(capsys)
        assert f"{out / 'none'}: cannot resume" in error and "decode.beam_size: 2 → 1" in error
        assert files(out) == before  # multirun.yaml, every job's .hydra/ and summary.json, the sweep's claim
        sweep(out, *args, "resume=true", launcher=launcher)
        assert json.loads((out / "full" / "summary.json").read_text())["status"] == "finished"


def test_a_finished_sweep_resumed_runs_nothing_and_changes_nothing(tmp_path, tiny_model_dir, stream, common, capsys,
                                                                   monkeypatch):
    """Every job finished: each is checked and named, and Hydra is not started (the sweep's files byte for byte, its
    claim aside); with one more method the sweep runs that one alone."""
    args = [*common(tiny_model_dir, stream), "hydra.sweep.subdir=${method.name}"]
    out = sweep(tmp_path / "s", *args, "method=none,bias")
    before = {k: v for k, v in files(out).items() if k != SWEEP_CLAIM}
    capsys.readouterr()
    import hydra

    monkeypatch.setattr(hydra, "main", lambda **_: pytest.fail("Hydra was started"))
    sweep(out, *args, "method=none,bias", "resume=true")
    err = capsys.readouterr().err
    assert all(f"{out / m}: finished already; nothing to resume" in err for m in ("none", "bias"))
    assert {k: v for k, v in files(out).items() if k != SWEEP_CLAIM} == before
    monkeypatch.undo()
    sweep(out, *args, "method=none,bias,full", "resume=true")
    assert json.loads((out / "full" / "summary.json").read_text())["status"] == "finished"
    assert (out / "none" / "summary.json").read_bytes() == before["none/summary.json"]


def test_a_resume_refused_by_its_replay_changes_nothing(tmp_path, tiny_model_dir, stream, common, capsys):
    """What no setting names (other software, another summation order) shows only when the steps are replayed,
    after the resume claimed the directory: the records it wrote are given back as they were."""
    args = common(tiny_model_dir, stream, "method=full", "save_offsets=true")
    out = cut(run(tmp_path / "whole", *args), tmp_path / "cut", 7)
    lines = (out / "steps.jsonl").read_text().splitlines(keepends=True)
    step = json.loads(lines[5])
    lines[5] = json.dumps({**step, "ppl_before": step["ppl_before"] * (1 + 1e-6)}, ensure_ascii=False) + "\n"
    (out / "steps.jsonl").write_text("".join(lines))  # as another torch would have computed step 6
    before = files(out)
    run(out, *args, "resume=true", code=1)
    assert "cannot resume: step 6 replays to updates/perplexities" in last_error(capsys)
    assert files(out) == before  # its log too: it does not say the run resumed


@pytest.mark.slow  # two sweeps of two runs, each resumed and refused (about 20 s on 2 cores)
def test_a_sweep_resume_refused_by_a_replay_keeps_the_sweeps_record(tmp_path, tiny_model_dir, stream, common, capsys):
    """Hydra rewrites multirun.yaml before a job can fail: a resume refused by a job's replay puts it back, so that
    `table` reads the sweep that was resumed (its runs, their states) and no other."""
    for launcher in ("basic", "lockstep"):
        args = [*common(tiny_model_dir, stream), "method=none,full", "hydra.sweep.subdir=${method.name}"]
        out = sweep(tmp_path / launcher, *args, launcher=launcher)
        cut(out / "full", tmp_path / f"cut_{launcher}", 7)
        shutil.rmtree(out / "full")
        shutil.move(tmp_path / f"cut_{launcher}", out / "full")
        lines = (out / "full" / "steps.jsonl").read_text().splitlines(keepends=True)
        step = json.loads(lines[5])
        lines[5] = json.dumps({**step, "ppl_before": step["ppl_before"] * (1 + 1e-6)}, ensure_ascii=False) + "\n"
        (out / "full" / "steps.jsonl").write_text("".join(lines))
        record, finished = (out / "multirun.yaml").read_bytes(), files(out / "none")
        sweep(out, *args, "resume=true", code=1, launcher=launcher)
        assert "cannot resume: step 6 replays to updates/perplexities" in capsys.readouterr().err
        assert (out / "multirun.yaml").read_bytes() == record
        assert files(out / "none") == finished  # the finished job as it was: .hydra/ and its log
        with pytest.raises(SystemExit) as exit_:
            main(["table", str(out)])
        said = capsys.readouterr().err
        assert exit_.value.code == 0 and f"{out / 'full'}: unfinished (status 'interrupted')" in said, said


def test_a_corrupted_middle_line_of_steps_is_refused_not_dropped(tmp_path, tiny_model_dir, stream, common, capsys):
    args = common(tiny_model_dir, stream, "method=full")
    out = cut(run(tmp_path / "whole", *args), tmp_path / "cut", 5)
    lines = (out / "steps.jsonl").read_text().splitlines(keepends=True)
    (out / "steps.jsonl").write_text("".join([*lines[:1], '{"doc_id": "doc0", "seg_\n', *lines[2:]]))
    before = files(out)
    run(out, *args, "resume=true", code=1)
    error = last_error(capsys)
    assert "steps.jsonl:2: not a whole step record, and 3 step(s) follow it" in error and "repair line 2" in error
    assert files(out) == before


# -- a model is known by its files ----------------------------------------------------------------------------------
def test_a_model_is_known_by_its_files_not_its_path(tmp_path, tiny_model_dir, tiny_model_dir_untied, stream, common,
                                                    monkeypatch, capsys):
    (tmp_path / "link").symlink_to(tiny_model_dir)
    shutil.copytree(tiny_model_dir, tmp_path / "copy")
    a = run(tmp_path / "runs" / "a", *common(tmp_path / "link", stream, "method=none"))
    b = run(tmp_path / "runs" / "b", *common(tmp_path / "copy", stream, "method=full"))
    prints = [json.loads((d / "summary.json").read_text())["model_fingerprint"] for d in (a, b)]
    assert prints[0] == prints[1]
    with pytest.raises(SystemExit) as exit_:
        main(["table", str(tmp_path / "runs")])
    assert exit_.value.code == 0  # one model, reached by two paths: one table
    # two different models reached by one relative path, from two working directories: two models
    for name, model in (("here", tiny_model_dir), ("there", tiny_model_dir_untied)):
        (tmp_path / name).mkdir()
        shutil.copytree(model, tmp_path / name / "model")
        monkeypatch.chdir(tmp_path / name)
        run(tmp_path / "relative" / name, *common("model", stream, "method=none" if name == "here" else "method=full"))
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        main(["table", str(tmp_path / "relative")])
    assert exit_.value.code == 1
    assert "runs use different models" in last_error(capsys)
    with pytest.raises(SystemExit) as exit_:
        main(["compare", str(tmp_path / "relative" / "here"), str(tmp_path / "relative" / "there")])
    assert exit_.value.code == 1 and "runs use different models" in last_error(capsys)
    # and a resume through another path to the same files is the same run
    monkeypatch.chdir(tmp_path)
    out = cut(b, tmp_path / "cut", 4)
    run(out, *common(tmp_path / "link", stream, "method=full"), "resume=true")
    assert json.loads((out / "summary.json").read_text())["status"] == "finished"


# -- a resumed run's summary is the uninterrupted run's -------------------------------------------------------------
METHODS = ["none", "full", "bias", "fixed", "top", "lasso", "l2", "lora", "memory", "tm"]


def comparable(d) -> tuple[dict, list, bytes]:
    """A run's summary, steps and curves without what differs between an uninterrupted and a resumed run: timings,
    `resume` and its override."""
    summary = json.loads((d / "summary.json").read_text())
    summary.pop("timing"), summary["cost"].pop("step_ms_median")
    summary["cost"].get("temporary", {}).pop("seconds", None)
    summary["config"].pop("resume"), summary.pop("overrides")
    steps = [{k: v for k, v in json.loads(line).items() if not k.endswith("_s")}
             for line in (d / "steps.jsonl").read_text().splitlines()]
    return summary, steps, (d / "curves.csv").read_bytes()


def interrupt_after(monkeypatch, steps: int):
    """Interrupt the loop (as SIGINT does) once a run has written `steps` steps: mid-document 2."""
    from adaptsim.loop import simulation as simulate

    step = simulate.Simulation.step

    def interrupted(self, *a, **k):
        step(self, *a, **k)
        if self.index == steps and k.get("write", True):
            raise KeyboardInterrupt
    monkeypatch.setattr(simulate.Simulation, "step", interrupted)
    return lambda: monkeypatch.setattr(simulate.Simulation, "step", step)


@pytest.mark.slow  # ten methods, three sweeps (about a minute on 2 cores)
def test_every_method_resumed_in_lockstep_ends_as_uninterrupted(tmp_path, tiny_sweep, stream, monkeypatch, device):
    args = [*tiny_sweep[:2], "dataset=tsv", f"dataset.path={stream}", "decode.beam_size=2", "decode.max_length=20",
            "progress=false", "threads=1", f"device={device}", "reset=never", f"method={','.join(METHODS)}",
            "hydra.sweep.subdir=${method.name}"]
    whole = sweep(tmp_path / "whole", *args, launcher="lockstep")
    restore = interrupt_after(monkeypatch, 7)
    sweep(tmp_path / "cut", *args, code=130, launcher="lockstep")
    restore()
    assert json.loads((tmp_path / "cut" / "tm" / "summary.json").read_text())["status"] == "interrupted"
    sweep(tmp_path / "cut", *args, "resume=true", launcher="lockstep")
    for method in METHODS:
        a, b = comparable(whole / method), comparable(tmp_path / "cut" / method)
        assert a == b, method
    tm = json.loads((tmp_path / "cut" / "tm" / "summary.json").read_text())
    assert tm["timing"]["resumed_after_steps"] in (6, 7) and tm["cost"]["temporary"]["retrievals"] > 3
    assert sum("moment" in s for s in comparable(whole / "tm")[1][:6]) > 0  # moments before the interruption


@pytest.mark.parametrize("method", ["lasso", "tm"])
def test_a_run_interrupted_mid_document_resumes_to_the_uninterrupted_summary(tmp_path, tiny_model_dir, stream, common,
                                                                             monkeypatch, method):
    args = common(tiny_model_dir, stream, f"method={method}", "reset=never")
    whole = run(tmp_path / "whole", *args)
    restore = interrupt_after(monkeypatch, 7)
    out = run(tmp_path / "cut", *args, code=130)
    restore()
    assert json.loads((out / "summary.json").read_text())["status"] == "interrupted"
    run(out, *args, "resume=true")
    assert comparable(out) == comparable(whole)


def test_a_run_without_its_summary_is_not_resumed_blindly(tmp_path, tiny_model_dir, tiny_tsv, common, capsys):
    """Its steps were made with settings nothing records any more: resume=true refuses (it once started over the
    same records under the new settings, with a beam-5 first half and a beam-1 second half) and changes nothing."""
    args = common(tiny_model_dir, tiny_tsv, "method=full")
    out = cut(run(tmp_path / "whole", *args), tmp_path / "cut", 3)
    (out / "summary.json").unlink()
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    run(out, *args, "resume=true", "decode.beam_size=1", code=1)
    assert "holds a run's steps but no summary.json" in last_error(capsys)
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before


def test_a_file_changed_under_its_name_is_refused(tmp_path, tiny_model_dir, tiny_corpus, tiny_sweep, stream, common,
                                                  capsys):
    """The files a run reads by name only (the forgetting probe, a stopword list, the truecaser's text, fixed's
    tensor list): rewritten between the interruption and the resume, the resume is refused before anything is
    written, naming the setting (once accepted: probe points on other sentences, R0 over another word list)."""
    probe = tmp_path / "probe"
    for side, lang in enumerate(("en", "de")):
        probe.with_suffix(f".{lang}").write_text("".join(p[side] + "\n" for p in tiny_corpus[-4:]))
    stopwords, truecase = tmp_path / "stop.txt", tmp_path / "truecase.txt"
    stopwords.write_text("der\ndie\n")
    truecase.write_text("".join(p[1] + "\n" for p in tiny_corpus))
    fixed_list = next(o.split("=", 1)[1] for o in tiny_sweep if o.startswith("model.name="))
    args = common(tiny_model_dir, stream, "method=fixed", f"model.name={fixed_list}", f"metrics.probe.path={probe}",
                  "metrics.probe.every=4", "metrics.probe.segments=3", f"metrics.stopwords={stopwords}",
                  f"metrics.truecase_text={truecase}", "reset=never")
    out = cut(run(tmp_path / "whole", *args), tmp_path / "cut", 3)
    before = files(out)
    for key, path in (("metrics.probe.path.de", probe.with_suffix(".de")), ("metrics.stopwords", stopwords),
                      ("metrics.truecase_text", truecase), ("method.list", Path(fixed_list))):
        original = path.read_bytes()
        path.write_bytes(original + b"# changed\n")
        run(out, *args, "resume=true", code=1)
        error = last_error(capsys)
        assert "a file it read has changed" in error and f"{key}: " in error, error
        assert files(out) == before
        path.write_bytes(original)
    run(out, *args, "resume=true")  # the same files again: it resumes
