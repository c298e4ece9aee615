"""Words by target language (issue #66; adaptsim/metrics/segmenters.py, docs/usage.md "Words by language"): a
language written without spaces is cut by its segmenter (the extra `cjk`) or refused, never scored as one word per
sentence; every other language keeps the Moses path, byte for byte. Real text: ../shared/data/ted-cjk (skipped
without it), each library's tests skipped without the library (pytest.importorskip)."""

from __future__ import annotations

import hashlib
import json
import os
import statistics
import sys
from pathlib import Path

import pytest

from adaptsim import PROJECT_ROOT
from adaptsim.errors import UserError
from adaptsim.metrics import Evaluator, sacre, segmenters
from adaptsim.metrics.recall import occurrence_levels
from adaptsim.metrics.words import WordPipeline, content_words, is_word, load_stopwords
from adaptsim.records.files import read_record, record_file

SHARED = Path(os.environ.get("ADAPTSIM_SHARED", PROJECT_ROOT.parent / "shared"))
TED_CJK = SHARED / "data" / "ted-cjk"
LIBRARY = {"zh": "jieba", "ja": "fugashi", "ko": "kiwipiepy", "th": "pythainlp"}
RESULTS = PROJECT_ROOT / "docs" / "results" / "base-ende" / "runs"


def words_of(lang: str) -> WordPipeline:
    pytest.importorskip(LIBRARY[lang])
    return WordPipeline(lang, load_stopwords(lang), "truecase")


# -- refusals: one line, naming the setting and the extra ------------------------------------------------------

@pytest.mark.parametrize("lang", ["lo", "km", "my", "bo", "lao_Laoo"])
def test_a_language_without_spaces_and_without_a_segmenter_is_refused(lang):
    with pytest.raises(UserError) as e:
        content_words(["ສະບາຍດີ"], lang, "truecase", None, None)
    message = str(e.value)
    assert "\n" not in message and f"metrics.lang={lang}" in message and 'pip install -e ".[cjk]"' in message
    with pytest.raises(UserError, match=f"metrics.lang={lang}"):
        segmenters.check(lang)  # the settings' check, before anything loads


def test_a_segmenter_whose_library_is_missing_names_the_extra(monkeypatch):
    segmenters.segmenter_for.cache_clear()
    for module in ("jieba", "fugashi"):
        monkeypatch.setitem(sys.modules, module, None)  # import raises ImportError
    try:
        for refuse in (lambda: content_words(["我喜欢新的驱动程序。"], "zh", "truecase", None, None),
                       lambda: segmenters.check("zh")):
            with pytest.raises(UserError) as e:
                refuse()
            assert str(e.value) == 'metrics.lang=zh: Chinese words need jieba, not installed: pip install -e ".[cjk]"'
        with pytest.raises(UserError, match=r"^metrics.lang=ja_XX: Japanese words need fugashi and unidic-lite, not "):
            segmenters.check("ja_XX")
    finally:
        segmenters.segmenter_for.cache_clear()


def test_references_in_a_script_without_spaces_under_a_spaced_language_are_refused():
    with pytest.raises(UserError, match=r"^metrics.lang=de, but the references are written in a script without"):
        content_words(["我喜欢新的驱动程序。", "Ein Satz."], "de", "truecase", None, None)
    content_words(["Das Wort 驱动程序 ist chinesisch."], "de", "truecase", None, None)  # a quoted word is fine


def test_language_codes_are_read_by_their_language_subtag():
    assert [segmenters.base_language(c) for c in ("zh", "zh-CN", "zho_Hans", "chi", "ja_XX", "DE")] == \
        ["zh", "zh", "zh", "zh", "ja", "de"]
    assert segmenters.spaceless("zho_Hans") == "Chinese" and segmenters.spaceless("de_DE") is None
    # the words and the scores' tokeniser read a code alike (ISO 639-2/B chi was zh to sacre, Moses to the words)
    assert segmenters.spaceless("chi") == "Chinese" and sacre.choose_tokenize("chi") == "zh"
    assert segmenters.segmenter_for("de") is None and segmenters.segmenter_for("en") is None



