"""`icl`: in-context adaptation (not in the paper): the translator's earlier post-edits go into the prompt of a
decoder-only model, and nothing is updated — or, with `weights`, a parameter method adapts as well (in context and
in weights).

Before segment i is translated, `context` chooses up to k earlier (source, post-edit) pairs:

- `document`: the document's last k pairs, oldest first (the document-level MT setting: Fernandes et al. 2021's
  context is the previous sentences of the document, source and target);
- `fuzzy`: the k pairs of the pool whose sources are most similar to segment i's with a score ≥ `threshold`, by
  rapidfuzz's `fuzz.ratio` as `tm` scores them, the best match last, next to the source. Moslem et al. 2023
  (ymoslem/Adaptive-MT-LLM) retrieve by sentence embeddings, a sentence-transformers model over the data set itself
  (data/fuzzy_matches/ExtractSimilarTranslations.ipynb; the repository's multilingual Faiss notebook searches a
  separate context set instead), and order the prompt the same way (MT/ChatGPT-BatchTranslation.ipynb,
  `create_prompt`: the matches, best first, are reversed); Agrawal et al. 2022 retrieve by BM25 and re-rank by
  n-gram recall. adaptsim uses one character-level fuzzy score, the one CAT tools show, and needs no embedding
  model. `threshold` 0 (every pair is a candidate: "the k nearest") was chosen on held-out data (configs/method/icl.yaml
  has the table);
- `both`: the fuzzy matches that are not among the document's last k, then those k;
- `random`: k pairs of the pool drawn uniformly without replacement, in the order drawn, whatever their score (no
  threshold): the control that tells "relevant examples" from "any examples" (Moslem et al. 2023 and Agrawal et
  al. 2022 compare with random demonstrations; so does neulab's CXMI code). The draw is seeded by `seed` (the
  run's) and the segment's index (one after the last revealed step), not by a generator's state, so a resumed run
  (whose replayed steps draw nothing), a lockstep run and a run alone quote the same pairs. A step whose update
  diverged reveals nothing, so the segment after it draws with its index: deterministic all the same.

Only pairs revealed before segment i are candidates (they enter the memory after their segment's update, `revealed`):
no look-ahead. The memory is emptied where θ0 is restored (every document under reset=document), as `tm`'s is, so
under reset=document fuzzy and random retrieval search the document so far.

`pool` is where `fuzzy` and `random` search: `stream` (the post-edits so far: the default), `external` (a
translation memory, `external`: Moslem et al.'s production setting, retrieval from an in-domain TM) or `both`.
`document` is always the stream's own document (so `pool: external` with `retrieval: document` is refused, and
`both` then quotes the TM's matches and the document's last pairs). The TM is `tm`'s (adaptsim/methods/tm.py: the
same settings, reader, look-ahead check and summary record, `method_info.external`): any dataset format, in the
memory from the first segment on and never emptied; an entry whose target is one of the test stream's references
(normalised, near-duplicates too: `external.leak_threshold`) is refused before the first segment, or dropped or kept
with a warning (`external.on_overlap`), as `tm` does.
TM entries are scored and ranked with the stream's pairs, on equal scores the stream's first (the translator's own
post-edits), within the TM the earlier entry (tm's rules); `random` draws from stream and TM alike. A step's
`context` record names a TM entry as "tm " + its place in the file ("tm line 12", "tm tu 3 (tuid='7')"), a stream
pair by its step.

`glossary` (off by default) adds one element before the quoted pairs: the terms the translator corrected in the
quoted stream pairs, the WMT terminology task's "use these terms" built from the post-edits. The literature leaves
the definition open; adaptsim's: a pair's terms are the content words of its post-edit (the run's word pipeline:
`metrics.lang`'s tokenizer and stopwords, compared lowercased, adaptsim/metrics/words.py) that its machine
translation lacks, as the post-edit writes them, in its order; the glossary is the terms of the pairs the prompt
quotes, in prompt order, each once (TM entries have no machine translation: none). Without a word alignment there
is no source term to pair a target term with, so the glossary is target terms only; and the prompt quotes pairs
only (adaptsim/models/prompt.py), so it goes in as a pair with an empty source and the terms, comma-separated, as
its target ("en:  de: Treiber, Drucker"), recorded as "glossary" in the step's `context`. It is first in the
prompt, so the first thing left out where the prompt is too long. The loop gives the method each post-edit's machine
translation (`Retrieval.revealed`'s `hypothesis`; the recorded one when a run is resumed).

`weights` is another method's config (configs/method/<name>.yaml, composed into this one as a Hydra default:
`method@method.weights=lora`, its settings `method.weights.rank=4`), which trains on every post-edit as it would
alone; its update is on the pair without context (what the weights learn is the pair itself; the context is what the
prompt adds when translating), or, with `weights_with_prompt`, on the pair after the earlier pairs its prompt quoted
(the loss on the target's tokens only, the prompt masked), as Moslem et al.'s fine-tuning follow-up trains with the
matches in the prompt: the step's perplexities are then the target's given that prompt, and its `logprobs` (the
history's CXMI) are computed apart, without context. `none` (the default): the weights stay θ0.
"""

