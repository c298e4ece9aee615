"""Build the "new general human translations" of the base model's training corpus (data/base-train, the part the
README says is repeated three times) from their public repositories, as a set of pairs.

    python scripts/data/base_train.py OUT_DIR --multi30k GIT --bcontrast GIT --mlqe-pe GIT --wmt21 GIT --wmt22 GIT \\
        --wmt23 GIT --wmt24 GIT --general DIR --ted TSV [--shipped DIR]

Each GIT is a git directory (bare is fine) of multi30k/dataset, Unbabel/BConTrasT, sheffieldnlp/mlqe-pe and
wmt-conference/wmt21-, wmt22-, wmt23-, wmt24-news-systems (GitHub), read with git at the commits in `COMMITS` (the
newest stored ones; the files read did not change after them); nothing is downloaded. --general: data/general
(`train.{en,de}`, built by scripts/data/general.py); --ted: data/ted/iwslt17.tst2016.en-de.tsv.

What this reproduces, and what not: the shipped data/base-train holds 68,969 distinct pairs exactly three times
(one of them a fourth time: it is also a Microsoft docs pair); this builder gives exactly that set of pairs (no pair
more, none less). It does not rebuild the shipped file: the Microsoft documentation part (303,345 pairs) could not
be rebuilt, so the seed-0 shuffle of the pooled 618,688 lines cannot be redone either (see docs/data.md).

- Multi30k: `data/task1/raw/{train,val}.{en,de}.gz` (29,000 + 1,014 captions), line for line.
- BConTrasT: `train.json`, `dev.json`, `test1_corpus-with_gold_references.json`, every utterance of every dialogue
  in file order; an agent's `source` is English and its `target` German, a customer's the other way round.
- MLQE-PE: `data/post-editing/{train,dev,test}/en-de-*.tar.gz`, `*.src` with the post-edit `*.pe`, both
  detokenised with sacremoses' `MosesDetokenizer` (en, de) on the space-split tokens.
- WMT21–24: the `txt/` English source or reference with the German reference or source of every en-de and de-en
  test set, every reference (21: en-de A, C, D, de-en A, B; 22: en-de A, B, de-en A, B; 23: en-de, de-en refA;
  24: en-de refA, refB), line for line.
- Each side stripped (`str.strip()`); a pair with a tab in either side is dropped (3 pairs); a pair is kept where it
  first appears (same English with another German stays: the several WMT references all stay).
- No length or ratio filter (the README's 3–120 words and 0.5–2 apply to the Microsoft part only: 1,251 kept pairs
  have under 3 English words).
- Dropped where the English, compared by `key` (lower case, letters and digits only), equals a data/general train
  English (71 pairs: "Sit down."/"Sit down!", "A man in a wetsuit surfing."/"A man in a wet suit surfing.") or a TED
  English ("Thank you.", "Thank you very much."); and where the German's key equals one that is both a data/general
  train German and a TED German (the 12 remaining "Vielen Dank" pairs). This last rule is fitted to those 12 pairs,
  not known: TED German alone would also drop 5 kept pairs ("Danke.", "Ja, genau."), general German alone 61.

Writes OUT_DIR/new-general.{en,de} (the pairs in the order above, one a line) and prints the pairs, each file's md5 and
the md5 of the sorted pairs (`set-md5`, order-free); with --shipped DIR (a folder with train.{en,de}.gz) it also
compares the set with the pairs that the shipped corpus holds three or more times, other than data/general's.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import subprocess
import sys
import tarfile
from collections import Counter
from pathlib import Path

COMMITS = {
    "multi30k": "a3d2e0d26b56f3846f66a952536ffed4e401d05a",
    "bcontrast": "96f33050c704eea1c10da6e8effcfb5495539e74",
    "mlqe_pe": "2a670a1140416cf80507b5a829659383c878feb8",
    "wmt21": "f41750dadbf2ba6ab01ca5380347d253298a3427",
    "wmt22": "20240a2e96a50e823ea8cdf37fd8af52547146e3",
    "wmt23": "99b5b9de2a535c2c5542fd4ec404682903299894",
    "wmt24": "bfa937ee53586aa173d68657b89b8642693f7b66",
}
BCONTRAST = ("train.json", "dev.json", "test1_corpus-with_gold_references.json")
MLQE_PE = (("train", "train"), ("dev", "dev"), ("test", "test20"))
# (repository, English file, German file) of every WMT test set and reference, in this order.
WMT = (
    ("wmt21", "txt/sources/newstest2021.en-de.src.en", "txt/references/newstest2021.en-de.ref.A.de"),
    ("wmt21", "txt/sources/newstest2021.en-de.src.en", "txt/references/newstest2021.en-de.ref.C.de"),
    ("wmt21", "txt/sources/newstest2021.en-de.src.en", "txt/references/newstest2021.en-de.ref.D.de"),
    ("wmt21", "txt/references/newstest2021.de-en.ref.A.en", "txt/sources/newstest2021.de-en.src.de"),
    ("wmt21", "txt/references/newstest2021.de-en.ref.B.en", "txt/sources/newstest2021.de-en.src.de"),
    ("wmt22", "txt/sources/generaltest2022.en-de.src.en", "txt/references/generaltest2022.en-de.ref.A.de"),
    ("wmt22", "txt/sources/generaltest2022.en-de.src.en", "txt/references/generaltest2022.en-de.ref.B.de"),
    ("wmt22", "txt/references/generaltest2022.de-en.ref.A.en", "txt/sources/generaltest2022.de-en.src.de"),
    ("wmt22", "txt/references/generaltest2022.de-en.ref.B.en", "txt/sources/generaltest2022.de-en.src.de"),
    ("wmt23", "txt/sources/generaltest2023.en-de.src.en", "txt/references/generaltest2023.en-de.ref.refA.de"),
    ("wmt23", "txt/references/generaltest2023.de-en.ref.refA.en", "txt/sources/generaltest2023.de-en.src.de"),
    ("wmt24", "txt/sources/en-de.txt", "txt/references/en-de.refA.txt"),
    ("wmt24", "txt/sources/en-de.txt", "txt/references/en-de.refB.txt"),
)

Pair = tuple[str, str]


def git_file(git_dir: Path, commit: str, path: str) -> bytes:
    """The bytes of `path` at `commit`; ValueError with git's first line when it is missing."""
    run = subprocess.run(["git", "-C", str(git_dir), "cat-file", "blob", f"{commit}:{path}"], capture_output=True)
    if run.returncode:
        said = run.stderr.decode(errors="replace").strip().splitlines() or [f"exit status {run.returncode}"]
        raise ValueError(f"{git_dir}: {commit[:12]}:{path}: {said[0]}")
    return run.stdout


