"""Strict reading of the plain-text inputs the metrics take (references, hypotheses, word lists).

Strict because a silently mis-decoded or mis-aligned line would give a wrong score, not an error.
"""

from __future__ import annotations

from pathlib import Path

from adaptsim.errors import DataError


def read_lines(path: str | Path) -> list[str]:
    """All lines of a UTF-8 file without their line ends; DataError names the file and bad line."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise DataError(path, "no such file") from None
    except IsADirectoryError:
        raise DataError(path, "is a directory, expected a text file") from None
    except OSError as e:
        raise DataError(path, f"cannot read: {e.strerror}") from None
    chunks = raw.split(b"\n")
    if chunks[-1] == b"":  # the file's final newline ends the last line, it does not start one
        chunks.pop()
    lines = []
    for number, line in enumerate(chunks, 1):
        line = line[:-1] if line.endswith(b"\r") else line
        try:
            lines.append(line.decode("utf-8"))
        except UnicodeDecodeError as e:
            raise DataError(path, f"invalid UTF-8 at byte {e.start} of the line", line=number) from None
    return lines
