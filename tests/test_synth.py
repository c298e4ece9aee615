"""The synthetic EN→DE generator: agreement, word order, domains, determinism, documents."""

from __future__ import annotations

import re
import shutil

import pytest

from adaptsim.synth import Generator, Lexicon
from adaptsim.synth import german as de
from adaptsim.synth.phrases import NP, PP, Clause


@pytest.fixture(scope="module")
def lex():
    return Lexicon()


@pytest.fixture(scope="module")
def gen():
    return Generator(seed=7)


def noun(lex, en, domain):
    (n,) = [x for x in lex.nouns if x.en_sg == en and x.domain == domain]
    return n


def adj(lex, en):
    (a,) = [x for x in lex.adjectives if x.en == en]
    return a


def verb(lex, en, domain, frame="tr"):
    (v,) = [x for x in lex.verbs if x.en_base == en and x.domain in (domain, "both") and frame in x.frames]
    return v


# (domain, noun, determiner, adjective, number, case, expected German); det "poss:your", "num:2"
NP_CASES = [
    ("software", "table", "def", "new", "sg", "nom", "die neue Tabelle"),
    ("general", "table", "def", "old", "sg", "acc", "den alten Tisch"),
    ("general", "table", "def", "old", "sg", "dat", "dem alten Tisch"),
    ("software", "driver", "indef", "new", "sg", "nom", "ein neuer Treiber"),
    ("software", "driver", "indef", "new", "sg", "acc", "einen neuen Treiber"),
    ("software", "driver", "indef", "new", "sg", "dat", "einem neuen Treiber"),
    ("software", "menu", "indef", "new", "sg", "nom", "ein neues Menü"),
    ("software", "menu", "indef", "new", "sg", "acc", "ein neues Menü"),
    ("software", "menu", "def", "new", "sg", "acc", "das neue Menü"),
    ("software", "key", "indef", "old", "sg", "dat", "einer alten Taste"),
    ("general", "key", "poss:your", "old", "sg", "acc", "Ihren alten Schlüssel"),
    ("software", "password", "dem", "new", "sg", "nom", "dieses neue Passwort"),
    ("software", "password", "dem", "new", "sg", "dat", "diesem neuen Passwort"),
    ("software", "user", "dem", "new", "sg", "acc", "diesen neuen Benutzer"),
    ("software", "file", "poss:our", "new", "pl", "nom", "unsere neuen Dateien"),
    ("software", "file", "indef", "new", "pl", "nom", "neue Dateien"),
    ("software", "file", "indef", "new", "pl", "dat", "neuen Dateien"),
    ("software", "file", "num:2", "new", "pl", "acc", "zwei neue Dateien"),
    ("general", "child", "def", None, "pl", "dat", "den Kindern"),
    ("general", "mouse", "def", None, "pl", "dat", "den Mäusen"),
    ("software", "app", "def", None, "pl", "dat", "den Apps"),
    ("general", "student", "def", "young", "sg", "acc", "den jungen Studenten"),
    ("general", "student", "def", "young", "sg", "nom", "der junge Student"),
    ("general", "neighbor", "poss:my", None, "sg", "dat", "meinem Nachbarn"),
    ("general", "room", "indef", "dark", "sg", "nom", "ein dunkles Zimmer"),
    ("general", "car", "indef", "expensive", "sg", "acc", "ein teures Auto"),
]


@pytest.mark.parametrize("domain,en,det,a,number,case,expected", NP_CASES)
def test_noun_phrase_agreement(lex, domain, en, det, a, number, case, expected):
    det, _, extra = det.partition(":")
    np = NP(noun(lex, en, domain), number, det, adj(lex, a) if a else None,
            poss=extra if det == "poss" else "", count=int(extra) if det == "num" else 0)
    assert np.de(case) == expected


