"""Build the general-domain text (data/general: `train.{en,de}`, `dev.{en,de}`) from Helsinki-NLP/OPUS-MT-testsets.

    python scripts/data/general.py UPSTREAM OUT_DIR [--commit ac0f19c0be3c…] [--skip-links]

UPSTREAM: a clone of Helsinki-NLP/OPUS-MT-testsets (GitHub), its work tree or its git directory (bare is fine):
everything is read with git at the commit (default ac0f19c0be3cb4e0d9450fcb2d7a9847c4bdd180, 2023-06-13, the one
the shipped files reproduce byte for byte; docs/data.md gives their md5s; every commit from 41494756f, 2023-06-01,
gives the same files, older ones still have FLORES links in the folders), so the work tree's state does not matter.

- dev: `testsets/en-de/newstest2018.{en,de}` as stored, line for line (2,998 pairs).
- train: every test set of the folders `testsets/en-de`, `eng-deu`, `deu-eng`, `de-en`, in that order, each
  folder's sets by file name (the English file `NAME.en`/`NAME.eng` with its `NAME.de`/`NAME.deu`), except
  `multi30k_task2_test_2016` (independent German captions, not translations), `newstest2017` and `newstest2018`
  (held out; 2018 is dev). Each line stripped with Python's `str.strip()` (the spaces around it, and the trailing
  U+0085 of some newstest2009/newssyscomb2009 lines), lines split on `\\n` only; a pair (English, German) is kept
  where it first appears, later copies dropped (by pair: the same English with another German stays). The 3-letter
  folders repeat the 2-letter ones; what they add is the Tatoeba test releases (v2020-07-28, v2021-03-30,
  v2021-08-07, in `deu-eng`), the de→en newstest2019/2020/B2020 and four newstest2009 lines whose English differs;
  `de-en` adds nothing at this commit. FLORES is not in these folders at this commit (only under `datasets/`), so
  it is not in the shipped train, whatever older notes say.
- symbolic links (`eng-deu/tatoeba-test-*` point to `../deu-eng/…`) are read as git stores them: their text is the
  target's path, so the shipped train holds three such pairs ("../deu-eng/tatoeba-test-v2020-07-28.eng" →
  "….deu"), lines 33,091–33,093. `--skip-links` leaves links out (54,215 train pairs instead of 54,218).

Writes OUT_DIR/{train,dev}.{en,de} (UTF-8, one segment a line); prints the pairs and each file's md5.
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
from pathlib import Path

COMMIT = "ac0f19c0be3cb4e0d9450fcb2d7a9847c4bdd180"
FOLDERS = {"en-de": ("en", "de"), "eng-deu": ("eng", "deu"), "deu-eng": ("eng", "deu"), "de-en": ("en", "de")}
HELD_OUT = frozenset({"multi30k_task2_test_2016", "newstest2017", "newstest2018"})
DEV = ("testsets/en-de/newstest2018.en", "testsets/en-de/newstest2018.de")
LINK = "120000"  # git's mode for a symbolic link


def git(upstream: Path, *args: str) -> bytes:
    """The output of a git command run in `upstream`; its stderr as a ValueError when it fails."""
    done = subprocess.run(["git", "-C", str(upstream), *args], capture_output=True)
    if done.returncode:
        raise ValueError(done.stderr.decode(errors="replace").strip() or f"git {' '.join(args)} failed")
    return done.stdout


def entries(upstream: Path, commit: str, folder: str) -> dict[str, tuple[str, str]]:
    """{file name: (mode, blob id)} of the files directly in `folder` at `commit` (empty if it has none)."""
    out = git(upstream, "ls-tree", "-z", commit, "--", folder + "/").decode()
    found = {}
    for line in filter(None, out.split("\0")):
        meta, path = line.split("\t", 1)
        mode, kind, blob = meta.split()
        if kind == "blob":
            found[path.rsplit("/", 1)[-1]] = (mode, blob)
    return found


def lines(upstream: Path, blob: str) -> list[str]:
    """A stored file's lines, split on \\n only (U+0085 and the like stay inside a line), the last newline dropped."""
    text = git(upstream, "cat-file", "blob", blob).decode("utf-8")
    return text.removesuffix("\n").split("\n") if text else []


