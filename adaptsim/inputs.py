"""The files a command reads, known by content: `fingerprints(cfg)` maps every setting that names a file to a hash of
the file's bytes, so that a record says what it was computed from and a resume refuses when a file has changed
under its name (adaptsim/resume.py; `adaptsim train` and `select-fixed` check theirs the same way).

One rule finds them, so a setting added later is covered without a word here: a setting whose value is a path to
a file is that file (a `name` is a name, even where it names a file: fixed's list, below); one whose value is a
prefix of files named for the model's languages (`PATH.en`, `PATH.de`: the forgetting probe, plain-format data) is
those files; and a setting that names a file by a name the code resolves (`method.list`, fixed's tensor list, read
from configs/fixed_lists/<list>.yaml) is resolved as the code resolves it. Directories are not hashed here: a
model directory has its own fingerprint (adaptsim/model.py), by the files it is loaded from.
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
        with open(path, "rb") as f:
            while chunk := f.read(1 << 22):
                h.update(chunk)
        _HASHES[key] = h.hexdigest()[:16]
    return _HASHES[key]


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
        from adaptsim.methods.fixed import list_path

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
