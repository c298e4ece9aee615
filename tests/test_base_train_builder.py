"""scripts/data/base_train.py on tiny fake inputs: one real git repository laid out like all seven upstreams at once
(Multi30k, BConTrasT, MLQE-PE, WMT21–24), a two-pair data/general and a two-row TED TSV."""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import json
import subprocess
import tarfile

import pytest
from conftest import script_module

base_train = script_module("scripts/data/base_train.py")


def _git(repo, *args) -> str:
    run = subprocess.run(["git", "-C", str(repo), "-c", "user.name=Test", "-c", "user.email=test@example.com",
                          "-c", "commit.gpgsign=false", *args], capture_output=True, text=True, check=True)
    return run.stdout.strip()


def _tar_gz(members: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, text in members.items():
            data = text.encode("utf-8")
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _upstream(tmp_path, monkeypatch):
    """One repository holding every upstream file the builder reads; COMMITS pointed at its commit."""
    repo = tmp_path / "upstream"
    repo.mkdir()
    _git(repo, "init", "-q")
    files: dict[str, bytes] = {
        "data/task1/raw/train.en.gz": gzip.compress(b"Two dogs run on grass.\nA man in a wetsuit surfing.\n"),
        "data/task1/raw/train.de.gz": gzip.compress("Zwei Hunde rennen über Gras.\nEin Mann surft.\n".encode()),
        "data/task1/raw/val.en.gz": gzip.compress(b" A child sleeps. \n"),
        "data/task1/raw/val.de.gz": gzip.compress(b"Ein Kind schl\xc3\xa4ft.\n"),
        "train.json": json.dumps({"dlg-1": [
            {"utteranceID": 0, "speaker": "customer", "source": "Hallo, ich suche ein Hotel.",
             "target": "Hi, I am looking for a hotel."},
            {"utteranceID": 1, "speaker": "agent", "source": "Sure.", "target": "Gern."},
            {"utteranceID": 2, "speaker": "agent", "source": "Thanks!", "target": "Vielen Dank!"}]}).encode(),
        "dev.json": json.dumps({"dlg-2": [
            {"utteranceID": 0, "speaker": "agent", "source": "Sure.", "target": "Gern."}]}).encode(),
        "test1_corpus-with_gold_references.json": json.dumps({"dlg-3": [
            {"utteranceID": 0, "speaker": "agent", "source": "Thank you.", "target": "Danke sehr."}]}).encode(),
    }
    for folder, stem in base_train.MLQE_PE:
        files[f"data/post-editing/{folder}/en-de-{folder}.tar.gz"] = _tar_gz({
            f"en-de-{folder}/{stem}.src": f"It is {stem} , isn 't it ?\n",
            f"en-de-{folder}/{stem}.pe": f"Es ist {stem} , nicht wahr ?\n",
            f"en-de-{folder}/{stem}.mt": "ignored\n"})
    for i, (_, english, german) in enumerate(base_train.WMT):  # the first German has a tab: dropped
        files[english] = f"News line {english}.\n".encode()
        files[german] = f"Nachricht{chr(9) if i == 0 else ' '}{german}.\n".encode()
    for path, data in files.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_bytes(data)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "data")
    head = _git(repo, "rev-parse", "HEAD")
    monkeypatch.setattr(base_train, "COMMITS", {name: head for name in base_train.COMMITS})
    general = tmp_path / "general"
    general.mkdir()
    (general / "train.en").write_text("A man in a wet suit surfing.\nThanks a lot\n", encoding="utf-8")
    (general / "train.de").write_text("Ein Mann im Neoprenanzug surft.\nVielen Dank!\n", encoding="utf-8")
    ted = tmp_path / "ted.tsv"
    ted.write_text("doc_id\tseg_id\tsource\treference\n1\t1\tThank you!\tVielen Dank.\n"
                   "1\t2\tThis is it.\tDanke sehr.\n", encoding="utf-8")
    return repo, general, ted


def _run(argv):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = base_train.main(argv)
    return code, out.getvalue()


def test_key_ignores_case_spaces_and_punctuation():
    assert base_train.key("A man in a wet suit, surfing!") == base_train.key("a man in a wetsuit surfing.")
    assert base_train.key("Sit down.") == base_train.key("Sit-down!") == "sitdown"
    assert base_train.key("Schläft.") == "schläft"


