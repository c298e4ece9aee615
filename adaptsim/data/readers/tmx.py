"""TMX 1.4 translation memories: each <tu> gives one segment from its <tuv>s in source_lang/target_lang.

Language codes compare case-insensitively, and a code without region ("en") also matches regional
variants ("en-US"). A file is one document, unless `doc_prop` names a <prop type=…> on each <tu> that
holds its document id. Inline markup (<bpt>, <ept>, <ph>, <it>: native codes) is dropped, the text of
<hi>/<sub> kept. Errors name the file and the <tu> (position and tuid); ElementTree gives no lines.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from adaptsim.data.readers.base import default_doc_id, documents_in_order
from adaptsim.data.readers.xmlutil import parse_xml
from adaptsim.data.textio import expand
from adaptsim.data.types import Document, Segment
from adaptsim.errors import DataError
from adaptsim.data.options import need

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


def read(opts: dict) -> list[Document]:
    path = expand(need(opts, "path"))
    src_lang, tgt_lang = need(opts, "source_lang"), need(opts, "target_lang")
    root = parse_xml(path)
    if root.tag != "tmx":
        raise DataError(path, f"not a TMX file (root element <{root.tag}>, expected <tmx>)")
    body = root.find("body")
    if body is None:
        raise DataError(path, "TMX file without <body>")
    doc_prop, single = opts.get("doc_prop"), default_doc_id(opts, path)
    segments = []
    for n, tu in enumerate(body.iter("tu"), start=1):
        where = f"{path}: tu {n}" + (f" (tuid={tu.get('tuid')!r})" if tu.get("tuid") else "")
        texts, langs = {}, []
        for tuv in tu.findall("tuv"):
            lang = tuv.get(XML_LANG) or tuv.get("lang") or ""
            langs.append(lang)
            seg = tuv.find("seg")
            if seg is None:
                raise DataError(where, f"<tuv xml:lang={lang!r}> without <seg>")
            for role, wanted in (("source", src_lang), ("reference", tgt_lang)):
                if lang_matches(lang, wanted):
                    if role in texts:
                        raise DataError(where, f"two <tuv>s for language {wanted!r}")
                    texts[role] = seg_text(seg)
        for role, wanted in (("source", src_lang), ("reference", tgt_lang)):
            if role not in texts:
                found = ", ".join(langs) or "no <tuv>"
                raise DataError(where, f"no <tuv> for language {wanted!r} (this <tu> has: {found}); "
                                       f"set dataset.{'source' if role == 'source' else 'target'}_lang")
        doc_id = single
        if doc_prop:
            props = [p.text or "" for p in tu.findall("prop") if p.get("type") == doc_prop]
            if not props or not props[0].strip():
                raise DataError(where, f"no <prop type={doc_prop!r}> with a document id")
            doc_id = props[0].strip()
        segments.append(Segment(doc_id, tu.get("tuid") or str(n), texts["source"], texts["reference"], origin=where))
    return documents_in_order(segments, opts)
