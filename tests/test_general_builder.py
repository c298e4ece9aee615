"""scripts/data/general.py (data/general from Helsinki-NLP/OPUS-MT-testsets) on a tiny upstream git repository."""

from __future__ import annotations

import hashlib
import os
import subprocess

import pytest
from conftest import script_module

general = script_module("scripts/data/general.py")

# {path: lines} of a fake OPUS-MT-testsets: the folders' sets, written in an order the builder must not follow
SETS = {
    "testsets/de-en/newstest2019": (["Added by de-en."], ["Von de-en."]),
    "testsets/deu-eng/tatoeba-test-v2021-08-07": (["Hello.", "I see.", "Good night. "],
                                                  ["Hallo.", "Ich verstehe.", "Gute Nacht."]),
    "testsets/deu-eng/newstest2019": (["Hello.", "A cat."], ["Servus.", "Eine Katze."]),
    "testsets/en-de/newstest2019": (["A cat.", "A dog."], ["Eine Katze.", "Ein Hund."]),
    "testsets/en-de/news-test2008": (["  Old news.", "A dog."], ["Alte Nachrichten.", "Ein Hund."]),
    "testsets/en-de/multi30k_test_2016_flickr": (["Hello. ", "A dog."], ["Hallo.", "Ein Hund.\x85"]),
    "testsets/en-de/multi30k_task2_test_2016": (["Captions apart."], ["Eigene Bildbeschreibungen."]),
    "testsets/en-de/newstest2017": (["Held out 2017."], ["Zurückgehalten 2017."]),
    "testsets/en-de/newstest2018": (["Dev one. ", "Dev one. "], ["Dev eins.", "Dev eins."]),
    "testsets/de-en/newstest2018": (["Dev reversed."], ["Dev umgekehrt."]),
}
LINKS = ("tatoeba-test-v2021-08-07.eng", "tatoeba-test-v2021-08-07.deu")  # eng-deu/X -> ../deu-eng/X


def _git(repo, *args):
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True,
                   capture_output=True)


def _upstream(tmp_path, sets=SETS):
    """A git repository holding `sets` (English and German files by the folder's language codes) and the links."""
    repo = tmp_path / "OPUS-MT-testsets"
    for stem, (english, german) in sets.items():
        three = stem.split("/")[1] in ("eng-deu", "deu-eng")
        for ext, text in zip(("eng", "deu") if three else ("en", "de"), (english, german)):
            path = repo / f"{stem}.{ext}"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("".join(line + "\n" for line in text), encoding="utf-8")
    (repo / "testsets/eng-deu").mkdir(parents=True, exist_ok=True)
    for name in LINKS:
        os.symlink(f"../deu-eng/{name}", repo / "testsets/eng-deu" / name)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "test sets")
    return repo


def _build(repo, out, *options):
    return general.main([str(repo), str(out), "--commit", "HEAD", *options])


def _lines(path):
    return path.read_text(encoding="utf-8").split("\n")[:-1]


def test_train_pools_the_folders_in_order_and_keeps_each_pair_where_it_first_appears(tmp_path):
    out = tmp_path / "general"
    assert _build(_upstream(tmp_path), out) == 0
    assert list(zip(_lines(out / "train.en"), _lines(out / "train.de"))) == [
        ("Hello.", "Hallo."),  # en-de first, its sets by file name: multi30k, news-test2008, newstest2019
        ("A dog.", "Ein Hund."),  # stripped: the trailing U+0085 of the German is gone
        ("Old news.", "Alte Nachrichten."),  # then "A dog." again: the same pair, dropped
        ("A cat.", "Eine Katze."),
        ("../deu-eng/tatoeba-test-v2021-08-07.eng",  # eng-deu: its links, read as their text
         "../deu-eng/tatoeba-test-v2021-08-07.deu"),
        ("Hello.", "Servus."),  # deu-eng's newstest2019: the same English with another German stays; "A cat." dropped
        ("I see.", "Ich verstehe."),  # then its tatoeba (by name), "Hello."/"Hallo." dropped
        ("Good night.", "Gute Nacht."),
        ("Added by de-en.", "Von de-en."),  # de-en last
    ]  # no task2 captions, no newstest2017, no newstest2018 (either direction)


def test_dev_is_newstest2018_en_de_as_stored(tmp_path):
    out = tmp_path / "general"
    assert _build(_upstream(tmp_path), out) == 0
    assert (out / "dev.en").read_bytes() == b"Dev one. \nDev one. \n"  # not stripped, not de-duplicated
    assert (out / "dev.de").read_bytes() == b"Dev eins.\nDev eins.\n"
    assert "Dev one." not in _lines(out / "train.en")


def test_skip_links_leaves_the_links_out(tmp_path):
    out = tmp_path / "general"
    assert _build(_upstream(tmp_path), out, "--skip-links") == 0
    assert not [line for line in _lines(out / "train.en") if line.startswith("../")]
    assert len(_lines(out / "train.en")) == len(_lines(out / "train.de")) == 8


def test_reads_the_commit_not_the_work_tree(tmp_path):
    repo = _upstream(tmp_path)
    first = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True,
                           check=True).stdout.strip()
    (repo / "testsets/en-de/newstest2019.en").write_text("A cow.\nA dog.\n", encoding="utf-8")
    _git(repo, "commit", "-qam", "changed")
    (repo / "testsets/en-de/news-test2008.en").write_text("Not committed.\nAt all.\n", encoding="utf-8")
    out = tmp_path / "general"
    assert general.main([str(repo), str(out), "--commit", first]) == 0
    assert "A cat." in _lines(out / "train.en") and "A cow." not in _lines(out / "train.en")
    assert _build(repo, out) == 0
    assert "A cow." in _lines(out / "train.en") and "Not committed." not in _lines(out / "train.en")


def test_prints_the_counts_and_each_files_md5(tmp_path, capsys):
    out = tmp_path / "general"
    assert _build(_upstream(tmp_path), out) == 0
    said = capsys.readouterr().out.splitlines()
    assert said[0] == f"{out}: 9 train pairs, 2 dev pairs (commit HEAD)"
    assert said[1:] == [f"{out / name}: md5 {hashlib.md5((out / name).read_bytes()).hexdigest()}"
                        for name in ("train.en", "train.de", "dev.en", "dev.de")]


@pytest.mark.parametrize("broken, message", [
    ({"testsets/en-de/newstest2019": (["A cat.", "A dog."], ["Eine Katze."])},
     "general.py: en-de/newstest2019: 2 English lines, 1 German\n"),
    ({"testsets/en-de/newstest2018": None}, "general.py: HEAD: no testsets/en-de/newstest2018.en\n"),
])
def test_a_broken_upstream_is_one_line_and_writes_nothing(tmp_path, capsys, broken, message):
    sets = {stem: pair for stem, pair in {**SETS, **broken}.items() if pair is not None}
    out = tmp_path / "general"
    assert _build(_upstream(tmp_path, sets), out) == 1
    assert capsys.readouterr().err == message and not out.exists()


def test_an_unknown_commit_is_one_line(tmp_path, capsys):
    assert general.main([str(_upstream(tmp_path)), str(tmp_path / "out"), "--commit", "0" * 40]) == 1
    err = capsys.readouterr().err
    assert err.startswith("general.py: ") and err.count("\n") == 1


def test_names_its_upstream_and_commit():
    assert general.COMMIT in general.__doc__ and "docs/data.md" in general.__doc__