def test_select_strips_dedups_and_applies_the_exclusions():
    general = [("Sit down!", "Setz dich!"), ("Thanks a lot", "Vielen Dank!")]
    ted = [("Thank you.", "Vielen Dank."), ("Yes, got it.", "Ja, genau.")]
    candidates = [(" Two dogs run. ", "Zwei Hunde rennen."), ("Two dogs run.", "Zwei Hunde rennen. "),
                  ("Two dogs run.", "Zwei Hunde laufen."),  # same English, another German: kept
                  ("sit-down.", "Hinsetzen."),  # English key of a general English
                  ("thank you!", "Danke."),  # English key of a TED English
                  ("Thanks.", "Vielen Dank,"),  # German key in both general and TED German
                  ("Yeah, right.", "Ja, genau."),  # German key in TED only: kept
                  ("You do.", "Setz dich!"),  # German key in general only: kept
                  ("Ok.", "OK\tgut.")]  # a tab: dropped
    assert base_train.select(candidates, general, ted) == [
        ("Two dogs run.", "Zwei Hunde rennen."), ("Two dogs run.", "Zwei Hunde laufen."),
        ("Yeah, right.", "Ja, genau."), ("You do.", "Setz dich!")]


def test_builds_every_source_in_order(tmp_path, monkeypatch):
    repo, general, ted = _upstream(tmp_path, monkeypatch)
    out_dir = tmp_path / "out"
    argv = [str(out_dir), "--general", str(general), "--ted", str(ted)]
    for name in ("multi30k", "bcontrast", "mlqe-pe", "wmt21", "wmt22", "wmt23", "wmt24"):
        argv += [f"--{name}", str(repo)]
    code, said = _run(argv)
    assert code == 0, said
    english = (out_dir / "new-general.en").read_text(encoding="utf-8").splitlines()
    german = (out_dir / "new-general.de").read_text(encoding="utf-8").splitlines()
    pairs = list(zip(english, german, strict=True))
    wmt = [(f"News line {english}.", f"Nachricht {german}.") for _, english, german in base_train.WMT[1:]]
    assert pairs == [
        ("Two dogs run on grass.", "Zwei Hunde rennen über Gras."), ("A child sleeps.", "Ein Kind schläft."),
        ("Hi, I am looking for a hotel.", "Hallo, ich suche ein Hotel."), ("Sure.", "Gern."),
        ("It is train, isn't it?", "Es ist train, nicht wahr?"), ("It is dev, isn't it?", "Es ist dev, nicht wahr?"),
        ("It is test20, isn't it?", "Es ist test20, nicht wahr?"), *wmt]
    assert "multi30k 3, bcontrast 5, mlqe-pe 3, wmt 13 candidate pairs; 19 kept" in said
    for lang in ("en", "de"):
        assert hashlib.md5((out_dir / f"new-general.{lang}").read_bytes()).hexdigest() in said
    assert f"set-md5 {base_train.set_md5(pairs)}" in said


def test_compares_with_a_shipped_corpus(tmp_path, monkeypatch):
    repo, general, ted = _upstream(tmp_path, monkeypatch)
    shipped = tmp_path / "shipped"
    shipped.mkdir()
    lines = [("Sure.", "Gern.")] * 3 + [("Thanks a lot", "Vielen Dank!")] * 3 + [("Only once.", "Nur einmal.")]
    for side, lang in enumerate(("en", "de")):
        (shipped / f"train.{lang}.gz").write_bytes(gzip.compress("".join(p[side] + "\n" for p in lines).encode()))
    argv = [str(tmp_path / "out"), "--general", str(general), "--ted", str(ted), "--shipped", str(shipped)]
    for name in ("multi30k", "bcontrast", "mlqe-pe", "wmt21", "wmt22", "wmt23", "wmt24"):
        argv += [f"--{name}", str(repo)]
    code, said = _run(argv)
    assert code == 0, said
    assert "shipped: 1 pairs three times or more; 1 built, 0 not built, 18 built but not shipped" in said


def test_a_missing_file_is_one_line_on_stderr(tmp_path, monkeypatch, capsys):
    repo, general, ted = _upstream(tmp_path, monkeypatch)
    _git(repo, "rm", "-q", "dev.json")
    _git(repo, "commit", "-q", "-m", "drop")
    monkeypatch.setattr(base_train, "COMMITS", {name: _git(repo, "rev-parse", "HEAD") for name in base_train.COMMITS})
    argv = [str(tmp_path / "out"), "--general", str(general), "--ted", str(ted)]
    for name in ("multi30k", "bcontrast", "mlqe-pe", "wmt21", "wmt22", "wmt23", "wmt24"):
        argv += [f"--{name}", str(repo)]
    assert base_train.main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("base_train.py: ") and "dev.json" in err and err.count("\n") == 1
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("english,german", [(["a", "b"], ["x"])])
def test_unequal_sides_are_an_error(english, german):
    with pytest.raises(ValueError, match="2 English lines, 1 German"):
        base_train.aligned("set", english, german)
