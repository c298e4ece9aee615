"""Immediate-adaptation metrics (docs/design.md §4): hand-computed cases, sacrebleu agreement, curves."""

from __future__ import annotations

import csv
import html
import math

import pytest
import sacrebleu
from omegaconf import OmegaConf
from sacrebleu.metrics import BLEU

from adaptsim.errors import DataError, UserError
from adaptsim.metrics import Evaluator, write_curves

FIG1_REFS = ["The dog bites the lady", "The man bites the dog"]
FIG1_HYPS = ["A terrier bites the person", "The dog bites the man"]


def counts(record: dict, key: str) -> tuple[int, int]:
    return record[f"{key}_num"], record[f"{key}_den"]


@pytest.fixture
def words_file(tmp_path):
    def write(*words: str, name: str = "words.txt"):
        path = tmp_path / name
        path.write_text("".join(w + "\n" for w in words), encoding="utf-8")
        return str(path)

    return write


@pytest.fixture
def fig1(words_file):
    return Evaluator(FIG1_REFS, lang="en", stopwords=words_file("the", "a"))


def test_figure1_per_segment(fig1):
    first, second = fig1.segment(0, FIG1_HYPS[0]), fig1.segment(1, FIG1_HYPS[1])
    assert [counts(first, k) for k in ("R0", "R1", "R0+1")] == [(1, 3), (0, 0), (1, 3)]
    assert [counts(second, k) for k in ("R0", "R1", "R0+1")] == [(1, 1), (2, 2), (3, 3)]
    assert first["R1"] is None  # nothing to recall: no score, not 0
    assert first["R0"] == pytest.approx(100 / 3) and second["R0+1"] == 100.0


def test_figure1_totals(fig1):
    result = fig1.corpus(FIG1_HYPS)
    assert {k: (c["num"], c["den"]) for k, c in result["counts"].items()} == {
        "R0": (2, 4), "R1": (2, 2), "R0+1": (4, 6)}
    assert result["scores"]["R0"] == 50.0 and result["scores"]["R1"] == 100.0
    assert result["scores"]["R0+1"] == pytest.approx(400 / 6)
    assert result["segments"] == 2
    assert set(result["signatures"]) == {"R", "BLEU", "SBLEU", "TER", "chrF"}
    assert "stop:file:words.txt" in result["signatures"]["R"]


def test_figure1_needs_the_given_stopword_list():
    # stopwords-iso English lists "man": the worked example then changes, as docs/design.md §4 warns. Its
    # content words are dog, bites, lady (R0: only "bites" is translated) and bites, dog again (R1: both).
    result = Evaluator(FIG1_REFS, lang="en").corpus(FIG1_HYPS)
    assert ({k: (c["num"], c["den"]) for k, c in result["counts"].items()}
            == {"R0": (1, 3), "R1": (2, 2), "R0+1": (3, 5)})


def test_running_scores_equal_the_corpus_scores(fig1):
    assert fig1.running()["R0"] is None
    fig1.segment(0, FIG1_HYPS[0])
    assert fig1.running()["R0"] == pytest.approx(100 / 3)
    fig1.segment(1, FIG1_HYPS[1])
    running, corpus = fig1.running(), fig1.corpus(FIG1_HYPS)["scores"]
    for key in ("R0", "R1", "R0+1", "BLEU", "SBLEU", "TER"):
        assert running[key] == pytest.approx(corpus[key]), key
    with pytest.raises(ValueError, match="scored already"):  # a segment is scored once, as the loop does
        fig1.segment(0, "nothing right")


def test_second_occurrence_across_documents(words_file):
    refs = ["Hund beißt Hund", "Hund schläft", "Hund frisst", "Hund bellt"]
    docs = ["a", "a", "b", "b"]
    hyps = ["Hund", "Hund", "Hund", "Hund"]
    stop = words_file()
    per_doc = Evaluator(refs, docs, lang="de", stopwords=stop, case="none")
    corpus = Evaluator(refs, docs, lang="de", stopwords=stop, case="none", scope="corpus")
    # a word repeated inside one reference occurs once: "Hund" is first seen in 1, second in 2
    doc_records = [per_doc.segment(i, h) for i, h in enumerate(hyps)]
    assert [counts(r, "R0") for r in doc_records] == [(1, 2), (0, 1), (1, 2), (0, 1)]
    assert [counts(r, "R1") for r in doc_records] == [(0, 0), (1, 1), (0, 0), (1, 1)]
    corpus_records = [corpus.segment(i, h) for i, h in enumerate(hyps)]
    assert [counts(r, "R0") for r in corpus_records] == [(1, 2), (0, 1), (0, 1), (0, 1)]
    assert [counts(r, "R1") for r in corpus_records] == [(0, 0), (1, 1), (0, 0), (0, 0)]


