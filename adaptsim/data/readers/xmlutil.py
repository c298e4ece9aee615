"""Parsing XML files with the same one-line errors as text files (missing file, encoding, syntax + line).

XML names its own encoding (XML 1.0 §4.3.3, appendix F): a byte-order mark, else the declaration's `encoding`, else
UTF-8. So an XML file is read in the encoding it declares, UTF-16 included (TMX 1.4b recommends UTF-16 or UTF-8, and
CAT tools export UTF-16 TMX), where the other formats' files must be UTF-8 (adaptsim/data/textio.py)."""

from __future__ import annotations

import codecs
import re
import xml.etree.ElementTree as ET

from adaptsim.data.textio import decode, read_bytes, require_file
from adaptsim.errors import DataError

_BOMS = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))
_DECLARED = re.compile(rb"""^<\?xml[^>]*?\sencoding\s*=\s*["']([A-Za-z][\w.:-]*)["']""")


def encoding_of(path, data: bytes) -> str:
    """The encoding an XML file's bytes say they are in: a BOM, UTF-16 without one (its first "<" is two bytes), the
    declaration's, else UTF-8; an encoding Python does not know is an error naming it."""
    for bom, name in _BOMS:
        if data.startswith(bom):
            return name
    if data[:2] in (b"<\x00", b"\x00<"):
        return "utf-16-le" if data[0] else "utf-16-be"
    m = _DECLARED.match(data[:200])
    if not m:
        return "utf-8"
    name = m.group(1).decode("ascii")
    try:
        found = codecs.lookup(name).name
    except LookupError:
        raise DataError(path, f"the XML declaration names an encoding Python does not know ({name!r}); convert the "
                              "file to UTF-8", 1) from None
    if found.startswith(("utf-16", "utf-32")):  # the declaration itself was read one byte a character
        raise DataError(path, f"the XML declaration says {name!r} but the file is not (no byte-order mark, one byte a "
                              "character): correct the declaration (UTF-8?)", 1)
    return found


def xml_text(path) -> str:
    """The XML file as text, in the encoding it declares (`encoding_of`), with the line of a bad byte."""
    path = require_file(path)
    data = read_bytes(path)
    return decode(path, data, encoding_of(path, data))


def parse_xml(path) -> ET.Element:
    text = xml_text(path)
    try:
        return ET.fromstring(text)  # a str: ElementTree reads it as it is, whatever the declaration says
    except ET.ParseError as e:
        line = e.position[0] if getattr(e, "position", None) else None
        raise DataError(path, f"invalid XML: {str(e).split(':')[0]}", line) from None
