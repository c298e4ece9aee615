"""German morphology: determiners, adjective declension, noun case forms, present tense.

Closed-class words and inflection tables live here (grammar in code); open-class words come
from the lexicon. Keys: case in nom/acc/dat, gender slot g in m/f/n/pl.
"""

from __future__ import annotations

DEF_ART = {
    "nom": {"m": "der", "f": "die", "n": "das", "pl": "die"},
    "acc": {"m": "den", "f": "die", "n": "das", "pl": "die"},
    "dat": {"m": "dem", "f": "der", "n": "dem", "pl": "den"},
}
# endings of der-words (dieser) and ein-words (ein, kein, mein, unser, Ihr)
DER_END = {
    "nom": {"m": "er", "f": "e", "n": "es", "pl": "e"},
    "acc": {"m": "en", "f": "e", "n": "es", "pl": "e"},
    "dat": {"m": "em", "f": "er", "n": "em", "pl": "en"},
}
EIN_END = {
    "nom": {"m": "", "f": "e", "n": "", "pl": "e"},
    "acc": {"m": "en", "f": "e", "n": "", "pl": "e"},
    "dat": {"m": "em", "f": "er", "n": "em", "pl": "en"},
}
# adjective endings: weak after der-words, mixed after ein-words, strong with no determiner
ADJ_END = {
    "weak": {
        "nom": {"m": "e", "f": "e", "n": "e", "pl": "en"},
        "acc": {"m": "en", "f": "e", "n": "e", "pl": "en"},
        "dat": {"m": "en", "f": "en", "n": "en", "pl": "en"},
    },
    "mixed": {
        "nom": {"m": "er", "f": "e", "n": "es", "pl": "en"},
        "acc": {"m": "en", "f": "e", "n": "es", "pl": "en"},
        "dat": {"m": "en", "f": "en", "n": "en", "pl": "en"},
    },
    "strong": {
        "nom": {"m": "er", "f": "e", "n": "es", "pl": "e"},
        "acc": {"m": "en", "f": "e", "n": "es", "pl": "e"},
        "dat": {"m": "em", "f": "er", "n": "em", "pl": "en"},
    },
}
POSSESSIVE = {"my": "mein", "your": "Ihr", "his": "sein", "her": "ihr", "our": "unser", "their": "ihr"}
NUMBERS = {2: "zwei", 3: "drei", 4: "vier", 5: "fünf"}
PRONOUNS = {"I": "ich", "you": "Sie", "he": "er", "she": "sie", "we": "wir", "they": "sie"}
# person/number slot that selects the verb form; formal "Sie" agrees like 3rd plural
PERSON = {"I": "1sg", "you": "3pl", "he": "3sg", "she": "3sg", "we": "1pl", "they": "3pl"}
SEIN = {"1sg": "bin", "3sg": "ist", "1pl": "sind", "3pl": "sind"}
MODALS = {
    "can": {"1sg": "kann", "3sg": "kann", "1pl": "können", "3pl": "können"},
    "must": {"1sg": "muss", "3sg": "muss", "1pl": "müssen", "3pl": "müssen"},
    "want": {"1sg": "will", "3sg": "will", "1pl": "wollen", "3pl": "wollen"},
}
# preposition + definite article contractions that standard German requires
CONTRACTIONS = {("in", "dem"): "im", ("in", "das"): "ins", ("an", "dem"): "am", ("an", "das"): "ans",
                ("zu", "dem"): "zum", ("zu", "der"): "zur", ("von", "dem"): "vom", ("bei", "dem"): "beim"}


def slot(gender: str, number: str) -> str:
    return "pl" if number == "pl" else gender


def determiner(det: str, case: str, g: str, poss: str = "", count: int = 0) -> tuple[str, str]:
    """(determiner word or "", adjective declension) for det in def/dem/indef/poss/num."""
    if det == "def":
        return DEF_ART[case][g], "weak"
    if det == "dem":
        return "dies" + DER_END[case][g], "weak"
    if det == "indef":
        return ("", "strong") if g == "pl" else ("ein" + EIN_END[case][g], "mixed")
    if det == "poss":
        return POSSESSIVE[poss] + EIN_END[case][g], "mixed"
    if det == "num":
        return NUMBERS[count], "strong"
    raise ValueError(f"unknown determiner {det!r}")


def adjective(stem: str, decl: str, case: str, g: str) -> str:
    return stem + ADJ_END[decl][case][g]


def noun_form(noun, number: str, case: str) -> str:
    """Case form: weak masculines take -(e)n outside the nominative; dative plural adds -n."""
    if number == "sg":
        return noun.de_sg if case == "nom" else noun.de_obl
    pl = noun.de_pl
    if case == "dat" and not pl.endswith(("n", "s")):
        return pl + "n"
    return pl


def contract(prep: str, article: str) -> str | None:
    return CONTRACTIONS.get((prep, article))


def _stem(inf: str) -> str:
    return inf[:-1] if inf.endswith(("ern", "eln")) else inf[:-2]


def _needs_e(stem: str) -> bool:
    """öffn-et, find-et, rechn-et: an -e- is inserted before -t after d/t and consonant + m/n."""
    if stem.endswith(("d", "t", "chn", "chm")):
        return True
    return stem.endswith(("m", "n")) and len(stem) > 1 and stem[-2] not in "aeiouäöülrhmn"


def present(verb, person: str) -> str:
    """Present-tense form of the verb (without separable prefix) for 1sg/3sg/1pl/3pl."""
    if person in ("1pl", "3pl"):
        return verb.de_inf
    stem = _stem(verb.de_inf)
    if person == "1sg":
        return verb.de_1sg or stem + "e"
    if verb.de_3sg:
        return verb.de_3sg
    return stem + ("et" if _needs_e(stem) else "t")


def infinitive(verb) -> str:
    return verb.de_prefix + verb.de_inf
