"""Terminology consistency over a stream: does a hypothesis keep the rendering of a term that the previous
post-edit used, and how many renderings does one term get in one document? Per segment, no I/O.

Definitions, with the choices the definition leaves open and why:
- Words. Reference and hypothesis words are the content words R0/R1 count (the run's WordPipeline: Moses tokens,
  truecased, no stopwords; a language written without spaces: its segmenter's words, adaptsim.metrics.segmenters),
  so a rendering is always a word R0/R1 could recall. Source words are Moses tokens
  with a letter, less LitTER's English function words (when its `stopwords` switch is on). A source word and a
  target word match as LitTER matches them: the target word, lower-cased, accent-stripped (switch) or its
  simplemma lemma, is one of the dictionary translations of the source word, of its lower-cased form or its lemma.
- A source word is keyed by its lower-cased lemma ("files" and "file" are one term); a segment holds it once
  however often its source says it (set level, like R0/R1).
- Rendering. Post-edit j renders term s when its source holds s and its reference a content word w matching s;
  the rendering is w's key: its normalised lemma where that is a dictionary translation of s, else w normalised
  (so "Dateien" and "Datei" are one rendering: inflection is not inconsistency). Several matching words: the
  rendering is their set, and reusing any of them is consistent.
- Terms of a scope (tied to R1): s is a term of a counting scope (the document, or the whole stream:
  the run's `metrics_scope`) when at some segment of it the reference renders s with a word R1 tracks there, a
  word that an earlier reference of the scope holds. Source words whose renderings never recur are not terms.
  This looks at the whole scope's post-edits, which are the same for every method, so it favours none.
- Judged occurrence: a segment i of the scope whose source holds a term s after an earlier post-edit of the scope
  rendered it; r_prev is the rendering of the most recent such post-edit (a reference that does not render s
  leaves r_prev as it was). The first post-edit's rendering counts, so a term seen twice is judged once, at its
  second occurrence, where R1 would count it. Occurrences are judged whether or not reference i renders s (the
  measure is "the share of later hypotheses"). Verdict on hypothesis i: consistent if one of its content words has
  r_prev as its normalised form or lemma; a different rendering if not, but one of its content words matches s;
  neither otherwise (s left untranslated, translated outside the dictionary, or as part of a compound).
- consistency = consistent / (consistent + different); consistency.all = consistent / judged occurrences.
- Distinct renderings: per (document, term of the document's scope) that at least two of the document's texts
  render (hypotheses; references for the post-edits' own figure), the number of distinct renderings among them
  (words: a text holding two dictionary renderings of the term counts both, since a bag of words cannot tell
  whether the second renders another source word; texts with more content words, the post-edits', can hold more);
  `renderings` is their mean (lower: more consistent). Per document even when the
  scope is the stream (the translators' complaint is about one document). A pair's (distinct, 1) is attributed to
  the segment of its last rendering, so documents' sums are right and a resampled corpus is a resample of pairs.
Hypotheses are bags of words, not aligned: a candidate of s that translates another source word counts for s
(as in LitTER).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from importlib.metadata import version

import numpy as np

from adaptsim.metrics.litter import Litter, lemma, words
from adaptsim.metrics.segmenters import tokenisation

CONSISTENT, DIFFERENT, NEITHER = "consistent", "different", "neither"
METRICS = ("consistency", "consistency.all", "renderings")


@dataclass(frozen=True)
class Occurrence:
    """A term in one segment's source."""
    term: str                          # its lower-cased source lemma
    candidates: frozenset[str]         # normalised dictionary translations (and their lemmas) of this form
    rendered: frozenset[str]           # the reference's rendering(s) of it; empty: the post-edit did not render it
    previous: frozenset[str] | None    # r_prev: the latest earlier post-edit's rendering in the scope; None: none
    tracked: bool                      # rendered with a word an earlier reference of the scope holds (R1's)
    is_term: bool = False              # the source word is a term of the scope (tracked somewhere in it)

    @property
    def judged(self) -> bool:
        return self.is_term and self.previous is not None


