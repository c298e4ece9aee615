"""Which segmenter cuts a target language's text into words (docs/design.md §4, docs/usage.md "Words by language").

Languages written with spaces keep the Moses tokenizer (adaptsim.metrics.words' own path, unchanged). Languages
written without them (`SPACELESS`) need a word segmenter: one implementation per library, from the optional extra
`cjk` (`pip install -e ".[cjk]"`), imported when a text of that language is first segmented. Thai's library is in the
same extra: one install line for every language written without spaces, and pythainlp needs no other package. A
spaceless language without a segmenter here (Lao, Khmer, Burmese, Tibetan, …) is refused (`segmenter_for`): scored
with Moses, a sentence would be one word.

Every segmenter returns the words as written (surfaces, no lemmas: R0/R1 compare what the hypothesis holds, as the
Moses path does), whitespace dropped, punctuation as words of its own (the content-word filter drops it). Where the
analyser tags parts of speech (ja, ko), `analyse` also says which words are grammatical — particles, auxiliaries, the
copula — and those are no content words whatever stopwords-iso's list says: the lists miss the commonest of them
(ja まし, ませ, でし; ko 는, 은, 도, 입니다), which on the TED talks of ../shared/data/ted-cjk made 3 % (ja) and 6 %
(ko) of R1's words:

- zh: jieba (precise mode, `lcut(text, cut_all=False, HMM=True)`): its 350k-word dictionary, and its HMM for words
  it lacks (the names of a talk). It keeps compounds such as 驱动程序 whole, the unit a translator corrects. Its
  dictionary, like stopwords-iso's zh list, is simplified Chinese: traditional text is cut worse (我喜歡 → 我喜 歡用)
  and its 們-forms are no stopwords. A traditional code (zh-TW, zho_Hant) has no stopwords-iso list, so it needs a
  stopword file (metrics.stopwords) before it is scored at all.
- ja: fugashi (MeCab) with unidic-lite, named explicitly (a bare Tagger prefers the `unidic` package): UniDic
  short units, the units the Japanese corpora (BCCWJ) count words in
  and the ones stopwords-iso's Japanese list is written in (だっ, なかっ, られ); grammatical: particles (助詞) and
  auxiliary verbs (助動詞).
- ko: kiwipiepy (Kiwi) morphemes regrouped into the words of Korean school grammar: a particle (tags J*) and the
  copula 이다 (VCP) are words of their own, every other morpheme stays with the word it is written in (a verb with
  its endings, a noun with its suffixes), punctuation apart; a word's text is its stretch of the input; grammatical:
  the particles and the copula (with its endings: 입니다).
- th: pythainlp `word_tokenize(engine="newmm")`: maximal matching on its dictionary, within Thai character clusters.

None of these scripts has case: the pipeline does not truecase them (words.WordPipeline).
"""

from __future__ import annotations

import os
import importlib
import re
from functools import cache
from importlib.metadata import PackageNotFoundError, version

from adaptsim import install_line
from adaptsim.errors import UserError

EXTRA = install_line("cjk")  # the install line a refusal names
# ISO 639-2/3 codes of the languages adaptsim segments or sacrebleu tokenises by name → their ISO 639-1 code
_ISO_639_1 = {"zho": "zh", "chi": "zh", "cmn": "zh", "jpn": "ja", "kor": "ko", "tha": "th"}
# written without spaces between words (by `base_language`) → its name; Korean is written with spaces between
# phrases (eojeol) that hold the particles, so a Moses word there is a word with its case marker
SPACELESS = {"zh": "Chinese", "yue": "Cantonese", "wuu": "Wu Chinese", "ja": "Japanese", "ko": "Korean",
             "th": "Thai", "lo": "Lao", "lao": "Lao", "km": "Khmer", "khm": "Khmer", "my": "Burmese", "mya": "Burmese",
             "bo": "Tibetan", "bod": "Tibetan", "dz": "Dzongkha", "dzo": "Dzongkha", "shn": "Shan"}
# letters of scripts written without spaces between words (Han, kana, Hangul, Thai, Lao, Tibetan, Myanmar, Khmer)
_SPACELESS_SCRIPT = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\u31f0-\u31ff\uac00-\ud7af"
                               "\u1100-\u11ff\u0e00-\u0eff\u0f00-\u0fff\u1000-\u109f\u1780-\u17ff]")


_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_KANA = "[\u3040-\u30ff\u31f0-\u31ff]"
# the letters a spaceless language is written in (`check_script`): Han; Han and kana; Hangul; Thai; …
_OWN_SCRIPT = {"zh": f"[{_HAN}]", "yue": f"[{_HAN}]", "wuu": f"[{_HAN}]", "ja": f"[{_HAN}\u3040-\u30ff\u31f0-\u31ff]",
               "ko": "[\uac00-\ud7af\u1100-\u11ff\u3130-\u318f]", "th": "[\u0e00-\u0e7f]",
               "lo": "[\u0e80-\u0eff]", "km": "[\u1780-\u17ff]", "my": "[\u1000-\u109f]",
               "bo": "[\u0f00-\u0fff]", "dz": "[\u0f00-\u0fff]"}


