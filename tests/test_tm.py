"""`tm` (adaptsim/methods/tm.py): a moment's fine-tuning on retrieved earlier pairs before translating, undone after."""

import json
import shutil

import pytest
from conftest import tsv_of

from adaptsim.cli import main


@pytest.fixture
def stream(tmp_path, tiny_corpus):
    """Two documents of 8 segments; the tiny corpus's sentences are alike, so many have fuzzy matches ≥ 75."""
    return tsv_of(tmp_path / "stream.tsv",
                  [(f"doc{d}", i, *tiny_corpus[8 * d + i]) for d in range(2) for i in range(8)])


def run(out, model, data, *overrides, code=0):
    with pytest.raises(SystemExit) as exit_:
        main(["run", f"hydra.run.dir={out}", f"model.path={model}", "dataset=tsv", f"dataset.path={data}",
              "decode.beam_size=2", "decode.max_length=20", "progress=false", "threads=1", *overrides])
    assert exit_.value.code == code
    return out


def steps(out):
    rows = [json.loads(line) for line in (out / "steps.jsonl").read_text().splitlines()]
    return [{k: v for k, v in r.items() if not k.endswith("_s")} for r in rows]


def summary(out):
    return json.loads((out / "summary.json").read_text())


def test_without_a_match_tm_is_full(tmp_path, tiny_model_dir, stream):
    tm = run(tmp_path / "tm", tiny_model_dir, stream, "method=tm", "method.threshold=100")  # no exact repeats
    full = run(tmp_path / "full", tiny_model_dir, stream, "method=full")
    assert steps(tm) == steps(full)
    # "no match" is a figure, not a missing record
    assert summary(tm)["cost"]["temporary"] == {"retrievals": 0, "matches": 0, "updates": 0, "seconds": 0.0,
                                                "divergences": 0}


def test_the_moments_adaptation_is_undone_exactly_and_counted(tmp_path, tiny_model_dir, stream):
    tm = run(tmp_path / "tm", tiny_model_dir, stream, "method=tm", "method.online=false")
    none = run(tmp_path / "none", tiny_model_dir, stream, "method=none")
    s = summary(tm)
    cost = s["cost"]["temporary"]
    assert cost["retrievals"] > 0 and cost["matches"] >= cost["retrievals"] and cost["updates"] > 0
    # θ never leaves θ0: every document ends unchanged, so each update measures the baseline's perplexities
    assert all(d["changed_parameters"] == 0 for d in s["per_document"])
    assert [r["ppl_before"] for r in steps(tm)] == [r["ppl_before"] for r in steps(none)]
    # and the moment's adaptation changes what is translated (else it would measure nothing)
    assert [r["hypothesis"] for r in steps(tm)] != [r["hypothesis"] for r in steps(none)]


def test_tm_in_lockstep_is_tm_alone_and_resumes_to_the_uninterrupted_run(tmp_path, tiny_model_dir, stream):
    alone = run(tmp_path / "alone", tiny_model_dir, stream, "method=tm")
    with pytest.raises(SystemExit) as exit_:
        main(["run", "-m", f"hydra.sweep.dir={tmp_path / 'sweep'}", "hydra.sweep.subdir=${method.name}",
              "hydra/launcher=lockstep", f"model.path={tiny_model_dir}", "dataset=tsv", f"dataset.path={stream}",
              "decode.beam_size=2", "decode.max_length=20", "progress=false", "threads=1", "method=full,tm"])
    assert exit_.value.code == 0
    assert steps(tmp_path / "sweep" / "tm") == steps(alone)
    cut = tmp_path / "cut"  # interrupted after 5 of 16 steps: resumed, the memory is rebuilt by the replayed steps
    shutil.copytree(alone, cut)
    for name in ("steps.jsonl", "hyps.txt"):
        (cut / name).write_text("".join((cut / name).read_text().splitlines(keepends=True)[:5]))
    (cut / "summary.json").write_text(json.dumps({**summary(alone), "status": "interrupted"}))
    run(cut, tiny_model_dir, stream, "method=tm", "resume=true")
    assert steps(cut) == steps(alone)
    counts = [{k: v for k, v in summary(d)["cost"]["temporary"].items() if k != "seconds"} for d in (cut, alone)]
    assert counts[0] == counts[1]  # the retrieval record counts the replayed steps' moments too


def test_repeated_words_fall_into_the_band_of_the_sentence_they_were_last_seen_in():
    from adaptsim.metrics.roles import Roles
    from adaptsim.report.match_bands import statistics

    rows = [{"source": "Open the file menu.", "reference": "Öffnen Sie das Dateimenü.", "hypothesis": "x"},
            {"source": "Open the file menu.", "reference": "Öffnen Sie das Dateimenü.",  # identical: band 100
             "hypothesis": "Öffnen Sie das Dateimenü."},
            {"source": "Birds sing at dawn near the old harbour.", "reference": "Vögel singen im Dateimenü.",
             "hypothesis": "Vögel singen."}]  # Dateimenü again, last seen in a dissimilar sentence: band < 75
    roles = Roles({"lang": "de"}, [r["reference"] for r in rows], ["d"] * 3, "document")
    stats = {m: s.sum(axis=0).tolist() for m, s in statistics(roles, rows).items()}
    assert stats["R1 100"] == [3, 3]  # Öffnen, Sie (truecased: the polite pronoun), Dateimenü: recalled
    assert stats["R1+ <75"] == [0, 1] and stats["R1 <75"] == [0, 0]  # Dateimenü's third occurrence, missed
    assert stats["R1 95–99"] == stats["R1 75–94"] == [0, 0]


def test_an_exact_repeat_on_the_demo_is_translated_as_its_post_edit(tmp_path):
    """What a translator expects of a 100 % match, with the moment's settings chosen on held-out pairs."""
    import csv

    from adaptsim import PROJECT_ROOT

    rows = list(csv.DictReader((PROJECT_ROOT / "data" / "demo" / "docs.tsv").open(encoding="utf-8"), delimiter="\t"))
    a, b = rows[0], rows[1]
    data = tsv_of(tmp_path / "repeat.tsv", [("d", i + 1, r["source"], r["reference"]) for i, r in enumerate((a, b, a))])
    out = {}
    for method in ("none", "tm"):
        with pytest.raises(SystemExit):
            main(["run", f"hydra.run.dir={tmp_path / method}", f"method={method}", "dataset=tsv",
                  f"dataset.path={data}", "progress=false", *(["method.online=false"] if method == "tm" else [])])
        out[method] = (tmp_path / method / "hyps.txt").read_text().splitlines()
    assert out["none"][2] != a["reference"] and out["tm"][2] == a["reference"]
