"""`tm`: translation-memory adaptation, the way production adaptive MT does it (not in the paper; ModernMT, and
Farajian et al. 2017, "Multi-domain Neural Machine Translation through Unsupervised Adaptation").

The memory is the stream's earlier (source, post-edit) pairs, emptied where θ0 is restored (every document under
reset=document). Before segment i is translated, the k most similar earlier sources with a fuzzy score ≥
`threshold` are retrieved; the model is fine-tuned on them for a moment, best match first, each pair with the
update rule of adaptsim/loop/update.py (SGD, tensor-wise clipping, repeated until the pair's perplexity is low enough)
at the learning rate `moment_lr` · score/100, so a closer match teaches more (ModernMT's rule of thumb); segment i
is translated; and every tensor is put back exactly as it was (adaptsim/loop/learner.py `Learner.adapted_for`). Without
a match ≥ `threshold` the segment is translated with θ unchanged. The moment has its own stopping rule
(`moment_ppl_threshold`, `moment_max_updates`): with the paper's (perplexity ≤ 2, three updates at γ = 0.01) an
exact match was translated as its post-edit for 12 of 60 held-out pairs, no more than θ0 alone; the setting chosen
on them (configs/method/tm.yaml) reproduces 54 at about 15 updates per match.

`online: true` also takes the paper's online step on every post-edit, as `full` does (θ_{i−1} is `full`'s); `false`
leaves θ at θ0 and adapts only for the moment (ModernMT's setting: the memory is the only thing that learns).

Choices the sources leave open (settings in configs/method/tm.yaml): the score is rapidfuzz's `fuzz.ratio` on
the raw source strings, 100 · (1 − InDel distance / (len(a) + len(b))) over characters, so identical sentences
score 100 and a one-word change in a 60-character sentence about 93 (CAT tools' word-level match bands differ in
detail, not in kind); all parameters are fine-tuned (ModernMT fine-tunes the whole model); matches are used in
order of score, each once. What it costs (retrievals, temporary updates and their seconds) goes into summary.json
`cost`.

An external translation memory (`external`, off by default): a file in any format adaptsim reads as a dataset, set
the way a `dataset` config sets it (`format`, `path`, `columns`, `source_lang`/`target_lang`, `on_empty`, …, with the
defaults of configs/dataset/<format>.yaml and _common.yaml; its ids do not matter: `on_duplicate_id: keep`) and read
by the same entry point (adaptsim.data `load_documents`), its pairs checked against the model's length limit as the
stream's are (`on_too_long`). The language direction is the
model's (`${model.source_lang}` → `${model.target_lang}`, as in the dataset configs: TMX picks its <tuv>s by it,
plain/xml/sgml name their files by it). Every (source, target) pair the file gives is an entry, whatever its
document; the entries are in the memory from the first segment on and are never emptied (restoring θ0 empties only
the stream's pairs). They are scored with the same `fuzz.ratio` and `threshold` as the stream's pairs and ranked
together with them, the k best of all used: on equal scores the stream's pairs come first (the translator's own
post-edits), and within the stream or the file the earlier pair. A pair both in the file and in the stream (or twice
in either) is used as often as it is retrieved, as a pair repeated in the stream is. Retrieval is one rapidfuzz
`process.extract` over the file's sources (a median 3.6 ms per segment for 50,000 entries, one CPU core); reading
checks every entry's length with the model's tokenizer once (about 5 s for 50,000 entries, TSV or TMX, with the
demo model's, most of it tokenizing). summary.json `method_info.external` records its format, file(s), number of
entries and a fingerprint (the first 16 hex digits of a sha256 of its pairs), written when the run starts: a resume
with another TM is refused (tm's retrievals are not replayed). A missing or unreadable file, an unknown format or
setting, a file named without a format, wrong columns, a pair too long or empty, or a file without a pair is one
line naming `method.external` and the file, before the first segment is translated; a hint to change a setting gives
the override Hydra takes (`+method.external.on_too_long=skip`: tm.yaml's `external` has no such key).

No look-ahead through the TM (`check_stream`, before the first segment): an entry whose target is one of the test
stream's references would reveal that reference before its segment is translated (whatever its source: retrieved
for a similar source, its target is trained on), which the simulation exists to avoid (the demo stream as its own TM:
BLEU 98.5 against 62.6 without it). Targets and references are compared normalised (`normalised`: case, punctuation
and spacing aside) and as near-duplicates: fuzz.ratio of the normalised texts ≥ `leak_threshold` (95: a word's
ending, a dropped article; 100 compares the normalised texts only). Such entries are an error naming how many and
the first five (lines, or TMX <tu>s), or, by `on_overlap`, dropped (the run is then the run without them) or kept
with a warning (`warn`; the tables carry a note). An entry with a stream's source and another target is no leak (a
translator's TM may hold another translation of a sentence) and is only counted. summary.json
`method_info.external.overlap`: `on_overlap`, `leak_threshold`, `leaks` (entries that reveal a reference: refused,
dropped or kept as it says), `pairs` (of them, those whose source is the stream segment's too) and
`same_source_other_target`. No other state is carried from run to run: the stream's pairs (and
memory's datastore) live in the method object of one run, built afresh by each run, lockstep run and sweep job, and
a resume rebuilds them from the run's own earlier steps.

`threshold` is on fuzz.ratio's 0–100 scale; a fraction 0 < t ≤ 1 is refused with the percentage it likely means
(`Score`).

summary.json `cost.temporary` is written for every tm run, with 0s where nothing matched: "no match" is a figure.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache

from omegaconf import OmegaConf
from rapidfuzz import fuzz, process

from adaptsim import CONFIG_DIR
from adaptsim.data import FORMATS, check_lengths, load_documents
from adaptsim.data.textio import expand
from adaptsim.errors import DataError, UserError
from adaptsim.methods.base import Method
from adaptsim.methods.retrieval import Retrieval
from adaptsim.rules import Boolean, Choice, Integer, Number, Rule, show

KEY = "method.external"
OWN_KEYS = {"on_overlap", "leak_threshold"}  # a TM's settings that are not a dataset's (configs/method/tm.yaml)
CHUNK = 512  # TM targets compared with every reference at a time (a chunk × the stream's references, one byte each)
SHOWN = 5  # the TM entries an overlap error names
log = logging.getLogger("adaptsim")


@dataclass(frozen=True)
class Score(Number):
    """A fuzzy score 0–100; a fraction 0 < t ≤ 1 is refused with the percentage it likely means. Refused, not
    read as a fraction: 1 would mean two things, and on the 0–100 scale a threshold ≤ 1 lets almost every pair
    match (any shared character), which no one means; 0 (every pair) stays allowed."""

    def check(self, key: str, value):
        super().check(key, value)
        if 0 < value <= 1:
            raise UserError(f"{key}={show(value)}: the scale is 0–100 (rapidfuzz's fuzz.ratio): did you mean "
                            f"{100 * value:g}?")
        return value


class DatasetBlock(Rule):
    """null, or a block of dataset settings whose `format` is null (none) or one adaptsim reads; the rest is checked
    where the file is read (adaptsim.data, with the dataset's own rules)."""

    def ok(self, value) -> bool:
        return value is None or (OmegaConf.is_dict(value) or isinstance(value, dict))

    def allowed(self) -> str:
        return "must be null or a block of dataset settings {format: …, path: …} (configs/method/tm.yaml)"

    def check(self, key: str, value):
        super().check(key, value)
        if value is None:
            return value
        where = files(value)
        if value.get("format") not in (None, *FORMATS):
            raise UserError(f"{key}.format={show(value.get('format'))}: choose null | {' | '.join(FORMATS)}"
                            + (f" (the TM {where})" if where else ""))
        if value.get("format") is None and where:
            raise UserError(f"{key}.format is null but the TM {where} is named: set {key}.format (one of "
                            f"{' | '.join(FORMATS)})")
        unknown = sorted(set(value) - _dataset_keys()[1] - OWN_KEYS)
        if unknown:
            raise UserError(f"{key}.{unknown[0]}: unknown setting; a TM takes the dataset configs' settings "
                            "(configs/dataset/*.yaml)")
        if value.get("columns") is not None and not (OmegaConf.is_dict(value["columns"])
                                                     or isinstance(value["columns"], dict)):
            raise UserError(f"{key}.columns={show(value['columns'])}: must be a mapping of roles to column names")
        return value


class Tm(Retrieval, Method):
    settings = {**Method.settings, "k": Integer(1), "threshold": Score(at_least=0, at_most=100),
                "online": Boolean(), "moment_lr": Number(above=0), "moment_ppl_threshold": Number(at_least=1),
                "moment_max_updates": Integer(1), "external": DatasetBlock()}

    def __init__(self, model, *, k: int, threshold: float, online: bool, moment_lr: float,
                 moment_ppl_threshold: float, moment_max_updates: int, external: dict | None, **common):
        super().__init__(model, **common)
        self.k, self.threshold, self.online = int(k), float(threshold), bool(online)
        self.moment = (float(moment_lr), (float(moment_ppl_threshold), int(moment_max_updates)))
        self.gradient_steps = self.online  # false: the update rule only measures the pair (adaptsim/loop/update.py)
        self.sources: list[str] = []  # the stream's pairs, emptied with θ0
        self.references: list[str] = []
        take_external(self, external, model)

    def parameters(self):
        return self.model.named_parameters()

    def start_document(self, theta0):
        self.sources.clear()  # the external entries stay
        self.references.clear()

    def matches(self, source):
        found = [(score, 0, i, self.sources[i], self.references[i]) for _, score, i in self._best(source, self.sources)]
        if self.external_sources:
            found += [(score, 1, i, self.external_sources[i], self.external_references[i])
                      for _, score, i in self._best(source, self.external_sources)]
            found.sort(key=lambda m: (-m[0], m[1], m[2]))  # by score; on ties the stream's first, then the earlier
        return [(src, ref, score) for score, _, _, src, ref in found[:self.k]]

    def _best(self, source, sources):
        return process.extract(source, sources, scorer=fuzz.ratio, limit=self.k, score_cutoff=self.threshold)

    def check_stream(self, segments):
        """No look-ahead through the TM (the module docstring): entries whose target is one of the stream's references,
        normalised, at fuzz.ratio ≥ `leak_threshold`; an entry with a stream's source and another target is no leak
        and only counted. `on_overlap`: error (one line: how many, and the first entries' lines), drop them, or warn
        (counted in method_info, shown in the tables' notes)."""
        if self.external_info is None:
            return
        references = [normalised(s.reference) for s in segments]
        revealed = near_duplicates([normalised(r) for r in self.external_references], references, self.leak_threshold)
        leaks = [i for i, j in enumerate(revealed) if j is not None]
        sources = {normalised(s.source) for s in segments}
        pairs = list(zip(self.external_sources, self.external_references))
        overlap = {"on_overlap": self.on_overlap, "leak_threshold": self.leak_threshold, "leaks": len(leaks),
                   "pairs": sum(normalised(pairs[i][0]) == normalised(segments[revealed[i]].source) for i in leaks),
                   "same_source_other_target": sum(normalised(src) in sources and revealed[i] is None
                                                   for i, (src, _) in enumerate(pairs))}
        where = self.tm_name
        if leaks and self.on_overlap == "error":
            shown = [entry(self.external_origins[i]) for i in leaks[:SHOWN]]
            shown = (f"line{'s' * (len(shown) > 1)} " + ", ".join(e[5:] for e in shown)
                     if all(e.startswith("line ") for e in shown)
                     else ", ".join(shown))
            more = ", …" if len(leaks) > SHOWN else ""
            raise UserError(f"{KEY}: {where} holds {len(leaks)} target{'s' * (len(leaks) > 1)} of the test "
                            f"stream's references (case, punctuation and spacing aside, fuzz.ratio ≥ "
                            f"{self.leak_threshold:g}; {shown}{more}): each would reveal its reference before the "
                            f"segment is translated; take them out of the TM or set {KEY}.on_overlap=drop (or warn)")
        if leaks and self.on_overlap == "drop":
            keep = sorted(set(range(len(pairs))) - set(leaks))
            self.external_sources = [self.external_sources[i] for i in keep]
            self.external_references = [self.external_references[i] for i in keep]
            self.external_origins = [self.external_origins[i] for i in keep]
            log.info("%s: dropped %d TM entries whose target is a reference of the test stream (%s.on_overlap=drop)",
                     where, len(leaks), KEY)
        elif leaks:
            log.warning("%s: %d TM entries have a reference of the test stream as their target: kept "
                        "(%s.on_overlap=warn), so the scores saw those references before translating", where,
                        len(leaks), KEY)
        self.external_info["overlap"] = overlap

    def revealed(self, source, reference, doc_id=None, step=None, hypothesis=None):
        self.sources.append(source)
        self.references.append(reference)

    def info(self):
        lr, (ppl, updates) = self.moment
        return {"k": self.k, "threshold": self.threshold, "online": self.online, "moment_lr": lr,
                "moment_ppl_threshold": ppl, "moment_max_updates": updates, "external": self.external_info}


def take_external(method, external: dict | None, model) -> None:
    """The external TM `external` names (`read_external`) as `method`'s (tm's, icl's): its entries, where each was
    read, what summary.json records, and how `check_stream` treats the entries that would reveal a reference."""
    method.external_sources, method.external_references, method.external_info, method.external_origins = \
        read_external(external, model)
    method.on_overlap = external.get("on_overlap") if method.external_info else None
    method.leak_threshold = float(external.get("leak_threshold", 100)) if method.external_info else None
    method.tm_name = f"the TM {files(external)}" if method.external_info else ""


def normalised(text: str) -> str:
    """A text as the leak check compares it: case folded, punctuation left out, spaces collapsed ("Open the file." and
    "open the file" are one reference)."""
    return " ".join("".join(c for c in text.casefold() if c.isalnum() or c.isspace()).split())


def near_duplicates(texts: list[str], references: list[str], threshold: float) -> list[int | None]:
    """For each of `texts`, the index of a reference equal to it or at fuzz.ratio ≥ `threshold`, else None: equal
    ones by lookup, the rest compared with every reference (rapidfuzz's cdist, in chunks of `CHUNK` texts)."""
    equal = {r: j for j, r in enumerate(references)}
    found = [equal.get(t) for t in texts]
    rest = [i for i, j in enumerate(found) if j is None]
    if threshold < 100 and references:
        for start in range(0, len(rest), CHUNK):
            chunk = rest[start:start + CHUNK]
            scores = process.cdist([texts[i] for i in chunk], references, scorer=fuzz.ratio, score_cutoff=threshold,
                                   dtype="uint8", workers=1)
            for i, row in zip(chunk, scores):
                if row.any():
                    found[i] = int(row.argmax())
    return found


def read_external(spec, model) -> tuple[list[str], list[str], dict | None, list[str]]:
    """The external TM `spec` names (method.external: dataset settings), read as a dataset is: its sources, its
    targets, what summary.json records of it and where each entry was read ("file:line", or the TMX <tu>); nothing
    for null or `format: null`. Errors name method.external and the file; the readers' log lines about a skipped
    entry name the TM's own setting."""
    if spec is None or spec.get("format") is None:
        return [], [], None, []
    Choice(("error", "drop", "warn")).check(f"{KEY}.on_overlap", spec.get("on_overlap"))
    Score(at_least=0, at_most=100).check(f"{KEY}.leak_threshold", spec.get("leak_threshold", 100))
    opts = {k: v for k, v in with_format_defaults(spec).items() if k not in OWN_KEYS}
    try:
        with _renamed_logs(spec):
            docs = load_documents(opts, allow_empty=True)
            docs, _ = check_lengths(docs, opts, model.over_length)
    except DataError as e:
        raise UserError(f"{KEY}: {DataError(e.path, renamed(e.message, spec), e.line)}") from None
    except UserError as e:
        message, where = renamed(str(e), spec), files(spec)
        raise UserError((message if message.startswith(KEY) else f"{KEY}: {message}")
                        + (f" (the TM {where})" if where else "")) from None
    segments = [s for doc in docs for s in doc.segments]
    pairs = [(s.source, s.reference) for s in segments]
    if not pairs:
        raise UserError(f"{KEY}: {files(spec) or 'the TM'}: no (source, target) pair in it (format "
                        f"{spec['format']!r}); an empty TM is no TM: set {KEY}.format=null")
    digest = hashlib.sha256()
    for src, ref in pairs:
        digest.update(f"{src}\t{ref}\n".encode())
    info = {"format": spec["format"], "path": files(spec, absolute=True), "entries": len(pairs),
            "fingerprint": digest.hexdigest()[:16]}
    if skipped := {reason: n for reason, n in docs.skipped.items() if n}:  # on_empty / on_too_long: skip
        info["skipped"] = skipped
    return [src for src, _ in pairs], [ref for _, ref in pairs], info, [s.origin for s in segments]


def entry(origin: str) -> str:
    """A TM entry's place for a message, without its file: "line 12" ("file:12"), or the reader's own words
    ("file: tu 3 (tuid='7')" → "tu 3 (tuid='7')")."""
    m = re.match(r"^(.*):(\d+)$", origin)
    return f"line {m.group(2)}" if m else origin.rsplit(": ", 1)[-1]


@contextmanager
def _renamed_logs(spec):
    """While the TM is read, the data readers' log lines (a skipped empty or too long entry) say that they are about
    the TM and name its settings, not the dataset's."""
    def rename(record):
        record.msg, record.args = f"{KEY}: {renamed(record.getMessage(), spec)}", ()
        return True

    logger = logging.getLogger("adaptsim.data")
    logger.addFilter(rename)
    try:
        yield
    finally:
        logger.removeFilter(rename)


def with_format_defaults(spec) -> dict:
    """The TM's settings over its format's own defaults (configs/dataset/<format>.yaml, e.g. triplet's
    `detokenize: true`; columns merged key by key), as a dataset config composes them; _common.yaml's are applied
    where the file is read."""
    opts = OmegaConf.to_container(spec, resolve=True) if OmegaConf.is_config(spec) else dict(spec)
    own = CONFIG_DIR / "dataset" / f"{opts['format']}.yaml"
    if not own.is_file():
        return opts
    base = {k: v for k, v in OmegaConf.to_container(OmegaConf.load(own), resolve=False).items()
            if k not in ("defaults", "name", "format", "path") and "${" not in str(v) and v != "???"}
    if isinstance(base.get("columns"), dict) and isinstance(opts.get("columns"), dict):
        opts["columns"] = {**base["columns"], **opts["columns"]}
    return {**base, **opts}


def files(spec, absolute: bool = False) -> str:
    """The file(s) a TM's settings name, as given (messages) or absolute (the summary)."""
    named = [str(spec.get(role)) for role in ("path", "source", "reference", "mt") if spec.get(role) not in (None, "")]
    if absolute:
        named = [os.path.abspath(expand(name)) for name in named]
    return " + ".join(named)


@lru_cache(maxsize=1)
def _dataset_keys() -> tuple[re.Pattern, frozenset[str]]:
    """`dataset.KEY` for the keys the dataset configs have (not a file name such as /data/dataset.tsv), and the
    keys."""
    keys = {key for path in (CONFIG_DIR / "dataset").glob("*.yaml") for key in OmegaConf.load(path)}
    keys.discard("defaults")
    pattern = re.compile(r"(?<![\w/.\\-])dataset\.(?=(?:" + "|".join(sorted(keys, key=len, reverse=True)) + r")\b)")
    return pattern, frozenset(keys)


def renamed(message: str, spec=None) -> str:
    """A reader's message about the setting `dataset.KEY` about `method.external.KEY` instead; an override it
    suggests (`dataset.on_too_long=skip`) gets the `+` Hydra needs where `spec` (the TM's settings as composed,
    configs/method/tm.yaml and the command line) has no such key."""
    message = _dataset_keys()[0].sub(KEY + ".", message)
    if spec is None:
        return message

    def override(m):
        node = spec
        for part in m.group(1).split("."):
            if not (OmegaConf.is_dict(node) or isinstance(node, dict)) or part not in node:
                return "+" + m.group(0)
            node = node[part]
        return m.group(0)

    return re.sub(r"(?<![\w+.])" + re.escape(KEY) + r"\.([\w.<>]+)=", override, message)
