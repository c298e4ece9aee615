"""csv, jsonl, triplet, tmx, xml, sgml and autodesk readers: parsing small files and every error message."""

import pytest

from adaptsim.data import load_documents
from adaptsim.errors import DataError, UserError


def write(path, text):
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return path


def pairs(docs):
    return [(d.doc_id, [(s.seg_id, s.source, s.reference) for s in d.segments]) for d in docs]


# --- csv / jsonl -----------------------------------------------------------------------------------

def test_csv_quoting_and_multiline_record(tmp_path):
    f = write(tmp_path / "c.csv", 'doc_id,seg_id,source,reference\nd,1,"Hello, you","Hallo, du"\n'
                                  'd,2,"two\nlines","zwei ""Zeilen"""\n')
    docs = load_documents({"format": "csv", "path": str(f)})
    assert pairs(docs) == [("d", [("1", "Hello, you", "Hallo, du"), ("2", "two\nlines", 'zwei "Zeilen"')])]


def test_csv_errors_name_record_line(tmp_path):
    f = write(tmp_path / "c.csv", 'doc_id,seg_id,source,reference\nd,1,"a\nb",x\nd,2,too,few,fields,here\n')
    with pytest.raises(DataError, match=r"c\.csv:4: expected 4 comma-separated fields"):
        load_documents({"format": "csv", "path": str(f)})
    f = write(tmp_path / "c.csv", 'doc_id,seg_id,source,reference\nd,1,a,\n')
    with pytest.raises(DataError, match=r"c\.csv:2: empty reference"):
        load_documents({"format": "csv", "path": str(f)})


def test_jsonl(tmp_path):
    f = write(tmp_path / "j.jsonl", '{"doc_id": "a", "seg_id": 1, "source": "x", "reference": "y", "mt": "z"}\n\n'
                                    '{"doc_id": "a", "seg_id": 2, "source": "x2", "reference": "y2"}\n')
    docs = load_documents({"format": "jsonl", "path": str(f)})
    assert pairs(docs) == [("a", [("1", "x", "y"), ("2", "x2", "y2")])]
    assert docs[0].segments[0].attrs == {"mt": "z"} and docs[0].segments[1].origin.endswith("j.jsonl:3")


@pytest.mark.parametrize("line, message", [
    ('{"doc_id": "a", "seg_id": 1, "source": "x"', r"j\.jsonl:2: invalid JSON"),
    ('["a", 1]', r"j\.jsonl:2: expected a JSON object"),
    ('{"doc_id": "a", "seg_id": 2, "source": "x"}', r"j\.jsonl:2: no 'reference' in the object"),
    ('{"doc_id": "a", "seg_id": 2, "source": 3, "reference": "y"}', r"j\.jsonl:2: 'source' must be a string"),
    ('{"doc_id": "a", "seg_id": 1, "source": "x", "reference": "y"}', r"j\.jsonl:2: duplicate segment id '1'"),
    ('{"doc_id": "", "seg_id": 2, "source": "x", "reference": "y"}', r"j\.jsonl:2: missing doc_id"),
])
def test_jsonl_errors(tmp_path, line, message):
    f = write(tmp_path / "j.jsonl", '{"doc_id": "a", "seg_id": 1, "source": "x", "reference": "y"}\n' + line + "\n")
    with pytest.raises(DataError, match=message):
        load_documents({"format": "jsonl", "path": str(f)})


def test_jsonl_lines_ended_by_a_lone_cr_are_counted_as_lines(tmp_path):
    """A file whose lines end in "\\r" alone (old Mac tools) is read line by line, and an error on line 3 says 3,
    not 1; an object spread over lines is named as such."""
    rows = [f'{{"doc_id": "a", "seg_id": {i}, "source": "x{i}", "reference": "y{i}"}}' for i in (1, 2)]
    f = write(tmp_path / "j.jsonl", "\r".join(rows) + "\r")
    assert pairs(load_documents({"format": "jsonl", "path": str(f)})) == [("a", [("1", "x1", "y1"), ("2", "x2", "y2")])]
    write(f, "\r".join([*rows, '{"doc_id": "a", "seg_id": 3, "source": "x3"}']) + "\r")
    with pytest.raises(DataError, match=r"j\.jsonl:3: no 'reference' in the object"):
        load_documents({"format": "jsonl", "path": str(f)})
    write(f, "\n".join([*rows, '{"doc_id": "a", "seg_id": 3,', '"source": "x3", "reference": "y3"}']) + "\n")
    with pytest.raises(DataError, match=r"j\.jsonl:3: invalid JSON: the object does not end on this line .*one whole "
                                        r"object a line$"):
        load_documents({"format": "jsonl", "path": str(f)})