class Terms:
    """Source terms and their renderings for one language pair and dictionary (a Litter scorer's)."""

    def __init__(self, scorer: Litter):
        self.scorer = scorer
        self._keys: dict[str, tuple[str, frozenset[str]]] = {}  # target word -> (lemma key, forms)

    def source_terms(self, source: str) -> dict[str, frozenset[str]]:
        """The source's terms (lower-cased lemmas) with their candidates; words without a translation left out."""
        out: dict[str, frozenset[str]] = {}
        for token in words(source, self.scorer.source_lang):
            low = token.lower()
            if not any(c.isalpha() for c in low) or low in self.scorer.source_stopwords:
                continue
            candidates = self.scorer.candidates(token)
            if candidates:
                key = lemma(low, self.scorer.source_lang)
                out[key] = out.get(key, frozenset()) | candidates
        return out

    def _word(self, word: str) -> tuple[str, frozenset[str]]:
        if word not in self._keys:
            self._keys[word] = (self.scorer.normal(lemma(word, self.scorer.target_lang)),
                                frozenset(self.scorer.forms(word)))
        return self._keys[word]

    def matching(self, candidates: frozenset[str], content: frozenset[str]) -> list[str]:
        """The content words that translate a term with these candidates."""
        return [w for w in content if self._word(w)[1] & candidates]

    def rendering(self, candidates: frozenset[str], content: frozenset[str]) -> frozenset[str]:
        """The rendering keys of a term in a text's content words (empty: not rendered)."""
        return frozenset(self.key(w, candidates) for w in self.matching(candidates, content))

    def key(self, word: str, candidates: frozenset[str]) -> str:
        lemma_key, forms = self._word(word)
        return lemma_key if lemma_key in candidates else min(forms & candidates)

    def bag(self, content: frozenset[str]) -> frozenset[str]:
        """Every normalised form and lemma of a text's content words."""
        return frozenset().union(*(self._word(w)[1] for w in content))

    def signature(self, scope: str) -> str:
        sc = self.scorer
        return "|".join([f"terms|lang:{sc.source_lang}-{sc.target_lang}", f"scope:{scope}",
                         f"tok:{tokenisation(sc.target_lang)}", f"dict:{'+'.join(sc.dictionary.names)}",
                         f"stop:{'yes' if sc.stopwords else 'no'}",
                         f"acc:{'strip' if sc.strip_accents else 'keep'}", f"lemma:simplemma-{version('simplemma')}"])

    def verdict(self, occurrence: Occurrence, content: frozenset[str]) -> str | None:
        """CONSISTENT, DIFFERENT or NEITHER for a text's content words at a judged occurrence; None if not judged."""
        if not occurrence.judged:
            return None
        if occurrence.previous & self.bag(content):
            return CONSISTENT
        return DIFFERENT if self.matching(occurrence.candidates, content) else NEITHER


def stream(terms: Terms, sources: Sequence[str], references: Sequence[frozenset[str]],
           groups: Sequence[object]) -> list[list[Occurrence]]:
    """Every segment's term occurrences; `references`: each reference's content words; `groups`: each segment's
    counting scope (its document id, or one value for the whole stream), restarting where it changes."""
    out: list[list[Occurrence]] = []
    scopes: list[tuple[int, int]] = []  # (start, end) of each scope
    seen: set[str] = set()
    last: dict[str, frozenset[str]] = {}
    previous = object()
    for i, (source, content, group) in enumerate(zip(sources, references, groups, strict=True)):
        if group != previous:
            seen, last, previous = set(), {}, group
            scopes.append((i, i))
        here = []
        for term, candidates in terms.source_terms(source).items():
            renders = terms.matching(candidates, content)
            rendered = frozenset(terms.key(w, candidates) for w in renders)
            here.append(Occurrence(term, candidates, rendered, last.get(term), any(w in seen for w in renders)))
        last.update({o.term: o.rendered for o in here if o.rendered})
        seen |= content
        out.append(here)
        scopes[-1] = (scopes[-1][0], i + 1)
    for start, end in scopes:
        found = {o.term for segment in out[start:end] for o in segment if o.tracked}
        for i in range(start, end):
            out[i] = [replace(o, is_term=o.term in found) for o in out[i]]
    return out


def statistics(terms: Terms, occurrences: list[list[Occurrence]], texts: Sequence[frozenset[str]],
               doc_ids: Sequence[str]) -> dict[str, np.ndarray]:
    """Per segment (segments × 2) statistics of each figure in METRICS for one text per segment (a run's
    hypotheses' content words, or the references'): consistency (consistent, consistent + different),
    consistency.all (consistent, judged), renderings (distinct renderings, (document, term) pairs), and the raw
    counts of the three verdicts (`verdicts`: segments × 3)."""
    n = len(occurrences)
    out = {m: np.zeros((n, 2)) for m in METRICS}
    counts = np.zeros((n, 3))
    used: dict[tuple[str, str], list[tuple[int, frozenset[str]]]] = defaultdict(list)
    for i, (segment, content, doc) in enumerate(zip(occurrences, texts, doc_ids, strict=True)):
        for o in segment:
            if not o.is_term:
                continue
            rendered = terms.rendering(o.candidates, content)
            if rendered:
                used[str(doc), o.term].append((i, rendered))
            v = terms.verdict(o, content)
            if v is None:
                continue
            counts[i] += (v == CONSISTENT, v == DIFFERENT, v == NEITHER)
    out["consistency"][:, 0] = out["consistency.all"][:, 0] = counts[:, 0]
    out["consistency"][:, 1] = counts[:, 0] + counts[:, 1]
    out["consistency.all"][:, 1] = counts.sum(axis=1)
    for renderings in used.values():
        if len(renderings) >= 2:
            out["renderings"][renderings[-1][0]] += (len(frozenset().union(*(r for _, r in renderings))), 1)
    out["verdicts"] = counts
    return out
