"""`Evaluator`: the metrics of one run (adaptsim/metrics/: the key names; docs/design.md §4).

It is built once per run from the references (in corpus order, with their doc ids) and then scores hypotheses
one at a time (`segment`, `running`: the simulation loop) or all at once (`corpus`, `curves`: summaries, the
`score` command). All scores are percentages.

`segment(i, hyp)` returns for every recall metric M: "M_num", "M_den" and "M" (the segment's
score, None when "M_den" is 0: no score, not 0), plus the sentence scores "SBLEU" and "TER", and
"stats": sacrebleu's per-segment sufficient statistics of the chosen metrics, {"bleu": [hyp length,
ref length, matches n=1..4, totals n=1..4], "ter": [edits, ref length], "chrf": [hyp, ref, match
counts per order]}, which adaptsim.report.stats resamples.
`segment(i, hyp, pieces, effort)` also takes what a simulated translator spent on the segment
(`metrics.interactive`, adaptsim/metrics/effort.py): then the record holds "effort" (the counts) and the
segment's "KSMR", "KSR", "WSR", "MAR", and the running, corpus and curve scores hold them too (ratios of sums).
`running()` returns {M…, "BLEU", "SBLEU", "TER", "chrF"} over the segments scored so far.
`corpus(hyps)` returns {"scores": {M…, "BLEU", "SBLEU", "TER", "chrF"}, "counts": {M: {"num",
"den"}}, "signatures": {"R", "BLEU", "SBLEU", "TER", "chrF"}, "segments": n}; corpus recall is
the micro average (summed numerators over summed denominators), corpus BLEU/TER/chrF are what
sacrebleu's `corpus_score` gives. A score with nothing to recall is None (JSON null).
`curves(hyps)` returns one row per segment: {"segment": 1-based index, "doc_id", M…, "BLEU",
"SBLEU", "TER", "chrF"}, each the corpus score of the segments up to and including that one.

`scope` decides where occurrence counting restarts: "document" at every change of doc id, as the
model is reset per document; "corpus" never (the paper's definition).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from importlib.metadata import version
from pathlib import Path

from adaptsim import config_defaults
from adaptsim.data.textio import read_lines
from adaptsim.errors import UserError
from adaptsim.fingerprints import file_fingerprint
from adaptsim.metrics.effort import RATES, Effort, numerators
from adaptsim.metrics.novel import load_known, novelty
from adaptsim.metrics.recall import Levels, counts, metric_names, occurrence_levels, percent, restrict
from adaptsim.metrics.sacre import METRICS, Running, SacreMetrics, Stats
from adaptsim.metrics.segmenters import signed, stopword_language
from adaptsim.metrics.words import content_words

SCOPES = ("document", "corpus")
_METRICS = config_defaults("metrics/default.yaml")  # the metrics' defaults (their home: configs/metrics)
NOVEL, SUBWORD = "novel.", "subword."


def resolve_scope(scope: str | None, reset: str) -> str:
    """`metrics.scope` if set, else where the model restarts: every document with `reset: document`, never
    (the paper's one stream, "the test set") with `reset: never`."""
    return str(scope) if scope is not None else ("corpus" if reset == "never" else "document")


class Evaluator:
    """Scores hypotheses against one fixed, ordered reference corpus."""

    def __init__(self, references: Sequence[str], doc_ids: Sequence[str] | None = None, *,
                 lang: str = "de", case: str = _METRICS["case"], truecase_text: Sequence[str] | None = None,
                 stopwords: str | None = _METRICS["stopwords"], k_max: int = _METRICS["k_max"],
                 scope: str = "document", novel_vocab: str | None = _METRICS["novel_vocab"],
                 subword_tokenize: Callable[[str], list[str]] | None = None,
                 sacrebleu: Sequence[str] = METRICS, tokenize: str = _METRICS["tokenize"]):
        self.references = list(references)
        n = len(self.references)
        self.doc_ids = [str(d) for d in doc_ids] if doc_ids is not None else ["0"] * n
        if len(self.doc_ids) != n:
            raise UserError(f"{len(self.doc_ids)} doc ids for {n} references")
        if scope not in SCOPES:
            raise UserError(f"metrics scope must be one of {', '.join(SCOPES)}, not {scope!r}")
        if not isinstance(k_max, int) or k_max < 1:
            raise UserError(f"metrics k_max must be an integer ≥ 1, not {k_max!r}")
        self.lang, self.case, self.scope, self.k_max = lang, case, scope, k_max
        self.names = metric_names(k_max)
        self.words = content_words(self.references, lang, case, stopwords, truecase_text)
        groups = self.doc_ids if scope == "document" else [None] * n

        # variant prefix -> (hypothesis → unit set, per-segment reference levels)
        word_levels = occurrence_levels([self.words(r) for r in self.references], groups, k_max)
        self._variants: dict[str, tuple[Callable[[str], frozenset[str]], list[Levels]]] = {
            "": (self.words, word_levels)}
        if novel_vocab is not None:
            is_novel = novelty(load_known(novel_vocab, self.words.raw_tokens, self.words.segmenter is not None))
            self._variants[NOVEL] = (self.words, [restrict(lv, is_novel) for lv in word_levels])
        if subword_tokenize is not None:
            pieces = _Pieces(subword_tokenize)
            self._variants[SUBWORD] = (pieces, occurrence_levels([pieces(r) for r in self.references], groups, k_max))

        self.keys = [p + m for p in self._variants for m in self.names]
        # every setting that changes a score, files by content (their name alone let two lists pass as one); the
        # truecaser's text only where one is given (the default, the run's references, is the stream's own)
        self._signature = "|".join([
            f"R|lang:{signed(lang)}", f"tok:{self.words.tok}",
            f"case:{self.words.case}",  # a segmenter's language: no case
            *([f"truecase:text#{_digest(truecase_text)}"] if self.words.case == "truecase" and truecase_text is not None
              else []),
            "stop:" + ("iso-" + stopword_language(lang) if stopwords is None
                       else f"file:{Path(stopwords).name}#{file_fingerprint(Path(stopwords))}"),
            f"scope:{scope}", f"k:{k_max}",
            *([f"novel:{Path(novel_vocab).name}#{file_fingerprint(Path(novel_vocab))}"]
              if novel_vocab is not None else []),
            *(["subword:yes"] if subword_tokenize is not None else []),
            f"sacremoses:{version('sacremoses')}", f"stopwordsiso:{version('stopwordsiso')}"])
        self.sacre = SacreMetrics(sacrebleu, lang=lang, tokenize=tokenize)  # BLEU/TER by the target language
        self._records: dict[int, tuple[str, Stats]] = {}  # scored segments: hypothesis, sacrebleu statistics
        self._sums = {key: [0, 0] for key in self.keys}
        self._running = Running(self.sacre)
        self._last_stats: tuple[list[str], list[Stats]] | None = None

    @classmethod
    def from_config(cls, cfg, references: Sequence[str], doc_ids: Sequence[str] | None,
                    subword_tokenize: Callable[[str], list[str]] | None = None, scope: str | None = None) -> Evaluator:
        """Build from the `metrics` config node; `subword: false` there turns the subword variant off; `scope`
        (the run's, resolved from `reset` where `metrics.scope` is null) wins over the node's."""
        text = cfg.truecase_text  # every setting comes from configs/metrics/default.yaml: no defaults here
        return cls(references, doc_ids, lang=cfg.lang, case=cfg.case,
                   truecase_text=None if text is None else read_lines(text),
                   stopwords=cfg.stopwords, k_max=cfg.k_max, scope=scope or cfg.scope or "document",
                   novel_vocab=cfg.novel_vocab, subword_tokenize=subword_tokenize if cfg.subword else None,
                   sacrebleu=list(cfg.sacrebleu), tokenize=cfg.tokenize)

    def __len__(self) -> int:
        return len(self.references)

    # -- one segment at a time ------------------------------------------------------------------

    def _counts(self, i: int, hypothesis: str, pieces: Sequence[str] | None = None) -> dict[str, tuple[int, int]]:
        out = {}
        for prefix, (units, levels) in self._variants.items():
            found = frozenset(pieces) if prefix == SUBWORD and pieces is not None else units(hypothesis)
            for name, nd in counts(found, levels[i]).items():
                out[prefix + name] = nd
        return out

    def segment(self, i: int, hypothesis: str, pieces: Sequence[str] | None = None,
                effort: Effort | None = None) -> dict:
        """Score hypothesis i (0-based), once, and remember it for `running`.
        `pieces`: the subword pieces the model generated (else the subword variant re-encodes the text);
        `effort`: what a simulated translator spent on it (`metrics.interactive`)."""
        if not 0 <= i < len(self.references):
            raise IndexError(f"segment {i} out of range for {len(self.references)} references")
        nd = self._counts(i, hypothesis, pieces)
        effort_nd = numerators(effort) if effort is not None else {}
        stats = self.sacre.stats([hypothesis], [self.references[i]])[0]
        if i in self._records:
            raise ValueError(f"segment {i} was scored already")
        self._records[i] = (hypothesis, stats)
        _accumulate(self._sums, nd | effort_nd)
        self._running.add(stats)
        record: dict = {}
        for key, (num, den) in nd.items():
            record.update({f"{key}_num": num, f"{key}_den": den, key: percent(num, den)})
        if effort is not None:  # its counts as they are (the rates' numerators and denominators derive from them)
            record |= {"effort": effort.record(), **{rate: percent(*n) for rate, n in effort_nd.items()}}
        # sacrebleu's sufficient statistics, so that resampling (adaptsim.report.stats) never re-scores text
        return record | self.sacre.sentence(stats) | {"stats": stats}

    def running(self) -> dict[str, float | None]:
        """Corpus scores over the segments given to `segment` so far."""
        return {**{key: percent(*self._sums[key]) for key in self.keys}, **self._running.scores(),
                **{rate: percent(*self._sums[rate]) for rate in RATES if rate in self._sums}}

    # -- whole corpus ------------------------------------------------------------------------------

    def _check(self, hypotheses: Sequence[str]) -> list[str]:
        hypotheses = list(hypotheses)
        if len(hypotheses) != len(self.references):
            raise UserError(f"{len(hypotheses)} hypotheses for {len(self.references)} references")
        return hypotheses

    def _stats(self, hypotheses: list[str]) -> list[Stats]:
        """Sentence statistics, reusing those `segment` or the last corpus/curves call computed."""
        if self._last_stats is not None and self._last_stats[0] == hypotheses:
            return self._last_stats[1]
        stats: list[Stats | None] = [None] * len(hypotheses)
        for i, hyp in enumerate(hypotheses):
            if i in self._records and self._records[i][0] == hyp:
                stats[i] = self._records[i][1]
        todo = [i for i, s in enumerate(stats) if s is None]
        fresh = self.sacre.stats([hypotheses[i] for i in todo], [self.references[i] for i in todo]) if todo else []
        for i, s in zip(todo, fresh):
            stats[i] = s
        self._last_stats = (hypotheses, stats)
        return stats

    def corpus(self, hypotheses: Sequence[str], pieces: Sequence[Sequence[str]] | None = None,
               efforts: Sequence[Effort] | None = None) -> dict:
        """Corpus scores (percent), recall counts and signatures for a full set of hypotheses (and the pieces
        the model generated for each, and what a simulated translator spent on each, if known)."""
        hypotheses = self._check(hypotheses)
        sums = {key: [0, 0] for key in self.keys}
        for i, hyp in enumerate(hypotheses):
            _accumulate(sums, self._counts(i, hyp, None if pieces is None else pieces[i])
                        | (numerators(efforts[i]) if efforts else {}))
        scores = {key: percent(*sums[key]) for key in self.keys}
        scores.update(self.sacre.corpus(self._stats(hypotheses)))
        scores.update({rate: percent(*sums[rate]) for rate in RATES if rate in sums})
        return {"scores": scores,
                "counts": {key: {"num": num, "den": den} for key, (num, den) in sums.items()},
                "signatures": {"R": self._signature, **self.sacre.signatures()},
                "segments": len(hypotheses)}

    def curves(self, hypotheses: Sequence[str], pieces: Sequence[Sequence[str]] | None = None,
               efforts: Sequence[Effort] | None = None) -> list[dict]:
        """Learning curves (paper Appendix B): every metric's corpus score after each segment (the effort rates
        too, given the efforts: cumulative KSMR over the stream)."""
        hypotheses = self._check(hypotheses)
        sums: dict[str, list[int]] = {}
        rows = []
        for i, (hyp, sacre) in enumerate(zip(hypotheses, self.sacre.cumulative(self._stats(hypotheses)))):
            counted = self._counts(i, hyp, None if pieces is None else pieces[i]) | (
                numerators(efforts[i]) if efforts else {})
            _accumulate(sums, counted)
            rows.append({"segment": i + 1, "doc_id": self.doc_ids[i],
                         **{key: percent(*sums[key]) for key in counted}} | sacre)
        return rows


def _accumulate(sums: dict[str, list[int]], counted: dict[str, tuple[int, int]]) -> None:
    """Add one segment's (numerator, denominator) pairs (recall, the effort rates) to running sums."""
    for key, (num, den) in counted.items():
        total = sums.setdefault(key, [0, 0])
        total[0] += num
        total[1] += den


class _Pieces:
    """Set of subword pieces of a string, cached like the word pipeline (the tokenizer is not free)."""

    def __init__(self, tokenize: Callable[[str], list[str]]):
        self.tokenize, self._cache = tokenize, {}

    def __call__(self, text: str) -> frozenset[str]:
        pieces = self._cache.get(text)
        if pieces is None:
            pieces = self._cache[text] = frozenset(self.tokenize(text))
        return pieces


def _digest(lines: Sequence[str]) -> str:
    """The first 16 hex digits of a sha256 over the lines of a text (one per line)."""
    return hashlib.sha256("".join(line + "\n" for line in lines).encode()).hexdigest()[:16]