# --- triplet (WMT APE) -----------------------------------------------------------------------------

def test_triplet_detokenised_with_mt_attr(tmp_path):
    write(tmp_path / "t.src", "Click \" OK \" .\nThe file 's name\n")
    write(tmp_path / "t.mt", "Klicken Sie auf \" OK \" .\nDer Name\n")
    write(tmp_path / "t.pe", "Klicken Sie auf \" OK \" .\nDer Dateiname\n")
    opts = {"format": "triplet", "path": str(tmp_path / "t"), "source_lang": "en", "target_lang": "de"}
    docs = load_documents({**opts, "detokenize": True})
    first = docs[0].segments[0]
    assert (first.source, first.reference, first.attrs["mt"]) == ('Click "OK".', 'Klicken Sie auf "OK".',
                                                                  'Klicken Sie auf "OK".')
    assert docs[0].segments[1].source == "The file's name"
    raw = load_documents(opts)
    assert raw[0].segments[0].source == 'Click " OK " .'


def test_triplet_mismatch_names_mt_file(tmp_path):
    write(tmp_path / "t.src", "a\nb\n")
    write(tmp_path / "t.mt", "a\n")
    write(tmp_path / "t.pe", "a\nb\n")
    with pytest.raises(DataError, match=r"t\.mt: has 1 lines but .*t\.src has 2"):
        load_documents({"format": "triplet", "path": str(tmp_path / "t")})


# --- TMX ---------------------------------------------------------------------------------------------

TMX = """<?xml version="1.0" encoding="UTF-8"?>
<tmx version="1.4"><header srclang="en-US" datatype="plaintext" segtype="sentence" adminlang="en"
 creationtool="t" creationtoolversion="1" o-tmf="t"/>
<body>
<tu tuid="7"><prop type="doc">A</prop><tuv xml:lang="en-US"><seg>Press <bpt i="1">&lt;b&gt;</bpt>OK<ept i="1">\
&lt;/b&gt;</ept>.</seg></tuv>
 <tuv xml:lang="DE-de"><seg>Drücken Sie <hi>OK</hi>.</seg></tuv></tu>
<tu><prop type="doc">B</prop><tuv xml:lang="fr"><seg>Bonjour</seg></tuv><tuv xml:lang="en"><seg>Hello</seg></tuv>
 <tuv xml:lang="de"><seg>Hallo</seg></tuv></tu>
</body></tmx>
"""


def tmx(tmp_path, text, **opts):
    f = write(tmp_path / "m.tmx", text)
    return load_documents({"format": "tmx", "path": str(f), "source_lang": "en", "target_lang": "de", **opts})


def test_tmx(tmp_path):
    assert pairs(tmx(tmp_path, TMX)) == [("m", [("7", "Press OK.", "Drücken Sie OK."), ("2", "Hello", "Hallo")])]
    assert [d.doc_id for d in tmx(tmp_path, TMX, doc_prop="doc")] == ["A", "B"]


def test_tmx_wrong_language_code(tmp_path):
    with pytest.raises(DataError, match=r"m\.tmx:5: tu 1 \(tuid='7'\): no <tuv> for language 'it' "
                                        r"\(this <tu> has: en-US, DE-de\); set dataset.target_lang"):
        tmx(tmp_path, TMX, target_lang="it")
    with pytest.raises(DataError, match=r"m\.tmx:5: tu 1 .*no <tuv> for language 'en-GB'.*dataset.source_lang"):
        tmx(tmp_path, TMX, source_lang="en-GB")


def test_tmx_malformed(tmp_path):
    with pytest.raises(DataError, match=r"m\.tmx:5: invalid XML: mismatched tag"):
        tmx(tmp_path, TMX.replace("</seg></tuv>\n <tuv", "</tuv>\n <tuv", 1))
    with pytest.raises(DataError, match=r"m\.tmx: not a TMX file \(root element <xliff>"):
        tmx(tmp_path, "<xliff/>")
    with pytest.raises(DataError, match=r"m\.tmx:7: tu 2: no <prop type='doc'>"):
        tmx(tmp_path, TMX.replace('<prop type="doc">B</prop>', ""), doc_prop="doc")


