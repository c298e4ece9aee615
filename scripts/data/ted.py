"""Build the TED streams (`configs/dataset/ted.yaml`; the Chinese, Japanese and Korean ones in data/ted-cjk) from
WIT3's IWSLT 2017 test archives.

    python scripts/data/ted.py EN-X.tgz X-EN.tgz OUT.tsv [--set tst2016]

EN-X.tgz and X-EN.tgz: `archive/2017-01-ted-test/texts/en/X/en-X.tgz` and `…/X/en/X-en.tgz` of hlt-mt/WIT3 (GitHub;
the shipped files are its commit e43615b, 2021-01-12), X one of de, ja, ko, zh (or any other the release has). The
English comes from the en-X archive's source side, the reference from the X-en archive's source side (the test
release has no target side): the same talks, aligned by talk id and segment id. One document per talk (`doc_id` the
talk id), in the English file's order; each segment stripped of the spaces around it (inside, the subtitles'
line-break spaces stay). Prints the segments, talks and the output's md5 (docs/data.md gives the shipped files').
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
import tarfile
import xml.etree.ElementTree as ET
from pathlib import Path

HEADER = "doc_id\tseg_id\tsource\treference\n"


def talks(archive: Path, test_set: str) -> tuple[str, list[tuple[str, list[tuple[str, str]]]]]:
    """(the archive's source language, [(talk id, [(segment id, text)])]) of `test_set` in a WIT3 test archive."""
    pair = re.match(r"([a-z]+)-([a-z]+)\.tgz$", archive.name)
    if pair is None:
        raise ValueError(f"{archive}: not a WIT3 archive name (en-de.tgz, de-en.tgz, …)")
    source, target = pair.groups()
    name = f"{source}-{target}/IWSLT17.TED.{test_set}.{source}-{target}.{source}.xml"
    with tarfile.open(archive) as tar:
        try:
            root = ET.parse(tar.extractfile(name)).getroot()
        except KeyError:
            raise ValueError(f"{archive}: no {name} in it") from None
    return source, [(d.get("docid"), [(s.get("id"), (s.text or "").strip()) for s in d.iter("seg")])
                    for d in root.iter("doc")]


def pairs(english: list, foreign: list) -> list[tuple[str, str, str, str]]:
    """(talk, segment, English, reference) in the English file's order; a segment missing on one side is an error."""
    by_talk = {talk: dict(segments) for talk, segments in foreign}
    rows = []
    for talk, segments in english:
        for seg, text in segments:
            reference = by_talk.get(talk, {}).get(seg)
            if reference is None:
                raise ValueError(f"talk {talk} segment {seg}: no reference in the other archive")
            if any(c in text + reference for c in "\t\n"):
                raise ValueError(f"talk {talk} segment {seg}: a tab or a line break, which a TSV line cannot hold")
            rows.append((talk, seg, text, reference))
    return rows


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="ted.py", description=__doc__.split("\n\n")[0])
    p.add_argument("en_x", type=Path, help="WIT3's en-X.tgz (the English)")
    p.add_argument("x_en", type=Path, help="WIT3's X-en.tgz (the reference)")
    p.add_argument("out", type=Path, help="the TSV to write")
    p.add_argument("--set", default="tst2016", help="the test set in the archives (default tst2016)")
    args = p.parse_args(argv)
    try:
        source, english = talks(args.en_x, args.set)
        _, foreign = talks(args.x_en, args.set)
        if source != "en":
            raise ValueError(f"{args.en_x}: the first archive is en-X, not {args.en_x.name}")
        rows = pairs(english, foreign)
    except (OSError, ValueError, tarfile.TarError, ET.ParseError) as e:
        print(f"ted.py: {e}", file=sys.stderr)
        return 1
    data = (HEADER + "".join("\t".join(row) + "\n" for row in rows)).encode()
    args.out.write_bytes(data)
    print(f"{args.out}: {len(rows)} segments, {len(english)} talks, md5 {hashlib.md5(data).hexdigest()}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
