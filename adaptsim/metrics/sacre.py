"""sacrebleu BLEU, SBLEU (BLEU+1), TER and chrF from additive per-sentence statistics.

sacrebleu's corpus scores are functions of summed sentence statistics, so one pass of statistic
extraction gives the corpus score (what `corpus_score` computes), every sentence score and every
prefix (learning-curve) score. The private sacrebleu calls this needs live here only.

SBLEU is the mean sentence BLEU+1 (Lin & Och 2004, as used by Nakov et al. 2012): add one to the
matches and totals of n-grams with n ≥ 2, unigrams unsmoothed, no brevity-penalty smoothing.
That is exactly sacrebleu's `smooth_method="add-k", smooth_value=1` (its add-k skips n = 1).
With add-one every order n ≥ 2 has a non-zero total, so `effective_order` changes nothing; it is
on only so that sacrebleu does not warn about sentence-level use.

TER and chrF cost sacrebleu far more time than BLEU, so each metric can be left out.
"""

from __future__ import annotations

from collections.abc import Sequence

from sacrebleu.metrics import BLEU, CHRF, TER

from adaptsim.errors import UserError

METRICS = ("BLEU", "SBLEU", "TER", "chrF")
Stats = dict[str, list[float]]  # statistics kind ("bleu", "ter", "chrf") -> one sentence's statistics
_KIND = {"BLEU": "bleu", "SBLEU": "bleu", "TER": "ter", "chrF": "chrf"}


def _add(total: Stats, stats: Stats, sign: int = 1) -> None:
    for kind, values in stats.items():
        row = total.setdefault(kind, [0] * len(values))
        for j, value in enumerate(values):
            row[j] += sign * value


class SacreMetrics:
    """The chosen sacrebleu scores, with sacrebleu's defaults (13a tokenisation, mixed case)."""

    def __init__(self, names: Sequence[str] = METRICS):
        unknown = set(names) - set(METRICS)
        if unknown:
            raise UserError(f"unknown sacrebleu metric(s) {', '.join(sorted(unknown))}; choose from {', '.join(METRICS)}")
        self.names = [name for name in METRICS if name in names]
        scorers = {"BLEU": BLEU(), "SBLEU": BLEU(smooth_method="add-k", smooth_value=1, effective_order=True),
                   "TER": TER(), "chrF": CHRF()}
        self.scorers = {name: scorers[name] for name in self.names}
        for metric in self.scorers.values():
            metric.num_refs = 1  # one reference per segment, always; sacrebleu's signature needs it
        # one statistics extractor per kind: BLEU and BLEU+1 share their statistics
        self._extractors = {_KIND[name]: scorers[name] for name in self.names}

    def signatures(self) -> dict[str, str]:
        return {name: str(metric.get_signature()) for name, metric in self.scorers.items()}

    def stats(self, hypotheses: Sequence[str], references: Sequence[str]) -> list[Stats]:
        per_kind = {kind: metric._extract_corpus_statistics(hypotheses, [list(references)])
                    for kind, metric in self._extractors.items()}
        return [{kind: rows[i] for kind, rows in per_kind.items()} for i in range(len(hypotheses))]

    def _score(self, name: str, stats: Stats) -> float:
        return self.scorers[name]._compute_score_from_stats(list(stats[_KIND[name]])).score  # list(): add-k edits it

    def sentence(self, stats: Stats) -> dict[str, float]:
        """Sentence SBLEU and TER (the per-step scores), where chosen."""
        return {name: self._score(name, stats) for name in ("SBLEU", "TER") if name in self.scorers}

    def cumulative(self, stats: Sequence[Stats]) -> list[dict[str, float]]:
        """Scores of every prefix of the corpus; the last row is the corpus score."""
        running = Running(self)
        rows = []
        for s in stats:
            running.add(s)
            rows.append(running.scores())
        return rows

    def corpus(self, stats: Sequence[Stats]) -> dict[str, float | None]:
        running = Running(self)
        for s in stats:
            running.add(s)
        return running.scores()


class Running:
    """Summed statistics of the segments added so far (and removed again, for a re-scored segment)."""

    def __init__(self, metrics: SacreMetrics):
        self.metrics = metrics
        self.total: Stats = {}
        self.sbleu_sum, self.n = 0.0, 0

    def add(self, stats: Stats, sign: int = 1) -> None:
        _add(self.total, stats, sign)
        if "SBLEU" in self.metrics.scorers:
            self.sbleu_sum += sign * self.metrics._score("SBLEU", stats)
        self.n += sign

    def scores(self) -> dict[str, float | None]:
        if not self.n:
            return {name: None for name in self.metrics.names}
        return {name: self.sbleu_sum / self.n if name == "SBLEU" else self.metrics._score(name, self.total)
                for name in self.metrics.names}