@pytest.mark.parametrize("domain,en,prep,case,det,a,number,expected", [
    ("software", "driver", "mit", "dat", "def", "new", "sg", "mit dem neuen Treiber"),
    ("software", "file", "in", "dat", "def", None, "sg", "in der Datei"),
    ("software", "table", "mit", "dat", "def", None, "pl", "mit den Tabellen"),
    ("software", "folder", "in", "dat", "def", None, "sg", "im Ordner"),
    ("software", "folder", "in", "acc", "def", None, "sg", "in den Ordner"),
    ("software", "menu", "in", "acc", "def", None, "sg", "ins Menü"),
    ("software", "menu", "in", "dat", "dem", None, "sg", "in diesem Menü"),
    ("software", "server", "von", "dat", "def", None, "sg", "vom Server"),
    ("general", "table", "auf", "acc", "def", None, "sg", "auf den Tisch"),
    ("general", "table", "auf", "dat", "indef", None, "sg", "auf einem Tisch"),
    ("general", "wall", "an", "acc", "def", None, "sg", "an die Wand"),
    ("general", "teacher", "für", "acc", "def", None, "sg", "für den Lehrer"),
    ("general", "key", "ohne", "acc", "def", None, "sg", "ohne den Schlüssel"),
])
def test_prepositional_phrase_case(lex, domain, en, prep, case, det, a, number, expected):
    pp = PP("x", prep, case, NP(noun(lex, en, domain), number, det, adj(lex, a) if a else None))
    assert pp.de() == expected


@pytest.mark.parametrize("en,det,number,expected", [
    ("file", "indef", "sg", "an old file"), ("user", "indef", "sg", "a user"),
    ("USB stick", "indef", "sg", "a USB stick"), ("update", "indef", "sg", "an update"),
    ("table", "def", "pl", "the old tables"), ("key", "dem", "pl", "these keys"),
])
def test_english_noun_phrase(lex, en, det, number, expected):
    a = adj(lex, "old") if "old" in expected else None
    assert NP(noun(lex, en, "software"), number, det, a).en() == expected


@pytest.mark.parametrize("inf,forms", [
    ("öffnen", ("öffne", "öffnet", "öffnen")), ("finden", ("finde", "findet", "finden")),
    ("lesen", ("lese", "liest", "lesen")), ("wissen", ("weiß", "weiß", "wissen")),
    ("speichern", ("speichere", "speichert", "speichern")), ("arbeiten", ("arbeite", "arbeitet", "arbeiten")),
    ("zeichnen", ("zeichne", "zeichnet", "zeichnen")), ("benennen", ("benenne", "benennt", "benennen")),
    ("geben", ("gebe", "gibt", "geben")), ("klicken", ("klicke", "klickt", "klicken")),
])
def test_present_tense(lex, inf, forms):
    v = next(x for x in lex.verbs if x.de_inf == inf)
    assert tuple(de.present(v, p) for p in ("1sg", "3sg", "3pl")) == forms


def _clause(lex, vb, subj, obj=None, **kw):
    return Clause("verb", subj, vb, obj=obj, **kw)


def test_subject_verb_agreement_and_word_order(lex):
    dl = verb(lex, "download", "software")
    user = NP(noun(lex, "user", "software"))
    users = NP(noun(lex, "user", "software"), "pl")
    file = NP(noun(lex, "file", "software"))
    server = PP("from", "von", "dat", NP(noun(lex, "server", "software")))
    c = _clause(lex, dl, user, file, pp=server)
    assert c.de() == "der Benutzer lädt die Datei vom Server herunter"
    assert c.en() == "the user downloads the file from the server"
    assert c.de("sub") == "der Benutzer die Datei vom Server herunterlädt"
    assert c.de("q") == "lädt der Benutzer die Datei vom Server herunter"
    assert c.en("q") == "does the user download the file from the server"
    assert c.de("imp") == "laden Sie die Datei vom Server herunter"
    assert c.en("imp") == "download the file from the server"
    c = _clause(lex, dl, users, file, modal="can")
    assert c.de() == "die Benutzer können die Datei herunterladen"
    assert c.de("sub") == "die Benutzer die Datei herunterladen können"
    assert c.en() == "the users can download the file"
    op = verb(lex, "open", "software")
    for pron, en_form, de_form in [("I", "I open", "ich öffne"), ("he", "he opens", "er öffnet"),
                                   ("we", "we open", "wir öffnen"), ("you", "you open", "Sie öffnen"),
                                   ("they", "they open", "sie öffnen")]:
        c = _clause(lex, op, NP(pron=pron), file)
        assert c.en() == f"{en_form} the file" and c.de() == f"{de_form} die Datei"
    c = _clause(lex, op, NP(pron="she"), file, modal="want")
    assert (c.en(), c.de()) == ("she wants to open the file", "sie will die Datei öffnen")


