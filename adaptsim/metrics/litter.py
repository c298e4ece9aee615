"""LitTER, the literal translation error rate of idioms (Baziotis, Mathur & Hasler, EACL 2023): per segment, then
over the stream (the figures of `adaptsim litter`, adaptsim/report/litter.py, at the end of this module).

A segment is an error when the hypothesis holds a dictionary translation of an idiom word that the reference
avoids. Read against the authors' code, amazon-research/idiom-mt `metrics/litter.py` (line numbers below are
that file's) and `experiments/eval-idiom-litter.sh`. As there: the idiom's words are those of the source (the
caller locates the idiom there, IdiomList.locate; the reference cuts its span out of the source, l. 577–579);
each word's candidates are its dictionary translations as written and lower-cased (l. 613–614), from both
directions (l. 547–549); a word with a candidate in the reference leaves, with all its candidates (l. 637–648);
the rest is the blocklist, and a hypothesis word in it is an error (l. 663–669). Then, by switch, compounds of
two candidates of the idiom, whatever the blocklist (l. 671–684), and partial matches (l. 686–699). A span
without a word (punctuation, or stopwords where they are stripped) has no verdict (l. 628–631); an empty
blocklist is no error (l. 701–702). Texts are tokenised by Moses with aggressive dash splits (l. 83–87), target
words lower-cased (both presets: the authors' `--lower`).

Presets (configs/litter/presets.yaml): `paper`, the authors' script (`--lower --strip-accents --macro`: no
stopwords, compounds, partial matches or lemmas), and `adaptsim`, every refinement below on. Differences that
remain in both: dictionary entries are one word on both sides in every format (MUSE's are); Moses does not
escape ("don't" stays one word with its apostrophe, where the reference's escape=True makes "&apos;t"), and
only tokens with a letter or digit count (the reference skips one-character punctuation, l. 602); the reference's
lemma variant uses spaCy (l. 105–108, 188–225), adaptsim's simplemma; fuzzy matching (l. 306–332) and
`--strip-sourcewords` (l. 605–607; both off in the authors' script) are not offered; the reference scores one span
per line (the last, l. 578), adaptsim every labelled idiom of a segment.

A target language written without spaces (adaptsim.metrics.segmenters: zh, ja, ko, th) is cut into words by the
metrics' segmenter instead of Moses (the words R0/R1 count), its words are their own lemmas (simplemma has no data
for these languages), and accents are never stripped there: a kana's voicing mark (が → か) or a Hangul syllable's
letters are no accent.

adaptsim's refinements (preset `adaptsim`), and why:
- `lemmas`: target words (texts and dictionary entries) each with its simplemma lemma too, so "Bohnen" meets a
  dictionary's "Bohne", and a source word's lemma looked up as well. Lemmas come from the cased token:
  simplemma reads lower-case "vögel" as the verb "vögeln".
- `stopwords`, English side: a short function-word list, not stopwords-iso's 1,298 words, which removes a
  content word from 95 of the 225 LitTER idioms ("acid test", "bring home the bacon", "cloud nine",
  "crash course") and every word of 5 ("get over something", "so far so good").
- `stopwords`, German side: stopwords-iso words leave the blocklist. Dictionary articles and pronouns are
  what makes false alarms (swapped proverbs flagged: 10/94 with no stopwords, 5 with the English list
  alone, 3 with both; literal ones: 86, 80, 77). They leave only after the reference check: the list
  also holds translations of 101 of the 348 proverb content words ("tag", "gut", "zwei", "offen"), and "Tag" in
  a reference must still clear "day"; articles clear almost nothing (MUSE gives one for 6 of the 348).
- `compounds` join two candidates of the idiom (the hypothesis word absent from the reference); a `partial`
  match's remainder (the word less the blocked one, l. 367) must be a dictionary word that is no stopword
  ("schlafen|der" is no compound), compared normalised (the reference compares it with the entries as written,
  l. 553–556 and 368, so an accented remainder never matches there).
- Dictionary entries are kept only where both sides are one word, in every format: a multi-word source
  never meets a word bag, and each word of a multi-word Wiktionary target ("einen Tritt geben" for
  "kick") blocks generic words: with Wiktionary added to MUSE, 5/94 swapped proverbs flagged instead of
  4 (18 instead of 15 without stopwords), and no more literal ones.
- Idiom matching (`IdiomList`, both presets; the reference's spans come from its extractor,
  phrase_extractor.py l. 81–158: spaCy lemmas, an optional leading "the"/"to", optional "own"/"any", a
  placeholder for any word, contiguous): lemmas through simplemma, and up to `gap` other words before each next
  word of the idiom (configs/litter/muse_en-de.yaml: split forms, "pass it on"). "someone's", "one's",
  "somebody's", "sb's", and "your" (the list's generic possessive: "bury your head in the sand") match a
  possessive pronoun or a word and "'s" (Moses splits "John's"); "someone", "somebody", "something", "sth", "sb"
  match any one word.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from functools import cache, lru_cache
from importlib.metadata import version
from pathlib import Path

import numpy as np
import simplemma
import stopwordsiso
from sacremoses import MosesTokenizer

from adaptsim.data.textio import is_blank, read_lines
from adaptsim.errors import DataError, UserError
from adaptsim.metrics.segmenters import segmenter_for, spaceless, stopword_language, tokenisation
from adaptsim.metrics.words import is_word

ENGLISH_FUNCTION_WORDS = frozenset("""
a an the
of in to on at by for from with into onto upon about over under up down out off through around between
i me you he him she her it we us they them someone somebody something oneself myself yourself himself
herself itself ourselves yourselves themselves
my your his its our their one's someone's somebody's sb's 's
be is am are was were been being have has had do does did will would shall should can could may might must
and or but than as that if not 'll 're 've 'd 'm n't 't
""".split())
POSSESSIVE_PRONOUNS = frozenset("my your his her its our their".split())
ANY, POSSESSIVE = "<someone>", "<someone's>"  # wildcards in a tokenised idiom; Moses never makes such tokens
FORMATS = ("hunalign", "wiktionary", "tsv")
_BRACKETED = re.compile(r"\([^()]*\)|\[[^\[\]]*\]|\{[^{}]*\}")


@cache
def lemma(word: str, lang: str) -> str:
    """simplemma's lemma; a word of a language written without spaces is its own (simplemma has none of them)."""
    return word if spaceless(lang) else simplemma.lemmatize(word, lang=lang)


