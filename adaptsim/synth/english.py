"""English morphology: articles a/an, determiners, verb agreement, pronouns."""

from __future__ import annotations

POSSESSIVE = ("my", "your", "his", "her", "our", "their")
NUMBERS = {2: "two", 3: "three", 4: "four", 5: "five"}
# vowel letters that sound like a consonant ("a user", "a USB stick") and the reverse
_A_BEFORE = ("us", "uni", "use", "usu", "eu", "one", "usb")
_AN_BEFORE = ("hour", "honest")


def a_an(word: str) -> str:
    w = word.lower()
    if w.startswith(_AN_BEFORE):
        return "an"
    if w[0] in "aeiou" and not w.startswith(_A_BEFORE):
        return "an"
    return "a"


def determiner(det: str, number: str, next_word: str, poss: str = "", count: int = 0) -> str:
    if det == "def":
        return "the"
    if det == "dem":
        return "these" if number == "pl" else "this"
    if det == "indef":
        return "" if number == "pl" else a_an(next_word)
    if det == "poss":
        return poss
    if det == "num":
        return NUMBERS[count]
    raise ValueError(f"unknown determiner {det!r}")


def third_singular(pron: str | None, number: str) -> bool:
    return pron in ("he", "she") if pron else number == "sg"


def be(pron: str | None, number: str) -> str:
    if pron == "I":
        return "am"
    return "is" if third_singular(pron, number) else "are"
