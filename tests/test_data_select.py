"""Options common to all formats (grouping, selection, trimming, skips) and check_lengths."""

import logging

import pytest

from adaptsim.data import Dataset, check_lengths, load_documents
from adaptsim.data.lengths import Over
from adaptsim.data.select import topic
from adaptsim.errors import DataError, UserError

ROWS = [("a11y-mag.page", "1", "Zoom", "Zoomen"), ("a11y-mag.page", "2", "", "leer"),
        ("net-wifi.page", "1", "Wifi", "WLAN"), ("a11y.page", "1", "Access", "Zugang"),
        ("net.page", "3", "Network", "Netzwerk"), ("files.page", "1", "Files", "Dateien")]


def load(tmp_path, rows=ROWS, **opts):
    f = tmp_path / "d.tsv"
    f.write_text("doc_id\tseg_id\tsource\treference\n" + "".join("\t".join(r) + "\n" for r in rows))
    return load_documents({"format": "tsv", "path": str(f), "on_empty": "skip", **opts})


def shape(docs):
    return [(d.doc_id, [s.seg_id for s in d.segments]) for d in docs]


def test_topic():
    assert [topic(x, "-") for x in ("a11y-mag.page", "a11y.page", "legal.xml", "net-wifi-x.page", "plain")] == \
           ["a11y", "a11y", "legal", "net", "plain"]


def test_group_by_topic_keeps_first_appearance_order_and_page(tmp_path):
    docs = load(tmp_path, group_by="topic")
    assert shape(docs) == [("a11y", ["1", "1"]), ("net", ["1", "3"]), ("files", ["1"])]
    assert docs[0].segments[1].attrs["source_doc"] == "a11y.page"
    assert all(s.doc_id == d.doc_id for d in docs for s in d.segments)


def test_skips_are_counted_and_logged(tmp_path, caplog):
    with caplog.at_level(logging.INFO, logger="adaptsim.data"):
        docs = load(tmp_path)
    assert isinstance(docs, Dataset) and docs.skipped == {"empty": 1}
    assert any("d.tsv:3: skipped segment with empty source" in r.getMessage() for r in caplog.records)
    assert any(r.levelno == logging.WARNING and "skipped 1 segment" in r.getMessage() for r in caplog.records)


def test_selection_options(tmp_path):
    assert shape(load(tmp_path, documents=["net*", "files.page"])) == \
           [("net-wifi.page", ["1"]), ("net.page", ["3"]), ("files.page", ["1"])]
    assert shape(load(tmp_path, documents="a11y.page")) == [("a11y.page", ["1"])]
    assert shape(load(tmp_path, group_by="topic", min_segments=2)) == [("a11y", ["1", "1"]), ("net", ["1", "3"])]
    assert shape(load(tmp_path, group_by="topic", max_documents=1, max_segments=1)) == [("a11y", ["1"])]
    assert shape(load(tmp_path, group_by="topic", split_every=1, documents=["net/*"])) == \
           [("net/1", ["1"]), ("net/2", ["3"])]
    with pytest.raises(UserError, match=r"dataset.documents=\['nope'\]: no document id matches"):
        load(tmp_path, documents=["nope"])
    with pytest.raises(UserError, match=r"no documents left to simulate"):
        load(tmp_path, min_segments=5)


def test_max_segments_counts_kept_segments(tmp_path):
    docs = load(tmp_path, documents=["a11y-mag.page"], max_segments=1)
    assert shape(docs) == [("a11y-mag.page", ["1"])]


def words(bound: int, counted: list | None = None, skippable: bool = True):
    """A model's verdict on a side's length in words (`Model.over_length`), a bound of `bound` words."""
    def over_length(side, text):
        n = len(text.split()) if counted is None else counted.append(text) or len(text.split())
        return Over(n, bound, "the test's bound", skippable) if n > bound else None
    return over_length


def test_check_lengths_error_and_skip(tmp_path, caplog):
    docs = load(tmp_path, rows=ROWS[:1] + [("x", "1", "short", "a much longer reference here")])
    assert docs.skipped == {}
    with pytest.raises(DataError, match=r"d\.tsv:3: reference has 5 tokens, more than the test's bound \(4\); "
                                        r"set dataset.on_too_long=skip"):
        check_lengths(docs, {"format": "tsv", "on_too_long": "error"}, words(4))
    with caplog.at_level(logging.INFO, logger="adaptsim.data"):
        kept, counts = check_lengths(docs, {"format": "tsv", "on_too_long": "skip"}, words(4))
    assert counts == {"too_long": 1} and shape(kept) == [("a11y-mag.page", ["1"])]
    assert isinstance(kept, Dataset) and kept.skipped == {"too_long": 1}
    assert any("d.tsv:3: skipped segment: reference has 5 tokens > 4" in r.getMessage() for r in caplog.records)


def test_a_bound_a_setting_chooses_is_refused_even_with_skip(tmp_path):
    """A prompt budget (model.prompt.max_tokens) never removes segments from the test set (issue #78)."""
    docs = load(tmp_path, rows=ROWS[:1] + [("x", "1", "short", "a much longer reference here")])
    with pytest.raises(DataError, match=r"d\.tsv:3: reference has 5 tokens, more than the test's bound \(4\); "
                                        r"raise it: it bounds the earlier pairs"):
        check_lengths(docs, {"format": "tsv", "on_too_long": "skip"}, words(4, skippable=False))


def test_check_lengths_limit_keeps_the_first_segments_that_fit_and_reads_no_further(tmp_path):
    """`bench segments=N` runs the first N segments that fit the model; what lies beyond them is not tokenized."""
    rows = [("d1" if i < 3 else "d2", str(i), f"s{i}", "too long here" if i == 2 else f"r{i}") for i in range(1, 6)]
    docs = load(tmp_path, rows=rows)
    counted = []
    kept, counts = check_lengths(docs, {"format": "tsv", "on_too_long": "skip"}, words(2, counted), limit=3)
    assert shape(kept) == [("d1", ["1"]), ("d2", ["3", "4"])] and counts == {"too_long": 1}
    assert "s5" not in counted and "r5" not in counted


def test_check_lengths_names_reference_file_of_parallel_files(tmp_path):
    (tmp_path / "c.en").write_text("a b\nc\n")
    (tmp_path / "c.de").write_text("x\ny z w\n")
    docs = load_documents({"format": "plain", "path": str(tmp_path / "c"), "source_lang": "en", "target_lang": "de",
                           "on_empty": "skip"})
    with pytest.raises(DataError, match=r"c\.de:2: reference has 3 tokens"):
        check_lengths(docs, {"format": "plain"}, words(2))
    kept, counts = check_lengths(load(tmp_path), {"format": "tsv", "on_too_long": "skip"}, words(1))
    assert counts == {"too_long": 0} and kept.skipped == {"empty": 1, "too_long": 0}