@pytest.mark.parametrize("code", ["zho_Hans", "zh-CN", "zh_Hans", "cmn", "chi", "ZH"])
def test_every_spelling_of_a_language_gets_its_stopwords_and_one_signature(code):
    """Issue #76: the stopword lookup read the raw code (zho_Hans had no list), and ZH signed lang:ZH|stop:iso-ZH."""
    ev = Evaluator(["我喜欢新的驱动程序。"], lang=code, sacrebleu=["BLEU"])
    assert ev.corpus(["我喜欢用新的驱动程序。"])["counts"]["R0"] == {"num": 3, "den": 3}
    signature = ev.corpus(["我"])["signatures"]["R"]
    assert f"lang:{code.lower().replace('_', '-')}|" in signature and "|stop:iso-zh|" in signature


def test_traditional_chinese_and_unknown_codes_need_a_stopword_file_and_are_refused_before_any_work(tmp_path):
    import subprocess

    assert [segmenters.stopword_language(c) for c in ("zh-TW", "zho_Hant", "zh-HK")] == ["zh-tw", "zho-hant", "zh-hk"]
    with pytest.raises(UserError, match=r"^metrics.lang=zh-TW: no stopwords-iso list for language 'zh-tw'"):
        content_words(["我喜歡新的驅動程式。"], "zh-TW", "truecase", None, None)
    r = subprocess.run([sys.executable, "-m", "adaptsim", "run", "metrics.lang=xx", f"hydra.run.dir={tmp_path}"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode != 0 and "metrics.lang=xx: no stopwords-iso list for language 'xx'" in r.stderr
    assert not list(tmp_path.rglob("steps.jsonl"))


def test_references_not_in_a_spaceless_language_s_script_are_refused():
    """Chinese scored as ko, th or ja (Chinese has no kana) was accepted: each segmenter cut it into nonsense."""
    chinese = ["我喜欢新的驱动程序。", "这是一个测试。"]
    for lang, name in (("ko", "Korean"), ("th", "Thai"), ("ja", "Japanese")):
        with pytest.raises(UserError, match=rf"^metrics.lang={lang}, but the references are not mostly {name} text"):
            segmenters.check_script(lang, chinese)
    segmenters.check_script("zh", chinese)
    segmenters.check_script("ja", ["私は新しいドライバーを使います。", "東京 Tower"])
    with pytest.raises(UserError, match=r"not mostly Chinese text \(は…\)"):
        segmenters.check_script("zh", ["私はドライバーを使います。"])

# -- each segmenter -----------------------------------------------------------------------------------------

def test_chinese_the_issues_example():
    """Issue #66: `我喜欢用新的驱动程序。` was one content word; now its words, and the stopwords leave in the same
    segmentation."""
    words = words_of("zh")
    assert words.segmenter.words("我喜欢用新的驱动程序。") == ["我", "喜欢", "用", "新", "的", "驱动程序", "。"]
    assert words("我喜欢用新的驱动程序。") == {"喜欢", "新", "驱动程序"}  # 我, 用, 的: stopwords-iso zh
    ev = Evaluator(["我喜欢新的驱动程序。"], lang="zh", sacrebleu=["BLEU"])
    assert ev.corpus(["我喜欢用新的驱动程序。"])["counts"]["R0"] == {"num": 3, "den": 3}
    assert ev.corpus(["我喜欢新的程序。"])["counts"]["R0"]["num"] < 3


def test_japanese_korean_thai_words():
    assert words_of("ja").segmenter.words("私は新しいドライバーを使います。") == \
        ["私", "は", "新しい", "ドライバー", "を", "使い", "ます", "。"]
    assert words_of("ja")("私は新しいドライバーを使います。") == {"新しい", "ドライバー", "使い"}
    # まし, でし, ね: particles and auxiliaries the analyser tags, which stopwords-iso's list lacks
    assert words_of("ja")("ドライバーを使いました。便利でしたね。") == {"ドライバー", "使い", "便利"}
    ko = words_of("ko")  # school grammar: particles and the copula apart, a verb with its endings
    assert ko.segmenter.words("나는 새로운 드라이버를 사용합니다. 그는 학생이다.") == \
        ["나", "는", "새로운", "드라이버", "를", "사용합니다", ".", "그", "는", "학생", "이다", "."]
    assert ko("나는 새로운 드라이버를 사용합니다. 그는 학생이다.") == {"새로운", "드라이버", "사용합니다", "학생"}
    assert ko.grammatical >= {"는", "를", "이다"}  # 는 and 이다 are not in stopwords-iso's list
    assert words_of("th").segmenter.words("ฉันชอบใช้ไดรเวอร์ใหม่ สวัสดีครับ") == \
        ["ฉัน", "ชอบ", "ใช้", "ไดรเวอร์", "ใหม่", "สวัสดี", "ครับ"]


def test_scripts_without_case_are_not_truecased_and_the_signature_names_the_segmenter():
    words = words_of("zh")
    assert words.case == "none" and words._truecaser is None
    assert "iPhone" in words("他买了一部iPhone。")  # a quoted Latin word keeps its casing
    signature = Evaluator(["我喜欢新的驱动程序。"], lang="zh", sacrebleu=["BLEU"]).corpus(["我"])["signatures"]["R"]
    assert f"tok:jieba-{__import__('importlib.metadata').metadata.version('jieba')}|case:none|" in signature
    assert "|tok:moses|case:truecase|" in Evaluator(["Ein Satz."], lang="de", sacrebleu=["BLEU"]).corpus(
        ["Ein Satz."])["signatures"]["R"]


# -- every other language: Moses, byte for byte -----------------------------------------------------------------

EN_DE = ("ted/iwslt17.tst2016.en-de.tsv", "gnome-help/gnome-help.en-de.tsv", "business-central/test.tsv")


@pytest.mark.parametrize("run", ["ted", "gnome_help", "gnome_help_20", "gnome_help_pages", "business_central"])
def test_the_committed_en_de_records_reproduce_exactly(run):
    """docs/results' en→de runs (written before #66; text-free records: references as hashes, no hypotheses)
    re-scored on ../shared's references: every segment's R0/R1 denominators (the references' content words counted
    in the run's scope: Moses, the truecaser trained on them, stopwords-iso German) and the recall signature are the
    recorded ones."""
    sources = [SHARED / "data" / name for name in EN_DE]
    if not all(path.is_file() for path in sources):
        pytest.skip("../shared's en→de data is absent")
    texts = {"sha256:" + hashlib.sha256(t.encode()).hexdigest()[:16]: t for path in sources
             for line in path.read_text(encoding="utf-8").splitlines()[1:] for t in line.split("\t")[3:4]}
    run = RESULTS / run / "none"
    summary = json.loads((run / "summary.json").read_text())
    rows = [json.loads(line) for line in read_record(record_file(run, "steps.jsonl")).splitlines() if line.strip()]
    references = [texts[r["reference"]] for r in rows]
    metrics = summary["config"]["metrics"]
    ev = Evaluator(references, [r["doc_id"] for r in rows], lang=metrics["lang"], case=metrics["case"],
                   scope=summary["metrics_scope"], k_max=metrics["k_max"], subword_tokenize=str.split,
                   sacrebleu=["BLEU"])
    keys = ("R0_den", "R1_den", "R0+1_den")
    scored = [ev.segment(i, "") for i in range(len(rows))]
    assert [{k: s[k] for k in keys} for s in scored] == [{k: r[k] for k in keys} for r in rows]
    assert ev.corpus([""] * len(rows))["signatures"]["R"] == summary["signatures"]["R"]


# -- real text: TED talks into Chinese, Japanese, Korean ------------------------------------------------------

def ted(lang: str) -> tuple[list[str], list[str]]:
    path = TED_CJK / f"iwslt17.tst2016.en-{lang}.tsv"
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    rows = [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines()[1:] if line.strip()]
    return [r[3] for r in rows], [r[0] for r in rows]


@pytest.mark.parametrize("lang", ["zh", "ja", "ko"])
def test_ted_word_counts_per_segment_are_plausible(lang):
    words = words_of(lang)
    references, _ = ted(lang)
    counts = [sum(map(is_word, words.segmenter.words(r))) for r in references]
    median = statistics.median(counts)
    print(f"{lang}: {len(counts)} segments, words per segment median {median}, min {min(counts)}, max {max(counts)}")
    assert 8 <= median <= 40
    assert sum(c <= 3 for c in counts) < 0.1 * len(counts)


@pytest.mark.parametrize("lang", ["zh", "ja", "ko"])
def test_ted_recall_of_a_reference_against_itself_and_without_one_word(lang):
    """Each segment's reference against itself: R0 = R1 = R0+1 = 100. Against a copy with one R0 word replaced by □ (a
    symbol, no word) in each segment that has one occurring once: that word is gone from every hypothesis, and R0's
    numerator drops by exactly the reference's R0 words the hypotheses lack — the replaced ones and, where the cut
    re-segments a neighbour (1800年代 without 1800: 年代 for 年 代), those. In nearly every segment only the replaced
    word is lost."""
    pytest.importorskip(LIBRARY[lang])
    references, doc_ids = ted(lang)
    ev = Evaluator(references, doc_ids, lang=lang, sacrebleu=["BLEU"])
    same = ev.corpus(references)
    assert same["scores"]["R0"] == same["scores"]["R1"] == same["scores"]["R0+1"] == 100.0
    levels = ev._variants[""][1]
    hypotheses, replaced, lost, exact = [], 0, 0, 0
    for reference, level in zip(references, levels):
        once = [w for w in ev.words.segmenter.words(reference) if w in level[0] and reference.count(w) == 1]
        hypothesis = reference.replace(once[0], "□") if once else reference
        hypotheses.append(hypothesis)
        if once:
            missing = ev.words(reference) - ev.words(hypothesis)
            assert once[0] in missing
            replaced, lost, exact = replaced + 1, lost + len(missing & level[0]), exact + (missing == {once[0]})
    less = ev.corpus(hypotheses)["counts"]
    print(f"{lang}: {replaced} of {len(references)} segments with one R0 word replaced; only it lost in {exact}; "
          f"R0 {same['counts']['R0']['num']} → {less['R0']['num']} of {less['R0']['den']}")
    assert replaced > 0.9 * len(references) and exact > 0.95 * replaced
    assert less["R0"] == {"num": same["counts"]["R0"]["num"] - lost, "den": same["counts"]["R0"]["den"]}


# -- everything built on words ----------------------------------------------------------------------------------

def test_the_settings_check_refuses_before_any_work():
    from adaptsim.launch.hydra_app import compose
    from adaptsim.loop.settings import validate

    with pytest.raises(UserError, match=r"^metrics.lang=lo: Lao is written without spaces"):
        validate(compose("run", ["metrics.lang=lo"]), "run")
    pytest.importorskip("jieba")
    with pytest.raises(UserError, match=r"^metrics.interactive=word: .* use metrics.interactive=char$"):
        validate(compose("run", ["metrics.lang=zh", "metrics.interactive=word"]), "run")
    validate(compose("run", ["metrics.lang=zh", "metrics.interactive=char"]), "run")


def test_the_simulated_translator_counts_a_spaceless_language_by_characters_and_its_words():
    from adaptsim.loop import interactive

    segmenter = words_of("zh").segmenter
    reference, shown = "我喜欢新的驱动程序。", ["我喜欢旧的驱动程序。", "我喜欢新的驱动程序。"]
    keras = interactive.count("char", "nmt-keras", reference, shown, segmenter)
    own = interactive.count("char", "adaptsim", reference, shown, segmenter)
    # one character typed (新, at 3); words: 我 喜欢 新 的 驱动程序 (not 。), where whitespace gives 1
    assert (keras.KS, keras.MA, keras.WS, keras.chars, keras.words) == (1, 2, 1, 10, 5)
    assert (own.KS, own.WS, own.words) == (1, 1, 5)
    assert interactive.count("char", "nmt-keras", reference, shown).words == 1  # what a segmenter replaces
    with pytest.raises(ValueError):
        interactive.count("word", "nmt-keras", reference, shown, segmenter)


def test_cxmi_groups_pieces_into_the_segmenters_words_and_gives_them_their_roles():
    import numpy as np

    from adaptsim.metrics import cxmi
    from adaptsim.metrics.roles import Roles

    segmenter = words_of("zh").segmenter
    pieces = ["__zh__", "▁我", "喜欢", "用新", "的", "驱动", "程序", "。", "</s>"]
    assert cxmi.segmented_piece_words(pieces, segmenter) == [
        ("", [0]), ("我", [1]), ("喜欢", [2]), ("用新", [3]), ("的", [4]), ("驱动程序", [5, 6]), ("。", [7]), ("", [8])]
    references = ["我喜欢新的驱动程序。", "新的驱动程序很好。"]
    roles = Roles({"lang": "zh"}, references, ["d", "d"], "document")
    rows = [{"ref_pieces": ["▁我", "喜欢", "新的", "驱动", "程序", "。", "</s>"], "hypothesis": "我喜欢驱动。"},
            {"ref_pieces": ["▁新的", "驱动", "程序", "很好", "。", "</s>"], "hypothesis": "新的驱动程序很好。"}]
    found = cxmi.words(roles, rows, [np.ones(7), np.ones(6)], rows)
    by_text = {(w.segment, w.role, w.value) for w in found}
    assert (0, "first", 2.0) in by_text and (1, "second, recalled", 2.0) in by_text  # 驱动程序: two pieces
    assert [w.role for w in found if w.segment == 0] == ["stopword", "first", "other content", "first",
                                                       "punctuation", "end"]  # 新的: one piece across 新|的


def test_litter_terms_and_novel_words_use_the_segmenter():
    from adaptsim.metrics import litter, terms

    pytest.importorskip("jieba")
    assert litter.words("我喜欢新的驱动程序。", "zh") == ["我", "喜欢", "新", "的", "驱动程序"]
    assert litter.lemma("驱动程序", "zh") == "驱动程序"  # simplemma has no Chinese
    scorer = litter.Litter(litter.Dictionary({"driver": ["驱动程序", "司机"]}, ["test"]), "en", "zh", stopwords=True,
                           strip_accents=True, compounds=False, partial=False, lemmas=True)
    assert not scorer.strip_accents and "|tok:moses-dashes/jieba-" in scorer.signature()
    assert scorer.bag("我喜欢新的驱动程序。") >= {"驱动程序", "喜欢"}
    assert scorer.error(["driver"], "他是一名工程师。", "他是一名驱动程序。") is True  # a blocked word, segmented
    assert scorer.error(["driver"], "他是一名工程师。", "他是一名工程师。") is False
    assert "|tok:moses/jieba-" in terms.Terms(scorer).signature("document")



def test_a_novel_vocabulary_of_a_spaceless_language_is_known_in_the_segmenters_words(tmp_path):
    from adaptsim.metrics import novel

    words = words_of("zh")
    vocabulary = tmp_path / "vocab.txt"
    vocabulary.write_text("驱动程序 12\n我喜欢 3\n", encoding="utf-8")  # 我喜欢: jieba's 我 + 喜欢
    assert novel.load_known(vocabulary, words.raw_tokens) == {"驱动程序", "我喜欢"}  # the Moses reading
    assert novel.load_known(vocabulary, words.raw_tokens, segment_entries=True) == {"驱动程序", "我", "喜欢"}
    ev = Evaluator(["我喜欢新的驱动程序。"], lang="zh", novel_vocab=str(vocabulary), sacrebleu=["BLEU"])
    assert ev.corpus(["我喜欢新的驱动程序。"])["counts"]["novel.R0"] == {"num": 1, "den": 1}  # 新


@pytest.mark.parametrize("lang", ["zh", "ja", "ko"])
def test_adaptsim_score_over_a_whole_talk(lang, tmp_path, capsys):
    """`adaptsim score --lang X` over the first talk: its references against themselves score 100, against the talk's
    segments shifted by one (a neighbour's words) far less, but not 0 (words a talk repeats)."""
    from adaptsim import cli

    pytest.importorskip(LIBRARY[lang])
    references, doc_ids = ted(lang)
    talk = [r for r, d in zip(references, doc_ids) if d == doc_ids[0]]
    ref, same, shifted = tmp_path / "ref.txt", tmp_path / "same.txt", tmp_path / "shifted.txt"
    ref.write_text("".join(r + "\n" for r in talk), encoding="utf-8")
    same.write_text(ref.read_text(encoding="utf-8"), encoding="utf-8")
    shifted.write_text("".join(r + "\n" for r in talk[1:] + talk[:1]), encoding="utf-8")

    def score(hyp):
        with pytest.raises(SystemExit) as exit_:
            cli.main(["score", "--hyp", str(hyp), "--ref", str(ref), "--lang", lang, "--sacrebleu", "BLEU", "--json"])
        assert exit_.value.code == 0
        return json.loads(capsys.readouterr().out)

    itself, neighbour = score(same), score(shifted)
    assert itself["scores"]["R0"] == itself["scores"]["R1"] == 100.0
    assert itself["counts"]["R0"]["den"] > 5 * len(talk)  # words, not one per sentence
    assert 0 < neighbour["scores"]["R0"] < 50
    assert f"tok:{LIBRARY[lang]}-" in itself["signatures"]["R"]


ZH_STREAM = [("doc1", "I like the new driver.", "我喜欢新的驱动程序。"),
             ("doc1", "The driver is installed.", "驱动程序已经安装好了。"),
             ("doc1", "Restart the computer.", "请重新启动电脑。"),
             ("doc2", "The computer is new.", "这台电脑是新的。"),
             ("doc2", "Install the driver again.", "请再次安装驱动程序。")]


def test_a_run_into_chinese_counts_words_and_the_translators_effort_by_the_segmenter(tmp_path, tiny_model_dir):
    """`adaptsim run` scored as zh (the tiny en→de model cannot write Chinese: what matters is how it is scored, so
    metrics.lang, not model.target_lang, which its tokenizer would refuse): R0/R1 on
    jieba's words, the signature says so, and the simulated translator works at the character level with the
    segmenter's words."""
    from test_tm import run, summary

    words = words_of("zh")
    data = tmp_path / "zh.tsv"
    data.write_text("doc_id\tseg_id\tsource\treference\n" + "".join(
        f"{d}\t{i}\t{s}\t{r}\n" for i, (d, s, r) in enumerate(ZH_STREAM, 1)), encoding="utf-8")
    out = run(tmp_path / "run", tiny_model_dir, data, "metrics.lang=zh", "method=full",
              "metrics.interactive=char", "metrics.max_corrections=30")
    done = summary(out)
    rows = [json.loads(line) for line in (out / "steps.jsonl").read_text(encoding="utf-8").splitlines()]
    assert done["signatures"]["R"].startswith(f"R|lang:zh|tok:{words.segmenter.name}|case:none|")
    levels = occurrence_levels([words(r) for _, _, r in ZH_STREAM], [d for d, _, _ in ZH_STREAM], 1)
    assert [(r["R0_den"], r["R1_den"]) for r in rows] == [(len(a), len(b)) for a, b in levels]
    assert levels[1][1] == {"驱动程序"} and levels[4][0] == {"再次", "安装", "驱动程序"}  # by document
    assert [r["effort"]["words"] for r in rows] == [sum(map(is_word, words.segmenter.words(r)))
                                                    for _, _, r in ZH_STREAM]
    assert all(r["effort"]["chars"] == len(r["reference"]) for r in rows)


def test_the_japanese_dictionary_and_the_korean_model_are_named_in_the_signature():
    """Issue #76: a bare fugashi.Tagger() takes the `unidic` package over unidic-lite where both are installed, and
    the signature named neither dictionary nor kiwipiepy's model."""
    pytest.importorskip("fugashi")
    pytest.importorskip("unidic_lite")
    from importlib.metadata import version

    import unidic_lite

    ja = segmenters.segmenter_for("ja")
    assert ja.name == f"fugashi-{version('fugashi')}+unidic-lite-{version('unidic-lite')}"
    assert unidic_lite.DICDIR in ja._tagger.dictionary_info[0]["filename"]
    pytest.importorskip("kiwipiepy")
    assert segmenters.segmenter_for("ko").name.endswith(f"+model-{version('kiwipiepy_model')}")
