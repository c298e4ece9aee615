"""The simulated translator of interactive-predictive MT (`metrics.interactive: word | char`): after the system's
first hypothesis the user reads it left to right, corrects the first error, the system re-decodes with everything
up to the correction forced (`propose`: adaptsim/models/decode/prefix.py through the model's `completions`), and so on
until the hypothesis is the reference. It runs inside the simulation loop, on θ_{i−1}, before the method adapts on
the reference the user has produced. The search (`shown`: the hypotheses the user sees) is kept apart from the
accounting (`count`, a pure function of the reference and those hypotheses), which fills an `Effort`
(adaptsim/metrics/effort.py) in one of two countings, `metrics.interactive_costs`:

**nmt-keras** (the default) counts as NMT-Keras' prefix-based simulation does (Peris & Casacuberta 2019;
lvapeab/nmt-keras, branch interactive_NMT, commit 56c18d5: `interactive_nmt_simulation.py` run with `--prefix`,
word.py below, and `interactive_char_nmt_simulation.py`, char.py; the line numbers are theirs).

- Word level. A wrong hypothesis word is substituted (word.py 500–518), or a missing one inserted at the end
  (481–499): a word stroke (`errors_sentence`) and the word's characters in keystrokes (487, 505:
  `keystrokes_sentence += new_word_len`, no space). A substitution is a mouse action (502); both would add one
  more when the pointer jumps (485, 503: `checked_index_h - last_checked_index > 1`), but with `--prefix` this never
  holds: every validated word sets `last_checked_index` to the next position (534–537) and a correction leaves
  both indices where they are (517), so at every check the difference is 0. An insertion at the end therefore
  costs no mouse action, a substitution exactly one. A hypothesis that runs past the reference is cut: a word
  stroke and a keystroke, no mouse action (600–603). One mouse action per segment validates it (614). Characters:
  the words joined by single spaces (615, `len(u' '.join(hypothesis))`), words: their count (617). Rates: WSR =
  word strokes / words, MAR = mouse actions / words, KSMR = (keystrokes + mouse actions) / characters (688–691).
- Character level. The first wrong character (the longest common prefix, char.py 422) is typed: one keystroke
  (`errors_sentence`, 467); a mouse action when it is more than one character after the previous correction,
  which starts at 0 (469–471: a first correction at character 0 or 1 is free, one at 2 or later is not); the cut
  is one keystroke, no mouse action (474–476); one mouse action validates (488); characters are the reference
  string's (489), words its whitespace words (491). NMT-Keras' character-level "WSR" divides that same keystroke
  count by the words (514, 562), so this counting records word strokes = keystrokes, and WSR reproduces its figure.

**adaptsim** (our earlier refinements) counts the same keystrokes, characters and words, but mouse actions by
where the cursor is: right after the last typed text, at the very start before the first correction; a
correction, or the cut, away from it is a mouse action, one at it is not (so a word-level substitution right after
the last typed word is free, an insertion at the end or a cut costs one unless it is right after it, and a first
character-level correction at character 1 costs one); at the character level a word stroke is each word the user
types into. Validation, the cut's keystroke and word stroke, and the rates are as above.

What differs from NMT-Keras in both countings (the procedure, not the accounting):

- Only prefix-based interaction: NMT-Keras' segment-based mode (isles, `compute_mouse_movements`, word.py 425–461)
  is not simulated.
- Spelling: the system is sentencepiece's, not a word vocabulary. The word begun at the character level is
  completed by pieces that spell it (NMT-Keras, char.py 438–450, restricts the last word to vocabulary words that
  begin with it); where no piece can spell it the system appends nothing, so every correction moves on at least
  one character. The user's text is kept verbatim and the system appends its continuation (NMT-Keras forces the
  validated words' ids, replacing unknown words afterwards).
- Texts are compared with whitespace collapsed, and the reference is the data's detokenised one as the user would
  type it (NMT-Keras: the tokenised reference unless `--detokenize-bpe`), so characters are counted on it.
- Languages written without spaces between words (adaptsim.metrics.segmenters): the word level, which validates
  whitespace-separated words, is refused (`check_language`); at the character level the keystrokes, mouse actions
  and characters are counted as above, and the reference's words (WSR's and MAR's denominator, adaptsim's words
  typed into) are the metrics' segmenter's words that hold a letter or digit, since whitespace words would be whole
  clauses. The system's side is unchanged: everything validated since the last space is the word begun, which the
  first generated pieces must spell (so a correction reuses less of the prefix cache than between spaced words).
- At most `metrics.max_corrections` corrections per segment (NMT-Keras has no cap): then the user deletes the rest
  of the hypothesis (one keystroke, if there is any), types the rest of the reference (the word level's word
  strokes and characters, no spaces; the character level's characters) and moves the mouse there as the
  counting charges a correction at that place (`Effort.capped`).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from adaptsim.errors import UserError
from adaptsim.metrics.effort import Effort
from adaptsim.metrics.segmenters import Segmenter, spaceless
from adaptsim.metrics.words import is_word

MODES = ("off", "word", "char")
COSTS = ("nmt-keras", "adaptsim")  # metrics.interactive_costs


def mode_of(setting) -> str:
    """`metrics.interactive` as a mode name (YAML reads a bare `off` as false)."""
    if setting is False:
        return "off"
    if not isinstance(setting, str) or setting not in MODES:
        raise ValueError(f"metrics.interactive={setting!r}: choose {' | '.join(MODES)}")
    return setting


def check_language(mode, lang: str) -> None:
    """Refuse the word level for a language written without spaces: its whitespace words are clauses."""
    name = spaceless(lang) if mode == "word" else None
    if name is not None:
        raise UserError(f"metrics.interactive=word: the simulated translator validates whitespace-separated words, and "
                        f"{name} (metrics.lang={lang}) is written without spaces between words; use "
                        "metrics.interactive=char")


def simulate(mode: str, costs: str, reference: str, hypothesis: str, propose: Callable[[str], str],
             max_corrections: int, calls: Callable[[], int] = lambda: 0, segmenter: Segmenter | None = None
             ) -> Effort:
    """The effort to turn `hypothesis` into `reference` at `mode` level, counted as `costs` says;
    `propose(validated)` is the system's hypothesis once the user has validated the reference's first characters
    `validated`; `calls()` how many searches the system has run (summary cost); `segmenter`: the words of a language
    written without spaces (the metrics')."""
    start = time.perf_counter()
    effort = count(mode, costs, reference, shown(mode, reference, hypothesis, propose, max_corrections), segmenter)
    effort.decoder_calls, effort.seconds = calls(), time.perf_counter() - start
    return effort


def shown(mode: str, reference: str, hypothesis: str, propose: Callable[[str], str], max_corrections: int) -> list[str]:
    """The hypotheses the user sees (whitespace collapsed): the first, then the system's after each correction,
    until one holds the reference or `max_corrections` corrections were made (then the last still errs)."""
    reference = _collapsed(reference)
    ref = _units(mode, reference)
    hyps = [_collapsed(hypothesis)]
    while len(hyps) <= max_corrections and (p := _first_difference(_units(mode, hyps[-1]), ref)) < len(ref):
        validated = " ".join(ref[:p + 1]) + " " if mode == "word" else reference[:p + 1]
        hyps.append(_collapsed(propose(validated)))
    return hyps


def count(mode: str, costs: str, reference: str, hypotheses: list[str], segmenter: Segmenter | None = None) -> Effort:
    """What the user spends at `mode` level, counted as `costs` says (module docstring), to correct `hypotheses`
    (`shown`'s) into `reference`, whitespace collapsed: each but the last is corrected at its first error; the last
    holds the reference (cut if it runs past it) or, still wrong, is where the cap made the user type the rest.
    `segmenter` (character level only): the reference's words are its words with a letter or digit."""
    word, keras = mode == "word", costs == "nmt-keras"
    if word and segmenter is not None:
        raise ValueError("the word level counts whitespace words; a segmenter serves the character level only")
    reference = _collapsed(reference)
    ref = _units(mode, reference)
    spans = None if segmenter is None else _spans(reference, [w for w in segmenter.words(reference) if is_word(w)])
    effort = Effort(chars=len(reference), words=len(reference.split()) if spans is None else len(spans), level=mode,
                    costs=costs)
    cursor = last = 0  # adaptsim: after the last typed text; nmt-keras, char level: the last correction's position
    touched = set()  # character level, adaptsim: the words typed into
    for n, hypothesis in enumerate(hypotheses):
        hyp = _units(mode, _collapsed(hypothesis))
        p = _first_difference(hyp, ref)
        if p == len(ref):
            if len(hyp) > len(ref):  # the reference is validated; the rest is cut
                effort.KS += 1
                effort.WS += word
                effort.MA += not keras and len(ref) != cursor
            break
        if not keras:
            effort.MA += p != cursor
        elif word:
            effort.MA += p < len(hyp)  # a substitution; an insertion at the end is free (the jump never fires)
        else:
            effort.MA += p - last > 1
        capped = n == len(hypotheses) - 1  # the user deletes the rest and types the reference's
        typed = ref[p:] if capped else ref[p:p + 1]
        effort.KS += (capped and p < len(hyp)) + (sum(map(len, typed)) if word else len(typed))
        if word:
            effort.WS += len(typed)
        else:
            touched.update(_word_at(reference, q, spans) for q in range(p, p + len(typed)) if reference[q] != " ")
        effort.capped, cursor, last = capped, p + 1, p
    if not word:
        effort.WS = effort.KS if keras else len(touched - {None})
    effort.MA += 1  # validation
    return effort


def _collapsed(text: str) -> str:
    return " ".join(text.split())


def _units(mode: str, text: str):
    """What the user compares: words at the word level, characters at the character level."""
    return text.split() if mode == "word" else text


def _first_difference(a, b) -> int:
    """The first position where sequences (or strings) `a` and `b` differ; the shorter length if one begins the
    other."""
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))


def _word_at(text: str, position: int, spans: list[tuple[int, int]] | None = None) -> int | None:
    """Which word (0-based) of `text` the character at `position` belongs to: its whitespace word, or the span of
    `spans` that holds it (None: in none, a punctuation mark between a segmenter's words)."""
    if spans is None:
        return text.count(" ", 0, position)
    return next((k for k, (start, end) in enumerate(spans) if start <= position < end), None)


def _spans(text: str, words: list[str]) -> list[tuple[int, int]]:
    """[start, end) of each of `words` in `text`, found left to right (a word not found is left out)."""
    spans, cursor = [], 0
    for w in words:
        at = text.find(w, cursor)
        if at >= 0:
            spans.append((at, at + len(w)))
            cursor = at + len(w)
    return spans