def test_a_tu_in_another_language_pair_is_named_by_its_line_and_can_be_skipped(tmp_path):
    mixed = TMX.replace('<tuv xml:lang="fr"><seg>Bonjour</seg></tuv><tuv xml:lang="en"><seg>Hello</seg></tuv>\n '
                        '<tuv xml:lang="de"><seg>Hallo</seg></tuv>', '<tuv xml:lang="en"><seg>Hello</seg></tuv>'
                        '<tuv xml:lang="fr"><seg>Bonjour</seg></tuv>')
    with pytest.raises(DataError, match=r"^\S*m\.tmx:7: tu 2: no <tuv> for language 'de' \(this <tu> has: en, fr\); "
                                        r"set dataset.target_lang, or dataset.on_missing_language=skip to skip such"):
        tmx(tmp_path, mixed)
    docs = tmx(tmp_path, mixed, on_missing_language="skip")
    assert pairs(docs) == [("m", [("7", "Press OK.", "Drücken Sie OK.")])] and docs.skipped["missing_language"] == 1
    with pytest.raises(UserError, match=r"dataset.on_missing_language='maybe': choose error \| skip"):
        tmx(tmp_path, mixed, on_missing_language="maybe")


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-8-sig", "iso-8859-1"])
def test_a_tmx_is_read_in_the_encoding_it_declares(tmp_path, encoding):
    """XML names its encoding (a BOM, else the declaration): a UTF-16 TMX (what CAT tools export; TMX 1.4b recommends
    UTF-16 or UTF-8) reads as the UTF-8 one, with or without a byte-order mark."""
    declared = "UTF-16" if encoding.startswith("utf-16") else "UTF-8" if encoding == "utf-8-sig" else encoding
    text = TMX.replace('encoding="UTF-8"', f'encoding="{declared}"')
    write(tmp_path / "m.tmx", text.encode(encoding))
    assert pairs(tmx(tmp_path, (tmp_path / "m.tmx").read_bytes())) == pairs(tmx(tmp_path, TMX))


def test_an_xml_encoding_that_is_not_what_the_file_is_is_one_line(tmp_path):
    with pytest.raises(DataError, match=r"m\.tmx:1: the XML declaration says 'UTF-16' but the file is not"):
        tmx(tmp_path, TMX.replace('encoding="UTF-8"', 'encoding="UTF-16"'))
    with pytest.raises(DataError, match=r"m\.tmx:1: the XML declaration names an encoding Python does not know "
                                        r"\('klingon'\)"):
        tmx(tmp_path, TMX.replace('encoding="UTF-8"', 'encoding="klingon"'))
    # a lone surrogate on line 6
    with pytest.raises(DataError, match=r"m\.tmx:6: invalid utf-16-le \(bytes 0x00 0xd8\), the encoding the file "):
        tmx(tmp_path, TMX.encode("utf-16-le").replace("Drücken".encode("utf-16-le"), b"\x00\xd8" + b"r\x00"))


# --- IWSLT/WMT XML and SGML ----------------------------------------------------------------------------

def mteval_xml(kind, lang, docs):
    body = "".join(f'<doc docid="{d}" genre="lectures"><talkid>{d}</talkid>\n'
                   + "".join(f'<seg id="{i}"> {t} </seg>\n' for i, t in segs) + "</doc>\n" for d, segs in docs)
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<mteval>\n<{kind} setid="t" srclang="english">\n'
            f'{body}</{kind}>\n</mteval>\n')


def xml(tmp_path, src_docs, ref_docs):
    write(tmp_path / "t.en.xml", mteval_xml("srcset", "en", src_docs))
    write(tmp_path / "t.de.xml", mteval_xml("refset", "de", ref_docs))
    return load_documents({"format": "xml", "path": str(tmp_path / "t"), "source_lang": "en", "target_lang": "de"})


SRC = [("10", [("1", "Hello &amp; bye"), ("2", "Two")]), ("11", [("1", "Three")])]
REF = [("11", [("1", "Drei")]), ("10", [("2", "Zwei"), ("1", "Hallo &amp; tschüss")])]


