"""Significance tests and intervals (adaptsim.report.stats, `table --significance/--ci`, `compare`, `plot --bands`).

The run directories are written here from real metric records: `Evaluator.segment` gives each steps.jsonl
row (with sacrebleu's statistics) and `Evaluator.corpus` the summary scores, for synthetic hypotheses of
20 documents × 10 segments whose content words recur within a document (so R1 has occurrences). No model.
"""

from __future__ import annotations

import csv
import io
import json
import math
import random
from pathlib import Path

import numpy as np
import pytest

from adaptsim.errors import UserError
from adaptsim.metrics import Evaluator
from adaptsim.metrics.sacre import SacreMetrics
from adaptsim.report import compare as compare_command
from adaptsim.report import plot, table
from adaptsim.report.significance import significant
from adaptsim.report.stats import Settings, compare, units_of

METRICS = ["BLEU", "SBLEU", "TER", "chrF", "R0", "R1", "R0+1"]
_COMMON = "der die das und mit auf ist nicht ein eine".split()
_TERMS = ("Treiber Ticket Server Datei Ordner Drucker Fenster Konto Passwort Netzwerk Speicher Browser Kabel "
          "Bildschirm Tastatur Maus Update Lizenz Profil Nutzer Sitzung Pfad Modul Fehler").split()


def corpus(docs: int = 20, per_doc: int = 10, seed: int = 0) -> tuple[list[str], list[str]]:
    rng = random.Random(seed)
    refs, ids = [], []
    for d in range(docs):
        terms = rng.sample(_TERMS, 4)  # a document's own terms recur in its segments
        for _ in range(per_doc):
            words = rng.choices(_COMMON, k=rng.randint(3, 7)) + rng.sample(terms, 2)
            rng.shuffle(words)
            refs.append(" ".join(words).capitalize() + ".")
            ids.append(f"doc{d:02d}")
    return refs, ids


def noisy(refs: list[str], rate: float, seed: int) -> list[str]:
    """Each word of the reference replaced by a wrong one with probability `rate`."""
    rng = random.Random(seed)
    return [" ".join(w if rng.random() > rate else rng.choice(["Fahrer", "Karte", "etwas", "Ding", "dort"])
                     for w in r.split()) for r in refs]


def write_run(root: Path, name: str, method: str, hyps: list[str], refs: list[str], ids: list[str],
              fp: str = "fp1", stats: bool = True) -> Path:
    ev = Evaluator(refs, ids, lang="de")
    d = root / name
    d.mkdir(parents=True)
    with open(d / "steps.jsonl", "w", encoding="utf-8") as f:
        for i, hyp in enumerate(hyps):
            row = {"doc_id": ids[i], "seg_id": str(i), "reference": refs[i], "hypothesis": hyp, **ev.segment(i, hyp)}
            if not stats:
                row.pop("stats")
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    c = ev.corpus(hyps)
    (d / "summary.json").write_text(json.dumps({
        "status": "finished", "method": method, "model": "m", "model_path": "/models/a", "dataset": "synthetic",
        "data_fingerprint": fp, "segments": len(hyps), "scores": c["scores"], "signatures": c["signatures"]}))
    return d


@pytest.fixture(scope="module")
def data():
    return corpus()


@pytest.fixture(scope="module")
def runs(tmp_path_factory, data) -> dict[str, Path]:
    refs, ids = data
    root = tmp_path_factory.mktemp("sig") / "sweep"
    base = noisy(refs, 0.35, seed=1)
    return {"root": root,
            "none": write_run(root, "0_none", "none", base, refs, ids),
            "bias": write_run(root, "1_bias", "bias", base, refs, ids),  # identical to the baseline
            "full": write_run(root, "2_full", "full", refs, refs, ids),  # hypotheses = references
            "top": write_run(root, "3_top", "top", noisy(refs, 0.3, seed=2), refs, ids)}


