"""The prepared GPU check (scripts/device/gpu.sh) dry-run on CPU at toy size, as a GPU session would call it: a lent
machine gives it minutes, so every part must already work before one is lent. Also its two helpers: compare.py
(cuda against cpu, lockstep against alone) and fp16.py (the model that comes back)."""

import json
import lzma
import os
import shutil
import subprocess
import tarfile

import pytest
import torch
from conftest import FIXED_TENSORS, make_tiny_corpus, script_module, tsv_of
from omegaconf import OmegaConf
from safetensors import safe_open

from adaptsim import PROJECT_ROOT
from adaptsim.models import Seq2SeqModel


@pytest.fixture
def toy_carry(tmp_path, tiny_model_dir, tiny_corpus):
    """What scripts/device/pack.sh would carry, at toy size: the tiny model's tokenizer for base-ende's, the tiny
    corpus for base-train (xz) and validation, two documents for the Business Central articles, and a fixed list
    for the architecture the toy training builds (demo's, on the tiny vocabulary)."""
    from transformers import MarianTokenizer

    from adaptsim.basemodel.scratch_model import build_model

    carry = tmp_path / "carry"
    (carry / "base-train").mkdir(parents=True)
    (carry / "valid").mkdir()
    (carry / "base-ende-tok").mkdir()
    for name in ("source.spm", "target.spm", "vocab.json", "tokenizer_config.json"):
        shutil.copyfile(tiny_model_dir / name, carry / "base-ende-tok" / name)
    for k, side in enumerate(("en", "de")):
        text = "".join(pair[k] + "\n" for pair in tiny_corpus)
        (carry / "base-train" / f"train.{side}.xz").write_bytes(lzma.compress(text.encode()))
        (carry / "valid" / f"dev.{side}").write_text("".join(pair[k] + "\n" for pair in tiny_corpus[:6]))
    tsv_of(carry / "bc.tsv", [(f"doc{d}", s, *tiny_corpus[(7 * (3 * d + s)) % len(tiny_corpus)])
                              for d in (1, 2) for s in (1, 2, 3)])
    arch = OmegaConf.to_container(OmegaConf.load(PROJECT_ROOT / "configs" / "model" / "demo.yaml").arch)
    toy = build_model(arch, MarianTokenizer.from_pretrained(str(carry / "base-ende-tok")), seed=1)
    signature = Seq2SeqModel(toy, MarianTokenizer.from_pretrained(str(carry / "base-ende-tok")), "cpu").signature()
    OmegaConf.save({"model": {"name": "toy", "signature": signature}, "params": FIXED_TENSORS}, tmp_path / "fixed.yaml")
    return carry


@pytest.mark.slow
def test_the_device_script_runs_every_part_and_returns_a_model(tmp_path, toy_carry):
    out = tmp_path / "out"
    env = {**os.environ, "DEVICE": "cpu", "OUT": str(out), "CARRY": str(toy_carry), "WORK": str(tmp_path / "work"),
           "BUDGET_S": "400", "COMPARE_S": "240", "TRAIN_MINUTES": "0.05", "MODEL_CONFIG": "demo",
           "FIXED_LIST": str(tmp_path / "fixed.yaml"), "TESTS": "tests/test_devices.py",
           "TRAIN_ARGS": "train.batch_tokens=300 train.valid_bleu_sentences=4 train.lr=1e-2 train.warmup=10",
           "OMP_NUM_THREADS": "1", "CPU_JOBS": "2"}  # two cores: the CPU sweep's 6 methods in 2 processes
    done = subprocess.run(["bash", "scripts/device/gpu.sh"], cwd=PROJECT_ROOT, env=env, capture_output=True,
                          text=True, timeout=600)
    log = (out / "device.log").read_text()
    assert done.returncode == 0, log[-3000:]
    assert "passed" in (out / "tests.log").read_text(), log[-3000:]  # the tests ran with --device cpu
    assert "time limit train.max_minutes=0.05 reached" in log and "train: exit 0" in log
    for sweep in ("lockstep", "alone", "cpu"):
        assert f"{sweep}: exit 0" in log, log[-3000:]
    # on one device, lockstep, alone and the one-process-per-method CPU runs must agree segment by segment
    compare = (out / "compare.md").read_text()
    rows = [line for line in compare.splitlines() if line.startswith("| ") and " 6/6 " in line]
    assert len(rows) == 12 and all("| – |" in row for row in rows), compare
    assert "median ms to translate / to update" in compare
    # the model comes back in pieces under 16 MiB, and loads in float32 as any model
    parts = sorted(out.glob("model.tar.part-*"))
    assert parts and all(p.stat().st_size < 16 * 2**20 for p in parts)
    with open(tmp_path / "model.tar", "wb") as f:
        for p in parts:
            f.write(p.read_bytes())
    with tarfile.open(tmp_path / "model.tar") as tar:
        tar.extractall(tmp_path / "back", filter="data")
    assert json.loads((tmp_path / "back" / "training.json").read_text())["steps"] > 0
    back = Seq2SeqModel.load(str(tmp_path / "back"))
    trained = Seq2SeqModel.load(str(tmp_path / "work" / "model"))
    for name, p in back.named_parameters().items():
        assert p.dtype == torch.float32
        assert torch.equal(p, trained.named_parameters()[name].half().float())
    assert back.translate("The man sees the dog.").text == trained.translate("The man sees the dog.").text


def test_compare_finds_the_first_difference(tmp_path):
    compare = script_module("scripts/device/compare.py")

    def sweep(name, hyps):
        d = tmp_path / name / "full"
        d.mkdir(parents=True)
        steps = [{"index": i, "doc_id": "d", "seg_id": str(i), "hypothesis": h, "updates": 1, "ppl_before": 2.0 + i,
                  "logprobs": [-0.5], "translate_s": 0.1, "update_s": 0.02} for i, h in enumerate(hyps)]
        (d / "steps.jsonl").write_text("".join(json.dumps(s) + "\n" for s in steps))
        (d / "summary.json").write_text(json.dumps({
            "status": "finished", "method": "full", "dataset": "d", "model_path": "m", "data_fingerprint": "f",
            "segments": len(hyps), "signatures": {}, "timing": {"device": name},
            "scores": {"BLEU": 10.0 + len(name), "R0": 5.0}}))
        return tmp_path / name

    text = compare.report([sweep("cpu", ["a", "b", "c"]), sweep("cuda", ["a", "x", "c"])])
    assert "| full | cuda | 2/3 | segment 2 (d/1): hypothesis |" in text and "+1.00" in text
    assert "| full | 100 / 20 | 100 / 20 |" in text
    assert compare.main([str(tmp_path / "nowhere"), str(tmp_path / "cpu")]) == 2


def test_a_model_stored_in_fp16_runs_in_float32(tmp_path, tiny_model_dir):
    assert script_module("scripts/device/fp16.py").main([str(tiny_model_dir), str(tmp_path / "half")]) == 0
    with safe_open(str(tmp_path / "half" / "model.safetensors"), "pt") as f:
        assert {f.get_tensor(k).dtype for k in f.keys()} == {torch.float16}
    model = Seq2SeqModel.load(str(tmp_path / "half"))
    assert {p.dtype for p in model.named_parameters().values()} == {torch.float32}
    assert model.translate(make_tiny_corpus()[0][0]).text
