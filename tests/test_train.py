"""The base-model trainer (`adaptsim train`) on a few hundred pairs for a few dozen steps."""

from __future__ import annotations

import json
import math
import logging
import os
import re
import shutil
import subprocess
import sys
from types import SimpleNamespace

import pytest
import torch
from conftest import _OBJECTS, _SUBJECTS, _VERBS
from transformers import MarianMTModel, MarianTokenizer

from adaptsim import PROJECT_ROOT
from adaptsim.basemodel import trainer as trainer_module
from adaptsim.basemodel.trainer import encode, inverse_sqrt, make_batches, train
from adaptsim.errors import UserError
from adaptsim.fingerprints import model_fingerprint as fingerprint
from adaptsim.launch.hydra_app import compose

_BIG = {"den Hund": "den großen Hund", "die Katze": "die große Katze", "das Haus": "das große Haus",
        "den Tisch": "den großen Tisch", "ein Buch": "ein großes Buch", "den Schlüssel": "den großen Schlüssel"}

TINY = ["model.arch.d_model=32", "model.arch.encoder_layers=1", "model.arch.decoder_layers=1", "model.arch.heads=2",
        "model.arch.ffn_dim=64", "model.arch.max_position_embeddings=64", "model.arch.dropout=0.1",
        "model.vocab.size=120", "model.vocab.shared=true", "model.vocab.model_type=unigram"]


def corpus() -> list[tuple[str, str]]:
    """288 pairs: subject × verb × object, with and without 'big'."""
    out = []
    for s, S in _SUBJECTS:
        for v, V in _VERBS:
            for o, o_de in _OBJECTS:
                out.append((f"{s} {v} {o}.", f"{S} {V} {o_de}."))
                big = o.replace("the ", "the big ").replace("a book", "a big book")
                out.append((f"{s} {v} {big}.", f"{S} {V} {_BIG[o_de]}."))
    return out


@pytest.fixture(scope="module")
def text_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("train_text")
    pairs = corpus()
    valid = pairs[::10]
    for name, rows in (("train", pairs), ("valid", valid)):
        (d / f"{name}.en").write_text("".join(s + "\n" for s, _ in rows), encoding="utf-8")
        (d / f"{name}.de").write_text("".join(t + "\n" for _, t in rows), encoding="utf-8")
    return d


def config(text_files, out, *overrides):
    return compose("train", [
        *TINY, f"train.source={text_files}/train.en", f"train.target={text_files}/train.de",
        f"train.valid_source={text_files}/valid.en", f"train.valid_target={text_files}/valid.de",
        f"train.out={out}", "train.batch_tokens=300", "train.lr=3e-3", "train.warmup=5",
        "train.valid_bleu_sentences=8", "progress=false", "threads=1", *overrides])


def test_paper_transformer_has_the_size_the_paper_budgets_refer_to():
    """lasso's and fixed's budget fractions (0.13, 0.033, 0.27) are the paper's 1M/1M/2M parameters over its
    ~7.5M non-embedding and ~30M embedding parameters (~38M in all, 40k vocabularies, three matrices): the
    model `train model=paper-transformer` builds must have those sizes, or the fractions mean something else."""
    from types import SimpleNamespace

    from omegaconf import OmegaConf
    from transformers import MarianMTModel

    from adaptsim.basemodel.scratch_model import count_parameters, marian_config

    cfg = compose("train", ["train.source=a", "train.target=b"])
    vocab = {str(i): i for i in range(int(cfg.model.vocab.size))}
    tokenizer = SimpleNamespace(encoder=vocab, target_encoder=vocab, separate_vocabs=not cfg.model.vocab.shared,
                                pad_token_id=0, eos_token_id=2)
    with torch.device("meta"):
        model = MarianMTModel(marian_config(OmegaConf.to_container(cfg.model.arch, resolve=True), tokenizer))
    embedding = sum(m.weight.numel() for m in (model.model.encoder.embed_tokens, model.model.decoder.embed_tokens,
                                                model.lm_head))
    assert 36e6 < count_parameters(model) < 40e6 and 29e6 < embedding < 32e6
    assert 6.5e6 < count_parameters(model) - embedding < 8.5e6
    assert str(cfg.train.out).endswith("adaptsim/models/paper-transformer")


