"""Evaluation-campaign test sets with <doc docid=…> and <seg id=…>: `xml` (IWSLT/WMT mteval XML) and
`sgml` (WMT .sgm, read line by line since it need not be well-formed XML).

Source and reference come from two files (`source`/`reference`, else `PATH.<lang>.xml` / `.sgm`) and
are paired by document and segment id; anything present on one side only is an error naming both
files and the ids. Documents and segments follow the source file's order. For `xml`, a `path` that
is an existing file is read as a WMT ≥ 2021 single-file test set (<doc id=…> with <src> and <ref>).
"""

from __future__ import annotations

import html
import re
from pathlib import Path

from adaptsim.data.readers.xmlutil import parse_xml
from adaptsim.data.textio import expand, read_lines
from adaptsim.data.types import Document, Segment
from adaptsim.errors import DataError, UserError

# a side of a test set: [(doc_id, [(seg_id, text, where)])] in file order
Side = list[tuple[str, list[tuple[str, str, str]]]]


def read(opts: dict) -> list[Document]:
    fmt = opts["format"]
    path = opts.get("path")
    if fmt == "xml" and not (opts.get("source") or opts.get("reference")) and path and expand(path).is_file():
        src, ref = read_wmt_single(expand(path), opts)
        return pair(src, ref, expand(path), expand(path))
    files = {}
    for role, lang_key in (("source", "source_lang"), ("reference", "target_lang")):
        if opts.get(role):
            files[role] = expand(opts[role])
        elif path in (None, "", "???") or not opts.get(lang_key):
            raise UserError(f"dataset.{role} or dataset.path (a prefix) and dataset.{lang_key} must be set")
        else:
            files[role] = expand(f"{path}.{opts[lang_key]}.{'xml' if fmt == 'xml' else 'sgm'}")
    reader = read_xml_side if fmt == "xml" else read_sgml_side
    return pair(reader(files["source"]), reader(files["reference"]), files["source"], files["reference"])


def read_xml_side(path: Path) -> Side:
    side, docs_seen = [], set()
    for doc in parse_xml(path).iter("doc"):
        doc_id = (doc.get("docid") or "").strip()
        if not doc_id:
            raise DataError(path, f"<doc> number {len(side) + 1} has no docid attribute")
        check_new(doc_id, docs_seen, path)
        side.append((doc_id, xml_segs(doc, path, doc_id)))
    if not side:
        raise DataError(path, "no <doc docid=…> elements")
    return side


def xml_segs(parent, path, doc_id):
    segs, seen = [], set()
    for seg in parent.iter("seg"):
        seg_id = (seg.get("id") or "").strip()
        where = f"{path}: doc {doc_id!r}, seg {seg_id or '#' + str(len(segs) + 1)}"
        if not seg_id:
            raise DataError(where, "<seg> without an id attribute")
        if seg_id in seen:
            raise DataError(where, "duplicate segment id")
        seen.add(seg_id)
        segs.append((seg_id, "".join(seg.itertext()).strip(), where))
    return segs


def read_wmt_single(path: Path, opts: dict) -> tuple[Side, Side]:
    """WMT ≥ 2021: <doc id=…><src lang=…><p><seg id=…> and <ref lang=… translator=…> in one file."""
    src, ref, seen = [], [], set()
    for doc in parse_xml(path).iter("doc"):
        doc_id = (doc.get("id") or doc.get("docid") or "").strip()
        if not doc_id:
            raise DataError(path, f"<doc> number {len(src) + 1} has no id attribute")
        check_new(doc_id, seen, path)
        for side, tag, lang_key in ((src, "src", "source_lang"), (ref, "ref", "target_lang")):
            wanted = opts.get(lang_key)
            parts = [e for e in doc.findall(tag) if not wanted or (e.get("lang") or "").lower() == wanted.lower()]
            if not parts:
                raise DataError(f"{path}: doc {doc_id!r}", f"no <{tag}>" + (f" with lang={wanted!r}" if wanted else ""))
            side.append((doc_id, xml_segs(parts[0], path, doc_id)))
    return src, ref


_DOC = re.compile(r"<doc\b[^>]*?\bdocid\s*=\s*(\"[^\"]*\"|'[^']*'|[^\s>]+)", re.I)
_SEG = re.compile(r"<seg\b([^>]*)>(.*?)</seg>", re.I)
_ID = re.compile(r"\bid\s*=\s*(\"[^\"]*\"|'[^']*'|[^\s>]+)", re.I)


def read_sgml_side(path: Path) -> Side:
    side, docs_seen, seen = [], set(), set()
    for n, line in enumerate(read_lines(path), start=1):
        if m := _DOC.search(line):
            doc_id = m.group(1).strip("\"'").strip()
            check_new(doc_id, docs_seen, path, n)
            side.append((doc_id, []))
            seen = set()
        for m in _SEG.finditer(line):
            if not side:
                raise DataError(path, "<seg> outside a <doc docid=…>", n)
            id_match = _ID.search(m.group(1))
            seg_id = id_match.group(1).strip("\"'").strip() if id_match else ""
            if not seg_id:
                raise DataError(path, "<seg> without an id attribute", n)
            if seg_id in seen:
                raise DataError(path, f"duplicate segment id {seg_id!r} in doc {side[-1][0]!r}", n)
            seen.add(seg_id)
            side[-1][1].append((seg_id, html.unescape(m.group(2)).strip(), f"{path}:{n}"))
    if not side:
        raise DataError(path, "no <doc docid=…> lines")
    return side


def check_new(doc_id, seen, path, line=None):
    if doc_id in seen:
        raise DataError(path, f"duplicate document id {doc_id!r}", line)
    seen.add(doc_id)


def pair(src: Side, ref: Side, src_path, ref_path) -> list[Document]:
    """Documents of (source, reference) matched by ids; every mismatch is an error naming the ids."""
    refs, src_docs = dict(ref), {doc_id for doc_id, _ in src}
    for doc_id, _ in ref:
        if doc_id not in src_docs:
            raise DataError(ref_path, f"document {doc_id!r} is not in the source file {src_path}")
    docs = []
    for doc_id, segs in src:
        if doc_id not in refs:
            raise DataError(ref_path, f"no document {doc_id!r} (the source file {src_path} has it)")
        ref_segs = {seg_id: (text, where) for seg_id, text, where in refs[doc_id]}
        src_ids = {seg_id for seg_id, _, _ in segs}
        for seg_id, _, where in refs[doc_id]:
            if seg_id not in src_ids:
                raise DataError(where, f"segment {seg_id!r} of document {doc_id!r} is not in the source file "
                                       f"{src_path}")
        out = []
        for seg_id, text, where in segs:
            if seg_id not in ref_segs:
                raise DataError(ref_path, f"document {doc_id!r} has no segment {seg_id!r} "
                                          f"(the source has it at {where})")
            ref_text, ref_where = ref_segs[seg_id]
            out.append(Segment(doc_id, seg_id, text, ref_text, origin=where, ref_origin=ref_where))
        docs.append(Document(doc_id, out))
    return docs
