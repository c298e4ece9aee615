"""Every file a command reads is known by content (adaptsim/fingerprints.py): each file-valued setting of every config
group, of train, select-fixed and serve is fingerprinted, and a changed file changes its fingerprint."""

from __future__ import annotations

import re

import pytest
from omegaconf import OmegaConf

from adaptsim import CONFIG_DIR
from adaptsim.fingerprints import WRITTEN, fingerprints
from adaptsim.launch.hydra_app import compose
from adaptsim.rules import flatten

# Setting names that may hold a file (the last part of the key); a new setting named so must be listed below.
FILE_LIKE = re.compile(r"(path|file|text|source|target|reference|stopwords|vocab|tokenizer|list|external|heldout|"
                       r"(?<!drop)out|dir|tm|probe)$")
# Settings that name a file, and how: "file", or "prefix" (PATH.<source_lang>, PATH.<target_lang>).
FILES = {"dataset.path": "file", "dataset.source": "file", "dataset.reference": "file", "method.external.path": "file",
         "metrics.novel_vocab": "file", "metrics.probe.path": "prefix", "metrics.stopwords": "file",
         "metrics.truecase_text": "file", "train.source": "file", "train.target": "file", "train.valid_source": "file",
         "train.valid_target": "file", "method.list": "file", "method.glossary_stopwords": "file"}
# Settings named like files that are not files a command reads, and why.
NOT_FILES = {
    "dataset.columns.source": "a column's name", "dataset.columns.reference": "a column's name",
    "model.path": "a model directory: its own fingerprint (model_fingerprint), by the files it is loaded from",
    "model.name": "a name (fixed's list, which it may name, is method.list)", "name": "a name (select-fixed's list)",
    "train.tokenizer": "a tokenizer directory: its files are the trained model's, fingerprinted with it",
    **{key: "written, not read (inputs.WRITTEN)" for key in WRITTEN},
}
COMMANDS = ("train", "select_fixed", "serve", "bench")


def configs():
    """(name, settings) of `run` with every option of every config group, and of the other commands."""
    for group in ("dataset", "method", "model", "metrics"):
        for path in sorted((CONFIG_DIR / group).glob("*.yaml")):
            if not path.stem.startswith("_"):
                yield f"run {group}={path.stem}", compose("run", [f"{group}={path.stem}"])
    for command in COMMANDS:
        yield command, compose(command, [])


def test_every_file_setting_is_listed():
    """A setting named like a file that is neither listed as one nor explained fails here, so a file setting
    added later is looked at (and tested below) before it ships."""
    unknown = set()
    for name, cfg in configs():
        settings = OmegaConf.to_container(cfg, resolve=False)
        settings.pop("hydra", None)
        unknown |= {k for k in flatten(settings, lists=True) if FILE_LIKE.search(k.split(".")[-1])
                    and k not in FILES and k not in NOT_FILES}
    assert not unknown, f"settings named like files, neither in FILES nor NOT_FILES: {sorted(unknown)}"


def settings_with(key: str, value: str) -> dict:
    """The resolved settings of a run (of the config group option that has `key`) or a training with `key` set."""
    group = {"method.list": "method=fixed", "method.external.path": "method=tm", "dataset.source": "dataset=plain",
             "dataset.reference": "dataset=plain", "method.glossary_stopwords": "method=icl"}.get(key)
    overrides = [group] if group else []
    if key == "method.external.path":
        overrides.append("method.external.format=tsv")
    if key.startswith("train."):
        cfg = compose("train", [f"{key}={value}"])
    else:
        cfg = compose("run", [*overrides, f"{key}={value}"])
    settings = OmegaConf.to_container(cfg, resolve=False)
    settings.pop("hydra", None)
    settings["model"]["source_lang"], settings["model"]["target_lang"] = "en", "de"
    return OmegaConf.to_container(OmegaConf.create(settings), resolve=True)


@pytest.mark.parametrize("key", sorted(FILES))
def test_a_changed_file_changes_its_fingerprint(tmp_path, key):
    """Each file setting, given a file (or a prefix of two), is fingerprinted by content: rewriting the file with
    other bytes under the same name changes the fingerprint; another name with the same bytes does not."""
    first = tmp_path / "a" / "input.txt"
    first.parent.mkdir()
    written = [first.with_name(f"input.txt.{lang}") for lang in ("en", "de")] if FILES[key] == "prefix" else [first]
    for path in written:
        path.write_text("model.encoder.layers.0.fc1.weight\n" if key == "method.list" else "Ein Satz.\n")
    before = fingerprints(settings_with(key, str(first)))
    assert {k for k in before if k == key or k.startswith(key + ".")}, before
    copy = tmp_path / "b" / "input.txt"
    copy.parent.mkdir()
    for path in written:
        (copy.parent / path.name).write_bytes(path.read_bytes())
    assert fingerprints(settings_with(key, str(copy))) == before
    written[-1].write_text("Ein anderer Satz.\n")
    assert fingerprints(settings_with(key, str(first))) != before
