"""A reference word's role in the stream, by R0/R1's counting (docs/design.md §4): what CXMI's words (adaptsim/metrics/
cxmi.py), terminology consistency (`adaptsim terms`) and recall by fuzzy match (`table --bands-by-match`) group by.

Content words are the run's own (its metric settings: tokenizer or, for a language written without spaces, its
segmenter (adaptsim/metrics/segmenters.py), truecaser trained as its evaluator trained it, stopwords), counted in
the run's scope at set level (adaptsim.metrics.recall). A word is the first, the second (recalled or missed by the
hypothesis a caller names: another run's, never the one whose outcome is measured by the split — or just "second")
or a later occurrence of a content word; "other content" where the
metrics' tokenisation does not see it as one content word (hyphenated compounds, a word split differently); a
stopword (or a word a segmenter's analyser tags grammatical: adaptsim.metrics.words); punctuation; the end of
sentence (and any language token).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from adaptsim import config_defaults
from adaptsim.data.textio import read_lines
from adaptsim.errors import UserError
from adaptsim.metrics.recall import occurrence_levels
from adaptsim.metrics.words import content_words, is_punctuation

ROLES = ("first", "second", "second, recalled", "second, missed", "later", "other content", "stopword", "punctuation",
         "end")
_METRICS = config_defaults("metrics/default.yaml")  # a setting a run's record lacks: its default (configs/metrics)


class Roles:
    """Each reference word's role in the stream, by R0/R1's counting, for one run's hypotheses."""

    def __init__(self, metrics: Mapping, references: Sequence[str], doc_ids: Sequence[str], scope: str):
        """`metrics`: the run's metric settings (summary.json's config.metrics); its target language is needed,
        the others default as in configs/metrics."""
        if not metrics.get("lang"):
            raise UserError("word roles need the run's target language (metrics.lang), which its summary.json does "
                            "not record (written by an older adaptsim)")
        setting = {key: metrics.get(key, _METRICS[key]) for key in ("case", "stopwords", "truecase_text")}
        text = setting["truecase_text"]  # the truecaser trained as the run's evaluator trained it
        self.words = content_words(references, metrics["lang"], setting["case"], setting["stopwords"],
                                   None if text is None else read_lines(text))
        self.sets = [self.words(r) for r in references]
        groups = list(doc_ids) if scope == "document" else [None] * len(references)
        self.levels = occurrence_levels(self.sets, groups, 1)
        self.previous = _previous_occurrence(self.sets, groups)

    @classmethod
    def of_run(cls, steps) -> Roles:
        """The roles in a run's stream (its steps.jsonl as the reports read it: `rows`, `doc_ids`, `run.summary`),
        counted as its summary says: its metric settings and scope."""
        summary = steps.run.summary
        return cls((summary.get("config") or {}).get("metrics") or {}, [r["reference"] for r in steps.rows],
                   steps.doc_ids, summary.get("metrics_scope", "document"))

    def of(self, i: int, text: str, hypothesis_words: frozenset[str] | None) -> tuple[str, int | None]:
        """The role of reference word `text` of segment i (and the segments since its previous occurrence); a second
        occurrence is recalled or missed by `hypothesis_words`, or just "second" where they are None."""
        if not text:
            return "end", None
        if is_punctuation(text):
            return "punctuation", None
        word = next((w for w in (text, text[:1].lower() + text[1:], text[:1].upper() + text[1:])
                     if w in self.sets[i]), None)
        if word is None:
            return ("stopword" if text.lower() in self.words.stopwords or text in self.words.stopwords
                    or text in self.words.grammatical else "other content"), None
        distance = self.previous[i].get(word)
        if word in self.levels[i][0]:
            return "first", None
        if word in self.levels[i][1]:
            if hypothesis_words is None:
                return "second", distance
            return ("second, recalled" if word in hypothesis_words else "second, missed"), distance
        return "later", distance


def _previous_occurrence(sets: Sequence[frozenset[str]], groups: Sequence) -> list[dict[str, int]]:
    """Per segment, for each of its words seen earlier in the scope, how many segments back."""
    out, last, previous = [], {}, object()
    for i, (words, group) in enumerate(zip(sets, groups)):
        if group != previous:
            last, previous = {}, group
        out.append({w: i - last[w] for w in words if w in last})
        last.update({w: i for w in words})
    return out
