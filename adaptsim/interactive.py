"""The simulated translator of interactive-predictive MT (`metrics.interactive: word | char`): after the system's
first hypothesis the user reads it left to right, corrects the first error, the system re-decodes with everything
up to the correction forced (`propose`: adaptsim/decode/prefix.py through `Seq2SeqModel.completions`), and so on
until the hypothesis is the reference; what it costs goes into an `Effort` (adaptsim/metrics/effort.py). It runs
inside the simulation loop, on θ_{i−1}, before the method adapts on the reference the user has produced.

The procedure is NMT-Keras' prefix-based simulation (Peris & Casacuberta 2019; `interactive_nmt_simulation.py`
and `interactive_char_nmt_simulation.py`, branch interactive_NMT). What we follow and what not:

- Word level: the first reference word the hypothesis gets wrong (or lacks) is typed whole, and the system
  continues after it with a piece that begins a word. It costs a word stroke and its characters in keystrokes,
  no space (NMT-Keras counts word strokes only; its character count for the rates leaves spaces out, ours keeps
  them: a space is typed too). Character level: the first wrong character (longest common character prefix) is
  typed, one keystroke, and the system completes the word begun with pieces that spell it (NMT-Keras restricts
  the last word to vocabulary words that begin with it; with sentencepiece we restrict the pieces). A word stroke
  there counts each word the user types into (NMT-Keras reports no word strokes at the character level).
- A mouse action when the correction, or the cut, is not where the cursor is: right after the last typed text, at
  the very start before the first correction. NMT-Keras' character level counts one when a correction is more
  than one character past the last one, starting from 0 (so a first correction at character 1 is free there, not
  here) and none for the cut; its word level counts one for every correction. One more per segment for the final
  validation, as NMT-Keras.
- A hypothesis longer than the reference, once the reference is validated, is cut with one keystroke (NMT-Keras:
  one stroke); a word-level cut is also a word stroke.
- Texts are compared with whitespace collapsed; the reference is the user's text (NMT-Keras: the tokenised
  reference; we use the data's detokenised one, as the user would type it).
- The system keeps what the user validated verbatim and appends its continuation; where it cannot spell the
  word begun (no pieces do), it appends nothing, so every correction moves on at least one character.
- At most `max_corrections` corrections per segment: then the user deletes the rest of the hypothesis (one
  keystroke) and types the rest of the reference (`Effort.capped`). NMT-Keras has no cap.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from adaptsim.metrics.effort import Effort

MODES = ("off", "word", "char")


def mode_of(setting) -> str:
    """`metrics.interactive` as a mode name (YAML reads a bare `off` as false)."""
    if setting is False:
        return "off"
    if not isinstance(setting, str) or setting not in MODES:
        raise ValueError(f"metrics.interactive={setting!r}: choose {' | '.join(MODES)}")
    return setting


def simulate(mode: str, reference: str, hypothesis: str, propose: Callable[[str], str], max_corrections: int,
             calls: Callable[[], int] = lambda: 0) -> Effort:
    """The effort to turn `hypothesis` into `reference` at `mode` level; `propose(validated)` is the system's
    hypothesis once the user has validated the reference's first characters `validated`; `calls()` how many
    searches the system has run (summary cost)."""
    start = time.perf_counter()
    level = {"word": _words, "char": _characters}[mode]
    effort = level(" ".join(reference.split()), " ".join(hypothesis.split()), propose, max_corrections)
    effort.level, effort.decoder_calls, effort.seconds = mode, calls(), time.perf_counter() - start
    return effort


def _words(reference: str, hypothesis: str, propose, max_corrections: int) -> Effort:
    ref, hyp = reference.split(), hypothesis.split()
    effort = Effort(chars=len(reference), words=len(ref))
    cursor = corrections = 0
    while (p := _first_difference(hyp, ref)) < len(ref):
        effort.MA += p != cursor
        if corrections == max_corrections:  # the user deletes the rest and types the reference's words
            effort.KS += (p < len(hyp)) + sum(len(word) for word in ref[p:])
            effort.WS += len(ref) - p
            effort.capped, hyp = True, ref
            break
        effort.KS += len(ref[p])
        effort.WS += 1
        cursor, corrections = p + 1, corrections + 1
        hyp = propose(" ".join(ref[:p + 1]) + " ").split()
    if len(hyp) > len(ref):  # the reference is validated; the rest is cut
        effort.MA += len(ref) != cursor
        effort.KS += 1
        effort.WS += 1
    effort.MA += 1  # validation
    return effort


def _characters(reference: str, hypothesis: str, propose, max_corrections: int) -> Effort:
    effort = Effort(chars=len(reference), words=len(reference.split()))
    hyp, cursor, corrections, touched = hypothesis, 0, 0, set()
    while (p := _first_difference(hyp, reference)) < len(reference):
        effort.MA += p != cursor
        if corrections == max_corrections:
            effort.KS += (p < len(hyp)) + len(reference) - p
            touched.update(_word_at(reference, q) for q in range(p, len(reference)) if reference[q] != " ")
            effort.capped, hyp = True, reference
            break
        effort.KS += 1
        if reference[p] != " ":
            touched.add(_word_at(reference, p))
        cursor, corrections = p + 1, corrections + 1
        hyp = propose(reference[:p + 1])
    if len(hyp) > len(reference):
        effort.MA += len(reference) != cursor
        effort.KS += 1
    effort.WS = len(touched)
    effort.MA += 1
    return effort


def _first_difference(a, b) -> int:
    """The first position where sequences (or strings) `a` and `b` differ; the shorter length if one begins the
    other."""
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))


def _word_at(text: str, position: int) -> int:
    """Which word (0-based) of `text` the character at `position` belongs to."""
    return text.count(" ", 0, position)
