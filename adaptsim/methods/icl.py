"""`icl`: in-context adaptation (not in the paper): the translator's earlier post-edits go into the prompt of a
decoder-only model, and nothing is updated — or, with `weights`, a parameter method adapts as well (in context and
in weights).

Before segment i is translated, `context` chooses up to k earlier (source, post-edit) pairs of the stream:

- `document`: the document's last k pairs, oldest first (the document-level MT setting: Fernandes et al. 2021's
  context is the previous sentences of the document, source and target);
- `fuzzy`: the k earlier pairs whose sources are most similar to segment i's with a score ≥ `threshold`, by
  rapidfuzz's `fuzz.ratio` as `tm` scores them, the best match last, next to the source. Moslem et al. 2023
  (ymoslem/Adaptive-MT-LLM) retrieve by multilingual sentence embeddings (Semantic_Search_Faiss_Multilingual.ipynb)
  and order the prompt the same way (MT/ChatGPT-BatchTranslation.ipynb, `create_prompt`: the matches, best first,
  are reversed); Agrawal et al. 2022 retrieve by BM25 and re-rank by n-gram recall. adaptsim uses one
  character-level fuzzy score, the one CAT tools show, and needs no embedding model;
- `both`: the fuzzy matches that are not among the document's last k, then those k.

Only pairs revealed before segment i are candidates (they enter the memory after their segment's update, `revealed`):
no look-ahead. The memory is emptied where θ0 is restored (every document under reset=document), as `tm`'s is, so
under reset=document fuzzy retrieval searches the document so far.

`weights` is another method's config (configs/method/<name>.yaml, composed into this one as a Hydra default:
`method@method.weights=lora`, its settings `method.weights.rank=4`), which trains on every post-edit as it would
alone; its update is on the pair without context (what the weights learn is the pair itself; the context is what the
prompt adds when translating). `none` (the default): the weights stay θ0.
"""

from __future__ import annotations

from omegaconf import OmegaConf
from rapidfuzz import fuzz, process

from adaptsim.errors import UserError
from adaptsim.methods.base import Method
from adaptsim.methods.retrieval import Retrieval
from adaptsim.methods.tm import Score
from adaptsim.rules import Choice, Integer, Rule, Text

RETRIEVALS = ("document", "fuzzy", "both")


class MethodConfig(Rule):
    """Another method's config: a mapping with its `_target_`."""

    def ok(self, value) -> bool:
        return (OmegaConf.is_dict(value) or isinstance(value, dict)) and "_target_" in value

    def allowed(self) -> str:
        return "must be a method's config: choose it with method@method.weights=NAME (configs/method/NAME.yaml)"


class InContext(Retrieval, Method):
    settings = {"name": Text(), "k": Integer(1), "retrieval": Choice(RETRIEVALS),
                "threshold": Score(at_least=0, at_most=100), "weights": MethodConfig()}

    def __init__(self, model, *, name: str, k: int, retrieval: str, threshold: float, weights):
        from adaptsim import methods

        if not model.reads_context:
            raise UserError(f"method={name}: needs a model that reads context in its input, a decoder-only model "
                            "(model=demo-lm offline, or a causal LM's config such as model=qwen2.5-0.5b-instruct); "
                            f"{model.net.config.model_type} is an encoder-decoder")
        weights = OmegaConf.create(weights)  # resolved against the run's config already (instantiate's _convert_)
        if weights.get("_target_") == self.__class__.__module__ + "." + self.__class__.__name__:
            raise UserError("method.weights: icl inside icl; choose a method that adapts weights")
        try:
            self.inner = methods.build(weights, model)
        except UserError as e:
            raise UserError(str(e).replace("method.", "method.weights.", 1)) from None
        super().__init__(model, name=name, lr=self.inner.lr)
        self.gradient_steps = self.inner.gradient_steps
        self.moment = self.inner.moment if isinstance(self.inner, Retrieval) else None
        self.k, self.retrieval, self.threshold = int(k), retrieval, float(threshold)
        self.weights = self.inner.name
        self.pairs: list[tuple[str, str, str | None, int | None]] = []  # (source, post-edit, document, step)

    def context(self, source: str, doc_id: str) -> list[tuple[str, str, int | None]]:
        """Up to k (document) and/or k (fuzzy) earlier pairs for `source`, in prompt order: (source, post-edit,
        the step that revealed it)."""
        recent = [p for p in self.pairs if p[2] == doc_id][-self.k:] if self.retrieval != "fuzzy" else []
        similar = []
        if self.retrieval != "document":
            taken = {id(p) for p in recent}
            found = process.extract(source, [p[0] for p in self.pairs], scorer=fuzz.ratio, limit=None,
                                    score_cutoff=self.threshold)
            # by score, on ties the later pair (the translator's most recent choice); used best last
            ranked = sorted(found, key=lambda m: (-m[1], -m[2]))
            similar = [self.pairs[i] for _, _, i in ranked if id(self.pairs[i]) not in taken][:self.k][::-1]
        return [(s, t, step) for s, t, _, step in similar + recent]

    def revealed(self, source, reference, doc_id=None, step=None):
        self.pairs.append((source, reference, doc_id, step))
        if isinstance(self.inner, Retrieval):
            self.inner.revealed(source, reference, doc_id, step)

    def start_document(self, theta0):
        self.pairs.clear()
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
        self.inner.check_stream(segments)

    def state_bytes(self, offset_bytes):
        """The weights' state, plus the memory's text (UTF-8: every pair kept since θ0 was last restored)."""
        return self.inner.state_bytes(offset_bytes) + sum(len(s.encode()) + len(t.encode()) for s, t, *_ in self.pairs)

    def info(self):
        return {"k": self.k, "retrieval": self.retrieval, "threshold": self.threshold, "weights": self.weights,
                "weights_info": self.inner.info()}