def split_lines(text: str) -> list[str]:
    """Lines split on \\n only, the last newline dropped."""
    return text.removesuffix("\n").split("\n") if text else []


def aligned(name: str, english: list[str], german: list[str]) -> list[Pair]:
    if len(english) != len(german):
        raise ValueError(f"{name}: {len(english)} English lines, {len(german)} German")
    return list(zip(english, german))


def multi30k(git_dir: Path, commit: str) -> list[Pair]:
    pairs = []
    for split in ("train", "val"):
        english, german = (split_lines(gzip.decompress(git_file(git_dir, commit, f"data/task1/raw/{split}.{lang}.gz"))
                                       .decode("utf-8")) for lang in ("en", "de"))
        pairs += aligned(f"multi30k {split}", english, german)
    return pairs


def bcontrast(git_dir: Path, commit: str) -> list[Pair]:
    pairs = []
    for name in BCONTRAST:
        for dialogue in json.loads(git_file(git_dir, commit, name)).values():
            for turn in dialogue:
                source, target = turn["source"], turn["target"]
                pairs.append((source, target) if turn["speaker"] == "agent" else (target, source))
    return pairs


def mlqe_pe(git_dir: Path, commit: str) -> list[Pair]:
    from sacremoses import MosesDetokenizer

    english, german = MosesDetokenizer("en"), MosesDetokenizer("de")
    pairs = []
    for folder, stem in MLQE_PE:
        blob = git_file(git_dir, commit, f"data/post-editing/{folder}/en-de-{folder}.tar.gz")
        with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tar:
            def member(suffix: str) -> list[str]:
                found = [m for m in tar.getmembers() if m.isfile() and m.name.endswith(f"/{stem}.{suffix}")]
                if len(found) != 1:
                    raise ValueError(f"en-de-{folder}.tar.gz: {len(found)} files named {stem}.{suffix}")
                return split_lines(tar.extractfile(found[0]).read().decode("utf-8"))
            src, pe = member("src"), member("pe")
        pairs += [(english.detokenize(e.split()), german.detokenize(d.split()))
                  for e, d in aligned(f"mlqe-pe {folder}", src, pe)]
    return pairs


def wmt(git_dirs: dict[str, Path], commits: dict[str, str]) -> list[Pair]:
    pairs = []
    for repo, english, german in WMT:
        sides = [split_lines(git_file(git_dirs[repo], commits[repo], path).decode("utf-8"))
                 for path in (english, german)]
        pairs += aligned(f"{repo} {german}", *sides)
    return pairs


