"""`adaptsim run` end to end on a tiny model: outputs, none vs full, reset per document, user errors."""

import json
import subprocess
import sys

import pytest

from adaptsim.cli import main


def run(tmp_path, *overrides, name="run"):
    """Run `adaptsim run` in-process; return the run directory."""
    out = tmp_path / name
    with pytest.raises(SystemExit) as exit_:
        main(["run", f"hydra.run.dir={out}", "progress=false", *overrides])
    assert exit_.value.code == 0
    return out


def read(out):
    steps = [json.loads(line) for line in (out / "steps.jsonl").read_text().splitlines()]
    return steps, json.loads((out / "summary.json").read_text())


@pytest.fixture
def base(tiny_model_dir, tiny_tsv):
    return [f"model.path={tiny_model_dir}", "model.name=tiny", "dataset=tsv", f"dataset.path={tiny_tsv}",
            "decode.beam_size=2", "decode.max_length=20"]


def test_full_changes_the_model_and_none_does_not(tmp_path, base):
    steps_none, none = read(run(tmp_path, *base, "method=none", name="none"))
    steps_full, full = read(run(tmp_path, *base, "method=full", name="full"))
    assert none["status"] == full["status"] == "finished"
    assert none["trainable_parameters"] == 0 and all(d["changed_parameters"] == 0 for d in none["per_document"])
    assert full["trainable_parameters"] > 0 and all(d["changed_parameters"] > 0 for d in full["per_document"])
    assert all(s["updates"] == 0 for s in steps_none) and all(1 <= s["updates"] <= 3 for s in steps_full)
    # θ0 translates the first segment in both runs: same hypothesis
    assert steps_none[0]["hypothesis"] == steps_full[0]["hypothesis"]


def test_outputs_of_a_run(tmp_path, base, tiny_tsv):
    out = run(tmp_path, *base, "method=full")
    steps, summary = read(out)
    n_rows = len(tiny_tsv.read_text().splitlines()) - 1
    assert len(steps) == summary["segments"] == n_rows
    assert (out / "hyps.txt").read_text().splitlines() == [s["hypothesis"] for s in steps]
    for key in ("doc_id", "seg_id", "source", "reference", "hypothesis", "updates", "ppl_before", "ppl_after",
                "logprobs", "ref_pieces", "translate_s", "update_s", "SBLEU", "R0_num", "R0_den"):
        assert key in steps[0]
    assert [s["doc_id"] for s in steps] == ["doc1"] * 3 + ["doc2"] * 3
    assert summary["method"] == "full" and summary["documents"] == 2
    assert set(summary["scores"]) >= {"BLEU", "SBLEU", "TER", "R0", "R1", "R0+1"}
    assert (out / ".hydra" / "config.yaml").is_file() and (out / "curves.csv").is_file()
    assert summary["config"]["method"]["name"] == "full" and "method=full" in summary["overrides"]
    assert summary["timing"]["threads"] == 1  # the default: no run falls off the cliff of a busy core


def test_a_runs_summary_has_the_schema_its_readers_and_the_docs_share(tmp_path, base):
    from adaptsim import PROJECT_ROOT
    from adaptsim.records import JOB_KEYS, RUN_KEYS
    from adaptsim.report.runs import READ_KEYS

    _, summary = read(run(tmp_path, *base, "method=lasso"))
    declared = {*JOB_KEYS, *RUN_KEYS}
    assert set(summary) <= declared  # the writer writes nothing undeclared
    assert set(READ_KEYS) <= set(summary) and set(RUN_KEYS) - {"peak_rss_mb", "ended_early"} <= set(summary)
    design = (PROJECT_ROOT / "docs" / "design.md").read_text()
    assert all(f"| `{key}` |" in design for key in declared)


def test_every_document_starts_again_from_theta0(tmp_path, tiny_model_dir, tiny_corpus):
    """Two identical documents: with reset=document the second is translated exactly like the first."""
    rows = ["doc_id\tseg_id\tsource\treference"]
    rows += [f"{d}\t{i}\t{s}\t{r}" for d in ("a", "b") for i, (s, r) in enumerate(tiny_corpus[:4])]
    tsv = tmp_path / "twice.tsv"
    tsv.write_text("\n".join(rows) + "\n")
    common = [f"model.path={tiny_model_dir}", "dataset=tsv", f"dataset.path={tsv}", "method=full",
              "method.lr=0.5", "decode.beam_size=2", "decode.max_length=20"]
    steps, _ = read(run(tmp_path, *common, "reset=document", name="reset"))
    assert [s["hypothesis"] for s in steps[:4]] == [s["hypothesis"] for s in steps[4:]]
    assert [s["ppl_before"] for s in steps[:4]] == pytest.approx([s["ppl_before"] for s in steps[4:]])
    steps, _ = read(run(tmp_path, *common, "reset=never", name="never"))
    assert [s["ppl_before"] for s in steps[:4]] != pytest.approx([s["ppl_before"] for s in steps[4:]])


def test_the_paper_setting_is_one_stream_and_the_metric_scope_follows_reset(tmp_path, tiny_model_dir):
    """paper_methods: reset=never, and R0/R1 count over the whole stream; an explicit scope still wins."""
    from adaptsim.launch.hydra_app import compose

    paper = compose("run", ["+experiment=paper_methods"])
    assert paper.reset == "never" and paper.metrics.scope is None
    rows = ["doc_id\tseg_id\tsource\treference", "a\t1\tThe dog.\tDer Hund.", "b\t1\tThe dog.\tDer Hund."]
    tsv = tmp_path / "two.tsv"
    tsv.write_text("\n".join(rows) + "\n")
    common = [f"model.path={tiny_model_dir}", "dataset=tsv", f"dataset.path={tsv}", "method=none",
              "decode.beam_size=1", "decode.max_length=10"]
    for reset, scope, expected in (("never", None, "corpus"), ("document", None, "document"),
                                   ("never", "document", "document")):
        extra = [] if scope is None else [f"metrics.scope={scope}"]
        steps, summary = read(run(tmp_path, *common, f"reset={reset}", *extra, name=f"{reset}-{scope}"))
        assert (summary["reset"], summary["metrics_scope"]) == (reset, expected)
        # the words of document b occur for the second time in the stream (R1), the first in the document (R0)
        counted = (steps[1]["R1_den"], steps[1]["R0_den"])
        assert counted == ((steps[0]["R0_den"], 0) if expected == "corpus" else (0, steps[0]["R0_den"]))


