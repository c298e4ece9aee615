"""`adaptsim data-stats`: figures on a small TSV with known answers, and its command line."""

import json
import re

import pytest
from omegaconf import OmegaConf

from adaptsim import cli
from adaptsim.commands.data_stats import compute, format_text, main
from adaptsim.data import load_documents

TSV = ("doc_id\tseg_id\tsource\treference\n"
       "A\t1\tdog dog cat\tHund Hund Katze\n"
       "A\t2\tdog mouse\tder Hund Maus .\n"
       "B\t1\tdog mouse\tHund\n"
       "B\t2\tdog mouse\tHund\n")


@pytest.fixture
def files(tmp_path):
    (tmp_path / "d.tsv").write_text(TSV)
    (tmp_path / "stop.txt").write_text("der\n")
    return tmp_path


def metrics_cfg(**overrides):
    """configs/metrics/default.yaml (the home of every metric setting) with `overrides`, for German."""
    from adaptsim import CONFIG_DIR

    return OmegaConf.merge(OmegaConf.load(CONFIG_DIR / "metrics" / "default.yaml"), {"lang": "de"}, overrides)


def test_compute(files):
    docs = load_documents({"format": "tsv", "path": str(files / "d.tsv")})
    metrics = metrics_cfg(case="none", stopwords=str(files / "stop.txt"), scope="document")
    st = compute(docs, metrics)
    assert (st["documents"], st["segments"], st["tokens"]) == (2, 4, {"source": 9, "reference": 9})
    cw = st["content_words"]
    # sentence content tokens: [Hund Hund Katze] [Hund Maus] [Hund] [Hund] -> 7 tokens, 6 sentence types
    assert (cw["tokens"], cw["types_per_sentence_sum"], cw["avg_occurrences_per_sentence"]) == (7, 6, round(7 / 6, 4))
    # document A: Hund, Katze first; Maus first, Hund second. Document B: Hund first, then second.
    assert (cw["first_occurrences_R0"], cw["second_occurrences_R1"], cw["later_occurrences"]) == (4, 2, 0)
    assert cw["repeated_share"] == round(2 / 6, 4) and st["repeated_sources"] == 1
    corpus = compute(docs, OmegaConf.merge(metrics, {"scope": "corpus"}))["content_words"]
    assert (corpus["first_occurrences_R0"], corpus["second_occurrences_R1"], corpus["later_occurrences"]) == (3, 1, 2)


def test_command_line_json(files, capsys):
    assert main(["--json", "model=opus-mt-en-de", "dataset=tsv", f"dataset.path={files / 'd.tsv'}",
                 "metrics.case=none", f"metrics.stopwords={files / 'stop.txt'}"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["dataset"] == "tsv" and out["content_words"]["tokens"] == 7


def test_text_output(files):
    docs = load_documents({"format": "tsv", "path": str(files / "d.tsv")})
    st = compute(docs, metrics_cfg(case="none", stopwords=str(files / "stop.txt")))
    text = format_text("tiny", st)
    assert "documents" in text and "avg occurrences of content words per sentence  1.1667" in text
    assert re.search(r"content words seen before in the document +33\.3%", text)


def test_command_line_errors(files, capsys):
    assert main(["dataset=nope"]) == 2
    assert "usage: adaptsim data-stats" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        cli.main(["data-stats", "model=opus-mt-en-de", "dataset=tsv", f"dataset.path={files / 'missing.tsv'}"])
    err = capsys.readouterr().err
    assert e.value.code == 1 and err.count("\n") == 1
    assert err.startswith("adaptsim data-stats: error: ") and "missing.tsv: file not found" in err
