"""plain and tsv readers (the formats the simulation core needs first): parsing and every error message."""

import pytest

from adaptsim.data import Dataset, load_documents
from adaptsim.errors import DataError, UserError


def write(path, text):
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return path


def plain(tmp_path, src, ref, **opts):
    write(tmp_path / "c.en", src)
    write(tmp_path / "c.de", ref)
    return load_documents({"format": "plain", "path": str(tmp_path / "c"), "source_lang": "en",
                           "target_lang": "de", **opts})


def test_plain_one_document(tmp_path):
    docs = plain(tmp_path, "Hello .\nBye\n", "Hallo .\nTschüss\n")
    assert isinstance(docs, Dataset) and isinstance(docs, list)
    assert [d.doc_id for d in docs] == ["c"]
    s = docs[0].segments
    assert [(x.seg_id, x.source, x.reference) for x in s] == [("1", "Hello .", "Hallo ."), ("2", "Bye", "Tschüss")]
    assert s[1].origin == f"{tmp_path}/c.en:2" and s[1].ref_origin == f"{tmp_path}/c.de:2"
    assert dict(docs.skipped) == {}


def test_plain_explicit_files_crlf_bom_and_u2028(tmp_path):
    write(tmp_path / "a.txt", "\ufeffone\r\ntwo\u2028still two\r\n")
    write(tmp_path / "b.txt", "eins\r\nzwei\r\n")
    docs = load_documents({"format": "plain", "source": str(tmp_path / "a.txt"),
                           "reference": str(tmp_path / "b.txt"), "doc_id": "X"})
    assert [(s.source, s.reference) for s in docs[0].segments] == [("one", "eins"), ("two\u2028still two", "zwei")]
    assert docs[0].doc_id == "X"


def test_plain_doc_id_file(tmp_path):
    write(tmp_path / "ids", "a\na\nb\n")
    docs = plain(tmp_path, "1\n2\n3\n", "x\ny\nz\n", doc_ids=str(tmp_path / "ids"))
    assert [(d.doc_id, len(d)) for d in docs] == [("a", 2), ("b", 1)]


def test_plain_doc_id_file_errors(tmp_path):
    write(tmp_path / "ids", "a\n\n")
    with pytest.raises(DataError, match=r"/ids:2: missing document id"):
        plain(tmp_path, "1\n2\n", "x\ny\n", doc_ids=str(tmp_path / "ids"))
    write(tmp_path / "ids", "a\n")
    with pytest.raises(DataError, match=r"/ids: has 1 document ids but the text files have 2 lines"):
        plain(tmp_path, "1\n2\n", "x\ny\n", doc_ids=str(tmp_path / "ids"))
    write(tmp_path / "ids", "a\nb\na\n")
    with pytest.raises(DataError, match=r"c\.en:3: document 'a' appears again"):
        plain(tmp_path, "1\n2\n3\n", "x\ny\nz\n", doc_ids=str(tmp_path / "ids"))


def test_plain_blank_line_breaks(tmp_path):
    docs = plain(tmp_path, "a\nb\n\n\nc\n\n", "A\nB\n\n\nC\n\n", blank_line_breaks=True)
    assert [(d.doc_id, [s.seg_id for s in d.segments]) for d in docs] == [("1", ["1", "2"]), ("2", ["5"])]


def test_plain_blank_line_in_one_file_is_an_empty_segment(tmp_path):
    with pytest.raises(DataError, match=r"c\.de:2: empty reference"):
        plain(tmp_path, "a\nb\n", "A\n \n", blank_line_breaks=True)


def test_plain_missing_file(tmp_path):
    write(tmp_path / "c.en", "a\n")
    with pytest.raises(DataError, match=r"c\.de: file not found"):
        load_documents({"format": "plain", "path": str(tmp_path / "c"), "source_lang": "en", "target_lang": "de"})


def test_plain_mismatched_line_counts(tmp_path):
    with pytest.raises(DataError, match=r"c\.de: has 1 lines but .*c\.en has 2"):
        plain(tmp_path, "a\nb\n", "A\n")


def test_plain_invalid_utf8_names_line(tmp_path):
    with pytest.raises(DataError, match=r"c\.de:2: invalid UTF-8 \(byte 0xff\)"):
        plain(tmp_path, "a\nb\n", b"A\nB\xff\n")


def test_plain_empty_source_error_and_skip(tmp_path):
    with pytest.raises(DataError, match=r"c\.en:2: empty source \(document 'c', segment '2'\).*on_empty=skip"):
        plain(tmp_path, "a\n  \nc\n", "A\nB\nC\n")
    docs = plain(tmp_path, "a\n  \nc\n", "A\nB\n\n", on_empty="skip")
    assert [s.seg_id for s in docs[0].segments] == ["1"]
    assert docs.skipped == {"empty": 2}


def test_plain_detokenize(tmp_path):
    docs = plain(tmp_path, "Hello , world !\n", "Hallo , Welt ( schön ) .\n", detokenize=True)
    assert (docs[0].segments[0].source, docs[0].segments[0].reference) == ("Hello, world!", "Hallo, Welt (schön).")


def test_plain_needs_path_or_files():
    with pytest.raises(UserError, match=r"dataset.path .* or dataset.source must be set"):
        load_documents({"format": "plain", "source_lang": "en", "target_lang": "de"})