from __future__ import annotations

import random
from typing import NamedTuple

from omegaconf import OmegaConf
from rapidfuzz import fuzz, process

from adaptsim.errors import UserError
from adaptsim.methods.base import Method
from adaptsim.methods.retrieval import Retrieval
from adaptsim.methods.tm import KEY, DatasetBlock, Score, Tm, entry, files, take_external
from adaptsim.rules import Boolean, Choice, Integer, Rule, Text

RETRIEVALS = ("document", "fuzzy", "both", "random")
POOLS = ("stream", "external", "both")
GLOSSARY = "glossary"  # what a step's `context` records for the glossary element


class MethodConfig(Rule):
    """Another method's config: a mapping with its `_target_`."""

    def ok(self, value) -> bool:
        return (OmegaConf.is_dict(value) or isinstance(value, dict)) and "_target_" in value

    def allowed(self) -> str:
        return "must be a method's config: choose it with method@method.weights=NAME (configs/method/NAME.yaml)"


class TextOrNull(Rule):
    def ok(self, value) -> bool:
        return value is None or (isinstance(value, str) and value != "")

    def allowed(self) -> str:
        return "must be null or a non-empty string"


class Quote(NamedTuple):
    """A pair the prompt may quote: a stream pair (`label` its step, `doc` its document, `terms` what its post-edit
    corrected) or a TM entry (`label` "tm " + its place in the file)."""
    source: str
    target: str
    label: int | str | None
    doc: str | None = None
    terms: tuple[str, ...] = ()