@cache
def _moses(lang: str) -> MosesTokenizer:
    return MosesTokenizer(lang=lang)


def words(text: str, lang: str, dashes: bool = False) -> list[str]:
    """Moses tokens that hold a letter or digit (no punctuation), curly apostrophes made straight; `dashes`:
    LitTER's tokenisation, hyphenated words split as the reference's (litter.py l. 83–87,
    aggressive_dash_splits=True), so "Zebra-Streifen" is "Zebra" and "Streifen"."""
    text = text.replace("\u2019", "'")
    segmenter = segmenter_for(lang)  # a language written without spaces: its segmenter's words (module docstring)
    if segmenter is not None:
        return [t for t in segmenter.words(text) if is_word(t)]
    return [t for t in _moses(lang).tokenize(text, escape=False, aggressive_dash_splits=dashes) if is_word(t)]


def unaccented(word: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", word) if not unicodedata.combining(c))


def _idiom_tokens(idiom: str, lang: str = "en") -> list[str]:
    tokens, out = words(idiom, lang, True), []
    for i, token in enumerate(tokens):
        low, after = token.lower(), tokens[i + 1] if i + 1 < len(tokens) else ""
        if (after == "'s" and low in ("one", "someone", "somebody", "sb")) or low == "your":
            out.append(POSSESSIVE)
        elif low in ("someone", "somebody", "something", "sth", "sb"):
            out.append(ANY)
        elif not (token == "'s" and out and out[-1] == POSSESSIVE):
            out.append(token)
    return out


class IdiomList:
    """Idioms to find in source sentences, and the words they occupy there: matched on lower-cased words and their
    simplemma lemmas ("took it easy" for "take it easy"), with up to `gap` other words before each next word of
    the idiom ("pass the ball on" for "pass on"; 0: contiguous)."""

    def __init__(self, idioms: Iterable[str], lang: str, gap: int):
        self.lang, self.gap = lang, gap
        self.idioms = [i.strip() for i in idioms if not is_blank(i)]
        self._patterns: dict[str, list] = {}

    @classmethod
    def load(cls, path, lang: str, gap: int) -> IdiomList:
        return cls(read_lines(path), lang, gap)

    def _keys(self, token: str) -> frozenset[str]:
        low = token.lower()
        return frozenset((low, lemma(low, self.lang)))

    def pattern(self, idiom: str) -> list:
        """Per idiom word: its keys, or a wildcard. A leading "to" or "the" is optional, so never part of the
        span: the reference's span is the last of its extractor's matches, the one without it
        (phrase_extractor.py l. 114–115, litter.py l. 578)."""
        if idiom not in self._patterns:
            pattern = [t if t in (ANY, POSSESSIVE) else self._keys(t) for t in _idiom_tokens(idiom, self.lang)]
            if len(pattern) > 1 and isinstance(pattern[0], frozenset) and pattern[0] & {"to", "the"}:
                pattern = pattern[1:]
            self._patterns[idiom] = pattern
        return self._patterns[idiom]

    def locate(self, idiom: str, source: str) -> list[str] | None:
        """The source words that `idiom` occupies in `source` (its leftmost match; wildcards' words included, the
        words of a gap not), or None where it does not occur."""
        tokens, keys = _source_keys(source, self.lang)
        pattern = self.pattern(idiom)
        for i in range(len(keys) if pattern else 0):
            found = _match(pattern, keys, i, self.gap)
            if found is not None:
                return [tokens[j] for j in found]
        return None

    def find(self, source: str) -> list[str]:
        """The idioms (as written in the list) that occur in `source`."""
        return [idiom for idiom in self.idioms if self.locate(idiom, source) is not None]


@lru_cache(maxsize=4096)
def _source_keys(source: str, lang: str) -> tuple[list[str], list[frozenset[str]]]:
    tokens = words(source, lang, dashes=True)
    return tokens, [frozenset((t.lower(), lemma(t.lower(), lang))) for t in tokens]


def _match(pattern: Sequence, keys: list[frozenset[str]], i: int, gap: int) -> list[int] | None:
    """The positions of the words `pattern` matches, its first word at position i and up to `gap` other words
    before each next one; None for no match."""
    head, rest = pattern[0], pattern[1:]
    if head == POSSESSIVE:
        options = ([[i]] if keys[i] & POSSESSIVE_PRONOUNS else []) + (
            [[i, i + 1]] if i + 1 < len(keys) and "'s" in keys[i + 1] else [])
    else:
        options = [[i]] if head == ANY or head & keys[i] else []
    for used in options:
        if not rest:
            return used
        for j in range(used[-1] + 1, min(used[-1] + 2 + gap, len(keys))):
            found = _match(rest, keys, j, gap)
            if found is not None:
                return used + found
    return None


class Dictionary:
    """Source word → its target words as written, from every file and both directions, merged."""

    def __init__(self, translations: Mapping[str, Iterable[str]], names: Sequence[str] = ()):
        self.translations = {s: frozenset(ts) for s, ts in translations.items()}
        self.vocabulary = frozenset().union(*self.translations.values())  # every target word
        self.names = tuple(names)

    @classmethod
    def load(cls, specs: Iterable[Mapping], source_lang: str, target_lang: str) -> Dictionary:
        """`specs`: {path, format (hunalign | wiktionary | tsv), from, to} each, `from`-`to` being the
        two languages either way round. Entries with more than one word on either side are skipped."""
        translations, names = defaultdict(set), []
        for spec in specs:
            if not isinstance(spec, Mapping) or None in (spec.get(k) for k in ("path", "format", "from", "to")):
                raise UserError(f"a dictionary needs path, format, from and to; got {spec!r}")
            path, fmt, src, tgt = (spec[k] for k in ("path", "format", "from", "to"))
            if fmt not in FORMATS:
                raise UserError(f"{path}: dictionary format must be one of {', '.join(FORMATS)}, not {fmt!r}")
            if (src, tgt) not in ((source_lang, target_lang), (target_lang, source_lang)):
                raise UserError(f"{path}: a {src}→{tgt} dictionary does not serve {source_lang}→{target_lang}")
            for a, b in _READERS[fmt](path):  # (from word, to word)
                s, t = (a, b) if src == source_lang else (b, a)
                if len(s.split()) == len(t.split()) == 1:
                    translations[s].add(t)
            names.append(Path(path).name)
        return cls(translations, names)


def _columns(path, separator: str, layout: str):
    """(from word, to word) of each line, two columns; `layout` ("SOURCE<TAB>TARGET") says their order."""
    for n, line in enumerate(read_lines(path), 1):
        if not is_blank(line):
            parts = [p.strip() for p in line.split(separator)]
            if len(parts) != 2:
                raise DataError(path, f"expected '{layout}'", n)
            yield parts if layout.startswith("SOURCE") else parts[::-1]


def _unbracketed(text: str) -> str:
    n = 1
    while n:  # innermost first: glosses nest, "(apply force to (something))"
        text, n = _BRACKETED.subn(" ", text)
    return " ".join(re.sub(r"[(){}\[\]]", " ", text).split())


def _wiktionary(path):
    for n, line in enumerate(read_lines(path), 1):
        if is_blank(line) or line.startswith("#"):
            continue
        left, separator, right = (line + " ").partition(" :: ")  # "SEE:" lines end in " ::"
        if not separator:
            raise DataError(path, "expected 'word {pos} (gloss) :: translation, …' (wiktionary dictionary)", n)
        if "SEE:" not in left:
            source = _unbracketed(left)
            for target in re.split(r"[,;]", _unbracketed(right)):
                yield source, target.strip()


_READERS = {"hunalign": lambda path: _columns(path, " @ ", "TARGET @ SOURCE"),
            "tsv": lambda path: _columns(path, "\t", "SOURCE<TAB>TARGET"), "wiktionary": _wiktionary}


class Litter:
    """Literal-translation verdicts for one language pair, one dictionary and one set of switches (a preset's,
    configs/litter/presets.yaml)."""

    def __init__(self, dictionary: Dictionary, source_lang: str, target_lang: str, *, stopwords: bool,
                 strip_accents: bool, compounds: bool, partial: bool, lemmas: bool):
        if stopwords and source_lang != "en":
            raise UserError(f"LitTER knows source stopwords for English only, not {source_lang!r}; "
                            "set stopwords off")
        if stopwords and not stopwordsiso.has_lang(stopword_language(target_lang)):
            raise UserError(f"no stopwords-iso list for {target_lang!r}; set stopwords off")
        self.dictionary, self.source_lang, self.target_lang = dictionary, source_lang, target_lang
        strip_accents = strip_accents and not spaceless(target_lang)  # no accents in those scripts (docstring)
        self.stopwords, self.strip_accents, self.compounds, self.partial = stopwords, strip_accents, compounds, partial
        self.lemmas = lemmas
        self.source_stopwords = ENGLISH_FUNCTION_WORDS if stopwords else frozenset()
        target_list = stopwordsiso.stopwords(stopword_language(target_lang)) if stopwords else ()
        self.target_stopwords = frozenset(map(self.normal, target_list))
        self.vocabulary = frozenset(map(self.normal, dictionary.vocabulary)) - self.target_stopwords
        self._candidates_of: dict[str, frozenset[str]] = {}
        self._bags: dict[str, frozenset[str]] = {}  # text -> bag: a stream's references are scored once per run

    def normal(self, word: str) -> str:
        """A target word lower-cased, and without accents unless `strip_accents` is off."""
        return unaccented(word.lower()) if self.strip_accents else word.lower()

    def forms(self, word: str) -> set[str]:
        """`word` normalised (lower case, accents as the switch says), and its simplemma lemma normalised where
        `lemmas` is on."""
        return {self.normal(word), self.normal(lemma(word, self.target_lang))} if self.lemmas else {self.normal(word)}

    def bag(self, text: str) -> frozenset[str]:
        """The normalised target words of `text` (LitTER's tokenisation: dashes split), and their lemmas."""
        if text not in self._bags:
            self._bags[text] = frozenset().union(*(self.forms(t) for t in words(text, self.target_lang, True)))
        return self._bags[text]

    def candidates(self, word: str) -> frozenset[str]:
        """Normalised translations of a source word as written and lower-cased (the reference's litter.py
        l. 613–614), and of its lemma where `lemmas` is on."""
        if word not in self._candidates_of:
            low = word.lower()
            keys = {word, low, lemma(low, self.source_lang)} if self.lemmas else {word, low}
            found = set().union(*(self.dictionary.translations.get(k, ()) for k in keys))
            self._candidates_of[word] = frozenset().union(*map(self.forms, found))
        return self._candidates_of[word]

    def _span_candidates(self, span: Iterable[str]) -> list[frozenset[str]]:
        return [self.candidates(w) for w in span if is_word(w) and w.lower() not in self.source_stopwords]

    def _blocked(self, candidates: list[frozenset[str]], reference: frozenset[str]) -> frozenset[str]:
        return frozenset().union(*(c for c in candidates if not c & reference)) - self.target_stopwords

    def blocklist(self, span: Iterable[str], reference: str) -> frozenset[str]:
        """Target words that translate an idiom word which the reference does not translate literally."""
        return self._blocked(self._span_candidates(span), self.bag(reference))

    def error(self, span: Iterable[str], reference: str, hypothesis: str) -> bool | None:
        """Whether `hypothesis` translates the idiom words `span` (as they stand in the source) literally, in the
        reference's order of checks (litter.py l. 663–702): a blocked word, then (`compounds`) two candidates of
        the idiom joined, whatever the blocklist, then (`partial`) a blocked word inside a longer word. None (no
        verdict) for a span without a content word (l. 628–631)."""
        candidates = self._span_candidates(span)
        if not candidates:
            return None
        ref, hyp = self.bag(reference), self.bag(hypothesis)
        blocked = self._blocked(candidates, ref)
        if blocked & hyp:
            return True
        every = frozenset().union(*candidates) - self.target_stopwords
        if self.compounds and any(w[:k] in every and w[k:] in every and w[:k] != w[k:]
                                  for w in hyp - ref for k in range(1, len(w))):
            return True
        return self.partial and bool(self._partial_matches(blocked, hyp) - self._partial_matches(blocked, ref))

    def _partial_matches(self, blocked: frozenset[str], bag: frozenset[str]) -> set[str]:
        """Blocked words that begin or end a word of `bag` whose remainder (the word with every copy of the
        blocked one removed, as the reference's find_partial, l. 351–371) is a dictionary word."""
        return {b for b in blocked for w in bag
                if (w.startswith(b) or w.endswith(b)) and w.replace(b, "") in self.vocabulary}

    def signature(self) -> str:
        yes = {True: "yes", False: "no"}
        return "|".join([f"LitTER|lang:{self.source_lang}-{self.target_lang}",
                         f"tok:{tokenisation(self.target_lang, 'moses-dashes')}",
                         f"dict:{'+'.join(self.dictionary.names)}", "case:low", f"stop:{yes[self.stopwords]}",
                         f"acc:{'strip' if self.strip_accents else 'keep'}", f"comp:{yes[self.compounds]}",
                         f"partial:{yes[self.partial]}",
                         f"lemma:{'simplemma-' + version('simplemma') if self.lemmas else 'no'}"])


# -- over the stream (`adaptsim litter`: LitTER, LitTER.macro, LitTER0, LitTER1, …, LitTER.repeat) -------------
def occurrences(spans: list[list[str]], doc_ids: list[str], scope: str) -> list[list[tuple[str, int]]]:
    """Per segment, its idioms with their occurrence index k in the counting scope."""
    out, seen, previous = [], Counter(), object()
    for idioms, doc in zip(spans, doc_ids):
        group = doc if scope == "document" else None
        if group != previous:
            seen, previous = Counter(), group
        here = []
        for idiom in idioms:
            here.append((idiom, seen[idiom]))
            seen[idiom] += 1
        out.append(here)
    return out


def statistics(verdicts: list[list[bool | None]], occ: list[list[tuple[str, int]]], labels: list[str],
               k_max: int) -> dict[str, np.ndarray]:
    """Per-segment statistics of every LitTER figure (errors, occurrences with a verdict; macro: per idiom)."""
    n = len(occ)
    names = ["LitTER", "LitTER.macro", *(f"LitTER{k}" for k in range(k_max + 1)), "LitTER.repeat"]
    stats = {m: np.zeros((n, 2 * len(labels) if m == "LitTER.macro" else 2)) for m in names}
    column = {label: j for j, label in enumerate(labels)}
    last: dict[tuple[str, int], bool | None] = {}
    for i, (segment, verdict) in enumerate(zip(occ, verdicts)):
        for (idiom, k), error in zip(segment, verdict):
            if k and last.get((idiom, k - 1)) is True and error is not None:
                stats["LitTER.repeat"][i] += (error, 1)
            last[idiom, k] = error
            if error is None:
                continue
            stats["LitTER"][i] += (error, 1)
            if k <= k_max:
                stats[f"LitTER{k}"][i] += (error, 1)
            stats["LitTER.macro"][i, 2 * column[idiom]:2 * column[idiom] + 2] += (error, 1)
    return stats


def macro(t: np.ndarray) -> np.ndarray:
    """Mean over idioms of each idiom's rate (percent), idioms without a verdict left out."""
    num, den = t[..., 0::2], t[..., 1::2]
    with np.errstate(invalid="ignore", divide="ignore"):
        rates = np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)
        return 100 * np.nanmean(rates, axis=-1)