def test_case_government_of_verbs(lex):
    teacher, child = NP(noun(lex, "teacher", "general")), NP(noun(lex, "child", "general"))
    book = NP(noun(lex, "book", "general"), det="indef")
    give = verb(lex, "give", "general", "ditr")
    assert Clause("verb", teacher, give, io=child, obj=book).de() == "der Lehrer gibt dem Kind ein Buch"
    helps = verb(lex, "help", "general", "dat")
    assert _clause(lex, helps, child, teacher, obj_case="dat").de() == "das Kind hilft dem Lehrer"
    click = verb(lex, "click", "software")
    button = NP(noun(lex, "button", "software"))
    assert _clause(lex, click, NP(pron="you"), button).de("imp") == "klicken Sie auf die Schaltfläche"
    put = verb(lex, "put", "general", "dir")
    goal = PP("onto", "auf", "acc", NP(noun(lex, "table", "general")))
    assert _clause(lex, put, child, book, pp=goal).de() == "das Kind legt ein Buch auf den Tisch"


def test_copula_and_there(lex):
    files = NP(noun(lex, "file", "software"), "pl")
    assert Clause("cop_adj", files, pred=adj(lex, "new")).de("sub") == "die Dateien neu sind"
    assert Clause("cop_adj", files, pred=adj(lex, "new")).en() == "the files are new"
    bug = NP(noun(lex, "bug", "software"), det="indef")
    where = PP("in", "in", "dat", NP(noun(lex, "file", "software")))
    c = Clause("there", obj=bug, pp=where)
    assert (c.en(), c.de()) == ("there is a bug in the file", "es gibt einen Fehler in der Datei")


def test_generated_sentences_are_well_formed(gen):
    for domain in ("general", "software"):
        pairs = gen.sentences(domain, 300)
        assert len(pairs) == 300 and len({e for e, _ in pairs}) == 300
        for en, dd in pairs:
            assert 4 <= len(en.split()) <= 20 and 4 <= len(dd.split()) <= 20
            assert en[0].isupper() and dd[0].isupper() and en[-1] in ".?" and dd[-1] == en[-1]
            assert "  " not in en + dd and not re.search(r"\b(a [aeio]|an [bcdfgkpst])", en)
            assert " ein einen " not in dd and " dem den " not in dd


def test_determinism(gen):
    a = gen.sentences("software", 50)
    _ = gen.sentences("general", 10)  # other calls do not shift the stream
    assert Generator(seed=7).sentences("software", 50) == a
    assert Generator(seed=8).sentences("software", 50) != a
    assert gen.sentences("software", 50, seed=1) != a
    docs = gen.documents("software", 2, 6)
    assert [d.pairs for d in Generator(seed=7).documents("software", 2, 6)] == [d.pairs for d in docs]


def _tokens(pairs):
    return {t for _, d in pairs for t in re.findall(r"[\wÄÖÜäöüß-]+", d)}