def base_language(lang: str | None) -> str:
    """The language subtag of a code, as ISO 639-1 where `_ISO_639_1` knows it: "zh" of zh, ZH, zh-CN, zh_Hans,
    zho_Hans (NLLB), chi; "ja" of ja_XX (mBART). The one reading of a language code, for the words (here) and for
    the scores' tokeniser (adaptsim/metrics/sacre.py)."""
    base = re.split("[-_]", str(lang or "").strip(), maxsplit=1)[0].lower()
    return _ISO_639_1.get(base, base)


def signed(lang: str | None) -> str:
    """A language code as the signatures write it: case-folded, "_" read as "-" (ZH, zh_CN → zh, zh-cn)."""
    return str(lang or "").strip().lower().replace("_", "-")


def stopword_language(lang: str | None) -> str:
    """The code stopwords-iso's list is looked up by: `base_language` (zh of zh-CN, zho_Hans, cmn; ja of ja_XX, jpn),
    except traditional Chinese (a Hant, TW, HK or MO subtag), which the simplified zh list does not fit (module
    docstring): its own code, which has no list."""
    if base_language(lang) == "zh" and re.search(r"[-_](hant|tw|hk|mo)(?![a-z])", str(lang or ""), re.I):
        return signed(lang)
    return base_language(lang)


def spaceless(lang: str) -> str | None:
    """The name of `lang` where it is written without spaces between words, else None."""
    return SPACELESS.get(base_language(lang))


class Segmenter:
    """Cuts one language's text into words (`words`); `name` (library-version) goes into the scores' signatures."""

    library = ""              # the package, as pip and importlib.metadata name it
    modules: tuple[str, ...] = ()  # what it imports (`check` imports them before anything is written)
    needs = ""                # the packages a refusal names (the library, and a dictionary where it needs one)

    def __init__(self, lang: str):
        self.lang = lang
        try:
            self.name = f"{self.library}-{version(self.library)}"
            self._load()
        except (ImportError, PackageNotFoundError):
            raise missing(lang, type(self)) from None
        except Exception as e:  # a library that imports but fails as it loads its dictionary
            raise broken(lang, self.library, e) from None

    def _load(self) -> None:
        raise NotImplementedError

    def words(self, text: str) -> list[str]:
        raise NotImplementedError

    def analyse(self, text: str) -> list[tuple[str, bool]]:
        """Each word of `text` and whether the analyser tags it grammatical (no content word); here none is."""
        return [(w, False) for w in self.words(text)]


class Jieba(Segmenter):
    library = "jieba"
    modules = ("jieba",)

    def _load(self) -> None:
        import jieba
        jieba.setLogLevel(60)  # its dictionary-loading messages
        self._tokenizer = jieba.Tokenizer()

    def words(self, text: str) -> list[str]:
        return [w for w in self._tokenizer.lcut(text, cut_all=False, HMM=True) if not w.isspace()]


class Fugashi(Segmenter):
    library = "fugashi"
    needs = "fugashi and unidic-lite"
    modules = ("fugashi", "unidic_lite")

    def _load(self) -> None:
        import fugashi
        import unidic_lite
        # unidic-lite named, not found: a bare Tagger() takes the `unidic` package first where both are installed
        # (whose dictionary is a separate download, and segments differently under the same name)
        dicdir = unidic_lite.DICDIR
        self._tagger = fugashi.Tagger(f'-d "{dicdir}" -r "{os.path.join(dicdir, "mecabrc")}"')
        self.name += f"+unidic-lite-{version('unidic-lite')}"

    def words(self, text: str) -> list[str]:
        return [w for w, _ in self.analyse(text)]

    def analyse(self, text: str) -> list[tuple[str, bool]]:
        return [(w.surface, w.feature.pos1 in ("助詞", "助動詞")) for w in self._tagger(text)
                if w.surface and not w.surface.isspace()]


class Kiwi(Segmenter):
    library = "kiwipiepy"
    modules = ("kiwipiepy",)
    _OWN_WORD = ("J", "VCP")  # particles and the copula: words of their own in school grammar

    def _load(self) -> None:
        from kiwipiepy import Kiwi as KiwiAnalyser
        self._kiwi = KiwiAnalyser(num_workers=0)  # one thread, as each adaptsim process keeps (0: since 0.21)
        self.name += f"+model-{version('kiwipiepy_model')}"  # the analyser's model, a package of its own

    def words(self, text: str) -> list[str]:
        return [w for w, _ in self.analyse(text)]

    def analyse(self, text: str) -> list[tuple[str, bool]]:
        spans: list[list] = []  # [start, end, grammatical] of each word in `text`
        joins = False  # whether the next morpheme may join the last word (the last morpheme is no punctuation)
        for token in self._kiwi.tokenize(text):
            start, end, tag = token.start, token.start + token.len, token.tag
            punctuation = tag.startswith("S") and tag not in ("SL", "SH", "SN")  # not letters, Hanja, numbers
            own = not spans or start >= spans[-1][1] and (  # a contraction (그건: 그 것 ㄴ) stays one word
                punctuation or tag.startswith(self._OWN_WORD) or not joins
                or any(c.isspace() for c in text[spans[-1][1]:start]))
            if own:
                spans.append([start, end, tag.startswith(self._OWN_WORD)])
            else:
                spans[-1][1] = max(spans[-1][1], end)
            joins = not punctuation
        return [(text[a:b], grammatical) for a, b, grammatical in spans if text[a:b].strip()]


