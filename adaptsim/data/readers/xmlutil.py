"""Parsing XML files with the same one-line errors as text files (missing file, UTF-8, syntax + line)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from adaptsim.data.textio import read_text
from adaptsim.errors import DataError


def parse_xml(path) -> ET.Element:
    text = read_text(path)  # strict UTF-8, with the line of a bad byte
    try:
        return ET.fromstring(text)
    except ET.ParseError as e:
        line = e.position[0] if getattr(e, "position", None) else None
        raise DataError(path, f"invalid XML: {str(e).split(':')[0]}", line) from None