def test_sets(upstream: Path, commit: str, folder: str, skip_links: bool) -> list[tuple[str, str, str]]:
    """(set name, English blob, German blob) of the folder's pooled sets, by name (module docstring)."""
    files = entries(upstream, commit, f"testsets/{folder}")
    english, german = FOLDERS[folder]
    sets = []
    for name in sorted(files):
        stem, _, ext = name.rpartition(".")
        if ext != english or stem in HELD_OUT:
            continue
        partner = files.get(f"{stem}.{german}")
        if partner is None:
            raise ValueError(f"testsets/{folder}/{name}: no {stem}.{german} beside it")
        if skip_links and LINK in (files[name][0], partner[0]):
            continue
        sets.append((f"{folder}/{stem}", files[name][1], partner[1]))
    return sets


def aligned(upstream: Path, name: str, english_blob: str, german_blob: str) -> list[tuple[str, str]]:
    """The set's (English, German) pairs, each side stripped; sides of different lengths are an error."""
    english, german = lines(upstream, english_blob), lines(upstream, german_blob)
    if len(english) != len(german):
        raise ValueError(f"{name}: {len(english)} English lines, {len(german)} German")
    return [(e.strip(), g.strip()) for e, g in zip(english, german)]


def pooled(upstream: Path, commit: str, skip_links: bool = False) -> list[tuple[str, str]]:
    """The train pairs: every pooled set in folder and name order, each pair where it first appears."""
    seen, pairs = set(), []
    for folder in FOLDERS:
        for name, english, german in test_sets(upstream, commit, folder, skip_links):
            for pair in aligned(upstream, name, english, german):
                if pair not in seen:
                    seen.add(pair)
                    pairs.append(pair)
    return pairs


def dev(upstream: Path, commit: str) -> list[tuple[str, str]]:
    """newstest2018 en→de line for line, as stored (no stripping, no de-duplication: it is a test stream)."""
    blobs = []
    for path in DEV:
        folder, name = path.rsplit("/", 1)
        found = entries(upstream, commit, folder).get(name)
        if found is None:
            raise ValueError(f"{commit}: no {path}")
        blobs.append(found[1])
    english, german = (lines(upstream, blob) for blob in blobs)
    if len(english) != len(german):
        raise ValueError(f"{DEV[0]}: {len(english)} English lines, {len(german)} German")
    return list(zip(english, german))


def write(out_dir: Path, split: str, pairs: list[tuple[str, str]]) -> list[str]:
    """Write `split`.en and `split`.de (one segment a line); a line per file: its path and md5."""
    said = []
    for side, language in enumerate(("en", "de")):
        data = "".join(pair[side] + "\n" for pair in pairs).encode("utf-8")
        path = out_dir / f"{split}.{language}"
        path.write_bytes(data)
        said.append(f"{path}: md5 {hashlib.md5(data).hexdigest()}")
    return said


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="general.py", description=__doc__.split("\n\n")[0])
    p.add_argument("upstream", type=Path, help="a clone of Helsinki-NLP/OPUS-MT-testsets (work tree or git directory)")
    p.add_argument("out_dir", type=Path, help="the folder to write train.{en,de} and dev.{en,de} in")
    p.add_argument("--commit", default=COMMIT, help=f"the upstream commit to read (default {COMMIT[:12]}, the "
                                                    "shipped files')")
    p.add_argument("--skip-links", action="store_true",
                   help="leave symbolic links out instead of reading their target path as text (not the shipped "
                        "files: 3 fewer train pairs)")
    args = p.parse_args(argv)
    try:
        train = pooled(args.upstream, args.commit, args.skip_links)
        held = dev(args.upstream, args.commit)
    except (OSError, ValueError, UnicodeDecodeError) as e:
        print(f"general.py: {e}", file=sys.stderr)
        return 1
    args.out_dir.mkdir(parents=True, exist_ok=True)
    said = write(args.out_dir, "train", train) + write(args.out_dir, "dev", held)
    print(f"{args.out_dir}: {len(train)} train pairs, {len(held)} dev pairs (commit {args.commit})")
    print("\n".join(said))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
