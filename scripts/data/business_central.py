"""Build the Business Central en→de streams (`configs/dataset/business-central.yaml`, `…-heldout.yaml`) from the German
and English documentation repositories.

    python scripts/data/business_central.py DE_GIT EN_GIT TEST.tsv HELDOUT.tsv [--commit e057166d]

DE_GIT and EN_GIT: git directories (bare or not) of MicrosoftDocs/dynamics365smb-docs-pr.de-de and
MicrosoftDocs/dynamics365smb-docs (GitHub); the shipped files come from the German commit e057166d (2019-08-23), the
default of --commit. Nothing is downloaded: both are read with git. The choices, each one pinned by the shipped files:

- Articles: every `.md` under `business-central/` at the German commit whose front matter names an English commit
  (`ms.sourcegitcommit`); the English article is the same path at that commit. An article is aligned only when both
  bodies (the lines after the `---` front matter) have the same number of non-blank lines, the i-th with the i-th.
- Each line is stripped on its own: HTML comments dropped; `[!INCLUDE[label](…)]` written out by its label (d365fin,
  prodshort: Business Central; d365fin_long, prodlong: Dynamics 365 Business Central) and a line with any other
  include dropped (crm_md, d365fin_md, tooltip-inline-tip, …: the label decides, not the file); a table row (a line
  starting with `|`) dropped; images dropped (their address may hold one level of parentheses), links kept as
  their text, HTML tags (`<` then a letter or `/`: `<=` and `(<>)` stay), `**` and backticks removed (inline code
  and single `*` emphasis keep their text); then one leading heading or list marker (`#…`, `-`, `*`, `+`, `1.`),
  then blockquote `>`s (so `> - item` keeps its dash, `### 1. Step` its number); whitespace runs (Unicode's, so
  no-break spaces too) become one space. Code is dropped by the rules below: a fence line is under 3 words and
  code lines read the same in both languages.
- A pair is kept when the English is 3–60 words, the German at least 2 words, and they differ (untranslated lines
  are dropped); `seg_id` counts kept pairs from 0. An article is kept with at least 15 pairs; `doc_id` is its file
  name without `.md` (the 422 kept names are distinct).
- Held-out: the sorted names shuffled by `random.Random(2026)`, the first fifth (`len // 5`, 84 of 422) held out.
  Both files list articles in path order (`LocalFunctionality/Germany/…` first).

Prints the segments and articles of each file and its md5 (docs/data.md gives the shipped files').
"""

from __future__ import annotations

import argparse
import hashlib
import random
import re
import subprocess
import sys
from pathlib import Path

HEADER = "doc_id\tseg_id\tsource\treference\n"
ROOT = "business-central/"
PRODUCT = {"d365fin": "Business Central", "prodshort": "Business Central",
           "d365fin_long": "Dynamics 365 Business Central", "prodlong": "Dynamics 365 Business Central"}
MIN_WORDS, MAX_WORDS, MIN_GERMAN_WORDS, MIN_SEGMENTS = 3, 60, 2, 15
SEED = 2026

SOURCE_COMMIT = re.compile(r"^ms\.sourcegitcommit:\s*([0-9a-f]{7,40})\s*$", re.M)
COMMENT = re.compile(r"<!--.*?-->")
INCLUDE = re.compile(r"\[!INCLUDE\s*\[([^\]]*)\]\([^)]*\)\]")
IMAGE = re.compile(r"!\[[^\]]*\]\((?:[^()]|\([^()]*\))*\)")  # media/rules(Pre1503).gif: one level of parentheses
LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
TAG = re.compile(r"</?[A-Za-z][^>]*>")  # a tag, not `<=` or `(<>)`
CODE = re.compile(r"`([^`]*)`")
MARKER = re.compile(r"^(#+|[-*+]|\d+\.)\s+")
QUOTE = re.compile(r"^(>\s*)+")


def git(git_dir: Path, *args: str, feed: bytes | None = None) -> bytes:
    """git's output, or ValueError with the first line git said (a missing directory, an unknown commit)."""
    run = subprocess.run(["git", "-C", str(git_dir), *args], input=feed, capture_output=True)
    if run.returncode:
        said = run.stderr.decode(errors="replace").strip().splitlines() or [f"exit status {run.returncode}"]
        raise ValueError(f"{git_dir}: git {args[0]}: {said[0]}")
    return run.stdout


def read_blobs(git_dir: Path, specs: list[str]) -> dict[str, bytes | None]:
    """`COMMIT:PATH` → its bytes (None where missing), through one `git cat-file --batch` rather than a git per file."""
    out, at, blobs = git(git_dir, "cat-file", "--batch", feed="".join(f"{spec}\n" for spec in specs).encode()), 0, {}
    for spec in specs:
        end = out.index(b"\n", at)
        header, at = out[at:end].decode(), end + 1
        if header.endswith((" missing", " ambiguous")):
            blobs[spec] = None
            continue
        size = int(header.split()[2])
        blobs[spec], at = out[at:at + size], at + size + 1
    return blobs


