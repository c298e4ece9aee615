"""Target text → set of content-word types (docs/design.md §4), cached per distinct string and token.

Languages written without spaces between words (Chinese, Japanese, Korean, Thai) are cut into words by their
segmenter (adaptsim.metrics.segmenters: jieba, fugashi + unidic-lite, kiwipiepy, pythainlp; the extra `cjk`) and
not cased: their scripts have no case, so `case: truecase` means `none` there (`lower` still lowercases the Latin
words they quote); the stopwords-iso list of the language then filters the segmenter's words, and so does the
analyser where it tags words as grammatical (ja, ko: particles, auxiliaries, the copula; `grammatical` holds those
seen, for the reports that tell stopwords from content words). Such a language
without a segmenter is refused, as are references written mostly in such a script under a language written with
spaces (`content_words`). Every other language takes the Moses path below, unchanged.

Pipeline: Moses tokenizer (escaped, as the Moses truecaser expects) → Moses truecaser trained on
target-side text (or lowercasing, or nothing) → unescape → keep tokens that are not stopwords and
hold a letter or digit. Comparisons after this are case-sensitive: truecasing is what keeps the
German noun "Mann" apart from the stopword "mann" while turning sentence-initial "Die" into "die".

Truecasing is sentence-level, as Moses' truecase.perl does it (sacremoses `use_known=True`): a word at
the start of a sentence takes its most frequent casing, a word elsewhere keeps its casing if that casing
was seen in training, and only unseen casings are changed. So mid-sentence "das Essen" (the food) stays
apart from "wir essen" (we eat) even where "essen" is the more frequent form; token by token, every
"Essen" would become "essen".

Speed: the Moses tokenizer and the truecaser run once per distinct string; the stopword/word filter
once per distinct cased token.
"""

from __future__ import annotations

import html
import unicodedata
from collections.abc import Iterable, Sequence
from pathlib import Path

import stopwordsiso
from sacremoses import MosesTokenizer, MosesTruecaser

from adaptsim.data.textio import read_lines
from adaptsim.errors import UserError
from adaptsim.metrics.segmenters import base_language, check_script, segmenter_for, stopword_language

CASES = ("truecase", "lower", "none")
_UNSEEN = object()


def load_stopwords(lang: str, path: str | Path | None = None) -> frozenset[str]:
    """The stopwords-iso list for `lang` (read by segmenters.stopword_language), or the words of `path` (one per
    line, compared as written)."""
    if path is not None:
        return frozenset(w.strip() for w in read_lines(path) if w.strip())
    check_stopwords(lang)
    return frozenset(stopwordsiso.stopwords(stopword_language(lang)))


def check_stopwords(lang: str) -> None:
    """Refuse, in one line naming the setting, a language stopwords-iso has no list for (a run's settings check)."""
    code = stopword_language(lang)
    if not stopwordsiso.has_lang(code):
        raise UserError(f"metrics.lang={lang}: no stopwords-iso list for language {code!r}; give a stopword file "
                        "(--stopwords FILE, metrics.stopwords=FILE)")


def is_word(token: str) -> bool:
    """Punctuation and symbols are never content words: a word holds a letter or a digit."""
    return any(c.isalnum() for c in token)


def is_punctuation(text: str) -> bool:
    """Text of punctuation and symbols only (Unicode categories P*, S*)."""
    return bool(text) and all(unicodedata.category(c)[0] in "PS" for c in text)


def _unescape(token: str) -> str:
    return html.unescape(token) if "&" in token else token


def _as_written(token: str) -> str:
    return token


