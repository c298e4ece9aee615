"""scripts/experiments/realistic_ende.sh end to end at toy size (the demo model, a few segments per document):
the paper's setting in every sweep, settings chosen on held-out data only, held-out and training data kept
apart from the test streams, text-free records and the reports made from them, and a second invocation that
leaves finished work alone. (The real run's figures are in docs/results.md; this checks the plumbing that
produced them.)"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from adaptsim import PROJECT_ROOT
from adaptsim.records import read_record

SHARED = Path(os.environ.get("ADAPTSIM_SHARED", PROJECT_ROOT.parent / "shared"))
SCRIPT = PROJECT_ROOT / "scripts" / "experiments" / "realistic_ende.sh"
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not (SHARED / "data" / "ape-it").is_dir() or not SCRIPT.is_file(),
                                 reason="../shared/data or the checkout's scripts/ is absent")]
DATASETS = ("ted", "gnome_help", "ape_it", "business_central")
NAMES = {"business_central": "business-central"}  # the data set's name in the reports, where not the sweep's
ABLATIONS = ("lasso_lam0.5", "lasso_bias0", "bias_lr0.1")  # two sweeps of held-out variants: 2 and 1


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("realistic")
    # the demo model on real text writes until decode.max_length: a short one keeps the toy's searches short
    env = {**os.environ, "ADAPTSIM_SHARED": str(SHARED), "MODEL": "demo", "MODEL_NAME": str(tmp / "list.yaml"),
           "MODEL_OVERRIDES": "decode.max_length=24",
           "TRAIN_PAIRS": "100", "APE_BLOCK": "3", "APE_TEST_BLOCKS": "2", "APE_HELDOUT_BLOCKS": "1",
           "HELDOUT_SEGMENTS": "2", "GNOME_TEST": "printing,power", "ABLATIONS": ",".join(ABLATIONS),
           "MAX_SEGMENTS": "3", "DEV_SEGMENTS": "5", "BC_ARTICLES": "2", "TED_TALKS": "3", "FIXED_SEGMENTS": "1",
           "PROBE": str(SHARED / "data" / "general" / "dev"), "PROBE_SEGMENTS": "2", "PROBE_EVERY": "4",
           "RESULTS": str(tmp / "results"), "SWEEPS": str(tmp / "sweeps")}
    first = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr[-3000:]
    return tmp, env


def summaries(sweep: Path) -> dict[str, dict]:
    found = [json.loads(p.read_text()) for p in sorted(sweep.glob("*/summary.json"))]
    return {s["method"]: s for s in found}


def test_each_data_set_is_one_stream_of_the_six_methods_in_the_papers_setting(toy):
    tmp, _ = toy
    for name, segments in zip(DATASETS, (3 * 3, 2 * 3, 2 * 3, 2 * 3)):
        runs = summaries(tmp / "sweeps" / name)
        beyond = ["l2", "lora", "memory", "tm"] if name in ("ape_it", "business_central") else []
        assert sorted(runs) == sorted(["bias", "fixed", "full", "lasso", "none", "top", *beyond])
        for s in runs.values():
            assert s["status"] == "finished" and s["segments"] == segments
            assert s["reset"] == "never" and s["metrics_scope"] == "corpus"
            assert [p["after"] for p in s["probe"]["points"]] == [*range(0, segments, 4), segments]  # PROBE


def test_lasso_and_fixed_use_what_was_chosen_on_held_out_data(toy):
    tmp, _ = toy
    tried = {}
    for sweep in ("heldout", "heldout_more"):
        for method, summary in summaries(tmp / "sweeps" / sweep).items():
            assert summary["dataset"] == "heldout" and summary["reset"] == "never"
            tried[method] = summary
    assert sorted(tried) == sorted(["none", "full", "bias", "lasso", *ABLATIONS])
    assert tried["lasso_bias0"]["method_info"]["output_bias_size"] == 0
    assert tried["lasso_lam0.5"]["method_info"]["lam"] == 0.5
    reset = summaries(tmp / "sweeps" / "heldout_reset")
    assert sorted(reset) == ["lasso", "none"] and {s["reset"] for s in reset.values()} == {"document"}
    lasso = {m: s["scores"]["R0+1"] for m, s in tried.items() if m.startswith("lasso")}
    chosen = OmegaConf.load(tmp / "sweeps" / "configs" / "method" / "lasso_heldout.yaml")
    assert chosen.name == "lasso" and lasso[chosen.defaults[0]] == max(lasso.values())
    assert f"**{chosen.defaults[0]}**" in (tmp / "results" / "selection.md").read_text()
    expected = OmegaConf.load(PROJECT_ROOT / "scripts" / "experiments" / "configs" / "method" /
                              f"{chosen.defaults[0]}.yaml") if chosen.defaults[0] != "lasso" else {}
    for name in DATASETS:
        info = summaries(tmp / "sweeps" / name)["lasso"]["method_info"]
        for key in ("lam", "bias_lr", "hysteresis"):
            if key in expected:
                assert info[key] == expected[key]
    fixed_list = OmegaConf.load(tmp / "list.yaml").params
    assert json.loads((tmp / "sweeps" / "select_fixed" / "summary.json").read_text())["reset"] == "never"
    for name in DATASETS:
        trained = summaries(tmp / "sweeps" / name)["fixed"]["method_info"]["tensors"]
        assert set(fixed_list) <= set(trained) and all("embed" in n for n in set(trained) - set(fixed_list))


def test_held_out_and_training_data_stay_out_of_the_test_streams(toy):
    tmp, _ = toy
    data = tmp / "sweeps" / "data"
    heldout = [line.split("\t") for line in (data / "heldout.tsv").read_text().splitlines()[1:]]
    test_docs = {json.loads(line)["doc_id"] for name in DATASETS
                 for line in (tmp / "sweeps" / name / "none" / "steps.jsonl").read_text().splitlines()}
    assert not {row[0] for row in heldout} & test_docs
    split = json.loads((data / "split.json").read_text())
    assert split["ape_heldout_blocks"][0] > split["ape_test_blocks"][1]
    assert split["ape_train_blocks"][0] > split["ape_heldout_blocks"][1]
    general = split["general_pairs"]
    ape_train = set(zip(*((data / f"train.{lang}").read_text().splitlines()[general:] for lang in ("en", "de"))))
    assert len(ape_train) == 100
    ape_test = {(json.loads(line)["source"], json.loads(line)["reference"])
                for line in (tmp / "sweeps" / "ape_it" / "none" / "steps.jsonl").read_text().splitlines()}
    assert len(ape_test) == 6 and not ape_test & ape_train


def test_lasso_is_diagnosed_on_the_held_out_gnome_topics_alone(toy):
    tmp, _ = toy
    runs = summaries(tmp / "sweeps" / "heldout_gnome")
    diagnose = sorted(p.stem for p in (SCRIPT.parent / "diagnose" / "method").glob("*.yaml"))
    assert sorted(runs) == sorted(["none", "full", "lasso", *diagnose])
    heldout_docs = [line.split("\t")[0] for line in
                    (tmp / "sweeps" / "data" / "heldout.tsv").read_text().splitlines()[1:]]
    gnome = [d for d in heldout_docs if not d.startswith(("ape/", "bc/"))]
    assert gnome and gnome == heldout_docs[:len(gnome)]  # the held-out stream's prefix: the same runs there
    for s in runs.values():
        assert s["status"] == "finished" and s["segments"] == len(gnome) and s["reset"] == "never"
    info = {m: s["method_info"] for m, s in runs.items()}
    assert info["lasso_dense"]["budget"] == info["lasso_dense"]["non_embedding_parameters"]
    assert info["lasso_noemb"]["embedding_budget"] == 0 and info["lasso_nobias"]["output_bias_size"] == 0
    assert info["lasso_lam0"]["lam"] == 0 and info["lasso_sticky"]["hysteresis"] == 0.05
    assert "lasso_dense" in (tmp / "results" / "heldout_gnome.md").read_text()


def test_r0_is_split_by_whether_the_stream_has_shown_the_pieces(toy):
    tmp, _ = toy
    text = (tmp / "results" / "r0_by_pieces.md").read_text()
    for name in ("heldout", *DATASETS):
        assert f"R0 by class of the word, {name}:" in text
    # the two classes partition the R0 occurrences (the script checks its counts against each run's own)
    ted = summaries(tmp / "sweeps" / "ted")["none"]["counts"]["R0"]["den"]
    header = next(line for line in text.split("R0 by class of the word, ted:")[1].splitlines() if "pieces seen" in line)
    assert sum(int(cell.split(", ")[1].strip().rstrip(")")) for cell in header.split("|")[2:4]) == ted


def test_text_free_records_make_the_reports(toy):
    tmp, _ = toy
    results = tmp / "results"
    for name in DATASETS:
        sweep_steps = (tmp / "sweeps" / name / "none" / "steps.jsonl").read_text()
        record = read_record(results / "runs" / name / "none" / "steps.jsonl.xz")  # committed records: compressed
        texts = {json.loads(line)[k] for line in sweep_steps.splitlines() for k in ("source", "hypothesis")}
        assert not any(t in record for t in texts if len(t) > 8)
        assert '"ref_pieces"' not in record and '"pieces"' not in record  # the reference's and hypothesis' pieces
        assert not (results / "runs" / name / "none" / "hyps.txt").exists()
    relative = (results / "tables_relative.md").read_text()
    assert all(f"**{NAMES.get(name, name)} ·" in relative for name in DATASETS)
    assert "ms/step" in relative and "signature test:" in relative
    findings = (results / "findings.md").read_text()
    assert all(f"**{NAMES.get(name, name)} ·" in findings for name in DATASETS)
    assert findings.count("| 8 | BLEU and R0 disagree") == len(DATASETS)
    for name in DATASETS:
        assert (results / f"curves_{name}.png").stat().st_size > 0


def test_a_second_invocation_leaves_finished_work_alone(toy):
    tmp, env = toy
    results = tmp / "results"
    assert (results / "general_dev_bleu.txt").read_text().startswith("general/dev BLEU")
    stages = [line.split("\t")[0] for line in (results / "timing.tsv").read_text().splitlines()]
    assert stages[:5] == ["stage", "data", "model", "selection_and_sweeps", "reports"] and stages[5].startswith("total")

    steps = {p: p.read_bytes() for p in (tmp / "sweeps").glob("*/*/steps.jsonl")}
    again = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr[-3000:]
    assert all("finished already; nothing to resume" in (tmp / "sweeps" / f"{name}.log").read_text()
               for name in (*DATASETS, "heldout", "heldout_more", "heldout_reset", "heldout_gnome"))
    assert {p: p.read_bytes() for p in (tmp / "sweeps").glob("*/*/steps.jsonl")} == steps