def test_xml_pairs_by_ids_in_source_order(tmp_path):
    docs = xml(tmp_path, SRC, REF)
    assert pairs(docs) == [("10", [("1", "Hello & bye", "Hallo & tschüss"), ("2", "Two", "Zwei")]),
                           ("11", [("1", "Three", "Drei")])]
    assert docs[0].segments[0].ref_origin == f"{tmp_path}/t.de.xml: doc '10', seg 1"


def test_xml_mismatches(tmp_path):
    with pytest.raises(DataError, match=r"t\.de\.xml: no document '11' \(the source file .*t\.en\.xml has it\)"):
        xml(tmp_path, SRC, REF[1:])
    with pytest.raises(DataError, match=r"t\.de\.xml: document '12' is not in the source file"):
        xml(tmp_path, SRC, REF + [("12", [("1", "x")])])
    with pytest.raises(DataError, match=r"t\.de\.xml: document '10' has no segment '2' \(the source has it at "
                                        r".*t\.en\.xml: doc '10', seg 2\)"):
        xml(tmp_path, SRC, [REF[0], ("10", [("1", "Hallo")])])
    with pytest.raises(DataError, match=r"t\.de\.xml: doc '11', seg 9: segment '9' of document '11' is not in the "
                                        r"source"):
        xml(tmp_path, SRC, [("11", [("1", "Drei"), ("9", "x")]), REF[1]])
    with pytest.raises(DataError, match=r"t\.en\.xml: doc '10', seg 1: duplicate segment id"):
        xml(tmp_path, [("10", [("1", "a"), ("1", "b")])], REF)
    with pytest.raises(DataError, match=r"t\.en\.xml: duplicate document id '10'"):
        xml(tmp_path, SRC + [("10", [("3", "x")])], REF)
    with pytest.raises(DataError, match=r"t\.en\.xml: doc '10', seg #1: <seg> without an id"):
        xml(tmp_path, [("10", [("", "a")])], REF)
    with pytest.raises(DataError, match=r"t\.en\.xml: doc '10', seg 1: empty source"):
        xml(tmp_path, [("10", [("1", " "), ("2", "b")]), SRC[1]], REF)


def test_xml_missing_file(tmp_path):
    write(tmp_path / "t.en.xml", mteval_xml("srcset", "en", SRC))
    with pytest.raises(DataError, match=r"t\.de\.xml: file not found"):
        load_documents({"format": "xml", "path": str(tmp_path / "t"), "source_lang": "en", "target_lang": "de"})


def test_wmt_single_file_xml(tmp_path):
    f = write(tmp_path / "wmt.xml", '<dataset id="x"><collection id="c"><doc id="d1" origlang="en">'
                                    '<src lang="en"><p><seg id="1">Hi</seg><seg id="2">Yes</seg></p></src>'
                                    '<ref lang="de" translator="A"><p><seg id="1">Hallo</seg>'
                                    '<seg id="2">Ja</seg></p></ref>'
                                    '</doc></collection></dataset>')
    docs = load_documents({"format": "xml", "path": str(f), "source_lang": "en", "target_lang": "de"})
    assert pairs(docs) == [("d1", [("1", "Hi", "Hallo"), ("2", "Yes", "Ja")])]
    with pytest.raises(DataError, match=r"wmt\.xml: doc 'd1': no <ref> with lang='fr'"):
        load_documents({"format": "xml", "path": str(f), "source_lang": "en", "target_lang": "fr"})


SGM_SRC = '<srcset setid="newstest" srclang="any">\n<doc sysid="ref" docid="n1" genre="news" origlang="en">\n<p>\n' \
          '<seg id="1">A & B &amp; C</seg>\n<seg id=2>Two</seg>\n</p>\n</doc>\n</srcset>\n'
SGM_REF = SGM_SRC.replace("A & B &amp; C", "A und B und C").replace("Two", "Zwei")


def sgml(tmp_path, src, ref):
    write(tmp_path / "n.en.sgm", src)
    write(tmp_path / "n.de.sgm", ref)
    return load_documents({"format": "sgml", "path": str(tmp_path / "n"), "source_lang": "en", "target_lang": "de"})


def test_sgml(tmp_path):
    docs = sgml(tmp_path, SGM_SRC, SGM_REF)
    assert pairs(docs) == [("n1", [("1", "A & B & C", "A und B und C"), ("2", "Two", "Zwei")])]
    assert docs[0].segments[1].origin == f"{tmp_path}/n.en.sgm:5"


