"""The data builders (scripts/data/, docs/data.md) on tiny files in their upstream's own format."""

from __future__ import annotations

import hashlib

import pytest
from conftest import script_module

gnome_help = script_module("scripts/data/gnome_help.py")

# gnome-user-docs' gnome-help/de/de.po as itstool writes it: a header, entries with their source references
PO = '''# German translation of the GNOME help.
msgid ""
msgstr ""
"Content-Type: text/plain; charset=UTF-8\\n"
"Language: de\\n"

#. (itstool) path: credit/name
#: C/files.page:12 C/about.page:9
msgid "Shaun McCance"
msgstr "Shaun McCance"

#. (itstool) path: page/title
#: C/files.page:20
msgid "Files"
msgstr "Dateien"

#. (itstool) path: page/p
#: C/about.page:30
msgid "Learn about <gui>Settings</gui>."
msgstr "Informationen über die <gui>Einstellungen</gui>."

#. (itstool) path: page/p
#: C/about.page:34
msgid "Not yet translated."
msgstr ""

#, fuzzy
#. (itstool) path: page/p
#: C/about.page:38
msgid "A fuzzy one."
msgstr "Ein unscharfer."

#. (itstool) path: page/p
#: C/files.page:25
msgid "Two lines in German."
msgstr "Zwei Zeilen\\n"
"auf Deutsch."

#. (itstool) path: license/p
#: C/legal.xml:3
msgid "This work is licensed under a <_:link-1/>."
msgstr "Dieses Werk ist lizenziert unter einer <_:link-1/>."

#~ msgid "Obsolete."
#~ msgstr "Veraltet."
'''


def test_gnome_help_one_segment_per_translated_entry_at_its_first_reference(tmp_path):
    (tmp_path / "de.po").write_text(PO, encoding="utf-8")
    out = tmp_path / "gnome-help.en-de.tsv"
    assert gnome_help.main([str(tmp_path / "de.po"), str(out)]) == 0
    assert out.read_text(encoding="utf-8").splitlines() == [
        "doc_id\tseg_id\tsource\treference",
        "about.page\t30\tLearn about <gui>Settings</gui>.\tInformationen über die <gui>Einstellungen</gui>.",
        "files.page\t12\tShaun McCance\tShaun McCance",  # its first reference, once (not about.page:9 as well)
        "files.page\t20\tFiles\tDateien",
        "legal.xml\t3\tThis work is licensed under a <_:link-1/>.\tDieses Werk ist lizenziert unter einer <_:link-1/>.",
    ]  # untranslated, fuzzy, obsolete and two-line entries left out; pages by name, segments by line


def test_gnome_help_prints_what_it_wrote_and_its_md5(tmp_path, capsys):
    (tmp_path / "de.po").write_text(PO, encoding="utf-8")
    out = tmp_path / "out.tsv"
    gnome_help.main([str(tmp_path / "de.po"), str(out)])
    said = capsys.readouterr().out
    assert said == f"{out}: 4 segments, 3 pages, md5 {hashlib.md5(out.read_bytes()).hexdigest()}\n"


def test_gnome_help_an_unreadable_po_is_one_line(tmp_path, capsys):
    assert gnome_help.main([str(tmp_path / "missing.po"), str(tmp_path / "out.tsv")]) == 1
    assert capsys.readouterr().err.count("\n") == 1 and not (tmp_path / "out.tsv").exists()


@pytest.mark.parametrize("builder", ["gnome_help", "ted", "business_central", "general"])
def test_every_builder_names_its_upstream_and_commit(builder):
    doc = script_module(f"scripts/data/{builder}.py").__doc__
    assert "commit" in doc and "docs/data.md" in doc


ted = script_module("scripts/data/ted.py")


def _wit3(tmp_path, source: str, target: str, talks: dict) -> str:
    """A WIT3 test archive (`source-target.tgz`) whose tst2016 source-side XML holds `talks`: {talk: [(id, text)]}."""
    import io
    import tarfile

    docs = "".join(f'<doc docid="{t}" genre="lectures"><talkid>{t}</talkid>'
                   + "".join(f'<seg id="{i}"> {text} </seg>\n' for i, text in segs) + "</doc>\n"
                   for t, segs in talks.items())
    xml = f'<?xml version="1.0" encoding="UTF-8"?>\n<mteval>\n<srcset setid="iwslt2017-tst2016" ' \
          f'srclang="x">\n{docs}</srcset>\n</mteval>\n'
    path = tmp_path / f"{source}-{target}.tgz"
    with tarfile.open(path, "w:gz") as tar:
        for name, text in ((f"{source}-{target}/IWSLT17.TED.tst2016.{source}-{target}.{source}.xml", xml),
                           (f"{source}-{target}/README", "WIT3\n")):
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return str(path)


def test_ted_pairs_the_english_with_the_reverse_archives_source_by_talk_and_segment(tmp_path, capsys):
    english = _wit3(tmp_path, "en", "de", {"2227": [("1", "Hello."), ("2", "Good  bye.")], "1": [("1", "One.")]})
    german = _wit3(tmp_path, "de", "en", {"1": [("1", "Eins.")], "2227": [("2", "Auf  Wiedersehen."),
                                                                           ("1", "Hallo.")]})
    out = tmp_path / "ted.tsv"
    assert ted.main([english, german, str(out)]) == 0
    assert out.read_text(encoding="utf-8").splitlines() == [
        "doc_id\tseg_id\tsource\treference", "2227\t1\tHello.\tHallo.", "2227\t2\tGood  bye.\tAuf  Wiedersehen.",
        "1\t1\tOne.\tEins."]  # the English file's order; spaces inside a segment kept, around it dropped
    assert capsys.readouterr().out.endswith(f"3 segments, 2 talks, md5 {hashlib.md5(out.read_bytes()).hexdigest()}\n")


def test_ted_a_segment_without_its_reference_is_one_line(tmp_path, capsys):
    english = _wit3(tmp_path, "en", "de", {"7": [("1", "Hello."), ("2", "Bye.")]})
    german = _wit3(tmp_path, "de", "en", {"7": [("1", "Hallo.")]})
    assert ted.main([english, german, str(tmp_path / "out.tsv")]) == 1
    assert capsys.readouterr().err == "ted.py: talk 7 segment 2: no reference in the other archive\n"
    assert not (tmp_path / "out.tsv").exists()
