"""Which words are "truly novel": absent from the training data (paper Table 3).

The file is either a vocabulary (one word per line, optionally with a count before or after it,
as `sort | uniq -c` writes) or plain training text, which is Moses-tokenised; it is read as a
vocabulary only if every line fits that shape. Tokenising text is slow: for a big training
corpus, give its vocabulary.
Novelty is judged case-insensitively: training text is not truecased with the run's model, and a
word seen in another casing has been seen.
In a language written without spaces (adaptsim.metrics.segmenters) a line of one field is a vocabulary word or a
sentence alike, so every entry is cut by the run's segmenter (`segment_entries`): a vocabulary word the segmenter
splits is known as the words the metrics see in its place, and a training sentence as its words.
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


def load_known(path: str | Path, tokenize: Callable[[str], list[str]], segment_entries: bool = False
               ) -> frozenset[str]:
    """Lowercased words of a vocabulary or training-text file (format detected from its lines); `segment_entries`:
    a vocabulary's words cut by `tokenize` too (a language written without spaces)."""
    lines = [line.split() for line in read_lines(path)]
    lines = [fields for fields in lines if fields]
    words = [_vocabulary_word(fields) for fields in lines]
    if all(w is not None for w in words):
        if segment_entries:
            return frozenset(t.lower() for w in words for t in tokenize(w))
        return frozenset(w.lower() for w in words)
    return frozenset(t.lower() for fields in lines for t in tokenize(" ".join(fields)))


def novelty(known: frozenset[str]) -> Callable[[str], bool]:
    return lambda word: word.lower() not in known
