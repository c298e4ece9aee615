"""Build GNOME help's en→de stream (`configs/dataset/gnome_help.yaml`) from gnome-user-docs' German translation.

    python scripts/data/gnome_help.py DE_PO OUT.tsv

DE_PO: `gnome-help/de/de.po` of GNOME/gnome-user-docs (https://gitlab.gnome.org/GNOME/gnome-user-docs, mirrored
on GitHub); the shipped file is its commit 2fccd36c (2026-03-01), `git show 2fccd36c:gnome-help/de/de.po`. One
segment per translated entry (not fuzzy, not obsolete), placed at its first source reference in `C/` (the page and
line itstool extracted it from: `doc_id` the page file, `seg_id` the line), so a string repeated across pages
(an author's name, "Files") appears once, where it first does; entries whose English or German spans lines are left
out (a TSV line holds one segment). Pages sorted by name, segments by line. Prints the segments, pages and the
output's md5 (docs/data.md gives the shipped file's).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

import polib

HEADER = "doc_id\tseg_id\tsource\treference\n"


def segments(po: polib.POFile) -> list[tuple[str, int, str, str]]:
    """(page, line, English, German) of every usable entry, in page and line order (module docstring)."""
    rows = []
    for entry in po:
        if not entry.translated() or entry.obsolete or "fuzzy" in entry.flags:
            continue
        where = [(path.removeprefix("C/"), int(line)) for path, line in entry.occurrences if path.startswith("C/")]
        if not where or any(c in entry.msgid + entry.msgstr for c in "\n\t"):
            continue
        rows.append((*where[0], entry.msgid, entry.msgstr))
    return sorted(rows, key=lambda r: (r[0], r[1]))


def tsv(rows) -> str:
    return HEADER + "".join(f"{page}\t{line}\t{source}\t{reference}\n" for page, line, source, reference in rows)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="gnome_help.py", description=__doc__.split("\n\n")[0])
    p.add_argument("po", type=Path, help="gnome-help/de/de.po of gnome-user-docs")
    p.add_argument("out", type=Path, help="the TSV to write")
    args = p.parse_args(argv)
    try:
        po = polib.pofile(str(args.po))
    except (OSError, ValueError) as e:
        print(f"gnome_help.py: {args.po}: {e}", file=sys.stderr)
        return 1
    rows = segments(po)
    data = tsv(rows).encode()
    args.out.write_bytes(data)
    print(f"{args.out}: {len(rows)} segments, {len({r[0] for r in rows})} pages, md5 {hashlib.md5(data).hexdigest()}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
