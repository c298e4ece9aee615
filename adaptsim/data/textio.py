"""Reading user files strictly: UTF-8 only, exact line numbers, one-line errors naming file and line.

Lines are split on "\\n" only (str.splitlines would also split on U+2028, \\x1c … and shift line
numbers between two parallel files).
"""

from __future__ import annotations

import os
import re
import unicodedata
from pathlib import Path

from adaptsim import shared_dir
from adaptsim.errors import DataError


def expand(path) -> Path:
    return Path(os.path.expanduser(str(path)))


def require_file(path) -> Path:
    path = expand(path)
    if not path.exists():
        raise DataError(path, "file not found" + _shared_hint(path))
    if not path.is_file():
        raise DataError(path, "not a regular file")
    return path


def _shared_hint(path: Path) -> str:
    """What to do about a missing file of the shared data and models folder (docs/data.md), where it is one."""
    root = shared_dir()
    try:
        path.resolve().relative_to(root.resolve())
    except ValueError:
        return ""
    where = ("which is not here: put it beside the checkout as ../shared or point ADAPTSIM_SHARED at it"
             if not root.is_dir() else "which lacks it")
    return f" (the shared data and models folder {root}, {where}; docs/data.md says what it holds and its sources)"


def read_text(path) -> str:
    """The whole file as text; invalid UTF-8 is an error naming the line of the first bad byte."""
    path = require_file(path)
    return decode(path, read_bytes(path))


def read_bytes(path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as e:
        raise DataError(path, f"cannot read: {e.strerror or e}") from None


def decode(path, data: bytes, encoding: str = "utf-8") -> str:
    """`data` (the file `path`'s bytes) as text in `encoding`, strictly: a bad byte or a NUL is an error naming its
    line; a leading BOM is dropped."""
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as e:
        line = data[:e.start].decode(encoding, errors="replace").count("\n") + 1
        if encoding == "utf-8":
            raise DataError(path, f"invalid UTF-8 (byte 0x{data[e.start]:02x}); files must be UTF-8", line) from None
        raise DataError(path, f"invalid {encoding} (bytes {' '.join(f'0x{b:02x}' for b in data[e.start:e.end])}), the "
                              "encoding the file declares", line) from None
    nul = text.find("\x00")
    if nul >= 0:  # binary data or UTF-16 read as UTF-8: never text a segment should hold
        raise DataError(path, "NUL byte (\\x00) in the text; is it binary or UTF-16? Files must be UTF-8 text",
                        text.count("\n", 0, nul) + 1)
    return text[1:] if text.startswith("\ufeff") else text


def is_blank(text: str) -> bool:
    """Nothing a translator could read: only whitespace, control (Cc) and format (Cf: zero-width spaces and
    joiners, soft hyphens, BOMs, direction marks) characters. Such a segment counts as empty."""
    return not "".join(c for c in text if unicodedata.category(c) not in ("Cc", "Cf")).strip()


def split_lines(text: str) -> list[str]:
    """Lines without their terminator ("\\n" or "\\r\\n"); a final newline does not add an empty line."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def read_lines(path) -> list[str]:
    return split_lines(read_text(path))


_ORIGIN = re.compile(r"^(.*):(\d+)$")


def error_at(origin: str, message: str) -> DataError:
    """A DataError for a segment's origin string ("file:line" or "file: doc …")."""
    m = _ORIGIN.match(origin)
    return DataError(m.group(1), message, int(m.group(2))) if m else DataError(origin, message)
