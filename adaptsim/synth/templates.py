"""Sentence templates: how clauses combine into sentences of varied shape.

Each template takes a Builder and returns (English, German) or None when the lexicon offers
nothing that fits (the caller then draws another template). Weights differ per domain: software
text has more instructions (imperatives), general text more statements.
"""

from __future__ import annotations

from .builder import Builder
from .phrases import Clause


def _cap(s: str) -> str:
    return s[:1].upper() + s[1:]


def _finish(en: str, de: str, mark: str = ".") -> tuple[str, str]:
    return _cap(en) + mark, _cap(de) + mark


def statement(b: Builder):
    cl = b.any_clause()
    return _finish(cl.en(), cl.de()) if cl else None


def fronted_adverb(b: Builder):
    cl = b.verb_clause(p_adv=0.0)
    fronts = [a for a in b.view.adverbs if a.front]
    if not cl or not fronts:
        return None
    cl.adv = b.rng.choice(fronts)
    return _finish(cl.en("front"), cl.de("front"))


def there_is(b: Builder):
    cl = b.there_clause()
    return _finish(cl.en(), cl.de()) if cl else None


def question(b: Builder):
    cl = b.verb_clause(p_modal=0.0) if b.rng.random() < 0.7 else b.copula_clause()
    if not cl:
        return None
    if cl.kind == "verb" and b.rng.random() < 0.25:
        cl.modal = "can"
    return _finish(cl.en("q"), cl.de("q"), "?")


def imperative(b: Builder):
    cl = b.verb_clause(agentive=True, p_modal=0.0, p_pron=0.0)
    if not cl:
        return None
    return _finish(cl.en("imp"), cl.de("imp"))


def because(b: Builder):
    main, sub = b.any_clause(p_modal=0.05), b.any_clause(p_pp=0.2)
    if not (main and sub):
        return None
    return _finish(f"{main.en()} because {sub.en()}", f"{main.de()}, weil {sub.de('sub')}")


def that_clause(b: Builder):
    verb = b.that_verb()
    subj = b.subject(("person",), p_pron=0.35) if verb else None
    sub = b.any_clause(p_pp=0.25)
    if not (verb and subj and sub):
        return None
    main = Clause("verb", subj, verb)
    return _finish(f"{main.en()} that {sub.en()}", f"{main.de()}, dass {sub.de('sub')}")


def if_then(b: Builder):
    sub, main = b.verb_clause(p_pp=0.2, p_modal=0.0), b.any_clause(p_pp=0.3)
    if not (sub and main):
        return None
    return _finish(f"if {sub.en()}, {main.en()}", f"wenn {sub.de('sub')}, {main.de('inv')}")


def when_clause(b: Builder):
    main, sub = b.any_clause(p_pp=0.3), b.verb_clause(p_pp=0.2, p_modal=0.0)
    if not (sub and main):
        return None
    return _finish(f"{main.en()} when {sub.en()}", f"{main.de()}, wenn {sub.de('sub')}")


def coordination(b: Builder):
    a, c = b.any_clause(p_pp=0.2), b.any_clause(p_pp=0.2)
    if not (a and c):
        return None
    if b.rng.random() < 0.6:
        return _finish(f"{a.en()} and {c.en()}", f"{a.de()} und {c.de()}")
    return _finish(f"{a.en()}, but {c.en()}", f"{a.de()}, aber {c.de()}")


TEMPLATES = {
    "statement": statement,
    "fronted_adverb": fronted_adverb,
    "there_is": there_is,
    "question": question,
    "imperative": imperative,
    "because": because,
    "that": that_clause,
    "if": if_then,
    "when": when_clause,
    "and_but": coordination,
}
WEIGHTS = {
    "general": {"statement": 40, "fronted_adverb": 5, "there_is": 5, "question": 9, "imperative": 5,
                "because": 9, "that": 8, "if": 7, "when": 5, "and_but": 7},
    "software": {"statement": 34, "fronted_adverb": 3, "there_is": 5, "question": 8, "imperative": 16,
                 "because": 8, "that": 6, "if": 9, "when": 5, "and_but": 6},
}