def test_stopwords_and_punctuation_are_not_content_words():
    ev = Evaluator(["Hund , und die Katze !", "Die Katze schläft ..."], lang="de")
    assert ev.words("Hund , und die Katze ! 2019 :-)") == {"Hund", "Katze", "2019"}
    assert counts(ev.segment(0, "Hund !"), "R0") == (1, 2)


def test_truecasing_german_noun_vs_article():
    refs = ["Die Katze sieht den Mann .", "Mann , die Katze schläft ."]
    ev = Evaluator(refs, lang="de")
    # sentence-initial "Die" becomes the stopword "die"; sentence-initial "Mann" keeps its capital
    assert ev.words(refs[0]) == {"Katze", "sieht", "Mann"}
    assert ev.words(refs[1]) == {"Mann", "Katze", "schläft"}
    assert ev.words("Die Katze") == ev.words("die Katze") == {"Katze"}
    lower = Evaluator(refs, lang="de", case="lower")
    assert lower.words(refs[1]) == {"katze", "schläft"}  # "mann" is on the German stopword list
    none = Evaluator(refs, lang="de", case="none")
    assert "Die" in none.words(refs[0])


def test_truecasing_keeps_known_mid_sentence_casing_as_truecase_perl_does():
    # "essen" (to eat) is the more frequent form; the noun "Essen" (food) was seen too. Mid-sentence, a
    # known casing is kept, so the noun stays a word of its own; only the sentence-initial word is recased.
    refs = ["Wir essen heute .", "Sie essen gern .", "Alle essen jetzt .", "Das Essen ist warm ."]
    ev = Evaluator(refs, lang="de")
    assert "Essen" in ev.words("Das Essen ist warm .") and "essen" not in ev.words("Das Essen ist warm .")
    assert "essen" in ev.words("Wir essen heute .")
    assert "essen" in ev.words("Essen ist warm .")  # sentence start: the most frequent casing
    assert ev.words.tokens("Er mag das ESSEN .")[3] == "essen"  # a casing never seen: the most frequent one


def test_truecasing_equals_sacremoses_use_known_on_whole_sentences():
    # words.py truecases sentence by sentence: exactly sacremoses' truecase(use_known=True) (truecase.perl)
    from sacremoses import MosesTokenizer, MosesTruecaser

    refs = ["Die Katze sieht den Mann .", "Mann , die Katze schläft .", "„Die Tür“ ist zu & offen | oder ?",
            "Er sagt: Die Tür ist zu. Die Katze? die Katze (Die Katze) [Die Katze]"]
    ev = Evaluator(refs, lang="de")
    tokenizer, truecaser = MosesTokenizer(lang="de"), MosesTruecaser()
    truecaser.train([tokenizer.tokenize(r) for r in refs])
    for text in refs + ["DIE KATZE sieht die Tür ."]:
        whole = truecaser.truecase(tokenizer.tokenize(text, return_str=True), use_known=True)
        assert ev.words.tokens(text) == [html.unescape(t) for t in whole]


def test_truecaser_trained_on_given_text():
    refs = ["Hier ist Kraft ."]
    ev = Evaluator(refs, lang="de", truecase_text=["Hier hat er kraft ."] * 3)
    assert ev.words("Kraft ist hier") == {"kraft"}  # "hier" is a stopword, "ist" too


def test_r2_and_unions(words_file):
    refs = ["Hund", "Hund Katze", "Hund Katze Maus", "Hund"]
    hyps = ["Hund", "Katze", "Hund Maus", "Hund"]
    ev = Evaluator(refs, lang="de", stopwords=words_file(), k_max=2)
    records = [ev.segment(i, h) for i, h in enumerate(hyps)]
    third = records[2]  # Hund: 3rd occurrence, Katze: 2nd, Maus: 1st
    assert [counts(third, k) for k in ("R0", "R1", "R2", "R0+1", "R0+1+2")] == [
        (1, 1), (0, 1), (1, 1), (1, 2), (2, 3)]
    assert counts(records[3], "R0+1+2") == (0, 0)  # Hund's 4th occurrence is beyond k_max
    result = ev.corpus(hyps)
    assert result["counts"]["R2"] == {"num": 1, "den": 1}
    assert result["counts"]["R0+1+2"] == {"num": 4, "den": 6}
    assert list(result["scores"])[:5] == ["R0", "R1", "R2", "R0+1", "R0+1+2"]