class WordPipeline:
    """Tokenises, cases and filters target text; every step keyed on the target language."""

    def __init__(self, lang: str, stopwords: frozenset[str], case: str = "truecase"):
        if case not in CASES:
            raise UserError(f"metrics case must be one of {', '.join(CASES)}, not {case!r}")
        self.segmenter = segmenter_for(lang)  # None: Moses
        if self.segmenter is not None and case == "truecase":
            case = "none"  # a script without case (module docstring)
        self.lang, self.case, self.stopwords = lang, case, stopwords
        self.tok = "moses" if self.segmenter is None else self.segmenter.name  # the signature's tokenisation
        self._tokenizer = MosesTokenizer(lang=base_language(lang)) if self.segmenter is None else None
        self._plain = _unescape if self.segmenter is None else _as_written  # Moses escapes, segmenters do not
        self._truecaser: MosesTruecaser | None = None
        self._content: dict[str, frozenset[str]] = {}  # text -> content words
        self.grammatical: set[str] = set()  # words a segmenter's analyser tagged grammatical (no content words)
        self._word: dict[str, str | None] = {}  # cased, escaped Moses token -> content word, or None

    def fit(self, texts: Iterable[str], keep: bool = False) -> None:
        """Train the truecaser on `texts` (case="truecase" only); `keep` caches their content words,
        for when `texts` are the references, which are scored next anyway."""
        if self.case != "truecase":
            return
        tokenized = {text: self._escaped(text) for text in texts}
        self._truecaser = MosesTruecaser()
        self._truecaser.train(list(tokenized.values()))
        self._content.clear()
        self._word.clear()
        if keep:
            for text, tokens in tokenized.items():
                self._content[text] = self._words_of(tokens)

    def _escaped(self, text: str) -> list[str]:
        """Moses' escaped tokens (the truecaser's input), or the segmenter's words."""
        if self.segmenter is not None:
            return self.segmenter.words(text)
        return self._tokenizer.tokenize(text, escape=True)

    def _cased(self, escaped_tokens: list[str]) -> list[str]:
        """One sentence's tokens, cased (sentence-level truecasing: see the module docstring)."""
        if self.case == "truecase":
            if self._truecaser is None:
                raise RuntimeError("WordPipeline.fit() must train the truecaser first")
            if not escaped_tokens:
                return []
            return self._truecaser.truecase(" ".join(escaped_tokens), use_known=True)
        return [t.lower() for t in escaped_tokens] if self.case == "lower" else escaped_tokens

    def _segmented(self, text: str) -> frozenset[str]:
        """Content words of a text in a language written without spaces: its segmenter's words less those the
        analyser tags grammatical, through the one filter."""
        analysed = self.segmenter.analyse(text)
        self.grammatical.update(w for w, grammatical in analysed if grammatical)
        return self._words_of([w for w, grammatical in analysed if not grammatical])

    def _words_of(self, escaped_tokens: list[str]) -> frozenset[str]:
        words = set()
        for token in self._cased(escaped_tokens):
            word = self._word.get(token, _UNSEEN)
            if word is _UNSEEN:
                word = self._plain(token)
                word = self._word[token] = word if word not in self.stopwords and is_word(word) else None
            if word is not None:
                words.add(word)
        return frozenset(words)

    def raw_tokens(self, text: str) -> list[str]:
        """Moses tokens (or the segmenter's words) of `text` as written (no casing), unescaped."""
        return [self._plain(t) for t in self._escaped(text)]

    def tokens(self, text: str) -> list[str]:
        """Moses tokens (or the segmenter's words) of `text` after casing, unescaped (so "&" is "&", not "&amp;")."""
        return [self._plain(t) for t in self._cased(self._escaped(text))]

    def __call__(self, text: str) -> frozenset[str]:
        """Content-word types of `text`."""
        words = self._content.get(text)
        if words is None:
            words = self._content[text] = (self._words_of(self._escaped(text)) if self.segmenter is None
                                           else self._segmented(text))
        return words


def content_words(references: Sequence[str], lang: str, case: str, stopwords: str | Path | None,
                  truecase_text: Sequence[str] | None) -> WordPipeline:
    """A run's content words, built the one way: the target language's tokenizer and stopwords (`stopwords`: a file,
    else stopwords-iso's), the truecaser trained on `truecase_text` or else on the references (whose content words
    are then cached, as they are scored next). For the Evaluator, and for the reports that group words as the run
    did (adaptsim.metrics.roles). References written mostly in a script without spaces under a language written with
    them are refused (segmenters.check_script)."""
    segmenter_for(lang)  # a language without spaces and without a segmenter: refused before its stopwords are sought
    check_script(lang, references)
    words = WordPipeline(lang, load_stopwords(lang, stopwords), case)
    words.fit(references if truecase_text is None else truecase_text, keep=truecase_text is None)
    return words