def test_sgml_errors_name_lines(tmp_path):
    with pytest.raises(DataError, match=r"n\.de\.sgm:5: duplicate segment id '1' in doc 'n1'"):
        sgml(tmp_path, SGM_SRC, SGM_REF.replace("id=2", "id=1"))
    with pytest.raises(DataError, match=r"n\.de\.sgm: document 'n1' has no segment '2' \(the source has it at "
                                        r".*n\.en\.sgm:5\)"):
        sgml(tmp_path, SGM_SRC, SGM_REF.replace("<seg id=2>Zwei</seg>", ""))
    with pytest.raises(DataError, match=r"n\.en\.sgm:4: <seg> without an id"):
        sgml(tmp_path, SGM_SRC.replace('<seg id="1">', "<seg>"), SGM_REF)
    with pytest.raises(DataError, match=r"n\.de\.sgm:5: invalid UTF-8"):
        sgml(tmp_path, SGM_SRC, SGM_REF.encode().replace(b"Zwei", b"Zw\xe4i"))


# --- Autodesk ----------------------------------------------------------------------------------------

F, END = "\uf8ff", "\uf8ff\u25ca\u00f7\n"


def test_autodesk_terminator_is_exactly_as_designed():
    assert END == "\uf8ff◊÷\n"  # docs/design.md §7: records end with U+F8FF ◊ ÷ and a newline


def test_autodesk_records(tmp_path):
    f = write(tmp_path / "en-de.txt", F.join(["Open the file.", "Öffnen Datei.", "Öffnen Sie die Datei."]) + END
              + F.join(["Two\nlines", "MT", "Zwei\nZeilen"]) + END + F.join(["Third", "MT3", "Dritte"]) + END)
    docs = load_documents({"format": "autodesk", "path": str(f)})
    assert pairs(docs) == [("en-de", [("1", "Open the file.", "Öffnen Sie die Datei."),
                                      ("2", "Two\nlines", "Zwei\nZeilen"), ("3", "Third", "Dritte")])]
    assert docs[0].segments[0].attrs == {"mt": "Öffnen Datei."}
    assert docs[0].segments[2].origin == f"{f}:5"  # record 2 spans lines 2-4


def test_autodesk_folder_is_one_document_per_file(tmp_path):
    write(tmp_path / "b.txt", F.join(["b", "B", "Bb"]) + END)
    write(tmp_path / "a.txt", F.join(["a", "A", "Aa"]) + END)
    docs = load_documents({"format": "autodesk", "path": str(tmp_path)})
    assert pairs(docs) == [("a", [("1", "a", "Aa")]), ("b", [("1", "b", "Bb")])]


def test_autodesk_errors(tmp_path):
    f = tmp_path / "c.txt"
    write(f, F.join(["a", "A", "Aa"]) + END + "b" + F + "B" + END)
    with pytest.raises(DataError, match=r"c\.txt:2: record 2 has 2 field\(s\), expected at least 3"):
        load_documents({"format": "autodesk", "path": str(f)})
    write(f, F.join(["a", "A", "Aa"]) + END + "x\ty\n")
    with pytest.raises(DataError, match=r"c\.txt:2: last record is not terminated by U\+F8FF ◊ ÷"):
        load_documents({"format": "autodesk", "path": str(f)})
    write(f, F.join(["a", "A", "Aa"]) + END + F.join(["b", "B", ""]) + END)
    with pytest.raises(DataError, match=r"c\.txt:2: empty reference"):
        load_documents({"format": "autodesk", "path": str(f)})


def test_autodesk_missing_says_where_and_how(tmp_path):
    with pytest.raises(DataError) as e:
        load_documents({"format": "autodesk", "path": str(tmp_path / "nowhere")})
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(f"{tmp_path}/nowhere: not found")
    assert "download it by hand" in msg and "Autodesk's public post-editing data release" in msg
    assert "dataset.path" in msg


def test_format_specific_settings_missing(tmp_path):
    with pytest.raises(UserError, match=r"dataset.source_lang must be set for format 'tmx'"):
        load_documents({"format": "tmx", "path": "x.tmx"})
    with pytest.raises(UserError, match=r"dataset.path must be set"):
        load_documents({"format": "tsv"})