def test_subword_variant_counts_all_pieces(words_file):
    refs, hyps = ["the dog .", "the cat ."], ["a dog .", "the cat"]
    ev = Evaluator(refs, lang="en", stopwords=words_file("the", "a"), subword_tokenize=str.split)
    result = ev.corpus(hyps)["counts"]
    assert result["subword.R0"] == {"num": 3, "den": 4}  # {the, dog, .} then {cat}
    assert result["subword.R1"] == {"num": 1, "den": 2}  # {the, .}: "." missing
    assert result["subword.R0+1"] == {"num": 4, "den": 6}
    assert result["R0"] == {"num": 2, "den": 2} and result["R1"] == {"num": 0, "den": 0}


def test_subword_variant_scores_the_generated_pieces_not_the_text_re_encoded(words_file):
    # The model generated the piece "dog" as "do" + "g"; its text re-encodes to "dog". Table 4 scores "the raw
    # subword output": the generated pieces miss the reference's piece.
    ev = Evaluator(["the dog ."], lang="en", stopwords=words_file("the"), subword_tokenize=str.split)
    generated = ["the", "do", "g", "."]
    assert counts(ev.segment(0, "the dog .", generated), "subword.R0") == (2, 3)
    assert ev.corpus(["the dog ."], [generated])["counts"]["subword.R0"] == {"num": 2, "den": 3}
    assert ev.curves(["the dog ."], [generated])[0]["subword.R0"] == pytest.approx(200 / 3)
    assert ev.corpus(["the dog ."])["counts"]["subword.R0"] == {"num": 3, "den": 3}  # re-encoded text (score)


def test_novel_words_from_vocabulary_and_from_text(words_file):
    stop = words_file("the", "a", name="stop.txt")
    vocab = words_file("Dog\t10", "17 bites", name="vocab.txt")  # counts after or before; case ignored
    text = words_file("My dog bites, doesn't it?", name="train.txt")
    for known in (vocab, text):
        ev = Evaluator(FIG1_REFS, lang="en", stopwords=stop, novel_vocab=known)
        result = ev.corpus(FIG1_HYPS)
        # novel: lady (seg 1, missed), man (seg 2, found); dog and bites are known
        assert result["counts"]["novel.R0"] == {"num": 1, "den": 2}, known
        assert result["counts"]["novel.R1"] == {"num": 0, "den": 0}
        assert result["scores"]["novel.R1"] is None
        assert result["counts"]["R0"] == {"num": 2, "den": 4}  # the main metric is unchanged


def test_sbleu_is_mean_of_sacrebleu_bleu_plus_one(words_file):
    refs = ["a b c e", "Der Hund bellt laut .", "x y", "eins zwei drei vier fünf"]
    hyps = ["a b c d", "Der Hund bellt .", "z", "eins zwei drei vier fünf"]
    ev = Evaluator(refs, lang="de")
    records = [ev.segment(i, h) for i, h in enumerate(hyps)]
    plus_one = BLEU(smooth_method="add-k", smooth_value=1, effective_order=True)
    sentence = [plus_one.sentence_score(h, [r]).score for h, r in zip(hyps, refs)]
    assert [r["SBLEU"] for r in records] == pytest.approx(sentence)
    # BLEU+1 by hand: unigrams unsmoothed (3/4), n ≥ 2 add one: (2+1)/(3+1), (1+1)/(2+1), (0+1)/(1+1)
    assert records[0]["SBLEU"] == pytest.approx(100 * math.exp(sum(map(math.log, [3 / 4, 3 / 4, 2 / 3, 1 / 2])) / 4))
    assert records[2]["SBLEU"] == 0.0
    result = ev.corpus(hyps)
    assert result["scores"]["SBLEU"] == pytest.approx(sum(sentence) / len(sentence))
    assert "smooth:add-k[1.00]" in result["signatures"]["SBLEU"]


def test_corpus_scores_equal_sacrebleu_corpus_scores():
    refs = ["Der Hund bellt laut .", "Die Katze schläft .", "Ein Vogel singt im Baum ."]
    hyps = ["Der Hund bellt .", "Eine Katze schläft tief .", "Vogel singt ."]
    result = Evaluator(refs, lang="de").corpus(hyps)["scores"]
    assert result["BLEU"] == pytest.approx(sacrebleu.corpus_bleu(hyps, [refs]).score)
    assert result["TER"] == pytest.approx(sacrebleu.corpus_ter(hyps, [refs]).score)
    assert result["chrF"] == pytest.approx(sacrebleu.corpus_chrf(hyps, [refs]).score)


