"""`adaptsim table` / `adaptsim plot` on hand-written run directories: numbers, marks, refusals, problems.

The run directories imitate what `adaptsim run` writes (summary.json, curves.csv, .hydra/), so these
tests need no model; tests/test_sweep.py checks the same commands on real sweeps.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from adaptsim.errors import UserError
from adaptsim.report import figures, plot, table

SIG = {"R": "R|lang:de", "BLEU": "bleu-sig"}


def make_run(root: Path, name: str, method: str, scores: dict, *, model_path="/models/a", dataset="autodesk",
             fp="fp1", status="finished", config: dict | None = None, curves: list[dict] | None = None) -> Path:
    d = root / name
    (d / ".hydra").mkdir(parents=True)
    summary = {"status": status, "method": method, "model": "m", "model_path": model_path, "dataset": dataset,
               "data_fingerprint": fp, "segments": 3, "signatures": SIG}
    if status == "finished":
        summary["scores"] = scores
    if status == "failed":
        summary["error"] = "Traceback …\n  File x\nValueError: boom\n"
    (d / "summary.json").write_text(json.dumps(summary))
    cfg = {"method": {"name": method, **(config or {})}, "seed": 1, "threads": 1}
    (d / ".hydra" / "config.yaml").write_text(json.dumps(cfg))  # JSON is YAML
    if curves:
        with open(d / "curves.csv", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(curves[0]))
            w.writeheader()
            w.writerows(curves)
    return d


BASE = {"BLEU": 40.0, "SBLEU": 50.0, "TER": 45.0, "R0": 40.0, "R1": 50.0, "R0+1": 42.0}
FULL = {"BLEU": 46.0, "SBLEU": 55.0, "TER": 44.0, "R0": 36.0, "R1": 55.0, "R0+1": 41.0}
LASSO = {"BLEU": 44.0, "SBLEU": 54.0, "TER": 42.0, "R0": 41.0, "R1": 49.0, "R0+1": 43.0}


@pytest.fixture
def sweep(tmp_path) -> Path:
    root = tmp_path / "sweep"
    make_run(root, "0_none", "none", BASE)
    make_run(root, "1_full", "full", FULL)
    make_run(root, "2_lasso", "lasso", LASSO)
    return root


def run_table(capsys, *argv) -> tuple[str, str]:
    assert table.main([str(a) for a in argv]) == 0
    out = capsys.readouterr()
    return out.out, out.err


def csv_rows(text: str) -> dict[str, dict]:
    return {r["method"]: r for r in csv.DictReader(io.StringIO(text))}


def test_absolute_csv_equals_summaries(sweep, capsys):
    out, err = run_table(capsys, sweep, "--format", "csv")
    rows = csv_rows(out)
    assert list(rows) == ["baseline", "full", "lasso"]  # the paper's row order
    for label, scores in (("baseline", BASE), ("full", FULL), ("lasso", LASSO)):
        assert {m: float(rows[label][m]) for m in scores} == scores
        assert rows[label]["values"] == "absolute"
    assert rows["full"]["best"] == "BLEU;SBLEU;R1"
    assert rows["lasso"]["best"] == "TER;R0;R0+1"  # TER: lowest is best
    assert err == ""


def test_relative_numbers(sweep, capsys):
    rows = csv_rows(run_table(capsys, sweep, "--relative", "--format", "csv")[0])
    assert rows["baseline"]["values"] == "absolute" and float(rows["baseline"]["BLEU"]) == 40.0
    for label, scores in (("full", FULL), ("lasso", LASSO)):
        assert rows[label]["values"] == "relative %"
        for m in BASE:
            assert float(rows[label][m]) == pytest.approx(100 * (scores[m] - BASE[m]) / BASE[m])
    assert float(rows["full"]["BLEU"]) == pytest.approx(15.0)
    assert float(rows["lasso"]["TER"]) == pytest.approx(-6.6667, abs=1e-4)


def test_markdown_marks_best_and_rounds(sweep, capsys):
    out, _ = run_table(capsys, sweep, "--relative")
    lines = out.splitlines()
    assert lines[2] == "| method | BLEU | SBLEU | TER | R0+1 | R0 | R1 |"  # Table 5's columns
    assert "| full | **+15** | **+10** | -2 | -2 | -10 | **+10** |" in lines
    assert "| lasso | +10 | +8 | **-7** | **+2** | **+2** | -2 |" in lines
    out, _ = run_table(capsys, sweep, "--metrics", "R0,R1", "--decimals", "2")
    assert "| baseline | 40.00 | 50.00 |" in out and "| lasso | **41.00** | 49.00 |" in out


def test_latex(sweep, capsys):
    out, _ = run_table(capsys, sweep, "--format", "latex", "--metrics", "BLEU,R0+1")
    assert r"\textbf{autodesk} & BLEU & R0+1 \\" in out
    assert r"\textit{full} & \textbf{46.0} & 41.0 \\" in out
    assert out.rstrip().endswith(r"\end{tabular}")


def test_several_datasets_make_blocks(sweep, tmp_path, capsys):
    other = tmp_path / "ted"
    make_run(other, "0_none", "none", BASE, dataset="ted", fp="fp2")
    make_run(other, "1_full", "full", LASSO, dataset="ted", fp="fp2")
    rows = list(csv.DictReader(io.StringIO(run_table(capsys, sweep, other, "--format", "csv")[0])))
    assert [(r["dataset"], r["method"]) for r in rows] == [
        ("autodesk", "baseline"), ("autodesk", "full"), ("autodesk", "lasso"), ("ted", "baseline"), ("ted", "full")]
    out, _ = run_table(capsys, sweep, other)
    assert out.count("| method |") == 2


def test_refuses_mixed_models(sweep, tmp_path):
    make_run(tmp_path / "other", "0_top", "top", FULL, model_path="/models/b")
    with pytest.raises(UserError, match="different models"):
        table.main([str(sweep), str(tmp_path / "other")])


def test_refuses_same_dataset_name_with_different_data(sweep, tmp_path):
    make_run(tmp_path / "other", "0_top", "top", FULL, fp="fp-changed")
    with pytest.raises(UserError, match="different data"):
        table.main([str(sweep), str(tmp_path / "other")])


def test_relative_needs_baseline(tmp_path):
    make_run(tmp_path / "s", "1_full", "full", FULL)
    with pytest.raises(UserError, match="baseline run"):
        table.main([str(tmp_path / "s"), "--relative"])


def test_duplicate_methods_are_told_apart_and_identical_baselines_merged(sweep, tmp_path, capsys):
    second = tmp_path / "lr"
    make_run(second, "0_none", "none", BASE)  # the same baseline in a second sweep: one row
    make_run(second, "1_full", "full", LASSO, config={"lr": 0.1})
    out, _ = run_table(capsys, sweep, second, "--format", "csv")
    assert list(csv_rows(out)) == ["baseline", "full (lr=None)", "full (lr=0.1)", "lasso"]


def test_failed_unfinished_and_missing_runs_are_reported(sweep, capsys):
    make_run(sweep, "3_top", "top", {}, status="failed")
    make_run(sweep, "4_bias", "bias", {}, status="running")
    (sweep / "5_fixed" / ".hydra").mkdir(parents=True)
    (sweep / "5_fixed" / ".hydra" / "config.yaml").write_text("{}")
    out, err = run_table(capsys, sweep)
    assert [ln.split(" | ")[0] for ln in out.splitlines() if ln.startswith("| ")] == [
        "| method", "| baseline", "| full", "| lasso"]
    assert "3_top: failed: ValueError: boom" in err
    assert "4_bias: unfinished" in err and "5_fixed: no summary.json" in err
    assert "3 run(s) failed or missing" in err


def test_sweep_jobs_without_directory_are_reported(sweep, capsys):
    (sweep / "multirun.yaml").write_text(json.dumps({"hydra": {
        "sweeper": {"_target_": "hydra._internal.core_plugins.basic_sweeper.BasicSweeper", "params": None},
        "overrides": {"task": ["dataset=autodesk", "method=none,full,lasso,top"]}}}))
    for d, m in (("0_none", "none"), ("1_full", "full"), ("2_lasso", "lasso")):
        (sweep / d / ".hydra" / "overrides.yaml").write_text(json.dumps(["dataset=autodesk", f"method={m}"]))
    _, err = run_table(capsys, sweep)
    assert "job method=top has no run directory" in err
    assert "method=full" not in err


def test_no_runs_and_unknown_metric(tmp_path, sweep):
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match="no runs below"):
        table.main([str(tmp_path / "empty")])
    with pytest.raises(UserError, match="unknown metric R9"):
        table.main([str(sweep), "--metrics", "R0,R9"])


def _curves(values: list[float]) -> list[dict]:
    return [{"segment": i + 1, "doc_id": "a" if i < 2 else "b", "R0": v, "R1": "" if i == 0 else v, "R0+1": v,
             "BLEU": v} for i, v in enumerate(values)]


def test_plot_writes_png(tmp_path, capsys):
    root = tmp_path / "s"
    make_run(root, "0_none", "none", BASE, curves=_curves([50, 40, 45]))
    make_run(root, "1_full", "full", FULL, curves=_curves([50, 42, 40]))
    make_run(root, "2_lasso", "lasso", LASSO, curves=_curves([50, 45, 47]))
    out = tmp_path / "fig" / "curves.png"
    assert plot.main([str(root), "--out", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000
    assert "2 run(s) against the baseline, 4 panel(s)" in capsys.readouterr().out


def test_plot_shows_a_run_on_the_baseline_and_fits_the_y_axis_after_the_first_document(tmp_path, monkeypatch):
    """The curves as a reader of the paper's Figure 2 expects them: the baseline's zero line drawn under every run
    (bias, often 0 throughout, stays visible on it), each run its own marker, and the y-axis fitted from the second
    document on, so that one corrected word in the first segments (+100 R1) does not flatten every other curve."""
    n, first = 40, 10
    base = [50.0] * n
    spike = [150.0 if i < 3 else 52.0 for i in range(n)]  # full: +100 over the first segments, +2 after
    ids = ["a" if i < first else "b" if i < 25 else "c" for i in range(n)]

    def curves(values):
        return [{"segment": i + 1, "doc_id": ids[i], "R0": v, "R1": v, "R0+1": v, "BLEU": v}
                for i, v in enumerate(values)]
    root = tmp_path / "s"
    make_run(root, "0_none", "none", BASE, curves=curves(base))
    make_run(root, "1_bias", "bias", FULL, curves=curves(base))  # the baseline's scores throughout
    make_run(root, "2_full", "full", LASSO, curves=curves(spike))
    drawn = {}

    def keep(fig, out, **options):
        drawn["fig"] = fig
        figures.save(fig, out, **options)
    monkeypatch.setattr(plot, "save", keep)
    out = tmp_path / "curves.png"
    assert plot.main([str(root), "--out", str(out)]) == 0
    assert plot.settled_from(ids) == first + 1 and plot.settled_from(ids[:5]) == 1
    assert plot.settled_from(["one"] * 100) == 26  # one document: a quarter of the stream at most
    fig = drawn["fig"]
    ax = fig.axes[1]  # R1
    zero = next(line for line in ax.get_lines() if line.get_label() == "baseline (0)")
    runs = {line.get_label(): line for line in ax.get_lines() if line.get_label() in ("bias", "full")}
    assert all(line.get_zorder() > zero.get_zorder() for line in runs.values())
    assert runs["bias"].get_marker() != runs["full"].get_marker()
    low, high = ax.get_ylim()
    assert low < 0 < 2 < high < 10  # fitted to +2 after the first document, not to the +100 before it
    assert "y-axis fits the curves from segment 11 on" in fig._suptitle.get_text()
    from PIL import Image
    with Image.open(out) as image:
        assert image.mode == "P"  # a palette PNG: a fraction of matplotlib's RGBA file


def test_plot_refuses_an_unknown_file_type_or_an_unwritable_path_in_one_line(tmp_path):
    root = tmp_path / "s"
    make_run(root, "0_none", "none", BASE, curves=_curves([50, 40, 45]))
    make_run(root, "1_full", "full", FULL, curves=_curves([50, 42, 40]))
    with pytest.raises(UserError, match=r"unknown file type \.pgn; use one of .*\.png"):
        plot.main([str(root), "--out", str(tmp_path / "curves.pgn")])
    (tmp_path / "a_file").write_text("")  # a directory that cannot be made, whoever runs the test
    with pytest.raises(UserError, match="cannot write it"):
        plot.main([str(root), "--out", str(tmp_path / "a_file" / "curves.png")])


def test_plot_refusals(tmp_path, sweep):
    with pytest.raises(UserError, match="curves.csv"):  # hand-made sweep has no curves
        plot.main([str(sweep), "--out", str(tmp_path / "x.png")])
    make_run(tmp_path / "ted", "0_none", "none", BASE, dataset="ted", fp="fp2")
    with pytest.raises(UserError, match="one data set.*--dataset"):
        plot.main([str(sweep), str(tmp_path / "ted"), "--out", str(tmp_path / "x.png")])
    with pytest.raises(UserError, match="only the baseline"):
        plot.main([str(sweep), str(tmp_path / "ted"), "--dataset", "ted", "--out", str(tmp_path / "x.png")])
    with pytest.raises(UserError, match=r"^--dataset nope: no finished run on it; these runs cover: .*ted"):
        plot.main([str(sweep), str(tmp_path / "ted"), "--dataset", "nope", "--out", str(tmp_path / "x.png")])


def test_runs_whose_curves_coincide_stay_distinguishable():
    styles = [figures.line_style(k) for k in range(9)]  # nine methods: the ape-it stream's
    assert len({(repr(s["ls"]), s["lw"]) for s in styles}) == 9
    assert all(a["lw"] > b["lw"] for a, b in zip(styles, styles[1:]) if b["lw"] > 1.0)  # earlier ones show under later


def test_runs_scored_or_decoded_differently_are_refused_naming_the_difference(tmp_path, sweep, capsys):
    """A baseline scored with another stopword list (signatures differ in one part) or decoded with another beam
    is not a row beside the others: the table refuses in one line naming the setting and two runs."""
    other = tmp_path / "other"
    make_run(other, "0_none", "none", BASE)
    summary = json.loads((other / "0_none" / "summary.json").read_text())
    summary["signatures"] = {**SIG, "R": "R|lang:de|stop:file:stop.txt#0123456789abcdef"}
    (other / "0_none" / "summary.json").write_text(json.dumps(summary))
    with pytest.raises(UserError, match=r"different metric settings \(R.stop: \(none\) in .*, "
                                        r"file:stop.txt#0123456789abcdef in .*0_none\)"):
        table.main([str(sweep / "1_full"), str(other / "0_none")])
    beam1 = tmp_path / "beam1"
    make_run(beam1, "1_full", "full", FULL)
    for d, beam in ((sweep / "0_none", 5), (beam1 / "1_full", 1)):
        cfg = json.loads((d / ".hydra" / "config.yaml").read_text())
        (d / ".hydra" / "config.yaml").write_text(json.dumps({**cfg, "decode": {"beam_size": beam}}))
    with pytest.raises(UserError, match=r"runs decoded differently \(decode.beam_size: 5 in .*, 1 in .*\)"):
        table.main([str(sweep / "0_none"), str(beam1 / "1_full"), "--relative"])
    from adaptsim.report.blocks import labels
    from adaptsim.report.runs import discover
    runs = discover([str(sweep / "0_none"), str(beam1 / "1_full")]).runs
    assert labels(runs) == ["baseline (decode.beam_size=5)", "full (decode.beam_size=1)"]  # compare's rows