def translated_articles(de_git: Path, en_git: Path, commit: str) -> list[tuple[str, str, str]]:
    """(path, German text, English text) of every `.md` under business-central/ at `commit` that names its English
    commit, in path order (git's, which is the output's)."""
    listing = git(de_git, "ls-tree", "-r", "--name-only", commit, "--", ROOT).decode().splitlines()
    paths = sorted(p for p in listing if p.endswith(".md"))
    blobs = read_blobs(de_git, [f"{commit}:{p}" for p in paths])
    german = {p: blobs[f"{commit}:{p}"].decode("utf-8-sig") for p in paths}
    source = {p: f"{m.group(1)}:{p}" for p, text in german.items() if (m := SOURCE_COMMIT.search(text))}
    english = read_blobs(en_git, list(source.values()))
    return [(p, german[p], english[spec].decode("utf-8-sig"))
            for p, spec in source.items() if english[spec] is not None]


def body(text: str) -> list[str] | None:
    """The non-blank lines after the `---` front matter (the article's text, line for line); None without one."""
    lines = text.split("\n")
    if lines[0].strip() != "---":
        return None
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
    return None if end is None else [line for line in lines[end + 1:] if line.strip()]


def strip(line: str) -> str | None:
    """A markdown line as plain text, or None for a line that is not prose (another include, a table row)."""
    text = COMMENT.sub("", line)
    if any(m.group(1).strip() not in PRODUCT for m in INCLUDE.finditer(text)):
        return None
    text = INCLUDE.sub(lambda m: PRODUCT[m.group(1).strip()], text)
    if text.strip().startswith("|"):
        return None
    text = IMAGE.sub("", text)
    text = LINK.sub(r"\1", text)
    text = TAG.sub("", text)
    text = CODE.sub(r"\1", text.replace("**", ""))
    text = MARKER.sub("", text.strip())
    return " ".join(QUOTE.sub("", text).split())


def segments(german: list[str], english: list[str]) -> list[tuple[str, str]]:
    """(English, German) of aligned lines that are prose of the right length and translated (module docstring)."""
    pairs = []
    for de_line, en_line in zip(german, english, strict=True):
        source, reference = strip(en_line), strip(de_line)
        if not source or not reference or source == reference:
            continue
        if MIN_WORDS <= len(source.split()) <= MAX_WORDS and len(reference.split()) >= MIN_GERMAN_WORDS:
            pairs.append((source, reference))
    return pairs


def articles(de_git: Path, en_git: Path, commit: str) -> list[tuple[str, list[tuple[str, str]]]]:
    """(name, segments) of every kept article, in path order: bodies of equal length, at least `MIN_SEGMENTS` pairs."""
    kept = []
    for path, german, english in translated_articles(de_git, en_git, commit):
        de_body, en_body = body(german), body(english)
        if de_body is None or en_body is None or len(de_body) != len(en_body):
            continue
        pairs = segments(de_body, en_body)
        if len(pairs) >= MIN_SEGMENTS:
            kept.append((Path(path).stem, pairs))
    names = [name for name, _ in kept]
    if len(set(names)) != len(names):
        raise ValueError(f"two kept articles share a file name: {sorted({n for n in names if names.count(n) > 1})}")
    return kept


def heldout_names(names: list[str]) -> set[str]:
    """A seeded fifth of the articles: the sorted names shuffled with `SEED`, the first `len // 5`."""
    order = sorted(names)
    random.Random(SEED).shuffle(order)
    return set(order[:len(order) // 5])


def tsv(kept) -> str:
    return HEADER + "".join(f"{name}\t{i}\t{source}\t{reference}\n"
                            for name, pairs in kept for i, (source, reference) in enumerate(pairs))


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="business_central.py", description=__doc__.split("\n\n")[0])
    p.add_argument("de_git", type=Path, help="git directory of MicrosoftDocs/dynamics365smb-docs-pr.de-de")
    p.add_argument("en_git", type=Path, help="git directory of MicrosoftDocs/dynamics365smb-docs")
    p.add_argument("test", type=Path, help="the test TSV to write")
    p.add_argument("heldout", type=Path, help="the held-out TSV to write")
    p.add_argument("--commit", default="e057166d", help="the German commit (default e057166d, the shipped files')")
    args = p.parse_args(argv)
    try:
        kept = articles(args.de_git, args.en_git, args.commit)
    except (OSError, UnicodeDecodeError, ValueError) as e:
        print(f"business_central.py: {str(e).splitlines()[0]}", file=sys.stderr)
        return 1
    held = heldout_names([name for name, _ in kept])
    parts = {args.test: [a for a in kept if a[0] not in held], args.heldout: [a for a in kept if a[0] in held]}
    for out, part in parts.items():
        data = tsv(part).encode()
        out.write_bytes(data)
        print(f"{out}: {sum(len(pairs) for _, pairs in part)} segments, {len(part)} articles, "
              f"md5 {hashlib.md5(data).hexdigest()}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
