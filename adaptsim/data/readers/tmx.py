"""TMX 1.4 translation memories: each <tu> gives one segment from its <tuv>s in source_lang/target_lang.

Language codes compare case-insensitively, and a code without region ("en") also matches regional
variants ("en-US"). A file is one document, unless `doc_prop` names a <prop type=…> on each <tu> that
holds its document id. Inline markup (<bpt>, <ept>, <ph>, <it>: native codes) is dropped, the text of
<hi>/<sub> kept. Errors name the file and the <tu> (position, tuid, and its line: ElementTree gives no lines, so they
are found by a second, cheaper parse (expat) only when a message needs them). A <tu> without a <tuv> in one of the
two languages (a TM that mixes language pairs) is an error, or skipped and counted (`on_missing_language: skip`).
The file is read in the encoding it declares, UTF-16 included (adaptsim/data/readers/xmlutil.py).
"""

from __future__ import annotations

import logging
import xml.etree.ElementTree as ET
from xml.parsers import expat

from adaptsim.data.options import need
from adaptsim.data.readers.base import default_doc_id, documents_in_order
from adaptsim.data.readers.xmlutil import parse_xml, xml_text
from adaptsim.data.textio import expand
from adaptsim.data.types import Dataset, Segment
from adaptsim.errors import DataError, UserError

log = logging.getLogger("adaptsim.data")

XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"
NATIVE_CODE = {"bpt", "ept", "ph", "it", "ut"}


def lang_matches(code: str, wanted: str) -> bool:
    code, wanted = code.lower().replace("_", "-"), wanted.lower().replace("_", "-")
    return code == wanted or ("-" not in wanted and code.split("-")[0] == wanted)


def seg_text(seg: ET.Element) -> str:
    parts = [seg.text or ""]
    for child in seg:
        if child.tag not in NATIVE_CODE:
            parts.append(seg_text(child))
        parts.append(child.tail or "")
    return "".join(parts)


def tu_lines(path) -> list[int]:
    """The line each <tu> starts on, in document order (the file parsed again, with expat, which counts lines)."""
    lines: list[int] = []
    parser = expat.ParserCreate()
    parser.StartElementHandler = lambda name, attrs: lines.append(parser.CurrentLineNumber) if name == "tu" else None
    parser.Parse(xml_text(path), True)
    return lines


def read(opts: dict) -> Dataset:
    path = expand(need(opts, "path"))
    src_lang, tgt_lang = need(opts, "source_lang"), need(opts, "target_lang")
    on_missing = opts.get("on_missing_language", "error")
    if on_missing not in ("error", "skip"):
        raise UserError(f"dataset.on_missing_language={on_missing!r}: choose error | skip")
    root = parse_xml(path)
    if root.tag != "tmx":
        raise DataError(path, f"not a TMX file (root element <{root.tag}>, expected <tmx>)")
    body = root.find("body")
    if body is None:
        raise DataError(path, "TMX file without <body>")
    doc_prop, single = opts.get("doc_prop"), default_doc_id(opts, path)
    segments, lines, skipped = [], None, 0

    def fail(n, tu, message):
        nonlocal lines
        lines = lines or tu_lines(path)
        return DataError(path, f"tu {n}" + (f" (tuid={tu.get('tuid')!r})" if tu.get("tuid") else "") + f": {message}",
                         lines[n - 1])

    for n, tu in enumerate(body.iter("tu"), start=1):
        where = f"{path}: tu {n}" + (f" (tuid={tu.get('tuid')!r})" if tu.get("tuid") else "")
        texts, langs = {}, []
        for tuv in tu.findall("tuv"):
            lang = tuv.get(XML_LANG) or tuv.get("lang") or ""
            langs.append(lang)
            seg = tuv.find("seg")
            if seg is None:
                raise fail(n, tu, f"<tuv xml:lang={lang!r}> without <seg>")
            for role, wanted in (("source", src_lang), ("reference", tgt_lang)):
                if lang_matches(lang, wanted):
                    if role in texts:
                        raise fail(n, tu, f"two <tuv>s for language {wanted!r}")
                    texts[role] = seg_text(seg)
        missing = [wanted for role, wanted in (("source", src_lang), ("reference", tgt_lang)) if role not in texts]
        if missing and on_missing == "skip":
            lines = lines or tu_lines(path)
            log.info("%s:%d: skipped <tu> %d: no <tuv> for language %r", path, lines[n - 1], n, missing[0])
            skipped += 1
            continue
        if missing:
            found = ", ".join(langs) or "no <tuv>"
            setting = "source_lang" if "source" not in texts else "target_lang"
            raise fail(n, tu, f"no <tuv> for language {missing[0]!r} (this <tu> has: {found}); set "
                              f"dataset.{setting}, or dataset.on_missing_language=skip to skip such <tu>s")
        doc_id = single
        if doc_prop:
            props = [p.text or "" for p in tu.findall("prop") if p.get("type") == doc_prop]
            if not props or not props[0].strip():
                raise fail(n, tu, f"no <prop type={doc_prop!r}> with a document id")
            doc_id = props[0].strip()
        segments.append(Segment(doc_id, tu.get("tuid") or str(n), texts["source"], texts["reference"], origin=where))
    if skipped:
        log.warning("skipped %d <tu>(s) without a <tuv> in %s or %s (dataset.on_missing_language=skip)", skipped,
                    src_lang, tgt_lang)
    return Dataset(documents_in_order(segments, opts), {"missing_language": skipped} if skipped else None)
