"""Shared test fixtures: a tiny English→German corpus and tiny Marian models trained on it in about a second.

- `tiny_corpus`: list of (source, reference) pairs, 48 short sentences ("The man sees the dog." →
  "Der Mann sieht den Hund.").
- `tiny_model_dir`: Path to a saved MarianMTModel + MarianTokenizer (one shared unigram sentencepiece
  vocabulary of about 70 pieces, <pad>=0 <unk>=1 </s>=2,
  shared source/target embeddings tied to the output projection, like OPUS-MT), d_model 32, 2+2 layers,
  2 heads, FFN 64, trained for 40 full-batch Adam steps on `tiny_corpus`, so it emits `</s>` and
  translates most corpus sentences exactly (and some not: there is something left to adapt).
- `tiny_model_dir_untied`: the same but with separate source embeddings, target embeddings and output
  projection (`share_encoder_decoder_embeddings=False`, `tie_word_embeddings=False`, like the paper).
- `tiny_tsv`: a TSV file (doc_id, seg_id, source, reference) with 2 documents × 3 segments of `tiny_corpus`.
- `device`: the torch device the device tests run on, from the `--device` option (default `cpu`; `cuda`,
  `cuda:N`): `run_adaptsim` gives it to every run (`device=…`), and the tests load models and make tensors on it.

The model directories are session-scoped and shared: copy one before changing files in it.

On a GPU (a GPU machine may be lent by chance, for minutes; scripts/device/gpu.sh does this there): `python -m pytest
--device cuda tests/test_lockstep.py tests/test_decode.py tests/test_resume.py tests/test_methods.py
tests/test_update.py tests/test_train.py`. Asking
for a cuda device where CUDA is not available fails the session at once with one line (a usage error), rather than
skipping; the device is named in the header and, when not cpu, in the summary.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
from pathlib import Path

import pytest
import torch

torch.set_num_threads(1)

_DEVICE = re.compile(r"cpu|cuda(:\d+)?")


def pytest_addoption(parser):
    parser.addoption("--device", default="cpu", metavar="cpu|cuda|cuda:N",
                     help="torch device for the tests that take one (the `device` fixture; runs get device=…). "
                          "Default: cpu")


def check_device_option(device: str) -> None:
    """Raise pytest.UsageError (one line) for a --device that is malformed or that this machine cannot give."""
    if not _DEVICE.fullmatch(device):
        raise pytest.UsageError(f"--device {device}: choose cpu | cuda | cuda:N")
    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            build = f"CUDA {torch.version.cuda}" if torch.version.cuda else "a CPU-only build"
            raise pytest.UsageError(f"--device {device}: CUDA is not available here (torch {torch.__version__}, "
                                    f"{build}); run without --device (cpu) or on a GPU machine")
        index = int(device.split(":")[1]) if ":" in device else 0
        if index >= torch.cuda.device_count():
            raise pytest.UsageError(f"--device {device}: this machine has {torch.cuda.device_count()} CUDA "
                                    f"device(s)")


def pytest_configure(config):
    check_device_option(config.getoption("--device"))  # before collecting: no test runs on a device it lacks


def describe_device(device: str) -> str:
    from adaptsim.loop.learner import describe_device as named  # as a run's summary.json names it

    if device == "cpu":
        return f"device: cpu (torch {torch.__version__}, {torch.get_num_threads()} thread(s))"
    return f"device: {device} ({named(device)})"


# The longest modules, started first: pytest-xdist (pyproject.toml addopts: -n auto --dist loadscope) gives each
# worker whole modules in collection order, and a long module begun last would end the suite alone
FIRST = ("test_realistic_script.py", "test_device_script.py", "test_lockstep.py", "test_resume.py")


def pytest_collection_modifyitems(config, items):
    order = {name: i for i, name in enumerate(FIRST)}
    items.sort(key=lambda item: order.get(item.path.name, len(FIRST)))  # stable: the rest keep their order


def pytest_report_header(config):
    return describe_device(config.getoption("--device"))


def pytest_terminal_summary(terminalreporter, config):
    """A device other than cpu is named at the end too: the header is hidden by -q (addopts) and a tail is what
    a remote run sends back."""
    device = config.getoption("--device")
    if device != "cpu":
        terminalreporter.write_line(describe_device(device))


@pytest.fixture(scope="session")
def device(pytestconfig) -> str:
    """The torch device of this session (`--device`, default cpu)."""
    return pytestconfig.getoption("--device")


_SUBJECTS = [("The man", "Der Mann"), ("The woman", "Die Frau"), ("The child", "Das Kind"),
             ("The driver", "Der Fahrer"), ("My friend", "Mein Freund"), ("The teacher", "Die Lehrerin")]
_VERBS = [("sees", "sieht"), ("likes", "mag"), ("finds", "findet"), ("buys", "kauft")]
_OBJECTS = [("the dog", "den Hund"), ("the cat", "die Katze"), ("the house", "das Haus"),
            ("the table", "den Tisch"), ("a book", "ein Buch"), ("the key", "den Schlüssel")]

TINY_ARCH = dict(d_model=32, encoder_layers=2, decoder_layers=2, heads=2, ffn_dim=64, activation_function="swish",
                 max_position_embeddings=64, dropout=0.0)


def make_tiny_corpus() -> list[tuple[str, str]]:
    # 48 of the 144 combinations; every subject, verb and object occurs with several others
    return [(f"{s} {v} {o}.", f"{S} {V} {o_de}.")
            for i, (s, S) in enumerate(_SUBJECTS) for j, (v, V) in enumerate(_VERBS)
            for k, (o, o_de) in enumerate(_OBJECTS) if (i + j + k) % 3 == 0]


def _train_briefly(model, tokenizer, pairs, steps: int = 40, lr: float = 1e-2) -> None:
    src, tgt = [p[0] for p in pairs], [p[1] for p in pairs]
    batch = tokenizer(src, text_target=tgt, return_tensors="pt", padding=True)
    batch["labels"][batch["labels"] == tokenizer.pad_token_id] = -100
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    for _ in range(steps):
        loss = model(**batch).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()


def _build(out: Path, pairs, tied: bool, tok_dir: Path) -> Path:
    from transformers import MarianTokenizer

    from adaptsim.basemodel.scratch_model import build_model

    shutil.copytree(tok_dir, out)
    tokenizer = MarianTokenizer.from_pretrained(str(out))
    arch = dict(TINY_ARCH, share_encoder_decoder_embeddings=tied, tie_word_embeddings=tied)
    model = build_model(arch, tokenizer, seed=1)
    _train_briefly(model, tokenizer, pairs)
    model.generation_config.max_length = 32
    model.save_pretrained(str(out))
    return out


@pytest.fixture(scope="session")
def tiny_corpus() -> list[tuple[str, str]]:
    return make_tiny_corpus()


@pytest.fixture(scope="session")
def _tiny_tokenizer_dir(tmp_path_factory, tiny_corpus) -> Path:
    from adaptsim.basemodel.scratch_model import train_tokenizer

    out = tmp_path_factory.mktemp("tiny_tokenizer")
    train_tokenizer([s for s, _ in tiny_corpus], [t for _, t in tiny_corpus], out, vocab_size=150)
    return out


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory, tiny_corpus, _tiny_tokenizer_dir) -> Path:
    torch.manual_seed(1)
    return _build(tmp_path_factory.mktemp("tiny") / "model", tiny_corpus, True, _tiny_tokenizer_dir)


@pytest.fixture(scope="session")
def tiny_model_dir_untied(tmp_path_factory, tiny_corpus, _tiny_tokenizer_dir) -> Path:
    torch.manual_seed(1)
    return _build(tmp_path_factory.mktemp("tiny_untied") / "model", tiny_corpus, False, _tiny_tokenizer_dir)


@pytest.fixture(scope="session")
def causal_dirs(tmp_path_factory, tiny_corpus):
    """kind -> the directory of its tiny decoder-only model (tests/tiny_causal.py: gpt2, llama, qwen2, gemma), built on
    first use."""
    from tiny_causal import build

    built = {}

    def get(kind):
        if kind not in built:
            built[kind] = build(kind, tiny_corpus, tmp_path_factory.mktemp(kind) / "model")
        return built[kind]
    return get


def script_module(relative: str):
    """A script of the repository (`scripts/…`, not a package) imported as a module, for testing its functions."""
    from adaptsim import PROJECT_ROOT

    spec = importlib.util.spec_from_file_location(Path(relative).stem, PROJECT_ROOT / relative)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def curves_from_steps_are_the_stored_ones(run_dir: Path) -> None:
    """A run's curves.csv, column for column, is what its steps give summed (`Steps.curves`: a text-free export keeps
    no curves.csv)."""
    import math

    from adaptsim.report.runs import discover
    from adaptsim.report.significance import Steps

    (run,) = discover([run_dir]).runs
    stored, derived = run.curves(), Steps.of(run).curves()
    assert set(stored) == set(derived) and stored["doc_id"] == derived["doc_id"], (sorted(stored), sorted(derived))
    for key in set(stored) - {"doc_id"}:
        for a, b in zip(stored[key], derived[key], strict=True):
            assert (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, abs=1e-9), (run_dir, key, a, b)


def tsv_of(path: Path, rows) -> Path:
    """A TSV stream of (doc_id, seg_id, source, reference) rows."""
    path.write_text("doc_id\tseg_id\tsource\treference\n" + "".join(f"{d}\t{i}\t{s}\t{r}\n" for d, i, s, r in rows))
    return path


@pytest.fixture
def tiny_tsv(tmp_path, tiny_corpus) -> Path:
    rows = ["doc_id\tseg_id\tsource\treference"]
    for d, doc in enumerate(("doc1", "doc2")):
        for s in range(3):
            src, ref = tiny_corpus[(d * 3 + s) * 7 % len(tiny_corpus)]
            rows.append(f"{doc}\t{s + 1}\t{src}\t{ref}")
    path = tmp_path / "tiny.tsv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def common(device):
    """`common(model, data, *extra)`: the overrides of a short run of `model` on `data`, on the session's device."""
    def overrides(model, data, *extra):
        return [f"model.path={model}", "dataset=tsv", f"dataset.path={data}", "decode.beam_size=2",
                "decode.max_length=20", "progress=false", "threads=1", f"device={device}", *extra]
    return overrides