def compare_json(capsys, *argv) -> dict:
    assert compare_command.main([str(a) for a in argv] + ["--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_vectorised_scores_equal_sacrebleu(data):
    refs, _ = data
    sacre = SacreMetrics()
    stats = sacre.stats(noisy(refs, 0.5, seed=3) + ["", "x"], refs + ["", "Die Datei."])
    rng = np.random.default_rng(0)
    for name, kind in (("BLEU", "bleu"), ("TER", "ter"), ("chrF", "chrf")):
        rows = np.array([s[kind] for s in stats], dtype=float)
        subsets = [rows[[i]] for i in range(len(rows))] + [rows[rng.integers(0, len(rows), rng.integers(1, 30))]
                                                            for _ in range(200)]
        totals = np.array([s.sum(axis=0) for s in subsets])
        expected = [sacre.scorers[name]._compute_score_from_stats(list(t)).score for t in totals]
        assert sacre.vector(name, totals) == pytest.approx(expected, abs=1e-9, rel=0)


def test_point_estimates_are_the_summary_scores(runs, capsys):
    out = compare_json(capsys, runs["none"], runs["top"])
    summary = json.loads((runs["top"] / "summary.json").read_text())["scores"]
    for m in METRICS:
        assert out["metrics"][m][1]["score"] == pytest.approx(summary[m], abs=1e-9)


def test_identical_runs_p_one_and_no_mark(runs, capsys):
    for test in ("ci", "bs", "ar"):
        for unit in ("document", "segment"):
            out = compare_json(capsys, runs["none"], runs["bias"], "--test", test, "--unit", unit, "--resamples", "200")
            for m in METRICS:
                row = out["metrics"][m][1]
                assert row["p"] == 1.0 and row["diff"] == 0.0 and row["diff_ci"] == [0.0, 0.0], (test, unit, m)
    assert table.main([str(runs["none"]), str(runs["bias"]), "--significance", "--resamples", "200"]) == 0
    printed = capsys.readouterr().out
    assert "†" not in printed.split("\n\n_†")[0]  # no cell marked; the footer explains the mark


def test_references_as_hypotheses_p_below_001_everywhere(runs, capsys):
    for test in ("ci", "bs", "ar"):
        for unit in ("document", "segment"):
            out = compare_json(capsys, runs["none"], runs["full"], "--test", test, "--unit", unit)
            for m in METRICS:
                assert out["metrics"][m][1]["p"] < 0.01, (test, unit, m)
            assert out["metrics"]["BLEU"][1]["score"] == pytest.approx(100) and out["metrics"]["TER"][1]["score"] == 0


def test_every_interval_contains_its_point_estimate(runs, capsys):
    for unit in ("document", "segment"):
        out = compare_json(capsys, runs["none"], runs["bias"], runs["full"], runs["top"], "--unit", unit)
        for m, rows in out["metrics"].items():
            for row in rows:
                assert row["ci"][0] <= row["score"] <= row["ci"][1], (unit, m, row)
                if "diff" in row:
                    assert row["diff_ci"][0] <= row["diff"] <= row["diff_ci"][1], (unit, m, row)
                    assert row["relative_ci"][0] <= row["relative"] <= row["relative_ci"][1], (unit, m, row)


def test_compare_marks_exactly_the_differences_whose_printed_interval_excludes_zero(runs, data, tmp_path, capsys):
    """What a reader of `compare` sees: a difference is significant (†) exactly when the interval printed beside
    it excludes 0, for every metric, run and unit (the default test). `near` is a run whose differences lie near
    the boundary: sacrebleu's statistic (`--test bs`, the default before) marks several of them while their
    intervals hold 0."""
    refs, ids = data
    near = write_run(tmp_path, "1_near", "top", noisy(refs, 0.32, seed=3), refs, ids)
    seen = set()
    for unit in ("document", "segment"):
        out = compare_json(capsys, runs["none"], near, runs["bias"], runs["full"], runs["top"], "--unit", unit)
        for m, rows in out["metrics"].items():
            for row in rows[1:]:
                excludes = row["diff_ci"][0] > 0 or row["diff_ci"][1] < 0
                assert row["significant"] == excludes, (unit, m, row)
                seen.add(excludes)
    assert seen == {True, False}
    bs = compare_json(capsys, runs["none"], near, "--test", "bs")["metrics"]
    assert any(bs[m][1]["significant"] and bs[m][1]["diff_ci"][0] <= 0 <= bs[m][1]["diff_ci"][1] for m in bs)


def test_bleu_segment_p_values_agree_with_sacrebleu(data, monkeypatch):
    """sacrebleu's paired bootstrap and ours estimate the same p from independent resamples (its seed 12345,
    ours 7), each a binomial proportion: the difference has standard deviation sqrt(p(1-p)(1/B1 + 1/B2)).
    Allowed: 4 of those (a false alarm under 1e-4 for a fresh seed) plus 1/(B+1) for the +1 in the
    estimators. Our ≥ versus sacrebleu's > changes nothing here: resampled BLEU differences do not tie."""
    from sacrebleu.metrics import BLEU
    from sacrebleu.significance import PairedTest

    refs, ids = data
    monkeypatch.setenv("SACREBLEU_SEED", "12345")
    sacre = SacreMetrics(["BLEU"])
    checked = []
    for rate_a, rate_b, seed in ((0.30, 0.27, 5), (0.30, 0.33, 6), (0.30, 0.25, 8)):
        a, b = noisy(refs, rate_a, seed), noisy(refs, rate_b, seed + 100)
        _, res = PairedTest([("a", a), ("b", b)], {"BLEU": BLEU()}, [refs], test_type="bs", n_samples=1000)()
        p_sacre = res["BLEU"][1].p_value
        stats = [np.array([s["bleu"] for s in sacre.stats(h, refs)], dtype=float) for h in (a, b)]
        from adaptsim.report.significance import scorer
        from adaptsim.report.stats import Series
        index, n = units_of(ids, "segment")
        ours = compare([Series("BLEU", scorer("BLEU"), stats)], index, n, Settings(2000, "segment", 7, "bs"))
        p_ours = ours.differences[1]["BLEU"].p
        tolerance = 4 * math.sqrt(p_sacre * (1 - p_sacre) * (1 / 1000 + 1 / 2000)) + 1 / 1001
        assert abs(p_ours - p_sacre) <= tolerance, (rate_a, rate_b, p_sacre, p_ours, tolerance)
        checked.append(p_sacre)
    assert any(0.02 < p < 0.9 for p in checked), checked  # at least one case where p is not trivially 0 or 1


def test_seeded_and_signed(runs, capsys):
    args = (runs["none"], runs["top"], "--resamples", "300")
    first, again = compare_json(capsys, *args), compare_json(capsys, *args)
    assert first == again
    other = compare_json(capsys, *args, "--seed", "1")
    assert other["metrics"]["BLEU"][1]["ci"] != first["metrics"]["BLEU"][1]["ci"]
    # the default ("auto") is the exact randomisation test up to 20 documents, and the signature names it
    assert first["signature"].startswith("test:exact|unit:document|units:20|patterns:1048576|resamples:300|seed:12345|"
                                         "ci:95%|adaptsim:")
    chosen = compare_json(capsys, *args, "--test", "bs")  # sacrebleu's statistic, named as it is chosen
    assert chosen["signature"].startswith("test:bs|unit:document|units:20|resamples:300|seed:12345|ci:95%|adaptsim:")


def test_table_marks_intervals_and_footer(runs, capsys):
    assert table.main([str(runs["root"]), "--relative", "--significance", "--ci", "--resamples", "300",
                       "--test", "ci"]) == 0
    out = capsys.readouterr().out
    lines = {ln.split(" | ")[0][2:]: ln for ln in out.splitlines() if ln.startswith("| ")}
    assert lines["full"].count("†") == len(["BLEU", "SBLEU", "TER", "R0+1", "R0", "R1"])
    assert "†" not in lines["bias"] and "†" not in lines["baseline"]
    assert "| bias | 0 [0, 0] |" in lines["bias"]  # identical: difference 0, interval [0, 0]
    assert "_†: the 95% interval of the difference to the baseline excludes 0 (paired bootstrap, percentile " \
           "interval, 300 resamples of 20 documents); signature test:ci|unit:document|units:20|resamples:300|" \
           "seed:12345" \
           in out
    table.main([str(runs["root"]), "--format", "csv", "--significance", "--ci", "--resamples", "300", "--test", "ci"])
    rows = {r["method"]: r for r in csv.DictReader(io.StringIO(capsys.readouterr().out))}
    assert float(rows["bias"]["p BLEU"]) == 1.0 and float(rows["full"]["p BLEU"]) < 0.01
    assert float(rows["full"]["BLEU low"]) <= float(rows["full"]["BLEU"]) <= float(rows["full"]["BLEU high"])
    assert rows["baseline"]["p BLEU"] == "" and rows["full"]["significance"].startswith("test:ci|")


def test_latex_marks(runs, capsys):
    table.main([str(runs["root"]), "--format", "latex", "--significance", "--metrics", "BLEU,TER",
                "--resamples", "200"])
    out = capsys.readouterr().out
    assert r"\textit{full} & \textbf{100.0}$^\dagger$ & \textbf{0.0}$^\dagger$ \\" in out
    assert r"\textit{bias} & " in out and "dagger" not in next(ln for ln in out.splitlines() if "{bias}" in ln)


def test_refusals(runs, data, tmp_path, capsys):
    refs, ids = data
    other = write_run(tmp_path, "x_none", "none", refs, refs, ids, fp="fp-other")
    with pytest.raises(UserError, match="different data"):
        compare_command.main([str(runs["none"]), str(other)])
    old = write_run(tmp_path / "old", "1_full", "full", refs, refs, ids, stats=False)
    with pytest.raises(UserError, match="no per-segment statistics for BLEU"):
        compare_command.main([str(runs["none"]), str(old)])
    assert compare_command.main([str(runs["none"]), str(old), "--metrics", "R0,R1", "--json"]) == 0  # recall is there
    with pytest.raises(UserError, match="at least two"):
        compare_command.main([str(runs["none"])])
    with pytest.raises(UserError, match="runs below it"):
        compare_command.main([str(runs["none"]), str(runs["root"])])
    with pytest.raises(UserError, match="needs a baseline"):
        table.main([str(runs["full"]), str(runs["top"]), "--significance"])
    (tmp_path / "cut").mkdir()
    cut = write_run(tmp_path / "cut", "0_top", "top", refs[:-1], refs[:-1], ids[:-1])
    with pytest.raises(UserError, match="other segments"):
        compare_command.main([str(runs["none"]), str(cut)])
    with pytest.raises(SystemExit):
        compare_command.main([str(runs["none"]), str(runs["top"]), "--unit", "sentence"])
    capsys.readouterr()


def test_compare_text(runs, capsys):
    assert compare_command.main([str(runs["none"]), str(runs["full"]), str(runs["top"]), "--resamples", "200",
                                 "--test", "ci"]) == 0
    out = capsys.readouterr().out
    assert "score [95% CI]" in out and "Δ to baseline [95% CI]" in out
    assert "signature: test:ci|unit:document|units:20|resamples:200|seed:12345" in out
    bleu_full = next(ln for ln in out.splitlines() if ln.split()[:1] == ["full"])
    assert "+" in bleu_full and bleu_full.rstrip().endswith("†")


def test_plot_bands_end_at_the_corpus_interval(runs, data, tmp_path, capsys):
    from adaptsim.report.runs import discover
    from adaptsim.report.significance import bands

    found = {r.method: r for r in discover([runs["root"]]).runs}
    n = len(data[0])
    got = bands([found["none"], found["top"]], ["BLEU", "R1"], [n // 2, n], Settings(300, "document", 12345, "ci"),
                "plot")
    corpus_ci = compare_json(capsys, runs["none"], runs["top"], "--resamples", "300", "--metrics", "BLEU,R1",
                             "--test", "ci")  # the bootstrap's interval, as the bands are
    for m in ("BLEU", "R1"):
        low, high = got[m][0]
        assert [low[-1], high[-1]] == pytest.approx(corpus_ci["metrics"][m][1]["diff_ci"], abs=1e-9)
        assert high[0] - low[0] > high[-1] - low[-1]  # half the data: a wider band
    # the plot itself needs curves.csv: write the cumulative curves the runs would have written
    for name in ("none", "bias", "full", "top"):
        rows = [json.loads(ln) for ln in (runs[name] / "steps.jsonl").read_text().splitlines()]
        ev = Evaluator(data[0], data[1], lang="de")
        from adaptsim.metrics import write_curves
        write_curves(ev.curves([r["hypothesis"] for r in rows]), runs[name] / "curves.csv")
    out = tmp_path / "bands.png"
    assert plot.main([str(runs["root"]), "--out", str(out), "--bands", "--resamples", "200"]) == 0
    assert out.read_bytes()[:4] == b"\x89PNG" and "bands (test:exact|unit:document" in capsys.readouterr().out


def test_findings_verdicts_follow_the_direction_and_significance_of_each_difference(tmp_path, data, capsys):
    """`adaptsim findings`: full = the references (raises R1, R0 and BLEU), bias = the baseline, lasso, fixed and top
    noisier than the baseline (lower R0): each verdict is what the constructed differences make it."""
    from adaptsim.report import findings

    refs, ids = data
    root = tmp_path / "sweep"
    base = noisy(refs, 0.35, seed=1)
    write_run(root, "0_none", "none", base, refs, ids)
    write_run(root, "1_full", "full", refs, refs, ids)
    write_run(root, "2_bias", "bias", base, refs, ids)
    for i, method in enumerate(("lasso", "fixed", "top")):
        write_run(root, f"{3 + i}_{method}", method, noisy(refs, 0.7, seed=5 + i), refs, ids)
    assert findings.main([str(root), "--resamples", "200"]) == 0
    out = capsys.readouterr().out
    rows = [line.split(" | ") for line in out.splitlines() if line.startswith("| ") and "#" not in line
            and "--" not in line]
    verdicts = {int(r[0][2:]): r[-2] for r in rows}
    assert verdicts == {1: "reproduced",          # full R1 up
                        2: "contradicted",        # full R0 up, not down, significantly
                        3: "contradicted",        # full's R0 beats lasso's
                        4: "contradicted",
                        5: "reproduced",          # bias = baseline on every metric
                        6: "reproduced",          # fixed and top far below the baseline's R0
                        7: "contradicted",        # lasso and fixed lower BLEU
                        8: "smaller than the paper's"}  # every method moves BLEU and R0 the same way, bias not at
    # all: the paper's BLEU up and R0 down excluded for every method the paper shows it through, no effect not


def test_findings_say_which_method_is_missing(tmp_path, data, capsys):
    from adaptsim.report import findings

    refs, ids = data
    root = tmp_path / "sweep"
    write_run(root, "0_none", "none", noisy(refs, 0.35, seed=1), refs, ids)
    write_run(root, "1_full", "full", refs, refs, ids)
    assert findings.main([str(root), "--resamples", "100"]) == 0
    out = capsys.readouterr().out
    assert ("| 3 | lasso has the best R0 of the adapted methods | no lasso run | – | – | cannot tell | "
            "no lasso run |") in out
    assert "| 1 | full raises R1 |" in out and "| 6 | fixed and top lower R0 | no fixed, top run |" in out


def _normal_difference(seed: int, shift: float, n: int = 200) -> list:
    rng = np.random.default_rng(seed)
    a = rng.normal(0, 1, n)
    return [np.c_[a, np.ones(n)], np.c_[a + shift + rng.normal(0, 1, n), np.ones(n)]]


def test_sacrebleus_statistic_is_about_one_tailed_so_under_bs_a_mark_can_sit_on_an_interval_holding_zero():
    """`--test bs` (adaptsim.report.stats): sacrebleu's paired-bootstrap statistic counts resampled differences
    beyond twice the observed one, one tail of a distribution centred on it, so p ≈ P(δ* on the other side of 0):
    about half the two-sided p of the default test and of randomisation. Under it a mark can come with a 95%
    interval that holds 0; under the default test, on the same resamples, it cannot."""
    from adaptsim.report.stats import Series, ratio

    n = 200
    series = [Series("m", ratio(1.0), _normal_difference(4, 0.1, n))]  # a symmetric case with p in that band
    bs, ci, ar = (compare(series, np.arange(n), n, Settings(2000, "segment", 1, t)).differences[1]["m"]
                  for t in ("bs", "ci", "ar"))
    assert 0.025 < bs.p < 0.05 and bs.ci[0] < 0 < bs.ci[1]  # marked under bs, and its 95% interval holds 0
    assert 1.5 < ar.p / bs.p < 3.5  # the two-sided test's p is about twice as large
    assert ci.ci == bs.ci and 1.8 < ci.p / bs.p < 2.2 and not significant(ci.p)  # same interval, no mark


def test_the_default_mark_is_exactly_the_95_interval_of_the_difference_excluding_zero():
    """On constructed differences from none to large, in both directions: under the default test a difference is
    marked exactly when its 95% interval (printed from the same resamples) excludes 0, never when it holds 0."""
    from adaptsim.report.stats import Series, ratio

    n, seen = 200, set()
    for seed in range(12):
        for shift in (-0.4, -0.2, -0.15, -0.1, 0.0, 0.05, 0.1, 0.15, 0.2, 0.4):
            series = [Series("m", ratio(1.0), _normal_difference(seed, shift, n))]
            for resamples in (999, 1000):  # 40 divides 1000: the boundary where sacrebleu's index differs
                d = compare(series, np.arange(n), n, Settings(resamples, "segment", seed, "ci")).differences[1]["m"]
                excludes = d.ci[0] > 0 or d.ci[1] < 0
                assert significant(d.p) == excludes, (seed, shift, resamples, d)
                seen.add(excludes)
    assert seen == {True, False}


def test_an_interval_on_its_boundary_holds_zero_and_is_not_marked():
    """1,000 resampled differences of which exactly 25 (2.5 %) are ≤ 0: the interval's lower end is the 25th
    smallest, 0 itself, so it holds 0 and p = 0.05 is not below 0.05; with 24 it excludes 0 and is marked."""
    from adaptsim.report.stats import _interval, _p_interval

    for below, marked in ((25, False), (24, True)):
        deltas = np.r_[-np.arange(below - 1, -1, -1.0), np.arange(1.0, 1001 - below)]
        low, high = _interval(deltas)
        assert high == 976 - below, high  # the 25th largest (the largest is 1000 − below)
        assert (low > 0) == marked and significant(_p_interval(deltas)) == marked, (below, low)


@pytest.mark.parametrize("docs,marked", [(1, False), (2, False), (3, False), (20, True)])
def test_few_documents_give_no_mark_and_the_note_says_so(tmp_path, capsys, docs, marked):
    """A large, consistent difference (hypotheses = references against noisy ones). A document bootstrap of n
    documents has C(2n − 1, n) distinct resamples (1, 3, 10 for 1–3), the randomisation tests 2ⁿ⁻¹ distinct |δ'|: no
    p below 1/that, so no † from 1–3 documents under any test, and the note under the numbers says why; 20 documents
    find it."""
    from math import comb

    refs, ids = corpus(docs=docs, per_doc=10)
    none = write_run(tmp_path, "0_none", "none", noisy(refs, 0.35, seed=1), refs, ids)
    full = write_run(tmp_path, "1_full", "full", refs, refs, ids)
    for test in ("ci", "bs", "ar", "exact"):
        out = compare_json(capsys, none, full, "--test", test)
        floor = 1 / (2 ** (docs - 1) if test in ("ar", "exact") else comb(2 * docs - 1, docs))
        rows = [out["metrics"][m][1] for m in METRICS if out["metrics"][m][1]["p"] is not None]
        assert rows and all(r["p"] >= min(floor, 1 / 1001) for r in rows), (docs, test, rows)
        marks = {m for m in METRICS if out["metrics"][m][1]["significant"]}
        assert {"BLEU", "TER"} <= marks if marked else not marks, (docs, test, marks)
    assert compare_command.main([str(none), str(full)]) == 0
    captured = capsys.readouterr()
    numbers = captured.out.split("\n\n†:")[0]
    d = 2 ** (docs - 1)  # the default test at few documents is the exact randomisation test
    note = f"only {d} distinct randomisations, so p ≥ {1 / d:.3g} and no difference is marked (that needs at least 6"
    if marked:
        assert "†" in numbers and "distinct randomisations, so p ≥" not in captured.out + captured.err
    else:
        assert "†" not in numbers and note in captured.out and note in captured.err


def test_the_notes_count_distinct_randomisations_one_way_and_name_unit_segment_only_when_it_was_given(tmp_path,
                                                                                                       capsys):
    """A paired two-sided randomisation over n units has 2ⁿ swap patterns, but a pattern and its mirror image give
    the same |δ'|: the footer and the note on too few units both count 2ⁿ⁻¹ distinct randomisations, and p's floor is
    printed to three digits (0.125, as the README gives it). The remark on segments not being independent appears
    only where --unit segment was given."""
    refs, ids = corpus(docs=4, per_doc=2)
    none = write_run(tmp_path, "0_none", "none", noisy(refs, 0.35, seed=1), refs, ids)
    full = write_run(tmp_path, "1_full", "full", refs, refs, ids)
    assert compare_command.main([str(none), str(full)]) == 0
    by_documents = capsys.readouterr()
    footer = by_documents.out.split("\n\n†:")[1]
    assert "all 8 distinct randomisations of 4 documents: 16 swap patterns in mirror-image pairs" in footer
    assert "only 8 distinct randomisations, so p ≥ 0.125 and no difference is marked" in footer
    assert "all 16" not in footer and "0.12 " not in footer
    assert "--unit segment" not in by_documents.out + by_documents.err
    assert "; more documents are the remedy" in by_documents.err
    assert compare_command.main([str(none), str(full), "--unit", "segment"]) == 0
    by_segments = capsys.readouterr()
    assert "all 128 distinct randomisations of 8 segments: 256 swap patterns" in by_segments.out
    assert "--unit segment treats the segments of a document as independent, which they are not" in by_segments.err


def test_the_exact_test_is_the_permutation_test_over_every_swap_pattern(tmp_path, capsys):
    """The exact p counted by brute force with sacrebleu's own corpus scores: each of the 2ⁿ patterns swaps whole
    documents' hypotheses between the two runs, and p is the share of patterns whose |δ'| reaches the observed
    |δ|. (compare enumerates half of them, by symmetry: the same p for every metric.)"""
    import itertools

    from sacrebleu.metrics import BLEU, TER

    refs, ids = corpus(docs=8, per_doc=6, seed=4)
    a, b = noisy(refs, 0.3, seed=11), noisy(refs, 0.26, seed=12)
    out = compare_json(capsys, write_run(tmp_path, "0_a", "none", a, refs, ids),
                       write_run(tmp_path, "1_b", "full", b, refs, ids), "--test", "exact")["metrics"]
    docs = sorted(set(ids))
    for metric, score in (("BLEU", BLEU()), ("TER", TER())):
        def delta(swapped):
            x = [h_b if doc in swapped else h_a for h_a, h_b, doc in zip(a, b, ids)]
            y = [h_a if doc in swapped else h_b for h_a, h_b, doc in zip(a, b, ids)]
            return score.corpus_score(y, [refs]).score - score.corpus_score(x, [refs]).score

        observed = abs(delta(set()))
        patterns = [set(c) for k in range(len(docs) + 1) for c in itertools.combinations(docs, k)]
        p = sum(abs(delta(s)) >= observed - 1e-9 for s in patterns) / len(patterns)
        assert len(patterns) == 256 and 2 / 256 < p < 1, (metric, p)  # above the floor, below 1: counted
        assert out[metric][1]["p"] == pytest.approx(p, abs=1e-12), metric


def test_the_p_floor_at_small_n_is_derived_from_the_distinct_outcomes():
    from adaptsim.report.stats import distinct_outcomes, floor, min_units

    assert [distinct_outcomes("ci", n) for n in (1, 2, 3, 4)] == [1, 3, 10, 35]
    assert [distinct_outcomes("ar", n) for n in (1, 2, 5, 6)] == [1, 2, 16, 32]
    assert (min_units("ci"), min_units("bs"), min_units("ar")) == (4, 4, 6)
    assert floor("bs", 20, 1000) == 1 / 1001 and floor("bs", 2, 1000) == 1 / 3
