"""Public API: parallel English→German sentences, demo documents and mixed training text.

Every call draws from its own random.Random seeded by (generator seed, call arguments), so a call's
output does not depend on which calls came before it.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from pathlib import Path

from .builder import Builder
from .lexicon import DOMAINS, Lexicon
from .templates import TEMPLATES, WEIGHTS

Pair = tuple[str, str]
MIN_WORDS, MAX_WORDS = 4, 20


@dataclass
class SynthDocument:
    """A demo document: ordered (en, de) pairs and the focus terms (lexicon keys) that recur in it.

    Iterates, indexes and measures like its list of pairs.
    """

    doc_id: str
    pairs: list[Pair]
    focus: list[str] = field(default_factory=list)

    def __iter__(self):
        return iter(self.pairs)

    def __len__(self) -> int:
        return len(self.pairs)

    def __getitem__(self, i):
        return self.pairs[i]


class Generator:
    """Controlled English→German parallel language in two domains, general and software.

    >>> g = Generator(seed=1)
    >>> pairs = g.sentences("general", 1000)                      # [(en, de), ...]
    >>> docs = g.documents("software", n_docs=10, segs_per_doc=20)  # recurring focus terms
    >>> train = g.corpus(20000, software_share=0.05, software_terms=g.terms("new")[:10])
    """

    def __init__(self, lexicon_dir: str | Path | None = None, seed: int = 0):
        self.lexicon = Lexicon(lexicon_dir)
        self.seed = seed

    def _rng(self, *parts) -> random.Random:
        return random.Random("|".join(map(str, (self.seed,) + parts)))

    def terms(self, kind: str = "all", pos: str = "all") -> list[str]:
        """Software-domain term keys ("table/Tabelle"): kind ambiguous | new | shared | all."""
        return self.lexicon.terms(kind, pos)

    def forms(self, key: str) -> set[str]:
        """German word forms of a term key (see Lexicon.forms)."""
        return self.lexicon.forms(key)

    # ---------------- single sentences ----------------
    def _sentence(self, b: Builder, domain: str, require: str | None = None) -> tuple[Pair, list[str]] | None:
        names = list(WEIGHTS[domain])
        weights = [WEIGHTS[domain][k] for k in names]
        for _ in range(50):
            b.start(require)
            pair = TEMPLATES[b.rng.choices(names, weights)[0]](b)
            if pair and all(MIN_WORDS <= len(s.split()) <= MAX_WORDS for s in pair):
                return pair, list(b.used)
        return None

    def sentences(self, domain: str, n: int, seed: int | None = None, unique: bool = True,
                  exclude: set[str] | None = None, allowed: set[str] | None = None) -> list[Pair]:
        """n (en, de) pairs of `domain` (general | software).

        unique: no English sentence twice; exclude: English sentences to skip (e.g. training data when
        drawing a test set); allowed: restrict software-only entries to these keys (shared and
        general entries stay available).
        """
        _check_domain(domain)
        rng = self._rng("sentences", domain, n, seed)
        b = Builder(self.lexicon.view(domain, allowed), rng)
        out, seen = [], set(exclude or ())
        tries = 0
        while len(out) < n:
            tries += 1
            if tries > 50 * n + 1000:
                raise RuntimeError(f"could only generate {len(out)} distinct {domain} sentences of {n}")
            res = self._sentence(b, domain)
            if res is None:
                continue
            pair = res[0]
            if unique and pair[0] in seen:
                continue
            seen.add(pair[0])
            out.append(pair)
        return out

    def corpus(self, n: int, software_share: float = 0.0, software_terms=None, seed: int | None = None,
               exclude: set[str] | None = None, rare_terms=(), rare_count: int = 0) -> list[Pair]:
        """General-domain training text with a share of software sentences.

        software_terms: keys of software-only entries those sentences may use (None = all); leaving
        most out keeps their technical senses unseen by a model trained on this text. rare_terms: keys
        seen only in rare_count software sentences each (a rare sense, as in real training data: the
        model knows the German word but prefers the general sense). Pairs are shuffled deterministically.
        """
        n_sw = round(n * software_share)
        allowed = set(software_terms) if software_terms is not None else None
        pairs = self.sentences("general", n - n_sw, seed=seed, exclude=exclude)
        seen = set(exclude or ()) | {p[0] for p in pairs}  # English sentences taken: none is drawn twice
        if n_sw:
            pairs += self.sentences("software", n_sw, seed=seed, allowed=allowed, exclude=seen)
            seen.update(p[0] for p in pairs[-n_sw:])
        rng = self._rng("rare", n, seed)
        for key in rare_terms:
            b = Builder(self.lexicon.view("software", None if allowed is None else allowed | {key}), rng)
            for _ in range(rare_count):
                pair = self._focused(b, "software", key, {key}, seen)
                seen.add(pair[0])
                pairs.append(pair)
        self._rng("corpus", n, software_share, seed).shuffle(pairs)
        return pairs

    # ---------------- documents ----------------
    def documents(self, domain: str, n_docs: int, segs_per_doc: int, n_ambiguous: int = 2, n_new: int = 2,
                  focus_pool=None, seed: int | None = None, exclude: set[str] | None = None) -> list[SynthDocument]:
        """Documents in which a handful of focus terms recur: each segment contains at least one.

        Each document draws n_ambiguous ambiguous and n_new new software terms (nouns or verbs) from
        focus_pool (default: all software-only terms) and spreads them evenly over its segments, so
        each occurs about segs_per_doc / (n_ambiguous + n_new) times or more. In the general domain
        the focus terms are general nouns.
        """
        _check_domain(domain)
        rng = self._rng("documents", domain, n_docs, segs_per_doc, n_ambiguous, n_new, seed)
        view = self.lexicon.view(domain)
        pool = set(focus_pool) if focus_pool is not None else None

        def pick(keys, k):
            keys = [x for x in dict.fromkeys(keys) if pool is None or x in pool]
            return rng.sample(keys, min(k, len(keys)))

        docs, seen = [], set(exclude or ())
        for d in range(n_docs):
            if domain == "software":
                focus = pick(self.terms("ambiguous"), n_ambiguous) + pick(self.terms("new"), n_new)
            else:
                focus = pick([x.key for x in view.nouns if x.domain == "general"], n_ambiguous + n_new)
            if not focus:
                raise ValueError("focus_pool leaves no focus terms")
            b = Builder(view, rng, focus=focus, p_focus=0.3)
            plan = [focus[i % len(focus)] for i in range(segs_per_doc)]
            rng.shuffle(plan)
            pairs = []
            for req in plan:
                pair = self._focused(b, domain, req, set(focus), seen)
                seen.add(pair[0])
                pairs.append(pair)
            docs.append(SynthDocument(f"{domain}-{d:03d}", pairs, focus))
        return docs

    def _focused(self, b: Builder, domain: str, req: str, focus: set[str], seen: set[str]) -> Pair:
        """A new sentence with the required term, else with any focus term, else any new sentence."""
        fallback = None
        for _ in range(200):
            res = self._sentence(b, domain, require=req)
            if res is None or res[0][0] in seen:
                continue
            pair, used = res
            # `used` also names entries a template drew and then dropped: check the German words
            words = set(re.findall(r"[\wÄÖÜäöüß-]+", pair[1]))
            if req in used and words & self.forms(req):
                return pair
            if fallback is None and any(words & self.forms(k) for k in focus & set(used)):
                fallback = pair
        if fallback is None:
            raise RuntimeError(f"cannot generate a sentence with {req!r}")
        return fallback


def _check_domain(domain: str) -> None:
    if domain not in DOMAINS:
        raise ValueError(f"domain must be one of {DOMAINS}, got {domain!r}")