class PyThaiNLP(Segmenter):
    library = "pythainlp"
    modules = ("pythainlp",)

    def _load(self) -> None:
        from pythainlp.tokenize import word_tokenize
        self._tokenize = word_tokenize

    def words(self, text: str) -> list[str]:
        return [w for w in self._tokenize(text, engine="newmm", keep_whitespace=False) if w.strip()]


SEGMENTERS: dict[str, type[Segmenter]] = {"zh": Jieba, "ja": Fugashi, "ko": Kiwi, "th": PyThaiNLP}


def _segmenter_class(lang: str) -> type[Segmenter] | None:
    """The segmenter class of `lang`; None where it is written with spaces; UserError where it is written without
    and adaptsim has no segmenter for it."""
    name = spaceless(lang)
    if name is None:
        return None
    base = base_language(lang)
    if base not in SEGMENTERS:
        raise UserError(f"metrics.lang={lang}: {name} is written without spaces between words and adaptsim has no "
                        f"word segmenter for it (it segments {', '.join(SEGMENTERS)}, with {EXTRA}), so word recall "
                        "cannot be computed")
    return SEGMENTERS[base]


@cache
def segmenter_for(lang: str) -> Segmenter | None:
    """The segmenter of `lang`; None where it is written with spaces (Moses' path); UserError, naming the setting and
    the extra, where it is written without spaces and has no segmenter here, or its library is not installed."""
    segmenter = _segmenter_class(lang)
    return None if segmenter is None else segmenter(lang)


def check(lang: str) -> None:
    """`segmenter_for`'s refusals, its libraries imported for real (a package that is found but broken fails only on
    import) but not loaded (a dictionary takes seconds): a run's settings check, before anything is written."""
    segmenter = _segmenter_class(lang)
    for module in segmenter.modules if segmenter is not None else ():
        try:
            importlib.import_module(module)
        except ImportError:
            raise missing(lang, segmenter) from None
        except Exception as e:
            raise broken(lang, module, e) from None


def broken(lang: str, module: str, e: Exception) -> UserError:
    """The refusal where `lang`'s segmenter is installed but fails as it is imported or loaded."""
    reason = " ".join(f"{type(e).__name__}: {e}".split())[:200]
    return UserError(f"metrics.lang={lang}: {module} is installed but does not load ({reason}); reinstall it: {EXTRA}")


def missing(lang: str, segmenter: type[Segmenter]) -> UserError:
    """The refusal where `lang`'s segmenter is not installed: the setting, the packages, the install line."""
    return UserError(f"metrics.lang={lang}: {spaceless(lang)} words need {segmenter.needs or segmenter.library}, "
                     f"not installed: {EXTRA}")


def tokenisation(target_lang: str, moses: str = "moses") -> str:
    """How a pair's words are cut, as LitTER's and the terms' signatures name it: `moses` (the caller's Moses variant,
    source and target), or for a target written without spaces `moses` (the source) and the segmenter's
    library-version after a slash."""
    segmenter = segmenter_for(target_lang)
    return moses if segmenter is None else f"{moses}/{segmenter.name}"


def check_script(lang: str, texts) -> None:
    """Refuse references whose script does not fit `lang`: mostly (over half of their letters and digits) in a
    script without spaces when `lang` is written with spaces, where each sentence would be one word; and, when
    `lang` is written without spaces, less than half of their letters in its own script (`_OWN_SCRIPT`; Japanese:
    and no kana at all), which a segmenter of another language would cut into nonsense (Chinese as ja, ko or th)."""
    joined = "".join(texts)
    base = base_language(lang)
    if spaceless(lang) is None:
        letters = sum(c.isalnum() for c in joined)
        found = _SPACELESS_SCRIPT.findall(joined)
        if letters and 2 * len(found) > letters:
            raise UserError(f"metrics.lang={lang}, but the references are written in a script without spaces "
                            f"between words ({found[0]}…): set model.target_lang (or metrics.lang) to their language")
        return
    letters = sum(c.isalpha() for c in joined)
    own = re.findall(_OWN_SCRIPT[base], joined) if base in _OWN_SCRIPT else None
    kana_missing = base == "ja" and not re.search(_KANA, joined)
    if own is not None and letters and (2 * len(own) <= letters or kana_missing):
        foreign = [c for c in _SPACELESS_SCRIPT.findall(joined) if not re.match(_OWN_SCRIPT[base], c)]
        other = f" ({foreign[0]}…)" if foreign and not kana_missing else " (no kana)" if kana_missing else ""
        raise UserError(f"metrics.lang={lang}, but the references are not mostly {spaceless(lang)} text{other}: "
                        "set model.target_lang (or metrics.lang) to their language")
