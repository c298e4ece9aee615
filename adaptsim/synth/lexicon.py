"""Load the lexicon TSVs (data/lexicon/) into typed, domain-filterable entries.

The lexicon is data, the grammar is code: adding a word means adding a row, never touching the
generator. Rows are validated on load so that a typo fails loudly with file and line.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

DEFAULT_DIR = Path(__file__).resolve().parents[2] / "data" / "lexicon"
DOMAINS = ("general", "software")
PLACES = ("in", "on", "onwall", "under", "behind", "next_to", "front")
FRAMES = ("tr", "dat", "ditr", "dir", "intr", "that")
PPS = ("loc", "with", "for", "without", "src")


def _split(cell: str, sep: str) -> tuple[str, ...]:
    return tuple(x.strip() for x in cell.split(sep) if x.strip())


def matches(spec: tuple[str, ...], tags: frozenset[str], places: tuple[str, ...]) -> bool:
    """True if a noun with these tags/places satisfies a selection spec ("person|@in", "*")."""
    return any(t == "*" or t in tags or (t[0] == "@" and t[1:] in places) for t in spec)


@dataclass(frozen=True)
class Noun:
    domain: str
    tags: frozenset
    places: tuple
    en_sg: str
    en_pl: str
    gender: str  # m | f | n
    de_sg: str
    de_pl: str
    de_obl: str  # acc/dat singular (differs for weak masculines)

    @property
    def key(self) -> str:
        return f"{self.en_sg}/{self.de_sg}"


@dataclass(frozen=True)
class Adjective:
    domain: str
    tags: tuple
    en: str
    de: str
    de_stem: str

    @property
    def key(self) -> str:
        return f"{self.en}/{self.de}"

    def fits(self, noun: Noun) -> bool:
        return matches(self.tags, noun.tags, noun.places)


@dataclass(frozen=True)
class Verb:
    domain: str
    frames: tuple
    subj: tuple
    obj: tuple
    pps: tuple
    dirs: tuple
    en_base: str
    en_3sg: str
    en_dir: str
    de_inf: str
    de_prefix: str
    de_3sg: str
    de_1sg: str
    de_prep: str  # "" or "auf:acc"

    @property
    def key(self) -> str:
        return f"{self.en_base}/{self.de_prefix}{self.de_inf}"


@dataclass(frozen=True)
class Adverb:
    domain: str
    en: str
    de: str
    front: bool

    @property
    def key(self) -> str:
        return f"{self.en}/{self.de}"


def _rows(path: Path):
    """(line number, row dict) for each data row; '#' lines are comments."""
    with open(path, encoding="utf-8", newline="") as f:
        lines = [(i, ln) for i, ln in enumerate(f, 1) if ln.strip() and not ln.startswith("#")]
    reader = csv.DictReader((ln for _, ln in lines), delimiter="\t", quoting=csv.QUOTE_NONE)
    for (lineno, _), row in zip(lines[1:], reader):
        yield lineno, {k: (v or "").strip() for k, v in row.items()}


def _check(ok: bool, path: Path, lineno: int, msg: str) -> None:
    if not ok:
        raise ValueError(f"{path}:{lineno}: {msg}")


def _check_domain(path, lineno, d):
    _check(d in DOMAINS + ("both",), path, lineno, f"bad domain {d!r}")


class Lexicon:
    """All entries of one lexicon directory, in file order (which fixes iteration order)."""

    def __init__(self, lexicon_dir: str | Path | None = None):
        self.dir = Path(lexicon_dir) if lexicon_dir else DEFAULT_DIR
        self.nouns = [self._noun(p, n, r) for p, n, r in self._read("nouns.tsv")]
        self.adjectives = [self._adj(p, n, r) for p, n, r in self._read("adjectives.tsv")]
        self.verbs = [self._verb(p, n, r) for p, n, r in self._read("verbs.tsv")]
        self.adverbs = [
            Adverb(r["domain"], r["en"], r["de"], r["front"] == "yes") for _, _, r in self._read("adverbs.tsv")
        ]
        for kind, entries in (("noun", self.nouns), ("adjective", self.adjectives), ("verb", self.verbs)):
            keys = [(e.domain, e.key, getattr(e, "frames", None)) for e in entries]
            dup = {k for k in keys if keys.count(k) > 1}
            if dup:
                raise ValueError(f"{self.dir}: duplicate {kind} entries: {sorted(map(str, dup))}")

    def _read(self, name: str):
        path = self.dir / name
        if not path.exists():
            raise FileNotFoundError(f"lexicon file not found: {path}")
        for lineno, row in _rows(path):
            yield path, lineno, row

    @staticmethod
    def _noun(path, lineno, r) -> Noun:
        _check_domain(path, lineno, r["domain"])
        _check(r["gender"] in ("m", "f", "n"), path, lineno, f"bad gender {r['gender']!r}")
        places = _split(r["place"], ",")
        _check(all(p in PLACES for p in places), path, lineno, f"bad place {r['place']!r}")
        _check(all(r[k] for k in ("en_sg", "en_pl", "de_sg", "de_pl", "tags")), path, lineno, "empty field")
        return Noun(r["domain"], frozenset(_split(r["tags"], "|")), places, r["en_sg"], r["en_pl"],
                    r["gender"], r["de_sg"], r["de_pl"], r["de_obl"] or r["de_sg"])

    @staticmethod
    def _adj(path, lineno, r) -> Adjective:
        _check_domain(path, lineno, r["domain"])
        _check(bool(r["en"] and r["de"]), path, lineno, "empty field")
        return Adjective(r["domain"], _split(r["tags"], "|"), r["en"], r["de"], r["de_stem"] or r["de"])

    @staticmethod
    def _verb(path, lineno, r) -> Verb:
        _check_domain(path, lineno, r["domain"])
        frames = _split(r["frames"], "|")
        _check(bool(frames) and all(f in FRAMES for f in frames), path, lineno, f"bad frames {r['frames']!r}")
        pps = _split(r["pps"], ",")
        _check(all(p in PPS for p in pps), path, lineno, f"bad pps {r['pps']!r}")
        dirs = _split(r["dirs"], ",")
        _check(all(p in PLACES for p in dirs), path, lineno, f"bad dirs {r['dirs']!r}")
        _check("dir" not in frames or bool(dirs), path, lineno, "frame dir needs dirs")
        if r["de_prep"]:
            _check(r["de_prep"].count(":") == 1 and r["de_prep"].split(":")[1] in ("acc", "dat"),
                   path, lineno, f"bad de_prep {r['de_prep']!r}")
        return Verb(r["domain"], frames, _split(r["subj"], "|"), _split(r["obj"], "|"), pps, dirs,
                    r["en_base"], r["en_3sg"], r["en_dir"], r["de_inf"], r["de_prefix"], r["de_3sg"],
                    r["de_1sg"], r["de_prep"])

    def entries(self, key: str) -> list:
        """All entries (nouns, adjectives, verbs) with this key, e.g. "table/Tabelle"."""
        return [e for e in self.nouns + self.adjectives + self.verbs if e.key == key]

    def forms(self, key: str) -> set[str]:
        """German word forms of a term, to find it in generated text (e.g. to count recurrences)."""
        from . import german

        out = set()
        for e in self.entries(key):
            if isinstance(e, Noun):
                out |= {e.de_sg, e.de_obl, e.de_pl, german.noun_form(e, "pl", "dat")}
            elif isinstance(e, Verb):
                finite = {german.present(e, p) for p in ("1sg", "3sg", "1pl")}
                out |= finite | {german.infinitive(e)} | {e.de_prefix + f for f in finite if e.de_prefix}
            else:
                out |= {e.de} | {e.de_stem + x for x in ("e", "en", "er", "es", "em")}
        return out

    def counts(self) -> dict[str, int]:
        return {"nouns": len(self.nouns), "adjectives": len(self.adjectives),
                "verbs": len(self.verbs), "adverbs": len(self.adverbs)}

    def view(self, domain: str, allowed: set[str] | None = None) -> "LexView":
        """Entries usable in `domain`; with `allowed`, software-only entries are limited to those keys."""
        if domain not in DOMAINS:
            raise ValueError(f"domain must be one of {DOMAINS}, got {domain!r}")

        def ok(e) -> bool:
            if e.domain not in (domain, "both"):
                return False
            return allowed is None or e.domain != "software" or e.key in allowed

        return LexView(domain, [e for e in self.nouns if ok(e)], [e for e in self.adjectives if ok(e)],
                       [e for e in self.verbs if ok(e)], [e for e in self.adverbs if ok(e)])

    def terms(self, kind: str = "all", pos: str = "all") -> list[str]:
        """Keys of software-only entries: 'ambiguous' (the English word also occurs in general text, with
        another German translation), 'new' (English word absent from general text), 'shared' (same
        translation in general text, e.g. window/Fenster), or 'all'.
        pos: 'noun', 'verb', 'adjective' or 'all'."""
        pools = {"noun": self.nouns, "verb": self.verbs, "adjective": self.adjectives}
        out = []
        for p, entries in pools.items():
            if pos not in ("all", p):
                continue
            general = {}
            for e in entries:
                if e.domain == "general":
                    general.setdefault(_en(e), set()).add(e.key)
            for e in entries:
                if e.domain != "software":
                    continue
                senses = general.get(_en(e), set())
                cls = "new" if not senses else ("shared" if e.key in senses else "ambiguous")
                if kind in ("all", cls):
                    out.append(e.key)
        return list(dict.fromkeys(out))


def _en(e) -> str:
    return getattr(e, "en_sg", None) or getattr(e, "en_base", None) or e.en


@dataclass
class LexView:
    """The entries of one domain (optionally restricted); what the sentence builder draws from."""

    domain: str
    nouns: list
    adjectives: list
    verbs: list
    adverbs: list

    def __post_init__(self):
        self._cache: dict = {}

    def nouns_for(self, spec: tuple) -> list[Noun]:
        if spec not in self._cache:
            self._cache[spec] = [n for n in self.nouns if matches(spec, n.tags, n.places)]
        return self._cache[spec]
