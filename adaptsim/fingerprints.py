"""The files a command reads, known by content: `fingerprints(cfg)` maps every setting that names a file to a hash of
the file's bytes, so that a record says what it was computed from and a resume refuses when a file has changed
under its name (adaptsim/launch/resume.py; `adaptsim train` and `select-fixed` check theirs the same way).

One rule finds them, so a setting added later is covered without a word here: a setting whose value is a path to
a file is that file (a `name` is a name, even where it names a file: fixed's list, below); one whose value is a
prefix of files named for the model's languages (`PATH.en`, `PATH.de`: the forgetting probe, plain-format data) is
those files; and a setting that names a file by a name the code resolves (`method.list`, fixed's tensor list, read
from configs/fixed_lists/<list>.yaml) is resolved as the code resolves it. Directories are not hashed by
`fingerprints`: a model directory is known by `model_fingerprint` (below), by the files it is loaded from; a data
directory by the documents read from it (summary.json's `data_read_fingerprint`).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from adaptsim.rules import flatten

# Settings that name what a command writes, not what it reads (select-fixed's list, train's and serve's directories).
WRITTEN = ("output", "train.out", "serve.dir")
_HASHES: dict[tuple, str] = {}  # by (resolved path, size, mtime): a file read again is not hashed again


def file_fingerprint(path: Path) -> str:
    """The first 16 hex digits of a sha256 over the file's bytes."""
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    if key not in _HASHES:
        h = hashlib.sha256()
        _read_into(h, path)
        _HASHES[key] = h.hexdigest()[:16]
    return _HASHES[key]


def _read_into(h, path: Path) -> None:
    with open(path, "rb") as f:
        while chunk := f.read(1 << 22):
            h.update(chunk)


def files_read(settings: dict) -> dict[str, Path]:
    """{setting (a prefix's file: setting.<lang>): file} for the resolved `settings` (a config as a plain dict)."""
    model = settings.get("model") or {}
    langs = [lang for lang in (model.get("source_lang"), model.get("target_lang")) if lang]
    out: dict[str, Path] = {}
    for key, value in flatten(settings, lists=True).items():
        if (key.startswith("hydra.") or key in WRITTEN or key.split(".")[-1] == "name"
                or not isinstance(value, str) or not value.strip() or "\n" in value):
            continue
        path = Path(value).expanduser()
        try:
            if path.is_file():
                out[key] = path
            elif not path.is_dir():
                out.update({f"{key}.{lang}": Path(f"{path}.{lang}") for lang in langs
                            if Path(f"{path}.{lang}").is_file()})
        except OSError:  # a name too long for a path, or not one at all
            continue
    method = settings.get("method") or {}
    if str(method.get("_target_", "")).endswith(".Fixed") and not method.get("params") and method.get("list"):
        from adaptsim.fixed_lists import list_path

        listed = list_path(str(method["list"]))
        if listed.is_file():
            out["method.list"] = listed
    return out


def fingerprints(settings: dict) -> dict[str, str]:
    """{setting: content fingerprint} of every file the settings name (`files_read`)."""
    return {key: file_fingerprint(path) for key, path in sorted(files_read(settings).items())}


def changed(recorded: dict[str, str], now: dict[str, str]) -> list[str]:
    """`setting: recorded → now` for every file the record read whose content differs now, or that is gone; `now`:
    the fingerprints the same settings give today (`fingerprints`). (A file that appeared since at a path a setting
    names was not read by the recorded job: a setting's own value is compared with the settings.)"""
    return [f"{k}: {v} → {now.get(k, '(none)')}" for k, v in sorted(recorded.items()) if now.get(k) != v]


# Files of a model directory that record how it was made (adaptsim train), not what it is: no part of its fingerprint
# (trainer_state.pt: a checkpoint's optimizer state, clock and random states, for train.resume).
NOT_THE_MODEL = ("training.json", "train_log.jsonl", "trainer_state.pt")
_MODELS: dict[tuple, str] = {}  # by (resolved directory, and each file's name, size and mtime)


def model_fingerprint(path) -> str | None:
    """What identifies a model whatever path reaches it: the first 16 hex digits of a sha256 over the names and bytes
    of the files its directory is loaded from (configuration, weights, tokenizer: every file directly in it, hidden
    files, *.md and `NOT_THE_MODEL` left out), so a copy or a symlink is the same model and another model at the same
    relative path is not. A hub name is read from the local Hugging Face cache; None where there are no files to read
    (reports then fall back to the path). Computed once per process for a directory whose files keep their sizes and
    modification times (hashing reads the weights: about a second per GB)."""
    local = Path(str(path)).expanduser()
    if not local.is_dir():
        try:
            from huggingface_hub import snapshot_download

            local = Path(snapshot_download(str(path), local_files_only=True))
        except Exception:  # noqa: BLE001 (not downloaded, or not a hub name: huggingface_hub raises several types)
            return None
    files = sorted(p for p in local.iterdir() if p.is_file() and not p.name.startswith(".")
                   and p.suffix != ".md" and p.name not in NOT_THE_MODEL)
    key = (str(local.resolve()), *((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in files))
    if key not in _MODELS:
        h = hashlib.sha256()
        for p in files:
            h.update(p.name.encode() + b"\0")
            _read_into(h, p)
            h.update(b"\0")
        _MODELS[key] = h.hexdigest()[:16]
    return _MODELS[key]