TSV = "doc_id\tseg_id\tsource\treference\textra\n" \
      "d1\t1\t\"Quoted\" start\tZitat\tx\n" \
      "d1\t2\tTwo\tZwei\ty\n" \
      "d2\t1\tThree\tDrei\tz\n"


def tsv(tmp_path, text, **opts):
    return load_documents({"format": "tsv", "path": str(write(tmp_path / "t.tsv", text)), **opts})


def test_tsv_documents_in_file_order_and_attrs(tmp_path):
    docs = tsv(tmp_path, TSV)
    assert [(d.doc_id, [s.seg_id for s in d.segments]) for d in docs] == [("d1", ["1", "2"]), ("d2", ["1"])]
    first = docs[0].segments[0]
    assert first.source == '"Quoted" start' and first.attrs == {"extra": "x"}
    assert first.origin == f"{tmp_path}/t.tsv:2"


def test_tsv_configurable_columns(tmp_path):
    text = "talk\tsrc\ttgt\nA\ta\tb\nA\tc\td\nB\te\tf\n"
    docs = tsv(tmp_path, text, columns={"doc_id": "talk", "seg_id": None, "source": "src", "reference": "tgt"})
    assert [(d.doc_id, [s.seg_id for s in d.segments]) for d in docs] == [("A", ["1", "2"]), ("B", ["1"])]
    docs = tsv(tmp_path, text, columns={"doc_id": None, "seg_id": None, "source": "src", "reference": "tgt"})
    assert [(d.doc_id, len(d)) for d in docs] == [("t", 3)]


def test_tsv_errors(tmp_path):
    with pytest.raises(DataError, match=r"t\.tsv:3: expected 5 tab-separated fields .* found 4"):
        tsv(tmp_path, TSV.replace("Two\tZwei\ty", "Two\tZwei"))
    with pytest.raises(DataError, match=r"t\.tsv:1: no 'seg_id' in the header .*columns"):
        tsv(tmp_path, "doc_id\tsource\treference\na\tb\tc\n")
    with pytest.raises(DataError, match=r"t\.tsv:3: missing seg_id"):
        tsv(tmp_path, TSV.replace("d1\t2\t", "d1\t\t"))
    with pytest.raises(DataError, match=r"t\.tsv:3: duplicate segment id '1' in document 'd1' \(first at .*t\.tsv:2\)"):
        tsv(tmp_path, TSV.replace("d1\t2\t", "d1\t1\t"))
    with pytest.raises(DataError, match=r"t\.tsv:5: document 'd1' appears again"):
        tsv(tmp_path, TSV + "d1\t3\tFour\tVier\tw\n")
    with pytest.raises(DataError, match=r"t\.tsv:4: empty reference"):
        tsv(tmp_path, TSV.replace("Drei", ""))
    with pytest.raises(DataError, match=r"t\.tsv:3: invalid UTF-8"):
        tsv(tmp_path, TSV.encode().replace(b"Zwei", b"Zw\xc3i"))
    with pytest.raises(DataError, match=r"t\.tsv: empty file"):
        tsv(tmp_path, "")
    with pytest.raises(DataError, match=r"nope\.tsv: file not found"):
        load_documents({"format": "tsv", "path": str(tmp_path / "nope.tsv")})


def test_tsv_duplicate_ids_kept_when_asked(tmp_path):
    docs = tsv(tmp_path, TSV.replace("d1\t2\t", "d1\t1\t"), on_duplicate_id="keep")
    assert [s.seg_id for s in docs[0].segments] == ["1", "1"]


def test_bad_options(tmp_path):
    with pytest.raises(UserError, match=r"dataset.format='nope': choose plain"):
        load_documents({"format": "nope", "path": "x"})
    with pytest.raises(UserError, match=r"dataset.on_empty='drop': choose 'error' \| 'skip'"):
        tsv(tmp_path, TSV, on_empty="drop")
    with pytest.raises(UserError, match=r"dataset.max_segments=0"):
        tsv(tmp_path, TSV, max_segments=0)


def test_a_missing_file_of_the_shared_folder_says_where_that_folder_comes_from(tmp_path, monkeypatch):
    """Issue #76: `run dataset=ted` without ../shared said only `…: file not found`."""
    from adaptsim.data.textio import require_file

    monkeypatch.setenv("ADAPTSIM_SHARED", str(tmp_path / "shared"))
    with pytest.raises(DataError) as e:
        require_file(tmp_path / "shared" / "data" / "ted" / "talks.tsv")
    message = str(e.value)
    assert "\n" not in message and message.startswith(f"{tmp_path}/shared/data/ted/talks.tsv: file not found (")
    assert "../shared" in message and "ADAPTSIM_SHARED" in message and "docs/data.md" in message
    (tmp_path / "shared").mkdir()
    with pytest.raises(DataError, match=r"folder .*shared, which lacks it; docs/data.md"):
        require_file(tmp_path / "shared" / "data" / "ted" / "talks.tsv")
    with pytest.raises(DataError, match=r"nope\.tsv: file not found$"):  # elsewhere: the plain message
        require_file(tmp_path / "nope.tsv")
