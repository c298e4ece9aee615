"""Abstract phrases (noun phrase, prepositional phrase, clause) and their English/German surface forms.

One structure, two realisations: agreement and word order are decided here from the same abstract
choices, so the two sides can never disagree about what the sentence says.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import english as en
from . import german as de
from .lexicon import Adjective, Adverb, Noun, Verb

# spatial prepositions: place code -> (English static, English goal, German)
SPATIAL = {
    "in": ("in", "into", "in"),
    "on": ("on", "onto", "auf"),
    "onwall": ("on", "on", "an"),
    "under": ("under", "under", "unter"),
    "behind": ("behind", "behind", "hinter"),
    "next_to": ("next to", "next to", "neben"),
    "front": ("in front of", "in front of", "vor"),
}


@dataclass
class NP:
    noun: Noun | None = None
    number: str = "sg"
    det: str = "def"
    adj: Adjective | None = None
    poss: str = ""
    count: int = 0
    pron: str = ""  # subject pronoun: I, you, he, she, we, they

    @property
    def person(self) -> str:
        """German agreement slot (1sg/3sg/1pl/3pl)."""
        if self.pron:
            return de.PERSON[self.pron]
        return "3sg" if self.number == "sg" else "3pl"

    def en(self) -> str:
        if self.pron:
            return self.pron
        words = [self.adj.en] if self.adj else []
        words.append(self.noun.en_sg if self.number == "sg" else self.noun.en_pl)
        d = en.determiner(self.det, self.number, words[0], self.poss, self.count)
        return " ".join([d] + words if d else words)

    def de_parts(self, case: str) -> tuple[str, str]:
        """(determiner, rest) so that a preposition can contract with the article (in dem -> im)."""
        if self.pron:
            if case != "nom":
                raise ValueError("pronouns are only generated as subjects")
            return "", de.PRONOUNS[self.pron]
        g = de.slot(self.noun.gender, self.number)
        d, decl = de.determiner(self.det, case, g, self.poss, self.count)
        words = [de.adjective(self.adj.de_stem, decl, case, g)] if self.adj else []
        words.append(de.noun_form(self.noun, self.number, case))
        return d, " ".join(words)

    def de(self, case: str) -> str:
        d, rest = self.de_parts(case)
        return f"{d} {rest}" if d else rest


@dataclass
class PP:
    en_prep: str
    de_prep: str
    case: str
    np: NP

    def en(self) -> str:
        return f"{self.en_prep} {self.np.en()}" if self.en_prep else self.np.en()

    def de(self) -> str:
        d, rest = self.np.de_parts(self.case)
        short = de.contract(self.de_prep, d) if self.np.det == "def" else None
        if short:
            return f"{short} {rest}"
        return " ".join(x for x in (self.de_prep, d, rest) if x)


@dataclass
class Clause:
    """kind: verb | cop_adj ("is new") | cop_loc ("is in the folder") | there ("there is a bug ...")."""

    kind: str
    subj: NP | None = None
    verb: Verb | None = None
    io: NP | None = None  # dative object of ditransitives
    obj: NP | None = None
    obj_case: str = "acc"
    pp: PP | None = None
    pred: Adjective | None = None
    adv: Adverb | None = None
    modal: str = ""  # "", can, must, want

    # ---------------- German ----------------
    def _de_object(self) -> str:
        if self.verb is not None and self.verb.de_prep:
            prep, case = self.verb.de_prep.split(":")
            return PP("", prep, case, self.obj).de()
        return self.obj.de(self.obj_case)

    def _de_fields(self, imperative=False):
        """(subject, finite verb, middle field, right bracket) of the clause."""
        person = self.subj.person if self.subj else "3pl"
        if self.kind == "there":
            subj, fin = "es", "gibt"
        else:
            subj = "Sie" if imperative else self.subj.de("nom")
            fin = de.SEIN[person] if self.kind.startswith("cop") else None
        right = []
        if self.kind == "verb":
            if self.modal:
                fin, right = de.MODALS[self.modal][person], [de.infinitive(self.verb)]
            else:
                fin = self.verb.de_inf if imperative else de.present(self.verb, person)
                right = [self.verb.de_prefix] if self.verb.de_prefix else []
        mid = [self.adv.de] if self.adv else []
        if self.io:
            mid.append(self.io.de("dat"))
        if self.obj:
            mid.append(self._de_object() if self.kind == "verb" else self.obj.de("acc"))
        if self.pp:
            mid.append(self.pp.de())
        if self.pred:
            mid.append(self.pred.de)
        return subj, fin, mid, right

    def de(self, order: str = "main") -> str:
        """order: main (V2), front (adverb first, V2), q (V1 question), imp (Sie-imperative),
        inv (V1 after a fronted clause), sub (verb-final subordinate clause)."""
        if order == "front":
            adv, self.adv = self.adv, None
            try:
                subj, fin, mid, right = self._de_fields()
            finally:
                self.adv = adv
            return " ".join([adv.de, fin, subj] + mid + right)
        subj, fin, mid, right = self._de_fields(imperative=order == "imp")
        if order == "main":
            words = [subj, fin] + mid + right
        elif order in ("q", "inv", "imp"):
            words = [fin, subj] + mid + right
        elif order == "sub":
            tail = [right[0] + fin] if right and not self.modal else right + [fin]
            words = [subj] + mid + tail
        else:
            raise ValueError(order)
        return " ".join(words)

    # ---------------- English ----------------
    def _en_rest(self) -> list[str]:
        words = []
        if self.io:
            words.append(self.io.en())
        if self.obj:
            words.append(self.obj.en())
        if self.pp:
            words.append(self.pp.en())
        if self.pred:
            words.append(self.pred.en)
        return words

    def en(self, order: str = "main") -> str:
        rest = self._en_rest()
        adv = [self.adv.en] if self.adv and order != "front" else []
        front = [self.adv.en] if order == "front" else []
        if self.kind == "there":
            be = "is" if self.obj.number == "sg" else "are"
            head = [be, "there"] if order == "q" else ["there", be]
            return " ".join(front + head + rest + adv)
        if order == "imp":
            return " ".join([self.verb.en_base] + rest + adv)
        subj = self.subj.en()
        sg3 = en.third_singular(self.subj.pron, self.subj.number)
        if self.kind.startswith("cop"):
            be = en.be(self.subj.pron, self.subj.number)
            head = [be, subj] if order == "q" else [subj, be]
            return " ".join(front + head + rest + adv)
        if order == "q":
            aux = "can" if self.modal == "can" else ("does" if sg3 else "do")
            if self.modal not in ("", "can"):
                raise ValueError("questions only with 'can' or no modal")
            return " ".join([aux, subj, self.verb.en_base] + rest + adv)
        if self.modal == "want":
            vg = ["wants to" if sg3 else "want to", self.verb.en_base]
        elif self.modal:
            vg = [self.modal, self.verb.en_base]
        else:
            vg = [self.verb.en_3sg if sg3 else self.verb.en_base]
        return " ".join(front + [subj] + vg + rest + adv)