def test_train_loss_falls_and_checkpoint_translates(text_files, tmp_path, device):
    out = tmp_path / "model"
    summary = train(config(text_files, out, "train.max_steps=40", "train.valid_every=20", f"device={device}"))
    log = [json.loads(line) for line in (out / "train_log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in log] == [20, 40] and summary["steps"] == 40
    assert log[1]["train_nll"] < log[0]["train_nll"] < 5.0
    assert log[1]["valid_loss"] < log[0]["valid_loss"]
    assert "valid_bleu" in log[0] and summary["best_step"] in (20, 40)

    for path in (out, out / "last"):
        tok = MarianTokenizer.from_pretrained(str(path))
        model = MarianMTModel.from_pretrained(str(path)).eval()
        with torch.no_grad():
            ids = model.generate(**tok(["The man sees the dog."], return_tensors="pt"), max_new_tokens=20)
        assert tok.decode(ids[0], skip_special_tokens=True).strip()
    assert (out / "last" / "trainer_state.pt").exists() and (out / "training.json").exists()

    # the project's model layer loads it like any local Marian model
    from adaptsim.models import Seq2SeqModel

    assert isinstance(Seq2SeqModel.load(str(out)).translate("The woman likes the cat.", beam_size=2).text, str)

    with pytest.raises(UserError, match="already holds"):
        train(config(text_files, out, "train.max_steps=1"))


def test_bfloat16_trains_as_well_with_float32_weights(text_files, tmp_path):
    """train.dtype=bfloat16 runs the forward under bf16 autocast; the weights, Adam's state and the loss stay
    float32 (so small updates are not rounded away), and the model learns as the float32 one does — also inside
    an autocast region left open around it (an interrupted job in the same process left one: with autocast's weight
    cache, which only the outermost region clears, every step reused the first step's weights and the model
    hardly learned, valid loss 3.63 against 3.08)."""
    fp32 = train(config(text_files, tmp_path / "fp32", "train.max_steps=40", "train.valid_every=20"))
    with torch.autocast("cpu", enabled=False):
        bf16 = train(config(text_files, tmp_path / "bf16", "train.max_steps=40", "train.valid_every=20",
                            "train.dtype=bfloat16"))
    assert bf16["last"]["valid_loss"] == pytest.approx(fp32["last"]["valid_loss"], rel=0.05)
    assert bf16["last"]["valid_loss"] != fp32["last"]["valid_loss"]  # it did run in another precision
    model = MarianMTModel.from_pretrained(str(tmp_path / "bf16" / "last"))
    assert {p.dtype for p in model.parameters()} == {torch.float32}
    state = torch.load(tmp_path / "bf16" / "last" / "trainer_state.pt", weights_only=False)["optimizer"]["state"]
    assert {s["exp_avg"].dtype for s in state.values()} == {torch.float32}
    with pytest.raises(UserError, match=re.escape("train.dtype='float16': choose 'float32' | 'bfloat16'")):
        train(config(text_files, tmp_path / "x", "train.dtype=float16"))


def test_resume_continues_exactly(text_files, tmp_path):
    straight = train(config(text_files, tmp_path / "a", "train.max_steps=16", "train.valid_every=8"))
    train(config(text_files, tmp_path / "b", "train.max_steps=8", "train.valid_every=8"))
    resumed = train(config(text_files, tmp_path / "b", "train.max_steps=16", "train.valid_every=8",
                           "train.resume=true"))
    assert resumed["steps"] == 16
    a = MarianMTModel.from_pretrained(str(tmp_path / "a" / "last")).state_dict()
    b = MarianMTModel.from_pretrained(str(tmp_path / "b" / "last")).state_dict()
    assert all(torch.allclose(a[k], b[k], atol=1e-6) for k in a)
    assert straight["last"]["train_nll"] == pytest.approx(resumed["last"]["train_nll"], rel=1e-5)
    assert "cuda_rng" not in torch.load(tmp_path / "b" / "last" / "trainer_state.pt", weights_only=True)  # on CPU

    # resuming a finished training (a rerun of the experiment script) reports it without training or validating
    log = (tmp_path / "b" / "train_log.jsonl").read_text()
    again = train(config(text_files, tmp_path / "b", "train.max_steps=16", "train.valid_every=8",
                         "train.resume=true"))
    assert (tmp_path / "b" / "train_log.jsonl").read_text() == log
    assert again["last"] == resumed["last"] and again["steps"] == 16


def test_a_vocabulary_the_text_cannot_fill_is_said(text_files, tmp_path, caplog):
    """Too small: one line naming the setting and the smallest size, and no empty model directory left. Too large
    for the text: trained with what the text gives, said in the log, and both sides recorded."""
    with pytest.raises(UserError, match=r"model.vocab.size=10: the training text has \d+ distinct characters.*"
                                        r"choose at least \d+"):
        train(config(text_files, tmp_path / "small", "model.vocab.size=10"))
    assert not (tmp_path / "small").exists()
    with caplog.at_level(logging.WARNING, logger="adaptsim"):
        summary = train(config(text_files, tmp_path / "large", "train.max_steps=1", "model.vocab.size=2000",
                               "model.vocab.shared=false"))
    sizes = summary["vocab_size"]
    assert set(sizes) == {"source", "target"} and max(sizes.values()) < 2000 and sizes["source"] != sizes["target"]
    assert summary["allocator"] == "system" and summary["peak_rss_mb"] > 100  # in-process: not re-executed
    assert f"model.vocab.size=2000: the training text gives only {min(sizes.values())} pieces" in caplog.text


def test_identical_trainings_give_one_fingerprint(text_files, tmp_path):
    """Two trainings of the same settings on the same data, into other directories, write the same model files:
    the model's fingerprint (what records and resumes compare) is the same, for the model and its last checkpoint
    (sentencepiece trained with a model_prefix wrote that temporary path into the .spm bytes)."""
    for out in ("a", "b"):
        train(config(text_files, tmp_path / out, "train.max_steps=2", "train.valid_every=2"))
    assert (tmp_path / "a" / "source.spm").read_bytes() == (tmp_path / "b" / "source.spm").read_bytes()
    for sub in (".", "last"):
        assert fingerprint(tmp_path / "a" / sub) == fingerprint(tmp_path / "b" / sub), sub


def test_patience_stops_after_validations_without_improvement(text_files, tmp_path):
    """lr 0 never improves: with patience 2 training stops at the third validation, not at max_steps."""
    summary = train(config(text_files, tmp_path / "m", "train.lr=0", "train.max_steps=50", "train.valid_every=2",
                           "train.patience=2"))
    log = [json.loads(line) for line in (tmp_path / "m" / "train_log.jsonl").read_text().splitlines()]
    assert summary["steps"] == 6 and [r["best"] for r in log] == [True, False, False]


def test_without_validation_data_the_best_checkpoint_has_the_lowest_training_loss(text_files, tmp_path):
    """No validation pairs: the checkpoint is chosen by the training loss since the last one, and lower is better
    (it once kept the worst: the score's sign was inverted)."""
    out = tmp_path / "m"
    summary = train(config(text_files, out, "train.max_steps=30", "train.valid_every=10", "train.valid_source=null",
                           "train.valid_target=null"))
    log = [json.loads(line) for line in (out / "train_log.jsonl").read_text().splitlines()]
    lowest = min(log, key=lambda r: r["train_nll"])
    assert log[-1]["train_nll"] < log[0]["train_nll"]  # the loss fell
    assert summary["best_step"] == lowest["step"] and summary["best_metric"] == "-train_nll"
    assert summary["best_score"] == pytest.approx(-lowest["train_nll"])


@pytest.fixture
def minute_per_step(monkeypatch):
    """The trainer's clock, moved on one minute by every training step and standing still otherwise: the time
    limits are tested without waiting for them, and their steps are exact."""
    now = [1000.0]
    monkeypatch.setattr(trainer_module, "time", SimpleNamespace(perf_counter=lambda: now[0]))
    step = trainer_module.Trainer.step

    def timed_step(self, indices):
        now[0] += 60
        return step(self, indices)

    monkeypatch.setattr(trainer_module.Trainer, "step", timed_step)
    return now


def logged_steps(out) -> list[int]:
    return [json.loads(line)["step"] for line in (out / "train_log.jsonl").read_text().splitlines()]


def test_max_minutes_stops_training_on_the_clock(text_files, tmp_path, minute_per_step, caplog):
    """train.max_minutes bounds training alone (no step or epoch limit), stops with the usual last validation and
    checkpoints, and a resumed run counts the minutes of the run before it."""
    out = tmp_path / "m"
    with caplog.at_level(logging.INFO, logger="adaptsim.train"):
        summary = train(config(text_files, out, "train.max_steps=null", "train.max_minutes=5",
                               "train.valid_every=1000"))
    assert summary["steps"] == 5 and summary["train_seconds"] == 300 and logged_steps(out) == [5]
    assert (out / "model.safetensors").exists() and (out / "last" / "trainer_state.pt").exists()
    assert json.loads((out / "training.json").read_text())["steps"] == 5
    assert "time limit train.max_minutes=5 reached: stopped at step 5 after 300 s" in caplog.text

    resumed = train(config(text_files, out, "train.max_steps=null", "train.max_minutes=8", "train.valid_every=1000",
                           "train.resume=true"))
    assert resumed["steps"] == 8 and logged_steps(out) == [5, 8]  # 3 more minutes, not 8


@pytest.mark.parametrize("overrides, message", [
    (["train.max_steps=null"], "set train.max_steps, train.max_epochs or train.max_minutes"),
    (["train.max_minutes=0"], "train.max_minutes=0: must be null (no time limit) or a number > 0"),
    (["train.max_steps=null", "train.max_minutes=-2"], "train.max_minutes=-2: must be null (no time limit) or a "
                                                       "number > 0"),
    (["train.checkpoint_minutes=soon"], "train.checkpoint_minutes='soon': must be null (no timed checkpoints) or "
                                        "a number > 0"),
    (["train.max_steps=-1"], "train.max_steps=-1: must be null (no limit; 0 too) or an integer ≥ 0"),  # trains nothing
    (["train.max_epochs=1.5"], "train.max_epochs=1.5: must be null (no limit; 0 too) or an integer ≥ 0"),
    (["allocator=tcmalloc"], "allocator='tcmalloc': choose 'jemalloc' | 'system'"),
])
def test_training_bounds_are_checked(text_files, tmp_path, overrides, message):
    with pytest.raises(UserError, match="^" + re.escape(message)):
        train(config(text_files, tmp_path / "x", *overrides))
    assert not (tmp_path / "x").exists()


def test_checkpoint_minutes_checkpoints_on_a_timer(text_files, tmp_path, minute_per_step):
    """Every 2.5 minutes since the last checkpoint (a step takes a minute here), besides every valid_every steps
    and at the end: a run killed from outside keeps a recent model."""
    out = tmp_path / "m"
    summary = train(config(text_files, out, "train.max_steps=10", "train.valid_every=1000",
                           "train.checkpoint_minutes=2.5"))
    assert summary["steps"] == 10 and logged_steps(out) == [3, 6, 9, 10]
    assert torch.load(out / "last" / "trainer_state.pt", weights_only=True)["trainer"]["step"] == 10


def test_a_given_tokenizer_is_reused_with_its_exact_vocabulary(text_files, tmp_path, tiny_model_dir):
    """train.tokenizer: no sentencepiece is trained; the model is built for that vocabulary and every checkpoint
    carries the same tokenizer files (a model comparable to the one they came from)."""
    out = tmp_path / "m"
    summary = train(config(text_files, out, "train.max_steps=4", "train.valid_every=2",
                           f"train.tokenizer={tiny_model_dir}"))
    given = json.loads((tiny_model_dir / "vocab.json").read_text())
    assert summary["vocab_size"] == {"source": len(given), "target": len(given)}
    for path in (out, out / "last"):
        assert json.loads((path / "vocab.json").read_text()) == given
        for name in ("source.spm", "target.spm"):
            assert (path / name).read_bytes() == (tiny_model_dir / name).read_bytes()
        assert MarianMTModel.from_pretrained(str(path)).config.vocab_size == len(given)
        assert MarianTokenizer.from_pretrained(str(path)).get_vocab() == \
            MarianTokenizer.from_pretrained(str(tiny_model_dir)).get_vocab()

    empty, broken = tmp_path / "empty", tmp_path / "broken"
    empty.mkdir()
    shutil.copytree(tiny_model_dir, broken)
    (broken / "source.spm").write_bytes(b"not sentencepiece")
    for where, message in ((tmp_path / "none", "no such directory"), (empty, "no source.spm, target.spm, vocab.json"),
                           (broken, "not a Marian tokenizer adaptsim can load")):
        with pytest.raises(UserError, match="^" + re.escape(f"train.tokenizer={where}: {message}")):
            train(config(text_files, out, "train.max_steps=1", "train.overwrite=true", f"train.tokenizer={where}"))
    assert (out / "model.safetensors").exists()  # refused before overwrite=true removed anything


def test_a_training_goes_on_from_another_models_weights_with_its_schedule_rewarmed(text_files, tmp_path,
                                                                                   tiny_model_dir):
    """train.init_from (base-ende-e1.4 from base-ende): the model's weights and tokenizer, a fresh Adam, the schedule
    counted from train.start_step and reached after train.rewarmup linear steps."""
    from adaptsim.basemodel.trainer import inverse_sqrt

    factor = inverse_sqrt(1000, start=2440, rewarmup=150)
    assert factor(0) == pytest.approx(math.sqrt(1000 / 2441) / 150)
    assert factor(149) == pytest.approx(math.sqrt(1000 / 2590))
    assert factor(1419) == pytest.approx(math.sqrt(1000 / 3860))
    assert inverse_sqrt(5)(3) == inverse_sqrt(5, 0, 0)(3) == 4 / 5  # without init_from: the schedule as before
    out = tmp_path / "m"
    train(config(text_files, out, "train.max_steps=2", "train.valid_every=2", "train.lr=1e-4",
                 f"train.init_from={tiny_model_dir}", "train.start_step=100", "train.rewarmup=10"))
    before, after = (MarianMTModel.from_pretrained(str(p)).state_dict() for p in (tiny_model_dir, out / "last"))
    assert before.keys() == after.keys() and all(before[k].shape == after[k].shape for k in before)
    moved = max((after[k] - before[k]).abs().max().item() for k in before)
    assert 0 < moved < 1e-2  # two small steps from its weights, not a new model
    assert (out / "source.spm").read_bytes() == (tiny_model_dir / "source.spm").read_bytes()
    with pytest.raises(UserError, match=r"^train.init_from=.*nowhere: cannot load a Marian model there"):
        train(config(text_files, tmp_path / "n", "train.max_steps=1", f"train.init_from={tmp_path / 'nowhere'}"))


def test_cuda_random_states_are_saved_and_restored(tmp_path, monkeypatch):
    """On CUDA the trainer state also holds the GPUs' generators (dropout draws from them), as plain tensors the
    weights-only loader accepts; a state without them (CPU, older adaptsim) restores as before."""
    from adaptsim.basemodel.trainer import load_state, rng_states, set_rng_states

    cpu = rng_states(torch.device("cpu"))
    assert set(cpu) == {"python_rng", "torch_rng"}
    gpus = [torch.arange(16, dtype=torch.uint8), torch.ones(16, dtype=torch.uint8)]
    restored = []
    monkeypatch.setattr(torch.cuda, "get_rng_state_all", lambda: gpus)
    monkeypatch.setattr(torch.cuda, "set_rng_state", lambda state, device: restored.append((device, state.tolist())))
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    torch.save(rng_states(torch.device("cuda")), tmp_path / "state.pt")
    saved = load_state(tmp_path / "state.pt")
    assert [s.tolist() for s in saved["cuda_rng"]] == [s.tolist() for s in gpus]
    set_rng_states(saved, torch.device("cuda"))
    assert restored == [(0, gpus[0].tolist())]  # the GPUs this machine has
    restored.clear()
    set_rng_states(cpu, torch.device("cuda:0"))
    assert restored == []


def test_resume_continues_exactly_on_cuda(text_files, tmp_path, device):
    """Dropout on a GPU draws from CUDA's generator: without its state the resumed run drops other units."""
    if not device.startswith("cuda"):
        pytest.skip("needs --device cuda")
    cuda = (f"device={device}", "train.valid_every=8")
    straight = train(config(text_files, tmp_path / "a", "train.max_steps=16", *cuda))
    train(config(text_files, tmp_path / "b", "train.max_steps=8", *cuda))
    resumed = train(config(text_files, tmp_path / "b", "train.max_steps=16", "train.resume=true", *cuda))
    assert "cuda_rng" in torch.load(tmp_path / "b" / "last" / "trainer_state.pt", weights_only=True)
    a = MarianMTModel.from_pretrained(str(tmp_path / "a" / "last")).state_dict()
    b = MarianMTModel.from_pretrained(str(tmp_path / "b" / "last")).state_dict()
    assert all(torch.allclose(a[k], b[k], atol=1e-4) for k in a)
    assert straight["last"]["train_nll"] == pytest.approx(resumed["last"]["train_nll"], rel=1e-3)


def test_encode_matches_tokenizer(tiny_model_dir, tiny_corpus):
    tok = MarianTokenizer.from_pretrained(str(tiny_model_dir))
    src, tgt = [s for s, _ in tiny_corpus[:5]] + ["Ünknöwn wörds ©"], [t for _, t in tiny_corpus[:5]] + ["Straße"]
    assert encode(tok, src) == tok(src).input_ids
    assert encode(tok, tgt, target=True) == tok(text_target=tgt).input_ids


def test_batches_respect_token_budget():
    import random

    lens = [random.Random(i).randint(1, 30) for i in range(500)]
    batches = make_batches(lens, lens[::-1], 200, 100, random.Random(1))
    assert sorted(i for b in batches for i in b) == list(range(500))
    assert all(max(max(lens[i], lens[::-1][i]) for i in b) * len(b) <= 200 for b in batches)
    f = inverse_sqrt(100)
    assert f(0) == pytest.approx(0.01) and f(99) == pytest.approx(1.0) and f(399) == pytest.approx(0.5)


@pytest.mark.slow  # processes of their own (the quick subset: -m "not slow")
def test_cli_train(text_files, tmp_path):
    """Run as `nohup … > log 2>&1` runs it: progress comes as plain lines a person can read and tail (no carriage
    returns of a redrawn bar), with the rate and the time remaining; glibc's allocator trains the same weights
    as jemalloc (the default where installed: adaptsim/allocator.py)."""
    def train_cli(name: str, *extra: str) -> str:
        cmd = [sys.executable, "-m", "adaptsim", "train", *TINY, f"train.source={text_files}/train.en",
               f"train.target={text_files}/train.de", f"train.out={tmp_path / name}", "train.max_steps=3",
               "train.batch_tokens=300", "train.log_every=1", "progress_every=1e-6",
               f"hydra.run.dir={tmp_path}/hydra-{name}", *extra]
        done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=PROJECT_ROOT,
                              env=dict(os.environ, OMP_NUM_THREADS="1"), timeout=120)
        assert done.returncode == 0, done.stdout[-2000:]
        return done.stdout

    log = train_cli("cli")
    out = tmp_path / "cli"
    assert (out / "config.json").exists() and (out / "last" / "trainer_state.pt").exists()
    assert "\r" not in log
    lines = [line for line in log.splitlines() if "train: " in line and " steps (" in line]
    assert any("train: 1/3 steps (33%)" in line and "remaining ~" in line for line in lines), log[-2000:]
    assert "train: 3/3 steps (100%)" in lines[-1] and "tok/s" in lines[-1] and "steps/s" in lines[-1]
    assert sum("3/3" in line for line in lines) == 1
    summary = json.loads((out / "training.json").read_text())
    assert summary["tokens_per_s"] > 0 and summary["target_tokens"] > 0

    assert "allocator: system (allocator=system)" in train_cli("system", "allocator=system")
    assert (tmp_path / "system" / "last" / "model.safetensors").read_bytes() == \
        (out / "last" / "model.safetensors").read_bytes()


def test_model_without_arch_is_a_user_error(text_files, tmp_path):
    cfg = config(text_files, tmp_path / "x")
    cfg.model = {"name": "small-ende-probe", "path": "somewhere", "source_lang": "en", "target_lang": "de"}
    with pytest.raises(UserError, match="no `arch` block"):
        train(cfg)


def test_a_resume_with_other_settings_or_files_is_refused(text_files, tmp_path):
    """train.resume=true continues only the training the checkpoint records: another learning rate, batch size,
    seed or dropout, or a training text rewritten under its name, is refused in one line before anything is
    written; the stopping settings may change (that is what resuming is for)."""
    out = tmp_path / "m"
    train(config(text_files, out, "train.max_steps=4", "train.valid_every=2"))
    before = {p: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    for change, named in ((["train.lr=0.01"], "train.lr: 0.003 → 0.01"),
                          (["train.batch_tokens=200"], "train.batch_tokens"),
                          (["seed=2"], "seed: 1 → 2"), (["model.arch.dropout=0.3"], "model.arch.dropout")):
        with pytest.raises(UserError, match="with other settings than its own") as refused:
            train(config(text_files, out, "train.max_steps=6", "train.valid_every=2", "train.resume=true", *change))
        assert named in str(refused.value)
    original = (text_files / "train.de").read_bytes()
    try:
        (text_files / "train.de").write_bytes(original.replace(b"Hund", b"Katze"))
        with pytest.raises(UserError, match=r"a file it read has changed \(train.target: "):
            train(config(text_files, out, "train.max_steps=6", "train.valid_every=2", "train.resume=true"))
    finally:
        (text_files / "train.de").write_bytes(original)
    assert {p: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()} == before
    state = out / "last" / "trainer_state.pt"  # an older adaptsim's checkpoint: nothing to check it by
    saved = state.read_bytes()
    torch.save({k: v for k, v in torch.load(state, weights_only=True).items() if k != "identity"}, state)
    without = {p: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    with pytest.raises(UserError, match=r"last: cannot resume: its records name no settings to check .*"
                                        r"train.overwrite=true starts again"):
        train(config(text_files, out, "train.max_steps=6", "train.valid_every=2", "train.resume=true"))
    assert {p: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()} == without
    state.write_bytes(saved)
    assert train(config(text_files, out, "train.max_steps=6", "train.valid_every=2", "train.resume=true"))["steps"] == 6
