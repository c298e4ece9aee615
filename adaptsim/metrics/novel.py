"""Which words are "truly novel": absent from the training data (paper Table 3).

The file is either a vocabulary (one word per line, optionally with a count before or after it,
as `sort | uniq -c` writes) or plain training text, which is Moses-tokenised; it is read as a
vocabulary only if every line fits that shape. Tokenising text is slow: for a big training
corpus, give its vocabulary.
Novelty is judged case-insensitively: training text is not truecased with the run's model, and a
word seen in another casing has been seen.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from adaptsim.data.textio import read_lines


def _vocabulary_word(fields: list[str]) -> str | None:
    """The word of a vocabulary line, or None if the line is not one."""
    if len(fields) == 1:
        return fields[0]
    if len(fields) == 2:
        if fields[1].isdigit():
            return fields[0]
        if fields[0].isdigit():
            return fields[1]
    return None


def load_known(path: str | Path, tokenize: Callable[[str], list[str]]) -> frozenset[str]:
    """Lowercased words of a vocabulary or training-text file (format detected from its lines)."""
    lines = [line.split() for line in read_lines(path)]
    lines = [fields for fields in lines if fields]
    words = [_vocabulary_word(fields) for fields in lines]
    if all(w is not None for w in words):
        return frozenset(w.lower() for w in words)
    return frozenset(t.lower() for fields in lines for t in tokenize(" ".join(fields)))


def novelty(known: frozenset[str]) -> Callable[[str], bool]:
    return lambda word: word.lower() not in known