def test_domains_keep_their_senses(gen, lex):
    amb = gen.terms("ambiguous", "noun")
    assert len(amb) >= 15
    sw_nouns = [e for k in amb for e in lex.entries(k)]
    gen_nouns = [n for n in lex.nouns if n.domain == "general" and n.en_sg in {s.en_sg for s in sw_nouns}]
    gender_changes = {n.en_sg for n in sw_nouns for g in gen_nouns if g.en_sg == n.en_sg and g.gender != n.gender}
    assert {"table", "key", "screen", "button", "menu"} <= gender_changes
    forms = lambda ns: {f for n in ns for f in lex.forms(n.key)}  # noqa: E731
    sw_tok = _tokens(gen.sentences("software", 400))
    gen_tok = _tokens(gen.sentences("general", 400))
    assert not sw_tok & forms(gen_nouns)
    assert not gen_tok & forms(sw_nouns)
    assert {"Tabelle", "Treiber"} & sw_tok and {"Tisch", "Fahrer"} & gen_tok
    # speichern, ausführen…; the bare finite forms of separable eingeben/freigeben are those of geben
    sw_verbs = {f for k in gen.terms("ambiguous", "verb") for f in lex.forms(k)} - {"gebe", "gibt", "geben"}
    assert not gen_tok & sw_verbs


def test_lexicon_size(lex):
    c = lex.counts()
    assert c["nouns"] >= 200 and c["verbs"] >= 80 and c["adjectives"] >= 50
    assert sum(c.values()) >= 300


def test_documents_have_recurring_terms(gen, lex):
    docs = gen.documents("software", n_docs=4, segs_per_doc=12)
    assert len(docs) == 4 and all(len(d) == 12 for d in docs)
    for d in docs:
        assert len(d.focus) == 4
        for en, dd in d:
            toks = set(re.findall(r"[\wÄÖÜäöüß-]+", dd))
            assert any(toks & lex.forms(k) for k in d.focus), (d.focus, dd)
        for k in d.focus:
            hits = sum(bool(set(re.findall(r"[\wÄÖÜäöüß-]+", dd)) & lex.forms(k)) for _, dd in d)
            assert hits >= 2, (k, d.pairs)


def test_corpus_limits_software_terms(gen, lex):
    seen = gen.terms("new", "noun")[:5] + gen.terms("ambiguous", "noun")[:2]
    pairs = gen.corpus(400, software_share=0.25, software_terms=seen)
    assert len(pairs) == 400
    unseen = [k for k in gen.terms("all", "noun") if k not in seen and k not in gen.terms("shared")]
    assert not _tokens(pairs) & {f for k in unseen for f in lex.forms(k)}


def test_corpus_rare_terms_occur_exactly_so_often(gen, lex):
    seen = gen.terms("new", "noun")[:5]
    rare = [k for k in gen.terms("ambiguous", "noun") if k not in seen][:2]
    pairs = gen.corpus(300, software_share=0.1, software_terms=seen, rare_terms=rare, rare_count=4)
    assert len(pairs) == 300 + 2 * 4
    for key in rare:  # the technical sense occurs in its rare_count sentences and nowhere else
        assert sum(bool(set(re.findall(r"[\wÄÖÜäöüß-]+", de)) & lex.forms(key)) for _, de in pairs) == 4
    assert len({en for en, _ in pairs}) == len(pairs)


def test_bad_lexicon_row_names_file_and_line(tmp_path):
    lexdir = Lexicon().dir
    for p in lexdir.glob("*.tsv"):
        shutil.copy(p, tmp_path / p.name)
    path = tmp_path / "nouns.tsv"
    lines = path.read_text(encoding="utf-8").splitlines()
    i = next(j for j, ln in enumerate(lines) if ln.startswith("general\tperson"))
    lines[i] = lines[i].replace("\tm\t", "\tx\t")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=rf"nouns.tsv:{i + 1}: bad gender"):
        Lexicon(tmp_path)


def test_cli_prints_pairs(capsys):
    from adaptsim.synth.__main__ import main

    main(["--domain", "software", "--n", "3", "--seed", "1"])
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 3 and all(len(x.split("\t")) == 2 for x in out)