def cli(*args):
    return subprocess.run([sys.executable, "-m", "adaptsim", *args], capture_output=True, text=True, timeout=300)


def test_unknown_command_and_bad_override_exit_2():
    r = cli("frobnicate")
    assert r.returncode == 2 and "unknown command" in r.stderr and "usage" in r.stderr
    r = cli("run", "method=no_such_method")
    assert r.returncode == 2 and "method=no_such_method: no such option" in r.stderr and "Traceback" not in r.stderr


def test_missing_data_file_is_one_error_line(tmp_path, tiny_model_dir):
    missing = tmp_path / "nope.tsv"
    r = cli("run", f"model.path={tiny_model_dir}", "dataset=tsv", f"dataset.path={missing}",
            f"hydra.run.dir={tmp_path / 'out'}")
    assert r.returncode == 1
    assert str(missing) in r.stderr and "Traceback" not in r.stderr + r.stdout
    assert not (tmp_path / "out").exists()  # refused before it began: nothing left in the way of running it again


def test_data_errors_survive_pickling():
    """Parallel launchers (joblib, submitit) send a worker's exception back pickled."""
    import pickle

    from adaptsim.errors import DataError

    e = pickle.loads(pickle.dumps(DataError("a.tsv", "empty source", line=3)))
    assert str(e) == "a.tsv:3: empty source" and e.line == 3


def test_run_help_lists_the_groups_a_run_composes_and_nothing_else(capsys):
    from adaptsim.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(["run", "method=full", "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    groups = dict(line.strip().split(": ", 1) for line in out.splitlines() if line.startswith("  ") and ": " in line)
    assert {"dataset", "method", "model", "metrics", "experiment"} <= set(groups)
    assert not {"fixed_lists", "litter", "hydra"} & set(groups)  # files code reads itself, Hydra's own groups
    assert "_common" not in out and "lasso" in groups["method"]
    assert "name: full" in out  # the composed config, with the command line's overrides
    # each key with its meaning, as the YAML that sets it says (run.yaml, the chosen method's file)
    assert "\nthreads: 1  # torch intra-op threads." in out and "\nreset: document  # document: every document" in out


def test_progress_in_a_log_file_is_lines_not_a_redrawn_bar(tmp_path):
    """`nohup python -m adaptsim run … > log 2>&1`: the log holds one readable line per interval (segments
    done, running scores, rate, time left), not a bar redrawn with carriage returns."""
    r = subprocess.run([sys.executable, "-m", "adaptsim", "run", "method=none", "dataset.max_documents=1",
                        "progress_every=1e-6", f"hydra.run.dir={tmp_path / 'out'}"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:]
    assert "\r" not in r.stdout
    lines = [line for line in r.stdout.splitlines() if "none: " in line and " segs (" in line]
    assert "none: 1/15 segs (7%)" in lines[0] and "remaining ~" in lines[0]
    assert "none: 15/15 segs (100%)" in lines[-1] and "R0 " in lines[-1] and "BLEU " in lines[-1]


def test_every_file_of_a_run_has_the_mode_the_umask_gives(tmp_path, base):
    """Colleagues on a shared machine read a whole run or none of it: the atomically written records (summary.json)
    get the process's umask like every other file, not mkstemp's 0600."""
    import os
    import stat

    old = os.umask(0o002)
    try:
        out = run(tmp_path, *base, "method=none")
    finally:
        os.umask(old)
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in out.rglob("*") if p.is_file()}
    assert "summary.json" in modes and set(modes.values()) == {0o664}, modes


def test_run_help_keeps_a_comment_that_goes_on_below_its_key(capsys):
    """A key's meaning continued on aligned comment lines is shown whole, not cut mid-sentence."""
    from adaptsim.cli import main

    with pytest.raises(SystemExit):
        main(["run", "--help"])
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("compress:"))
    assert line.endswith("every report reads either; adaptsim/records/ compress_records)"), line


@pytest.mark.parametrize("override, said", [
    ("decode.beam=4", "decode.beam=4: unknown setting (did you mean decode.beam_size?); decode.* are: beam_size, "),
    ("method=lassso", "method=lassso: no such option (did you mean method=lasso?); method= is one of bias, "),
    ("thread=1", "thread=1: unknown setting (did you mean threads?); the settings are: "),
])
def test_a_misspelt_setting_or_option_names_the_nearest_and_never_advises_a_plus(override, said):
    """Issue #76: Hydra advised `+decode.beam=4`, which the settings check then refuses, and offered `_common` among
    the datasets."""
    from adaptsim.launch.hydra_app import check_overrides

    message = check_overrides("run", [override])
    assert message.startswith(said) and "+" not in message and "_common" not in message
    assert "_common" not in check_overrides("run", ["dataset=nope"])


def test_a_misspelt_command_names_the_nearest(capsys):
    from adaptsim.cli import main

    with pytest.raises(SystemExit):
        main(["runn"])
    assert "unknown command 'runn' (did you mean run?)" in capsys.readouterr().err
