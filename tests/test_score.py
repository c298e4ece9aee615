"""`adaptsim score` end to end through the CLI dispatcher."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from adaptsim import cli


@pytest.fixture
def files(tmp_path):
    def write(name: str, *lines: str) -> str:
        path = tmp_path / name
        path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        return str(path)

    return {
        "ref": write("ref.txt", "The dog bites the lady", "The man bites the dog"),
        "hyp": write("hyp.txt", "A terrier bites the person", "The dog bites the man"),
        "stop": write("stop.txt", "the", "a"),
        "docs": write("docs.txt", "d1", "d2"),
        "short": write("short.txt", "only one line"),
        "write": write,
        "dir": tmp_path,
    }


def run(argv: list[str]) -> int:
    with pytest.raises(SystemExit) as exit_:
        cli.main(["score", *argv])
    return exit_.value.code


def test_text_output(files, capsys):
    assert run(["--hyp", files["hyp"], "--ref", files["ref"], "--lang", "en", "--stopwords", files["stop"]]) == 0
    out = capsys.readouterr().out
    lines = {line.split()[0]: line.split()[1:] for line in out.splitlines() if line and not line.startswith(" ")}
    assert lines["R0"] == ["50.00", "(2/4)"]
    assert lines["R1"] == ["100.00", "(2/2)"]
    assert lines["R0+1"] == ["66.67", "(4/6)"]
    assert {"BLEU", "SBLEU", "TER", "chrF", "segments"} <= set(lines)
    assert "smooth:add-k[1.00]" in out


def test_json_output_with_docs_and_curves(files, capsys):
    curves = files["dir"] / "curves.csv"
    argv = ["--hyp", files["hyp"], "--ref", files["ref"], "--lang", "en", "--stopwords", files["stop"],
            "--docs", files["docs"], "--k", "2", "--curves", str(curves), "--json"]
    assert run(argv) == 0
    result = json.loads(capsys.readouterr().out)
    # separate documents: "dog" and "bites" are first occurrences again in d2
    assert result["counts"]["R0"] == {"num": 4, "den": 6}
    assert result["counts"]["R1"] == {"num": 0, "den": 0} and result["scores"]["R1"] is None
    assert "R2" in result["counts"] and result["segments"] == 2
    assert curves.read_text().splitlines()[0].startswith("segment,doc_id,R0,")


def test_sacrebleu_subset(files, capsys):
    argv = ["--hyp", files["hyp"], "--ref", files["ref"], "--lang", "en", "--sacrebleu", "BLEU,SBLEU", "--json"]
    assert run(argv) == 0
    assert set(json.loads(capsys.readouterr().out)["scores"]) == {"R0", "R1", "R0+1", "BLEU", "SBLEU"}
    assert run(["--hyp", files["hyp"], "--ref", files["ref"], "--sacrebleu", "TER,BLUE"]) == 2  # argparse usage error


@pytest.mark.parametrize("which, message", [
    ("short", "1 lines, but --ref"),
    ("missing", "file not found"),
    ("bad", "invalid UTF-8"),
])
def test_user_errors_exit_1(files, capsys, which, message):
    if which == "missing":
        hyp = str(files["dir"] / "missing.txt")
    elif which == "bad":
        hyp = str(files["dir"] / "bad.txt")
        (files["dir"] / "bad.txt").write_bytes(b"ok\n\xc3\x28\n")
    else:
        hyp = files[which]
    assert run(["--hyp", hyp, "--ref", files["ref"], "--lang", "en"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("adaptsim score: error:") and message in err and len(err.strip().splitlines()) == 1


def test_module_entry_point(files):
    proc = subprocess.run([sys.executable, "-m", "adaptsim", "score", "--hyp", files["hyp"], "--ref", files["ref"],
                           "--lang", "en", "--stopwords", files["stop"], "--json"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["counts"]["R0+1"] == {"num": 4, "den": 6}


def test_a_byte_order_mark_does_not_change_the_score(files, capsys):
    """`score` reads files as `run`'s readers do: a UTF-8 BOM (Windows editors write one) is not part of the
    first line, so the first reference's first word is still "The" and the scores are the same."""
    argv = ["--hyp", files["hyp"], "--lang", "en", "--stopwords", files["stop"], "--json"]
    assert run([*argv, "--ref", files["ref"]]) == 0
    plain = json.loads(capsys.readouterr().out)
    bom = files["dir"] / "ref_bom.txt"
    bom.write_bytes(b"\xef\xbb\xbf" + (files["dir"] / "ref.txt").read_bytes())
    assert run([*argv, "--ref", str(bom)]) == 0
    assert json.loads(capsys.readouterr().out)["counts"] == plain["counts"]