def test_sacrebleu_metrics_can_be_left_out():
    ev = Evaluator(FIG1_REFS, lang="en", sacrebleu=["BLEU"])
    record = ev.segment(0, FIG1_HYPS[0])
    assert "TER" not in record and "SBLEU" not in record and "R0_num" in record
    assert set(ev.running()) == {"R0", "R1", "R0+1", "BLEU"}
    result = ev.corpus(FIG1_HYPS)
    assert set(result["scores"]) == {"R0", "R1", "R0+1", "BLEU"} and set(result["signatures"]) == {"R", "BLEU"}
    assert result["scores"]["BLEU"] == pytest.approx(sacrebleu.corpus_bleu(FIG1_HYPS, [FIG1_REFS]).score)
    with pytest.raises(UserError, match="BLUE"):
        Evaluator(FIG1_REFS, lang="en", sacrebleu=["BLUE"])


def test_curves_are_cumulative(fig1, tmp_path):
    rows = fig1.curves(FIG1_HYPS)
    assert [r["segment"] for r in rows] == [1, 2]
    assert rows[0]["R0"] == pytest.approx(100 / 3) and rows[0]["R1"] is None
    assert rows[0]["BLEU"] == pytest.approx(sacrebleu.corpus_bleu(FIG1_HYPS[:1], [FIG1_REFS[:1]]).score)
    final = fig1.corpus(FIG1_HYPS)["scores"]
    assert {k: rows[-1][k] for k in final} == pytest.approx(final)
    path = tmp_path / "curves.csv"
    write_curves(rows, path)
    with open(path, encoding="utf-8") as f:
        read = list(csv.DictReader(f))
    assert list(read[0]) == list(rows[0]) and read[0]["R1"] == "" and float(read[1]["R1"]) == 100.0


def test_user_errors(tmp_path, words_file):
    with pytest.raises(UserError, match="2 hypotheses for 1"):
        Evaluator(["a"], lang="en").corpus(["a", "b"])
    with pytest.raises(UserError, match="doc ids"):
        Evaluator(["a"], ["d1", "d2"], lang="en")
    with pytest.raises(UserError, match="scope"):
        Evaluator(["a"], lang="en", scope="book")
    with pytest.raises(UserError, match="case"):
        Evaluator(["a"], lang="en", case="upper")
    with pytest.raises(UserError, match="stopwords-iso"):
        Evaluator(["a"], lang="xx")
    with pytest.raises(DataError, match="file not found"):
        Evaluator(["a"], lang="en", stopwords=str(tmp_path / "missing.txt"))
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fine\n\xff\n")
    with pytest.raises(DataError, match=r"bad.txt:2: invalid UTF-8"):
        Evaluator(["a"], lang="en", novel_vocab=str(bad))


def test_from_config(words_file):
    from adaptsim import CONFIG_DIR

    defaults = OmegaConf.load(CONFIG_DIR / "metrics" / "default.yaml")
    cfg = OmegaConf.create({"model": {"target_lang": "en"}, "metrics": defaults})
    cfg.metrics.merge_with({"stopwords": words_file("the", "a"), "k_max": 2, "scope": "corpus", "subword": False})
    ev = Evaluator.from_config(cfg.metrics, FIG1_REFS, ["d1", "d2"], subword_tokenize=str.split)
    result = ev.corpus(FIG1_HYPS)
    assert result["counts"]["R0"] == {"num": 2, "den": 4}
    assert "R2" in result["scores"] and not any(k.startswith("subword.") for k in result["scores"])


def test_the_recall_signature_holds_every_file_by_content(tmp_path):
    """Two stopword lists under one name, or two truecasing texts, score differently: the R signature tells them
    apart (it named the stopword file only, so reports tabled both as one scoring)."""
    def signature(**kw):
        return Evaluator(FIG1_REFS, lang="en", **kw).corpus(FIG1_HYPS)["signatures"]["R"]

    stop = tmp_path / "stop.txt"
    stop.write_text("the\na\n")
    first = signature(stopwords=stop)
    stop.write_text("the\n")
    assert signature(stopwords=stop) != first and "stop:file:stop.txt#" in first
    assert "truecase:" not in signature()  # the default: the references themselves
    assert signature(truecase_text=["The cat ."]) != signature(truecase_text=["the cat ."])
