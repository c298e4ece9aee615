"""Compressed run records (steps.jsonl.xz, curves.csv.xz): every report reads them as it reads the plain files, a
run can write them itself (compress=true), and the tracked tree stays small enough to travel to a GPU machine."""

import json
import lzma
import os
import shutil
import subprocess
import sys

import pytest
from conftest import script_module

from adaptsim import PROJECT_ROOT
from adaptsim.errors import UserError
from adaptsim.records import COMPRESSIBLE, compress_records, read_record, record_file

GNOME = PROJECT_ROOT / "docs" / "results" / "base-ende" / "runs" / "gnome_help"

# What a device call may send: the working tree and what it carries, 64 MiB in all. scripts/device/pack.sh carries
# 25.3 MiB (base-train 20, wheels 4, base-ende's tokenizer, the first Business Central articles; measured 2026-11-27
# and again 2026-11-28), and the sum keeps 8 MiB to spare for what a GPU call brings back to commit, so the tree keeps
# under 64 − 8 − 25.3 = 30.7 MiB (30.3 on 2026-11-28, after the curves were written as palette PNGs and most of
# small-ende-probe's records left the tree: docs/results.md, "Where small-ende-probe's records went"; 22.2 once the
# records' curves.csv.xz left it, which `plot` derives from the steps; the probe's learning-curve records left on
# 2026-12-08 for the 338-article Business Central run's); the folder for a GPU-trained model is exempt
# (it moves beside ../shared/models at review).
TREE_BUDGET_MIB = 30.7
EXEMPT = ("models/base-ende-gpu/",)


def reports(root, out_png) -> list[str]:
    """The outputs of the reports the docs print, over the committed GNOME help records copied to `root`."""
    runs = [str(root / m) for m in ("none", "full", "lasso")]
    commands = [["table", str(root)], ["table", str(root), "--relative", "--significance", "--cost"],
                ["findings", str(root), "--effects", "--power"], ["compare", *runs],
                ["plot", str(root), "--bands", "--out", str(out_png)]]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return [subprocess.run([sys.executable, "-m", "adaptsim", *c], capture_output=True, text=True, env=env).stdout
            for c in commands]


@pytest.mark.slow
def test_reports_are_byte_identical_on_compressed_and_plain_records(tmp_path):
    packed = tmp_path / "packed" / "gnome_help"
    shutil.copytree(GNOME, packed)
    plain = tmp_path / "plain" / "gnome_help"
    shutil.copytree(GNOME, plain)
    for run in plain.iterdir():
        for name in COMPRESSIBLE:
            xz = run / (name + ".xz")
            if xz.is_file():
                (run / name).write_bytes(lzma.decompress(xz.read_bytes()))
                xz.unlink()
    assert not list(plain.rglob("*.xz")) and len(list(packed.rglob("steps.jsonl.xz"))) == 6
    a, b = reports(packed, packed.parent / "curves.png"), reports(plain, plain.parent / "curves.png")
    assert all(out.strip() for out in a), a  # every report printed something
    assert [o.replace(str(packed.parent), "ROOT") for o in a] == [o.replace(str(plain.parent), "ROOT") for o in b]
    assert (packed.parent / "curves.png").read_bytes() == (plain.parent / "curves.png").read_bytes()


def test_a_run_with_compress_writes_xz_that_holds_the_plain_bytes(run_adaptsim, tiny_model_dir, tiny_tsv):
    plain, _ = run_adaptsim("plain", f"model.path={tiny_model_dir}", "dataset=tsv", f"dataset.path={tiny_tsv}",
                            "method=full")
    packed, summary = run_adaptsim("packed", f"model.path={tiny_model_dir}", "dataset=tsv",
                                   f"dataset.path={tiny_tsv}", "method=full", "compress=true")
    assert summary["status"] == "finished"
    assert not (packed / "steps.jsonl").exists() and not (packed / "curves.csv").exists()
    for name in COMPRESSIBLE:
        assert record_file(packed, name).name == name + ".xz"
    assert read_record(packed / "curves.csv.xz") == (plain / "curves.csv").read_text(encoding="utf-8")

    def untimed(text):  # the two runs differ only in their timings
        return [{k: v for k, v in json.loads(line).items() if not k.endswith("_s")} for line in text.splitlines()]
    assert untimed(read_record(packed / "steps.jsonl.xz")) == untimed((plain / "steps.jsonl").read_text())


def test_resume_of_a_compressed_finished_run_leaves_it_alone(run_adaptsim, tiny_model_dir, tiny_tsv):
    args = (f"model.path={tiny_model_dir}", "dataset=tsv", f"dataset.path={tiny_tsv}", "method=full")
    out, _ = run_adaptsim("run", *args, "compress=true")
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file() and p.name != "adaptsim.log"}
    run_adaptsim("run", *args, "resume=true")
    after = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file() and p.name != "adaptsim.log"}
    assert after == before and "steps.jsonl" not in after


def test_only_finished_runs_are_compressed(tmp_path):
    (tmp_path / "summary.json").write_text(json.dumps({"status": "running"}))
    (tmp_path / "steps.jsonl").write_text('{"index": 0}\n')
    with pytest.raises(UserError, match="not a finished run"):
        compress_records(tmp_path)
    assert (tmp_path / "steps.jsonl").read_text() == '{"index": 0}\n'


def test_a_truncated_xz_is_one_line(tmp_path):
    (tmp_path / "steps.jsonl.xz").write_bytes(lzma.compress(b'{"index": 0}\n')[:-8])
    with pytest.raises(UserError, match=r"steps.jsonl.xz: not a whole xz file"):
        read_record(record_file(tmp_path, "steps.jsonl"))


def test_the_script_compresses_finished_runs_and_names_the_others(tmp_path, capsys):
    for name, status in (("done", "finished"), ("cut", "interrupted")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "summary.json").write_text(json.dumps({"status": status}))
        (tmp_path / name / "steps.jsonl").write_text('{"index": 0}\n')
    assert script_module("scripts/compress_records.py").main([str(tmp_path)]) == 0
    assert (tmp_path / "done" / "steps.jsonl.xz").is_file() and not (tmp_path / "done" / "steps.jsonl").exists()
    assert (tmp_path / "cut" / "steps.jsonl").is_file()
    assert "cut: not finished" in capsys.readouterr().err


def test_the_committed_records_are_compressed():
    plain = [p for p in (PROJECT_ROOT / "docs").rglob("*") if p.name in COMPRESSIBLE]
    assert not plain, f"plain records in docs/ (python scripts/compress_records.py docs): {plain[:5]}"


def test_the_tracked_tree_stays_small_enough_to_travel():
    if not (PROJECT_ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=PROJECT_ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    sizes = {f: (PROJECT_ROOT / f).stat().st_size for f in listed
             if f and not f.startswith(EXEMPT) and (PROJECT_ROOT / f).is_file()}
    total = sum(sizes.values()) / 2**20
    largest = sorted(sizes, key=sizes.get, reverse=True)[:5]
    assert total <= TREE_BUDGET_MIB, (f"the tree is {total:.1f} MiB, over its {TREE_BUDGET_MIB} MiB budget "
                                      f"(docs/performance.md, 'GPU'); largest: {largest}")