@pytest.fixture
def run_adaptsim(tmp_path, device):
    """`run_adaptsim(name, *overrides)`: `adaptsim run` in-process into tmp_path/name with a short beam search, on
    the session's `device`; asserts exit code 0 and returns (run directory, summary)."""
    import json

    from adaptsim.cli import main

    def run(name: str, *overrides: str):
        out = tmp_path / name
        with pytest.raises(SystemExit) as exit_:
            main(["run", f"hydra.run.dir={out}", "progress=false", "decode.beam_size=2", "decode.max_length=20",
                  f"device={device}", *overrides])
        assert exit_.value.code == 0
        return out, json.loads((out / "summary.json").read_text())
    return run



FIXED_TENSORS = ["model.decoder.layers.1.fc2.weight", "model.encoder.layers.0.fc1.weight"]


@pytest.fixture
def tiny_sweep(tmp_path, tiny_model_dir, tiny_tsv) -> list[str]:
    """Overrides for a sweep over every method on the tiny model and data: `fixed` reads its tensor list from the
    file that model.name names (a sweep over methods cannot give `method.params` to fixed alone)."""
    from omegaconf import OmegaConf

    from adaptsim.models import Seq2SeqModel

    chosen = tmp_path / "tiny.yaml"
    signature = Seq2SeqModel.load(str(tiny_model_dir)).signature()
    OmegaConf.save({"model": {"name": "tiny", "signature": signature}, "params": FIXED_TENSORS}, chosen)
    return [f"model.path={tiny_model_dir}", f"model.name={chosen}", "dataset=tsv", f"dataset.path={tiny_tsv}"]