def key(text: str) -> str:
    """The comparison key of the exclusions: lower case, letters and digits only."""
    return "".join(ch for ch in text.lower() if ch.isalnum())


def read_general(folder: Path) -> list[Pair]:
    english, german = (split_lines((folder / f"train.{lang}").read_text(encoding="utf-8")) for lang in ("en", "de"))
    return aligned(str(folder / "train"), english, german)


def read_ted(tsv: Path) -> list[Pair]:
    """(source, reference) of every row of a `doc_id seg_id source reference` TSV with a header."""
    rows = split_lines(tsv.read_text(encoding="utf-8"))[1:]
    return [(fields[2], fields[3]) for fields in (row.split("\t") for row in rows)]


def select(candidates: list[Pair], general: list[Pair], ted: list[Pair]) -> list[Pair]:
    """The kept pairs, in candidate order (module docstring): stripped, tab-free, first copies, exclusions out."""
    english_out = {key(e) for e, _ in general} | {key(e) for e, _ in ted}
    german_out = {key(d) for _, d in general} & {key(d) for _, d in ted}
    seen, kept = set(), []
    for english, german in candidates:
        pair = (english.strip(), german.strip())
        if "\t" in pair[0] or "\t" in pair[1] or pair in seen:
            continue
        seen.add(pair)
        if key(pair[0]) in english_out or key(pair[1]) in german_out:
            continue
        kept.append(pair)
    return kept


def set_md5(pairs: list[Pair]) -> str:
    return hashlib.md5("".join(f"{e}\t{d}\n" for e, d in sorted(set(pairs))).encode("utf-8")).hexdigest()


def shipped_three_times(folder: Path, general: list[Pair]) -> set[Pair]:
    """The distinct pairs the shipped corpus holds three or more times, data/general's pairs left out."""
    english, german = (split_lines(gzip.decompress((folder / f"train.{lang}.gz").read_bytes()).decode("utf-8"))
                       for lang in ("en", "de"))
    counts = Counter(aligned(str(folder), english, german))
    return {pair for pair, n in counts.items() if n >= 3} - set(general)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="base_train.py", description=__doc__.split("\n\n")[0])
    p.add_argument("out_dir", type=Path, help="the folder to write new-general.{en,de} in")
    for name, repo in (("multi30k", "multi30k/dataset"), ("bcontrast", "Unbabel/BConTrasT"),
                       ("mlqe-pe", "sheffieldnlp/mlqe-pe"), *((f"wmt{y}", f"wmt-conference/wmt{y}-news-systems")
                                                               for y in (21, 22, 23, 24))):
        p.add_argument(f"--{name}", type=Path, required=True, help=f"git directory of {repo}")
    p.add_argument("--general", type=Path, required=True, help="data/general (train.en, train.de)")
    p.add_argument("--ted", type=Path, required=True, help="data/ted/iwslt17.tst2016.en-de.tsv")
    p.add_argument("--shipped", type=Path, help="data/base-train (train.{en,de}.gz), to compare the set with")
    args = p.parse_args(argv)
    try:
        parts = {"multi30k": multi30k(args.multi30k, COMMITS["multi30k"]),
                 "bcontrast": bcontrast(args.bcontrast, COMMITS["bcontrast"]),
                 "mlqe-pe": mlqe_pe(args.mlqe_pe, COMMITS["mlqe_pe"]),
                 "wmt": wmt({f"wmt{y}": getattr(args, f"wmt{y}") for y in (21, 22, 23, 24)}, COMMITS)}
        general, ted = read_general(args.general), read_ted(args.ted)
        kept = select([pair for part in parts.values() for pair in part], general, ted)
        shipped = shipped_three_times(args.shipped, general) if args.shipped else None
    except (OSError, UnicodeDecodeError, ValueError, KeyError, tarfile.TarError) as e:
        print(f"base_train.py: {str(e).splitlines()[0]}", file=sys.stderr)
        return 1
    args.out_dir.mkdir(parents=True, exist_ok=True)
    print(", ".join(f"{name} {len(pairs)}" for name, pairs in parts.items()) + f" candidate pairs; {len(kept)} kept")
    for side, lang in enumerate(("en", "de")):
        data = "".join(pair[side] + "\n" for pair in kept).encode("utf-8")
        path = args.out_dir / f"new-general.{lang}"
        path.write_bytes(data)
        print(f"{path}: md5 {hashlib.md5(data).hexdigest()}")
    print(f"set-md5 {set_md5(kept)}")
    if shipped is not None:
        built = set(kept)
        print(f"shipped: {len(shipped)} pairs three times or more; {len(built & shipped)} built, "
              f"{len(shipped - built)} not built, {len(built - shipped)} built but not shipped")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
