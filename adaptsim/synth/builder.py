"""Random choice of words and phrases for one domain, with an optional bias toward focus terms.

Everything the sentence templates need to pick (a noun for a slot, a determiner, a verb with its
frame, a prepositional phrase) is chosen here, from one random.Random, in a fixed order, so output
depends only on the seed. Selection restrictions (tags) keep sentences sensible: people read
books, programs crash, files go into folders.
"""

from __future__ import annotations

import random

from .german import NUMBERS
from .lexicon import LexView, Noun
from .phrases import NP, PP, SPATIAL, Clause

PRONOUNS = ("I", "you", "he", "she", "we", "they")
POSSESSIVES = ("my", "your", "his", "her", "our", "their")
# (determiner, weight) per role
DETS = {
    "subj": (("def", 50), ("indef", 12), ("poss", 15), ("dem", 10), ("num", 8)),
    "obj": (("def", 40), ("indef", 25), ("poss", 15), ("dem", 10), ("num", 10)),
    "pp": (("def", 70), ("indef", 10), ("poss", 15), ("dem", 5)),
}
WITH_SPEC = ("person", "tool", "device", "program")
WITHOUT_SPEC = ("person", "object", "data", "device", "program")


class Builder:
    def __init__(self, view: LexView, rng: random.Random, focus=(), p_focus: float = 0.5):
        self.view, self.rng = view, rng
        self.focus, self.p_focus = set(focus), p_focus
        self.require: str | None = None  # a focus key the current sentence should contain
        self.used: list[str] = []  # keys of the entries used in the current sentence
        self._adj_cache: dict = {}

    def start(self, require: str | None = None) -> None:
        self.require, self.used = require, []

    # ---------------- choosing entries ----------------
    def _prefer(self, cands: list):
        """Pick uniformly, but take the required term (or else a focus term) when it fits the slot."""
        if not cands:
            return None
        rng = self.rng
        if self.require:
            req = [c for c in cands if c.key == self.require]
            if req and rng.random() < 0.85:
                return rng.choice(req)
        if self.focus:
            foc = [c for c in cands if c.key in self.focus]
            if foc and rng.random() < self.p_focus:
                return rng.choice(foc)
        return rng.choice(cands)

    def noun(self, spec, places=None, exclude_tag=None) -> Noun | None:
        cands = [n for n in self.view.nouns_for(tuple(spec)) if n.key not in self.used
                 and (places is None or set(n.places) & set(places)) and exclude_tag not in n.tags]
        n = self._prefer(cands)
        if n is not None:
            self.used.append(n.key)
        return n

    def adjective(self, noun: Noun, exclude=None):
        fitting = self._adj_cache.get(noun.key)
        if fitting is None:
            fitting = self._adj_cache[noun.key] = [a for a in self.view.adjectives if a.fits(noun)]
        cands = [a for a in fitting if a is not exclude]
        a = self._prefer(cands)
        if a is not None:
            self.used.append(a.key)
        return a

    def weighted(self, pairs):
        items, weights = zip(*pairs)
        return self.rng.choices(items, weights=weights)[0]

    # ---------------- phrases ----------------
    def np(self, noun: Noun, role: str = "obj", p_adj: float = 0.3, p_pl: float = 0.25) -> NP:
        rng = self.rng
        det = self.weighted(DETS[role])
        number = "pl" if det == "num" or rng.random() < p_pl else "sg"
        np = NP(noun, number, det)
        if det == "poss":
            np.poss = rng.choice(POSSESSIVES)
        if det == "num":
            np.count = rng.choice(sorted(NUMBERS))
        if rng.random() < p_adj:
            np.adj = self.adjective(noun)
        return np

    def subject(self, spec, p_pron: float = 0.2) -> NP | None:
        if "person" in spec and self.rng.random() < p_pron:
            return NP(pron=self.rng.choice(PRONOUNS))
        n = self.noun(spec)
        return self.np(n, "subj") if n else None

    def place_pp(self, places, goal: bool = False, en_override: str = "") -> PP | None:
        # goals are containers and surfaces, not buildings ("into the box", not "into the hospital")
        n = self.noun(("*",), places=places, exclude_tag="place" if goal else None)
        if n is None:
            return None
        place = self.rng.choice([p for p in n.places if p in places])
        en_static, en_goal, de_prep = SPATIAL[place]
        en_prep = en_override or (en_goal if goal else en_static)
        return PP(en_prep, de_prep, "acc" if goal else "dat", self.np(n, "pp", p_adj=0.15, p_pl=0.1))

    def adjunct(self, kind: str) -> PP | None:
        if kind == "loc":
            return self.place_pp(tuple(SPATIAL))
        if kind == "src":
            n = self.noun(("person", "@in", "@on"))
            if n is None:
                return None
            de_prep = "aus" if "in" in n.places and "person" not in n.tags else "von"
            return PP("from", de_prep, "dat", self.np(n, "pp", p_adj=0.15, p_pl=0.1))
        prep = {"with": ("with", "mit", "dat", WITH_SPEC), "for": ("for", "für", "acc", ("person",)),
                "without": ("without", "ohne", "acc", WITHOUT_SPEC)}[kind]
        n = self.noun(prep[3])
        return PP(prep[0], prep[1], prep[2], self.np(n, "pp", p_adj=0.15, p_pl=0.15)) if n else None

    # ---------------- clauses ----------------
    def verb_clause(self, agentive: bool = False, p_modal: float = 0.12, p_pp: float = 0.4,
                    p_adv: float = 0.1, p_pron: float = 0.2) -> Clause | None:
        """A clause with a lexical verb; agentive: the subject can be a person (for imperatives)."""
        rng = self.rng
        verbs = [v for v in self.view.verbs if set(v.frames) - {"that"} and (not agentive or "person" in v.subj)]
        verb = self._prefer(verbs)
        if verb is None:
            return None
        self.used.append(verb.key)
        frame = rng.choice([f for f in verb.frames if f != "that"])
        subj = self.subject(verb.subj, p_pron)
        if subj is None:
            return None
        cl = Clause("verb", subj, verb)
        if frame in ("tr", "dat", "dir", "ditr"):
            n = self.noun(verb.obj)
            if n is None:
                return None
            cl.obj, cl.obj_case = self.np(n, "obj"), "dat" if frame == "dat" else "acc"
        if frame == "ditr":
            n = self.noun(("person",))
            if n is None:
                return None
            cl.io = self.np(n, "obj", p_adj=0.15)
        if frame == "dir":
            cl.pp = self.place_pp(verb.dirs, goal=True, en_override=verb.en_dir)
            if cl.pp is None:
                return None
        elif verb.pps and rng.random() < p_pp:
            cl.pp = self.adjunct(rng.choice(verb.pps))
        if rng.random() < p_adv and self.view.adverbs:
            cl.adv = rng.choice(self.view.adverbs)
        if rng.random() < p_modal:
            cl.modal = rng.choice(("can", "must", "want"))
        return cl

    def copula_clause(self) -> Clause | None:
        """"The file is new." / "The dog is under the table." """
        if self.rng.random() < 0.6:
            n = self.noun(("*",))
            if n is None:
                return None
            subj = self.np(n, "subj", p_adj=0.15)
            pred = self.adjective(n, exclude=subj.adj)
            return Clause("cop_adj", subj, pred=pred) if pred else None
        n = self.noun(("object", "food", "animal", "person", "data", "vehicle", "device", "readable"))
        if n is None:
            return None
        subj = self.np(n, "subj", p_adj=0.2)
        pp = self.place_pp(tuple(SPATIAL))
        return Clause("cop_loc", subj, pp=pp) if pp else None

    def there_clause(self) -> Clause | None:
        """"There is a bug in the file." (es gibt + accusative)"""
        n = self.noun(("object", "fixture", "food", "animal", "person", "data", "fixable", "readable", "device"))
        if n is None:
            return None
        det = self.rng.choice(("indef", "indef", "num"))
        np = NP(n, "pl" if det == "num" or self.rng.random() < 0.25 else "sg", det)
        if det == "num":
            np.count = self.rng.choice(sorted(NUMBERS))
        if self.rng.random() < 0.3:
            np.adj = self.adjective(n)
        pp = self.place_pp(tuple(SPATIAL))
        return Clause("there", obj=np, pp=pp) if pp else None

    def any_clause(self, **kw) -> Clause | None:
        r = self.rng.random()
        if r < 0.75:
            return self.verb_clause(**kw)
        return self.copula_clause()

    def that_verb(self):
        verbs = [v for v in self.view.verbs if "that" in v.frames]
        v = self._prefer(verbs)
        if v is not None:
            self.used.append(v.key)
        return v
