"""scripts/data/business_central.py on a tiny pair of real git repositories laid out like MicrosoftDocs' (the German
articles name the English commit they were translated from in their front matter)."""

from __future__ import annotations

import contextlib
import hashlib
import io
import subprocess

import pytest
from conftest import script_module

business_central = script_module("scripts/data/business_central.py")

NBSP = "\u00a0"


def _git(repo, *args) -> str:
    run = subprocess.run(["git", "-C", str(repo), "-c", "user.name=Test", "-c", "user.email=test@example.com",
                          "-c", "commit.gpgsign=false", *args], capture_output=True, text=True, check=True)
    return run.stdout.strip()


def _commit(repo, files: dict[str, str]) -> str:
    """Write `files` (path under the repository → text), commit them all, and give the commit's id."""
    for path, text in files.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text, encoding="utf-8")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "docs")
    return _git(repo, "rev-parse", "HEAD")


def _english(lines: list[str]) -> str:
    return "---\ntitle: An article\nms.service: dynamics365-business-central\n---\n" + "\n\n".join(lines) + "\n"


def _german(lines: list[str], source_commit: str | None) -> str:
    front = "---\ntitle: Ein Artikel\n" + (f"ms.sourcegitcommit: {source_commit}\n" if source_commit else "")
    return front + "ms.translationtype: HT\nms.contentlocale: de-DE\n---\n" + "\n".join(lines) + "\n"


def _steps(n: int, fruit: str) -> tuple[list[str], list[str]]:
    """n translated lines that every rule keeps as they are: (English, German)."""
    return ([f"Step {k} of the {fruit} process is easy." for k in range(1, n + 1)],
            [f"Schritt {k} des Prozesses ({fruit}) ist einfach." for k in range(1, n + 1)])


