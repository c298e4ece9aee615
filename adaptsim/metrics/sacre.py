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

`SacreMetrics.vector` computes BLEU, TER and chrF for many summed-statistics rows at once with numpy
(what resampling in adaptsim.report.stats needs: thousands of resampled corpora); it follows sacrebleu's
`_compute_score_from_stats` operation by operation and tests/test_stats.py holds it to sacrebleu's
scores (equal up to the last bits of numpy's exp/log versus libm's).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sacrebleu.metrics import BLEU, CHRF, TER

from adaptsim.errors import UserError

METRICS = ("BLEU", "SBLEU", "TER", "chrF")
Stats = dict[str, list[float]]  # statistics kind ("bleu", "ter", "chrf") -> one sentence's statistics
_KIND = {"BLEU": "bleu", "SBLEU": "bleu", "TER": "ter", "chrF": "chrf"}


def _add(total: Stats, stats: Stats) -> None:
    for kind, values in stats.items():
        row = total.setdefault(kind, [0] * len(values))
        for j, value in enumerate(values):
            row[j] += value


class SacreMetrics:
    """The chosen sacrebleu scores, with sacrebleu's defaults (13a tokenisation, mixed case)."""

    def __init__(self, names: Sequence[str] = METRICS):
        unknown = set(names) - set(METRICS)
        if unknown:
            raise UserError(f"unknown sacrebleu metric(s) {', '.join(sorted(unknown))}; "
                            f"choose from {', '.join(METRICS)}")
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

    def vector(self, name: str, totals: np.ndarray) -> np.ndarray:
        """Corpus BLEU, TER or chrF of every row of summed statistics `totals` (…, statistics)."""
        metric = self.scorers[name]
        t = np.asarray(totals, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            if name == "BLEU":
                return _bleu(metric, t)
            if name == "TER":
                edits, ref = t[..., 0], t[..., 1]
                return 100 * np.where(ref > 0, edits / ref, np.where(edits > 0, 1.0, 0.0))
            if name == "chrF":
                return _chrf(metric, t)
        raise ValueError(f"{name} is not a function of summed statistics")

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
    """Summed statistics of the segments added so far."""

    def __init__(self, metrics: SacreMetrics):
        self.metrics = metrics
        self.total: Stats = {}
        self.sbleu_sum, self.n = 0.0, 0

    def add(self, stats: Stats) -> None:
        _add(self.total, stats)
        if "SBLEU" in self.metrics.scorers:
            self.sbleu_sum += self.metrics._score("SBLEU", stats)
        self.n += 1

    def scores(self) -> dict[str, float | None]:
        if not self.n:
            return {name: None for name in self.metrics.names}
        return {name: self.sbleu_sum / self.n if name == "SBLEU" else self.metrics._score(name, self.total)
                for name in self.metrics.names}


def _bleu(metric: BLEU, t: np.ndarray) -> np.ndarray:
    """sacrebleu's `BLEU.compute_bleu` for the corpus-BLEU settings adaptsim uses (exp smoothing)."""
    if metric.smooth_method != "exp" or metric.effective_order:
        raise ValueError("vectorised BLEU follows sacrebleu's corpus defaults only (smooth exp, no effective order)")
    n = metric.max_ngram_order
    sys_len, ref_len = t[..., 0], t[..., 1]
    correct, total = t[..., 2:2 + n], t[..., 2 + n:2 + 2 * n]
    bp = np.where(sys_len < ref_len, np.where(sys_len > 0, np.exp(1 - ref_len / sys_len), 0.0), 1.0)
    halvings = np.cumsum((correct == 0) & (total > 0), axis=-1)  # exp smoothing: 1/2, 1/4, … per zero order
    precision = np.where(total == 0, 0.0,  # sacrebleu stops at the first order with no n-grams: precision 0
                         np.where(correct == 0, 100.0 / (2.0 ** halvings * total), 100.0 * correct / total))
    logs = np.where(precision > 0, np.log(np.where(precision > 0, precision, 1.0)), -9999999999.0)  # my_log
    summed = logs[..., 0]
    for j in range(1, n):  # left to right, as Python's sum() does
        summed = summed + logs[..., j]
    return np.where((correct != 0).any(axis=-1), bp * np.exp(summed / n), 0.0)


def _chrf(metric: CHRF, t: np.ndarray) -> np.ndarray:
    """sacrebleu's `CHRF._compute_f_score` (both its smoothing modes)."""
    eps, factor = 1e-16, metric.beta ** 2
    score = np.zeros(t.shape[:-1])
    avg_prec, avg_rec, effective = np.zeros_like(score), np.zeros_like(score), np.zeros_like(score)
    for i in range(metric.order):
        n_hyp, n_ref, n_match = t[..., 3 * i], t[..., 3 * i + 1], t[..., 3 * i + 2]
        prec = np.where(n_hyp > 0, n_match / np.where(n_hyp > 0, n_hyp, 1), eps)
        rec = np.where(n_ref > 0, n_match / np.where(n_ref > 0, n_ref, 1), eps)
        denom = factor * prec + rec
        score = score + np.where(denom > 0, (1 + factor) * prec * rec / np.where(denom > 0, denom, 1), eps)
        both = (n_hyp > 0) & (n_ref > 0)
        avg_prec, avg_rec, effective = (avg_prec + np.where(both, prec, 0), avg_rec + np.where(both, rec, 0),
                                        effective + both)
    if metric.eps_smoothing:
        return 100 * score / metric.order
    avg_prec = np.where(effective > 0, avg_prec / np.where(effective > 0, effective, 1), 0.0)
    avg_rec = np.where(effective > 0, avg_rec / np.where(effective > 0, effective, 1), 0.0)
    both = avg_prec + avg_rec
    f = (1 + factor) * avg_prec * avg_rec / np.where(both != 0, factor * avg_prec + avg_rec, 1)
    return np.where(both != 0, 100 * f, 0.0)
