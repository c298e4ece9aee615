"""LitTER per segment (adaptsim/metrics/litter.py): hand-made dictionaries in the three formats, idiom matching,
and, where ../shared holds them, the 94 proverbs with MUSE."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from adaptsim.errors import DataError, UserError
from adaptsim.metrics.litter import Dictionary, IdiomList, Litter, span_words

SHARED = Path(os.environ.get("ADAPTSIM_SHARED", Path(__file__).resolve().parents[1].parent / "shared"))
IDIOMS = SHARED / "data" / "idioms"
SPILL = span_words("spill the beans")
OUT_OF_IT = "Er hat alles ausgeplaudert."  # the idiomatic reference: no bean, nothing spilled


@pytest.fixture
def write(tmp_path):
    def write(name: str, text: str) -> str:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        return str(path)

    return write


@pytest.fixture
def litter(write):
    """A tsv dictionary en→de; `litter(extra_lines, **settings)`."""
    def make(extra: str = "", **settings) -> Litter:
        path = write("en-de.tsv", "spill\tverschütten\nbeans\tBohne\nsoup\tSuppe\n" + extra)
        return Litter(Dictionary.load([{"path": path, "format": "tsv", "from": "en", "to": "de"}], "en", "de"),
                      **settings)

    return make


def test_literal_translation_is_an_error_the_idiomatic_one_is_not(litter):
    scorer = litter()
    assert scorer.error(SPILL, OUT_OF_IT, "Er hat die Bohnen verschüttet.") is True  # Bohnen → lemma Bohne
    assert scorer.error(SPILL, OUT_OF_IT, "Er verschüttete alles.") is True  # verschüttete → lemma verschütten
    assert scorer.error(SPILL, OUT_OF_IT, "Er hat alles verraten.") is False


def test_a_literal_reference_clears_that_word(litter):
    scorer = litter()
    reference = "Er hat über die Bohnen geredet."  # translates "beans" literally itself
    assert scorer.blocklist(SPILL, reference) == {"verschutten"}
    assert scorer.error(SPILL, reference, "Die Bohnen sind weg.") is False
    assert scorer.error(SPILL, reference, "Er verschüttete die Bohnen.") is True  # "spill" is still blocked
    # every idiom word translated literally in the reference, or none in the dictionary: an empty blocklist is
    # "no error", as in the reference implementation; a span without a content word has no verdict
    assert scorer.error(SPILL, "Er verschüttete die Bohnen.", "Er verschüttete die Bohnen.") is False
    assert scorer.error(["unknown", "words"], OUT_OF_IT, "Unbekannte Wörter.") is False
    assert scorer.error(["the", "of", ","], OUT_OF_IT, "Unbekannte Wörter.") is None


def test_accents_are_stripped_unless_told_not_to(litter):
    ascii_hypothesis = "Er wird alles verschutten."
    assert litter().error(SPILL, OUT_OF_IT, ascii_hypothesis) is True
    assert litter(strip_accents=False).error(SPILL, OUT_OF_IT, ascii_hypothesis) is False
    assert "verschütten" in litter(strip_accents=False).blocklist(SPILL, OUT_OF_IT)


def test_german_articles_from_the_dictionary_trigger_only_without_stopwords(litter):
    noisy = "the\tdie\nthe\tder\nbeans\tdie\n"  # dictionaries give articles, even for content words
    hypothesis = "Er hat die Wahrheit gesagt."
    assert litter(noisy).error(SPILL, OUT_OF_IT, hypothesis) is False
    assert litter(noisy).error(["beans"], OUT_OF_IT, hypothesis) is False
    assert litter(noisy, stopwords=False).error(SPILL, OUT_OF_IT, hypothesis) is True
    assert litter(noisy, stopwords=False).error(["beans"], OUT_OF_IT, hypothesis) is True
    assert "die" not in litter(noisy).blocklist(SPILL, OUT_OF_IT)


def test_english_function_words_are_dropped_content_words_kept(litter):
    span = span_words("bring home the bacon")  # stopwords-iso's English list would drop "home"
    scorer = litter("home\tZuhause\nthe\tdrinnen\n")  # "the": a noisy entry, no German stopword
    assert scorer.blocklist(span, "Er verdient das Geld.") == {"zuhause"}
    assert litter("home\tZuhause\nthe\tdrinnen\n", stopwords=False).blocklist(span, "Er verdient das Geld.") == {
        "zuhause", "drinnen"}


def test_a_stopword_in_the_reference_still_clears_its_word(litter):
    # stopwords-iso German lists "Tag": it leaves the blocklist only after the reference check, so the
    # reference's "Tag" still shows that "day" is translated literally there
    scorer = litter("day\tTag\nday\tTageszeit\n")
    assert scorer.error(["day"], "Eines Tages kam er.", "Zu jeder Tageszeit kam er.") is False
    assert scorer.error(["day"], "Irgendwann kam er.", "Zu jeder Tageszeit kam er.") is True
    assert scorer.error(["day"], "Irgendwann kam er.", "Eines Tages kam er.") is False


def test_partial_match_needs_a_known_remainder_and_no_match_in_the_reference(litter):
    plural = "beans\tBohnen\n"
    hypothesis = "Er aß eine Bohnensuppe."  # Bohnen + Suppe, and "suppe" is a dictionary word
    assert litter(plural).error(SPILL, OUT_OF_IT, hypothesis) is True
    assert litter(plural, partial=False).error(SPILL, OUT_OF_IT, hypothesis) is False
    assert litter(plural).error(SPILL, OUT_OF_IT, "Er aß Bohnenquark.") is False  # "quark": not in the dictionary
    assert litter(plural).error(SPILL, "Es gab Bohnensuppe.", hypothesis) is False  # the reference does it too


def test_compound_of_two_idiom_word_translations(litter):
    extra = "elephant\tElefanten\nroom\tZimmer\n"
    span = span_words("the elephant in the room")
    hypothesis = "Das ist ein Elefantenzimmer."
    assert litter(extra, partial=False).error(span, "Das heikle Thema.", hypothesis) is True
    assert litter(extra, partial=False, compounds=False).error(span, "Das heikle Thema.", hypothesis) is False
    assert litter(extra, partial=False).error(span, "Ein Elefantenzimmer, heikel.", hypothesis) is False


def test_the_three_formats_and_both_directions_load_to_the_same_map(write):
    expected = {"beans": {"Bohnen", "Bohne"}, "spill": {"verschütten"}}
    files = [
        ("tsv", "en", "de", "beans\tBohnen\nbeans\tBohne\nspill\tverschütten\n"),
        ("tsv", "de", "en", "Bohnen\tbeans\nBohne\tbeans\nverschütten\tspill\n"),
        ("hunalign", "en", "de", "Bohnen @ beans\nBohne @ beans\nverschütten @ spill\n"),
        ("hunalign", "de", "en", "beans @ Bohnen\nbeans @ Bohne\n\nspill @ verschütten\n"),
        ("wiktionary", "en", "de", (
         "# English :: German\n"
         "beans {n} (seeds (of a legume)) :: Bohnen {f}, [rare] Bohne {f}\n"
         "spill {v} (to drop) :: verschütten; sich ergießen [liquid]\n"  # multi-word target: left out
         "spill {n} (accident) SEE: spillage ::\n"
         "spill the beans {v} (idiom) :: auspacken\n")),  # multi-word source: left out
    ]
    for i, (fmt, src, tgt, text) in enumerate(files):
        spec = {"path": write(f"d{i}.{fmt}", text), "format": fmt, "from": src, "to": tgt}
        dictionary = Dictionary.load([spec], "en", "de")
        assert {s: set(t) for s, t in dictionary.translations.items()} == expected, (fmt, src, tgt)
        assert dictionary.vocabulary == {"Bohnen", "Bohne", "verschütten"}


def test_files_merge_and_name_the_signature(write):
    specs = [{"path": write("a.tsv", "beans\tBohne\n"), "format": "tsv", "from": "en", "to": "de"},
             {"path": write("b.dict", "beans @ Bohnen\n"), "format": "hunalign", "from": "de", "to": "en"}]
    dictionary = Dictionary.load(specs, "en", "de")
    assert dictionary.translations["beans"] == {"Bohne", "Bohnen"}
    signature = Litter(dictionary).signature()
    assert signature.startswith("LitTER|") and "dict:a.tsv+b.dict" in signature
    assert "stop:yes" in signature and "acc:strip" in signature and "lemma:simplemma-" in signature
    assert "stop:no" in Litter(dictionary, stopwords=False).signature()


@pytest.mark.parametrize("fmt, text, line", [
    ("hunalign", "Bohne @ beans\nBohne beans\n", 2),
    ("tsv", "beans\tBohne\nbeans\tBohne\textra\n", 2),
    ("wiktionary", "# comment\nbeans {n} (seeds) :: Bohne {f}\nbeans {n} Bohne\n", 3),
])
def test_a_malformed_line_is_one_line_naming_file_and_line(write, fmt, text, line):
    path = write("bad.dict", text)
    with pytest.raises(DataError) as error:
        Dictionary.load([{"path": path, "format": fmt, "from": "en", "to": "de"}], "en", "de")
    assert f"{path}:{line}:" in str(error.value) and "\n" not in str(error.value)


def test_a_wrong_orientation_or_missing_file_names_the_file(write, tmp_path):
    path = write("fr-de.tsv", "haricot\tBohne\n")
    with pytest.raises(UserError, match="fr-de.tsv") as error:
        Dictionary.load([{"path": path, "format": "tsv", "from": "fr", "to": "de"}], "en", "de")
    assert "\n" not in str(error.value)
    with pytest.raises(UserError, match="missing.tsv"):
        Dictionary.load([{"path": str(tmp_path / "missing.tsv"), "format": "tsv", "from": "en", "to": "de"}],
                        "en", "de")
    with pytest.raises(UserError, match="fr-de.tsv.*format"):
        Dictionary.load([{"path": path, "format": "csv", "from": "en", "to": "de"}], "en", "de")


IDIOM_LIST = ["kick the bucket", "to pull someone's leg", "spill the beans", "the elephant in the room",
              "to close the door", "give someone the cold shoulder"]


@pytest.mark.parametrize("sentence, found", [
    ("He kicked the bucket last year.", ["kick the bucket"]),
    ("He pulled my leg.", ["to pull someone's leg"]),
    ("Stop pulling John's leg!", ["to pull someone's leg"]),
    ("She’s pulling Tom’s leg.", ["to pull someone's leg"]),
    ("She spilled the beans at dinner.", ["spill the beans"]),
    ("Nobody mentioned elephant in the room.", ["the elephant in the room"]),
    ("They closed the door.", ["to close the door"]),
    ("We want to close the door.", ["to close the door"]),
    ("She gave him the cold shoulder.", ["give someone the cold shoulder"]),
    ("He pulled the leg of the table.", []),  # "the" is no possessive
    ("He kicked the old bucket.", []),  # not contiguous
    ("Spill all the beans.", []),
    ("She gave the boss the cold shoulder.", []),  # "someone" is one word
])
def test_idiom_list_finds_idioms_by_the_papers_rules(sentence, found):
    assert IdiomList(IDIOM_LIST).find(sentence) == found


def test_idiom_list_loads_a_file_and_gives_span_words(write):
    idioms = IdiomList.load(write("idioms.en", "kick the bucket\n\nspill the beans\n"))
    assert idioms.idioms == ["kick the bucket", "spill the beans"]
    assert idioms.find("They spilled the beans before he kicked the bucket.") == ["kick the bucket", "spill the beans"]
    assert span_words("to pull someone's leg") == ["pull", "leg"]
    assert span_words("give someone the cold shoulder") == ["give", "the", "cold", "shoulder"]
    assert span_words("A bird in the hand is worth two in the bush.")[:3] == ["A", "bird", "in"]


@pytest.mark.skipif(not (IDIOMS / "proverbs.en").exists(), reason="needs ../shared/data/idioms")
def test_proverbs_literal_german_is_flagged_idiomatic_german_is_not():
    sources, literal, idiomatic = ((IDIOMS / f"proverbs.{name}").read_text(encoding="utf-8").splitlines()
                                   for name in ("en", "literal.de", "idiomatic.de"))
    muse = [{"path": str(IDIOMS / "muse.en-de.dict"), "format": "hunalign", "from": "en", "to": "de"},
            {"path": str(IDIOMS / "muse.de-en.dict"), "format": "hunalign", "from": "de", "to": "en"}]
    scorer = Litter(Dictionary.load(muse, "en", "de"))

    def flagged(references, hypotheses) -> int:
        return sum(scorer.error(span_words(s), r, h) is True for s, r, h in zip(sources, references, hypotheses))

    literal_flagged, idiomatic_flagged = flagged(idiomatic, literal), flagged(literal, idiomatic)
    print(f"proverbs flagged, MUSE: literal {literal_flagged}/94, idiomatic {idiomatic_flagged}/94")
    assert len(sources) == 94 and literal_flagged >= 70 and idiomatic_flagged <= 15


# -- over the stream (adaptsim/report/litter_report.py) -------------------------------------------------------
from adaptsim.report.litter_report import macro, occurrences, statistics  # noqa: E402


def test_litter_k_counts_an_idioms_occurrences_in_the_scope_and_repeats_follow_a_previous_error():
    spans = [["kick the bucket"], ["spill the beans", "kick the bucket"], [], ["kick the bucket"], ["kick the bucket"]]
    docs = ["a", "a", "a", "a", "b"]
    occ = occurrences(spans, docs, "document")
    assert [[k for _, k in seg] for seg in occ] == [[0], [0, 1], [], [2], [0]]  # counting restarts in document b
    assert [[k for _, k in seg] for seg in occurrences(spans, docs, "corpus")][-1] == [3]
    verdicts = [[True], [None, True], [], [False], [True]]
    stats = statistics(verdicts, occ, ["kick the bucket", "spill the beans"], k_max=1)
    total = {m: s.sum(axis=0) for m, s in stats.items()}
    assert list(total["LitTER"]) == [3, 4]          # the occurrence without a verdict is not counted
    assert list(total["LitTER0"]) == [2, 2] and list(total["LitTER1"]) == [1, 1]
    # repeats: k=1 after an error (error again), k=2 after an error (no error): 1 of 2
    assert list(total["LitTER.repeat"]) == [1, 2]
    assert macro(total["LitTER.macro"]) == pytest.approx(75.0)  # kick: 3 of 4; spill: no verdict, left out


def test_litter_command_reads_the_spans_column_and_marks_the_baseline(run_adaptsim, tmp_path, tiny_corpus,
                                                                    tiny_model_dir, capsys):
    from adaptsim.cli import main

    rows = ["doc_id\tseg_id\tsource\treference\tspans"]
    for i, (src, ref) in enumerate(tiny_corpus[:6]):
        rows.append(f"d\t{i + 1}\t{src}\t{ref}\t{src.split()[0]} {src.split()[1]}")
    data = tmp_path / "spans.tsv"
    data.write_text("\n".join(rows) + "\n")
    words = {w for src, _ in tiny_corpus[:6] for w in src.lower().rstrip(".").split()[:2]}
    (tmp_path / "d.tsv").write_text("".join(f"{w}\tXwort{w}\n" for w in sorted(words)))
    res = tmp_path / "res.yaml"
    res.write_text(f"idioms: null\ndictionaries: [{{path: {tmp_path / 'd.tsv'}, format: tsv, from: en, to: de}}]\n")
    common = ("dataset=tsv", f"dataset.path={data}", f"model.path={tiny_model_dir}", "model.name=tiny")
    run_adaptsim("runs/none", "method=none", *common)
    run_adaptsim("runs/full", "method=full", *common)
    with pytest.raises(SystemExit) as exit_:
        main(["litter", str(tmp_path / "runs"), "--resources", str(res), "--resamples", "50"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    # every segment names one idiom; the made-up German words are in no reference, so all have a verdict,
    # and no hypothesis of a model that never saw them holds one: no literal error anywhere
    assert "6 occurrences, 6 with a verdict" in out and "| baseline | 0.0 [0.0, 0.0] |" in out


def test_litter_resources_with_a_misspelt_switch_are_refused_in_one_line(tmp_path):
    from adaptsim.report.resources import load

    res = tmp_path / "res.yaml"
    res.write_text("dictionaries: []\ncompound: false\n")
    with pytest.raises(UserError, match="unknown key.*compound"):
        load(res, None)
    res.write_text("- a list\n")
    with pytest.raises(UserError, match="expected a mapping"):
        load(res, None)