# (English line, German line, the pair the builder keeps or None): one line of each kind the stripping meets
APPLE_LINES = [
    ("# Working with Apples in [!INCLUDE[d365fin](includes/d365fin_md.md)]",
     '# <a name="working-with-apples"></a>Arbeiten mit Äpfeln in [!INCLUDE[d365fin](includes/d365fin_md.md)]',
     ("Working with Apples in Business Central", "Arbeiten mit Äpfeln in Business Central")),
    ("1. Choose the ![Lightbulb](media/ui-search/search_small.png \"Tell me\") icon, enter **Apples**, and choose the "
     "related link.",
     "1. Wählen Sie das Symbol ![Glühbirne](media/ui-search/search_small.png \"Sie wünschen\") aus, geben Sie "
     "**Äpfel** ein, und wählen Sie den zugehörigen Link.",
     ("Choose the icon, enter Apples, and choose the related link.",
      "Wählen Sie das Symbol aus, geben Sie Äpfel ein, und wählen Sie den zugehörigen Link.")),
    ("- For more information, see [Set Up Apples](apples-setup.md#to-set-up).",
     "- Weitere Informationen finden Sie unter [Äpfel einrichten](apples-setup.md#to-set-up).",
     ("For more information, see Set Up Apples.", "Weitere Informationen finden Sie unter Äpfel einrichten.")),
    ("> [!NOTE]", "> [!NOTE]", None),  # untranslated (and one word)
    (">  -   A quoted list item keeps its dash.", "> -   Ein zitierter Listenpunkt behält seinen Strich.",
     ("- A quoted list item keeps its dash.", "- Ein zitierter Listenpunkt behält seinen Strich.")),
    ("### 1. Pick the apples", '### <a name="1-pick-the-apples"></a>1. Äpfel pflücken',
     ("1. Pick the apples", "1. Äpfel pflücken")),
    ("<!-- draft --> Filter with `<=` or <b>bold</b> and *emphasis* here.",
     f"<!-- Entwurf --> Filtern{NBSP}Sie mit `<=` oder <b>fett</b> und *Betonung* hier.",
     ("Filter with <= or bold and *emphasis* here.", "Filtern Sie mit <= oder fett und *Betonung* hier.")),
    ("![Payment rules](media/rules(Pre1503).gif \"Payment rules 1\")",
     "![Zahlungsregeln](media/rules(Pre1503).gif \"Zahlungsregeln 1\")", None),  # an image and nothing else
    ("Apples sync with [!INCLUDE[crm_md](includes/crm_md.md)] every night.",
     "Äpfel werden jede Nacht mit [!INCLUDE[crm_md](includes/crm_md.md)] synchronisiert.", None),  # another include
    ("|Field|Description|", "|Feld|Beschreibung|", None),  # a table row
    ("```json", "```json", None),  # a code fence (untranslated, one word)
    ('{"apples": "several of them"}', '{"apples": "several of them"}', None),  # code: untranslated
    ("Two words", "Zwei Wörter", None),  # under 3 English words
    ("Apple varieties list", "Apfelsortenliste", None),  # one German word
    (" ".join(["apple"] * 61), " ".join(["Apfel"] * 61), None),  # over 60 English words
    (" ".join(["apple"] * 60), " ".join(["Apfel"] * 60), (" ".join(["apple"] * 60), " ".join(["Apfel"] * 60))),
]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Both repositories, the builder run on them, and what it printed: {"test", "heldout", "printed", ...}."""
    root = tmp_path_factory.mktemp("business_central")
    en, de = root / "en", root / "de"
    for repo in (en, de):
        repo.mkdir()
        _git(repo, "init", "-q")

    apple_en = [e for e, _, _ in APPLE_LINES] + _steps(15, "apple")[0]
    apple_de = [g for _, g, _ in APPLE_LINES] + _steps(15, "apple")[1]
    step_en, step_de = _steps(15, "fruit")
    first = _commit(en, {
        "business-central/apples.md": _english(apple_en),
        "business-central/bananas.md": _english(step_en + ["One more line than the German has."]),
        "business-central/cherries.md": _english(_steps(14, "cherry")[0]),
        "business-central/grapes.md": _english(step_en),
        "business-central/kiwis.md": _english(step_en),
        "business-central/LocalFunctionality/Germany/vat.md": _english(step_en),
    })
    second = _commit(en, {  # after the translation: a rewritten apple article (one line more) and a new one
        "business-central/apples.md": _english(["A new first paragraph."] + [e.upper() for e in apple_en]),
        "business-central/dates.md": _english(_steps(15, "date")[0]),
    })
    _commit(de, {
        "business-central/apples.md": _german(apple_de, first),
        "business-central/bananas.md": _german(step_de, first),
        "business-central/cherries.md": _german(_steps(14, "cherry")[1], first),
        "business-central/dates.md": _german(_steps(15, "date")[1], second),
        "business-central/elderberries.md": _german(step_de, first),  # no English at that commit
        "business-central/figs.md": _german(step_de, None),  # names no English commit
        "business-central/grapes.md": _german(step_de, first),
        "business-central/kiwis.md": _german(step_de, first),
        "business-central/LocalFunctionality/Germany/vat.md": _german(step_de, first),
        "business-central/includes/d365fin_md.md": "Business Central\n",
    })
    german_commit = _git(de, "rev-parse", "HEAD")
    _commit(de, {"business-central/grapes.md": _german(step_de[:3], first)})  # later than the commit built from

    out = {"test": root / "test.tsv", "heldout": root / "heldout.tsv"}
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert business_central.main([str(de), str(en), str(out["test"]), str(out["heldout"]),
                                      "--commit", german_commit[:8]]) == 0
    rows = {name: [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines()]
            for name, path in out.items()}
    return {**rows, "paths": out, "printed": printed.getvalue(), "de": de, "en": en}


def _articles(rows) -> list[str]:
    return list(dict.fromkeys(row[0] for row in rows[1:]))


def _pairs(built, article) -> list[tuple[str, str]]:
    """The (source, reference) of `article` in whichever file holds it."""
    rows = built["test"][1:] + built["heldout"][1:]
    return [(source, reference) for doc, _, source, reference in rows if doc == article]


def test_the_articles_kept_are_those_aligned_at_their_english_commit_with_15_segments(built):
    kept = _articles(built["test"]) + _articles(built["heldout"])
    # bananas: one non-blank line more in English; cherries: 14 segments; elderberries: no English at its commit;
    # figs: no ms.sourcegitcommit; includes/: no front matter
    assert sorted(kept) == ["apples", "dates", "grapes", "kiwis", "vat"]


def test_each_article_is_read_at_the_english_commit_its_front_matter_names(built):
    apples = _pairs(built, "apples")
    assert ("Step 1 of the apple process is easy.", "Schritt 1 des Prozesses (apple) ist einfach.") in apples
    assert not any(source.isupper() or "new first" in source for source, _ in apples)  # not the later rewrite
    dates = _pairs(built, "dates")
    assert dates[0] == ("Step 1 of the date process is easy.", "Schritt 1 des Prozesses (date) ist einfach.")
    grapes = _pairs(built, "grapes")
    assert len(grapes) == 15  # the German commit given, not the German HEAD (which cut grapes to 3 lines)


def test_lines_are_aligned_by_their_place_among_the_non_blank_lines_and_stripped(built):
    # the English has a blank line between paragraphs, the German none: still the i-th line with the i-th
    expected = [pair for _, _, pair in APPLE_LINES if pair] + list(zip(*_steps(15, "apple")))
    assert _pairs(built, "apples") == expected


def test_seg_ids_count_the_kept_pairs_from_zero(built):
    for rows in (built["test"], built["heldout"]):
        for article in _articles(rows):
            assert [int(r[1]) for r in rows[1:] if r[0] == article] == list(range(len(_pairs(built, article))))


def test_a_seeded_fifth_of_the_articles_is_held_out_whole_and_both_files_are_in_path_order(built):
    assert built["test"][0] == built["heldout"][0] == ["doc_id", "seg_id", "source", "reference"]
    assert _articles(built["heldout"]) == ["dates"]  # random.Random(2026).shuffle of the sorted names, first 5 // 5
    assert len(_pairs(built, "dates")) == 15  # whole
    assert _articles(built["test"]) == ["vat", "apples", "grapes", "kiwis"]  # LocalFunctionality/Germany/ first


def test_the_held_out_names_are_the_first_fifth_of_the_sorted_names_shuffled_with_seed_2026():
    assert business_central.heldout_names([f"n{i:02d}" for i in range(10)]) == {"n00", "n06"}
    assert business_central.heldout_names([f"n{i:02d}" for i in reversed(range(9))]) == {"n07"}  # sorted first
    assert business_central.heldout_names(["a", "b", "c", "d"]) == set()


@pytest.mark.parametrize(("line", "text"), [
    ("## See Also  ", "See Also"),
    ("5. Search for **Microsoft [!INCLUDE[d365fin_long](includes/d365fin_long_md.md)]** connector.",
     "Search for Microsoft Dynamics 365 Business Central connector."),
    ("[Welcome to [!INCLUDE[prodlong](includes/prodlong.md)]](index.md)", "Welcome to Dynamics 365 Business Central"),
    ("Within your [!INCLUDE[d365fin_md](includes/d365fin_md.md)] tenant.", None),  # the label decides, not the file
    ("[!INCLUDE[tooltip-inline-tip](includes/tooltip-inline-tip_md.md)]", None),
    ("  |SOAP |https://api.example.com/*version*/ |", None),
    ("(<>) Not equal to", "(<>) Not equal to"),
    ("#### <a name=\"x\"></a>(1) Payment Date <=01/15/03", "(1) Payment Date <=01/15/03"),
    ("*payment date < due date*", "*payment date < due date*"),
    ("    * The balance must be zero.  ", "The balance must be zero."),
    (">   * The balance must be zero.  ", "* The balance must be zero."),
    ("place * after the search text (for example `man*`).", "place * after the search text (for example man*)."),
])
def test_strip_gives_a_lines_plain_text_or_none_for_a_line_that_is_not_prose(line, text):
    assert business_central.strip(line) == text


def test_the_builder_prints_each_files_counts_and_md5(built):
    lines = built["printed"].splitlines()
    assert len(lines) == 2
    for line, name in zip(lines, ("test", "heldout")):
        path = built["paths"][name]
        rows = built[name][1:]
        assert line == (f"{path}: {len(rows)} segments, {len(_articles(built[name]))} articles, "
                        f"md5 {hashlib.md5(path.read_bytes()).hexdigest()}")


def test_an_unknown_commit_or_directory_is_one_line(built, tmp_path, capsys):
    for de, commit in ((built["de"], "0000000000000000000000000000000000000000"), (tmp_path / "missing", "HEAD")):
        args = [str(de), str(built["en"]), str(tmp_path / "t.tsv"), str(tmp_path / "h.tsv"), "--commit", commit]
        assert business_central.main(args) == 1
        err = capsys.readouterr().err
        assert err.startswith("business_central.py: ") and err.count("\n") == 1
    assert not (tmp_path / "t.tsv").exists()