class InContext(Retrieval, Method):
    settings = {"name": Text(), "k": Integer(1), "retrieval": Choice(RETRIEVALS),
                "threshold": Score(at_least=0, at_most=100), "seed": Integer(0), "pool": Choice(POOLS),
                "external": DatasetBlock(), "glossary": Boolean(), "glossary_lang": Text(),
                "glossary_stopwords": TextOrNull(), "weights": MethodConfig(), "weights_with_prompt": Boolean()}

    def __init__(self, model, *, name: str, k: int, retrieval: str, threshold: float, seed: int, pool: str,
                 external: dict | None, glossary: bool, glossary_lang: str, glossary_stopwords: str | None, weights,
                 weights_with_prompt: bool):
        from adaptsim import methods

        if not model.reads_context:
            raise UserError(f"method={name}: needs a model that reads context in its input, a decoder-only model "
                            "(model=demo-lm offline, or a causal LM's config such as model=qwen2.5-0.5b-instruct); "
                            f"{model.net.config.model_type} is an encoder-decoder")
        weights = OmegaConf.create(weights)  # resolved against the run's config already (instantiate's _convert_)
        if weights.get("_target_") == self.__class__.__module__ + "." + self.__class__.__name__:
            raise UserError("method.weights: icl inside icl; choose a method that adapts weights")
        named = external is not None and external.get("format") is not None
        if pool != "stream" and not named:
            raise UserError(f"method.pool={pool}: no TM to search: set {KEY}.format and {KEY}.path "
                            "(configs/method/icl.yaml)")
        if pool == "stream" and named:
            raise UserError(f"{KEY} names the TM {files(external)}, but method.pool=stream does not search it: set "
                            "method.pool=external or both")
        if pool == "external" and retrieval == "document":
            raise UserError("method.pool=external: retrieval=document quotes the stream's own document; choose "
                            "method.retrieval=fuzzy, random or both")
        try:
            self.inner = methods.build(weights, model)
        except UserError as e:
            raise UserError(str(e).replace("method.", "method.weights.", 1)) from None
        super().__init__(model, name=name, lr=self.inner.lr)
        self.gradient_steps = self.inner.gradient_steps
        self.moment = self.inner.moment if isinstance(self.inner, Retrieval) else None
        self.k, self.retrieval, self.threshold = int(k), retrieval, float(threshold)
        self.seed, self.pool, self.glossary = int(seed), pool, bool(glossary)
        self.weights = self.inner.name
        if weights_with_prompt and not self.inner.parameters():
            raise UserError("method.weights_with_prompt=true: the weights' method is none, which trains nothing; "
                            "choose one with method@method.weights=NAME (e.g. lora)")
        self.weights_with_prompt = bool(weights_with_prompt)  # the loop's update reads the pair after the prompt
        self.pairs: list[Quote] = []  # the stream's, since θ0 was last restored
        self.index = 0  # the next segment's step (random's draw)
        # tm's TM, under tm's names: its reader and its look-ahead check (`check_stream`) are tm's own
        take_external(self, external, model)
        self.words = None
        if self.glossary:
            from adaptsim.metrics.words import WordPipeline, load_stopwords

            self.words = WordPipeline(glossary_lang, load_stopwords(glossary_lang, glossary_stopwords), "lower")

    def context(self, source: str, doc_id: str) -> list[tuple[str, str, int | str | None]]:
        """Up to k (document) and/or k (fuzzy), or k (random) pairs for `source`, in prompt order, after the glossary
        if there is one: (source, post-edit, the step that revealed it, or where the TM holds it)."""
        if self.retrieval == "random":
            quoted = self._drawn()
        else:
            recent = [p for p in self.pairs if p.doc == doc_id][-self.k:] if self.retrieval != "fuzzy" else []
            quoted = (self._similar(source, recent) if self.retrieval != "document" else []) + recent
        out = [(q.source, q.target, q.label) for q in quoted]
        terms = self._glossary(quoted)
        return ([("", ", ".join(terms), GLOSSARY)] if terms else []) + out

    def _similar(self, source: str, taken: list[Quote]) -> list[Quote]:
        """The k best of the pool by fuzzy score ≥ threshold, not among `taken`, the best last."""
        found = []
        if self.pool != "external":  # on ties the later pair (the translator's most recent choice)
            found += [(score, 0, -i, self.pairs[i]) for _, score, i in process.extract(
                source, [p.source for p in self.pairs], scorer=fuzz.ratio, limit=None, score_cutoff=self.threshold)]
        if self.pool != "stream":  # then the TM's, the earlier entry first (tm's rules)
            found += [(score, 1, i, self._entry(i)) for _, score, i in process.extract(
                source, self.external_sources, scorer=fuzz.ratio, limit=self.k, score_cutoff=self.threshold)]
        found.sort(key=lambda m: (-m[0], m[1], m[2]))
        skip = {id(q) for q in taken}
        return [q for *_, q in found if id(q) not in skip][:self.k][::-1]

    def _drawn(self) -> list[Quote]:
        """k of the pool drawn without replacement, seeded by the run's seed and the segment's index, in the order
        drawn."""
        stream = self.pairs if self.pool != "external" else []
        size = len(stream) + (len(self.external_sources) if self.pool != "stream" else 0)
        picks = random.Random(f"{self.seed}:{self.index}").sample(range(size), min(self.k, size))
        return [stream[i] if i < len(stream) else self._entry(i - len(stream)) for i in picks]

    def _entry(self, i: int) -> Quote:
        return Quote(self.external_sources[i], self.external_references[i], f"tm {entry(self.external_origins[i])}")

    def _glossary(self, quoted: list[Quote]) -> list[str]:
        """The terms the quoted pairs' post-edits corrected, in prompt order, each once (compared lowercased)."""
        terms, seen = [], set()
        for term in (t for q in quoted for t in q.terms):
            if term.lower() not in seen:
                seen.add(term.lower())
                terms.append(term)
        return terms

    def corrected(self, post_edit: str, hypothesis: str) -> tuple[str, ...]:
        """The content words of `post_edit` that `hypothesis` lacks (lowercased), as the post-edit writes them, in its
        order, each once."""
        new = self.words(post_edit) - self.words(hypothesis)
        terms = {}
        for token in self.words.raw_tokens(post_edit):
            if token.lower() in new:
                terms.setdefault(token.lower(), token)
        return tuple(terms.values())

    def revealed(self, source, reference, doc_id=None, step=None, hypothesis=None):
        terms = ()
        if self.words is not None:
            if hypothesis is None:
                raise UserError("method.glossary=true: needs the machine translation each post-edit corrected, which "
                                "this loop does not give the method (Retrieval.revealed's `hypothesis`); set "
                                "method.glossary=false")
            terms = self.corrected(reference, hypothesis)
        self.pairs.append(Quote(source, reference, step, doc_id, terms))
        self.index = step + 1 if step is not None else self.index + 1
        if isinstance(self.inner, Retrieval):
            self.inner.revealed(source, reference, doc_id, step, hypothesis)

    def start_document(self, theta0):
        self.pairs.clear()  # the TM's entries stay
        self.inner.start_document(theta0)

    # the weights' method, as it is alone
    def parameters(self):
        return self.inner.parameters()

    def start_pair(self, batch):
        self.inner.start_pair(batch)

    def pair_nll(self, batch):
        return self.inner.pair_nll(batch)

    def learning_rates(self):
        return self.inner.learning_rates()

    def before_step(self, grad_norms):
        self.inner.before_step(grad_norms)

    def after_step(self):
        self.inner.after_step()

    def after_pair(self, batch):
        return self.inner.after_pair(batch)

    def matches(self, source):
        return self.inner.matches(source) if isinstance(self.inner, Retrieval) else []

    def check_stream(self, segments):
        """No look-ahead through the TM (tm's check, on the same names), then the weights' method's."""
        Tm.check_stream(self, segments)
        self.inner.check_stream(segments)

    def state_bytes(self, offset_bytes):
        """The weights' state, plus the memory's text (UTF-8: every pair kept since θ0 was last restored)."""
        return self.inner.state_bytes(offset_bytes) + sum(len(p.source.encode()) + len(p.target.encode())
                                                          for p in self.pairs)

    def info(self):
        return {"k": self.k, "retrieval": self.retrieval, "threshold": self.threshold, "seed": self.seed,
                "pool": self.pool, "external": self.external_info, "glossary": self.glossary,
                "weights": self.weights, "weights_with_prompt": self.weights_with_prompt,
                "weights_info": self.inner.info()}
