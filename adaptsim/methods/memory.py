"""`memory`: a non-parametric memory of the post-edits, in the spirit of kNN-MT (not in the paper; Khandelwal,
Fan, Jurafsky, Zettlemoyer & Lewis 2021, "Nearest neighbor machine translation", and its online use for
post-editing: the datastore grows with each revealed reference instead of being built from a corpus).

After each segment the pair's reference is run through the model with teacher forcing (the forward the update
rule makes anyway) and, for every target position t, the decoder state that predicts y_t is stored as a key
with y_t as its value. While translating, at every decoding step, the query is the current decoder state; its
k nearest keys (squared L2 distance d) give p_kNN(v) ∝ Σ_{neighbours with value v} exp(−d/T), and the model's
next-token distribution becomes p = λ·p_kNN + (1 − λ)·p_model. No parameter changes and no gradient step is
taken: `updates` is 0 for every pair. With `reset: document` the memory is emptied at every document start
(`start_document`), and with an empty memory the model's output is returned untouched, so a document starts
exactly at θ0; with `reset: never` it grows over the whole stream.

Where the interpolation happens. p must be what beam search scores, so the net's output `logits` are replaced
by log p (a forward hook on the whole network, after everything the architecture adds: Marian adds its
`final_logits_bias` after the output layer, and the `bias` method's hook sits on the output layer itself, so a
hook there would see logits that are not yet final). Generation takes log_softmax of the logits, which leaves
log p unchanged (it is normalised), so every beam is scored with log p. The query is the output layer's input,
caught by a second hook on that layer, at whatever positions the network computed logits for (one per beam
during generation, all positions under teacher forcing). The mixture is computed in log space
(logaddexp of log(1−λ) + log_softmax(logits) and log(λ) + log p_kNN), so words the model gives no mass keep
the memory's and no log(0) of a sum appears.

What the update's perplexity means here: `ppl_before` is the perplexity of the reference under the model with
the memory as it was before this pair (what translating it would have scored), `ppl_after` the same once the
pair's states are stored (how well the memory now reproduces the pair: near 1 for λ near 1 and a small T).
The pair's loss is computed from the interpolated distribution (`pair_nll`), not the network's own loss.
The one forward for `ppl_before` also gives the keys; storing them is the "adaptation step" timed in
summary.json's cost; `ppl_after` costs one more forward.

Choices the sources leave open or that differ from kNN-MT (settings in configs/method/memory.yaml):

- keys are the output layer's input (the decoder's final states as the architecture feeds them to the output
  projection), not the input of the last feed-forward block that Khandelwal et al. used: it is the state the
  output distribution is computed from, exposed uniformly for every architecture (adaptsim/models/arch.py), and the one
  later kNN-MT variants commonly use. The keys are the states of the model as it is (θ0: the model never
  changes under `memory`), computed with teacher forcing on the reference, as in kNN-MT's datastore.
- every target position is stored, including the final </s> (a reference's end is a post-edit too). A
  decoder-only model's state at a position predicts the next token (`Model.output_labels` pairs them), and only
  the positions that predict the target are stored, not the prompt's.
- exact search: all distances, torch.topk. A document (tens to hundreds of segments, a few thousand keys)
  costs a few thousand dot products per decoding step; under `reset: never` on a stream of 10^5+ target tokens,
  or with a datastore built from a corpus (kNN-MT's millions of keys), an approximate index (faiss, as
  kNN-MT uses) would be needed.
- k, T, λ: kNN-MT tunes them per data set and model (T ∈ {10, 100} there). T is in units of the squared
  distance between keys, which depends on the model: between two keys of 30 documents' segments the median
  squared distance is 634 on the demo model (128-dimensional states; nearest other key: 34), 1,418 on
  small-ende-probe (256; nearest: 424), ~100 on the tests' 32-dimensional model, and T5 scales the output
  layer's input by d_model^−0.5. So a T chosen for one model is not right for another; the default was chosen
  on the demo's held-out documents (configs/method/memory.yaml). λ is a fixed setting (no learned or adaptive
  λ, as in the original kNN-MT).
- stored state: keys in float32 and values as int64, as held in memory (`state_bytes`); a store could use
  int32 values or compressed keys.
- `method.lr` is not used (0.0; nothing is trained).
"""

from __future__ import annotations

import math

import torch

from adaptsim.methods.base import Method
from adaptsim.rules import Integer, Number


class Memory(Method):
    gradient_steps = False  # it stores the pair's decoder states instead (after_pair)
    settings = {**Method.settings, "lr": Number(),  # not used
                "k": Integer(1), "temperature": Number(above=0), "lam": Number(at_least=0, at_most=1)}

    def __init__(self, model, *, k: int, temperature: float, lam: float, **common):
        super().__init__(model, **common)
        self.k, self.temperature, self.lam = k, float(temperature), float(lam)
        layer = model.arch.output_layer
        self.width = layer.weight.shape[1]
        self._keys = torch.empty(0, self.width, device=model.device)  # a buffer that grows by doubling
        self._values = torch.empty(0, dtype=torch.long, device=model.device)
        self.size = 0
        self.max_size = 0  # the largest memory of the run (entries)
        self._query: torch.Tensor | None = None
        self._pair: tuple[torch.Tensor, torch.Tensor] | None = None  # (labels, their states) of the last pair_nll
        layer.register_forward_hook(self._catch_query)
        model.net.register_forward_hook(self._interpolate)

    # -- the memory ----------------------------------------------------------------------------------------
    @property
    def keys(self) -> torch.Tensor:
        return self._keys[:self.size]

    @property
    def values(self) -> torch.Tensor:
        return self._values[:self.size]

    def start_document(self, theta0):
        self.size = 0
        self._pair = None

    @torch.no_grad()
    def add(self, states: torch.Tensor, tokens: torch.Tensor) -> None:
        """Store `states` (n × width) as keys with `tokens` (n) as values."""
        n = self.size + len(tokens)
        if n > len(self._values):
            capacity = max(n, 2 * len(self._values), 256)
            keys = torch.empty(capacity, self.width, device=self._keys.device)
            values = torch.empty(capacity, dtype=torch.long, device=self._values.device)
            keys[:self.size], values[:self.size] = self.keys, self.values
            self._keys, self._values = keys, values
        self._keys[self.size:n] = states.float()
        self._values[self.size:n] = tokens
        self.size = n
        self.max_size = max(self.max_size, n)

    # -- translating: p = λ p_kNN + (1 − λ) p_model ---------------------------------------------------------
    def _catch_query(self, _module, inputs, _out):
        self._query = inputs[0]

    def _interpolate(self, _net, _args, output):
        if self.size == 0 or self.lam == 0 or getattr(output, "logits", None) is None:
            return None  # the model's own output, untouched
        logits = output.logits
        query = self._query[..., -logits.shape[-2]:, :]  # the positions logits were computed for
        output.logits = self.log_probs(logits, query)
        return output

    @torch.no_grad()
    def log_probs(self, logits: torch.Tensor, query: torch.Tensor) -> torch.Tensor:
        """log(λ p_kNN + (1 − λ) p_model) for logits (…, V) and decoder states (…, width)."""
        vocab = logits.shape[-1]
        q = query.reshape(-1, self.width).float()
        keys = self.keys
        d = (q.square().sum(1, keepdim=True) - 2 * q @ keys.T + keys.square().sum(1)).clamp_(min=0)
        dist, index = d.topk(min(self.k, self.size), dim=1, largest=False)  # exact search
        weights = torch.softmax(-dist / self.temperature, dim=1)
        p_knn = torch.zeros(q.shape[0], vocab, device=q.device).scatter_add_(1, self.values[index], weights)
        log_model = torch.log_softmax(logits.reshape(-1, vocab).float(), dim=1)
        mixed = p_knn.log() + math.log(self.lam)
        if self.lam < 1:
            mixed = torch.logaddexp(log_model + math.log1p(-self.lam), mixed)
        return mixed.reshape(logits.shape).to(logits.dtype)

    # -- the update rule's view: the pair's loss under p, then the store -----------------------------------
    def pair_nll(self, batch):
        nll = self.model.token_nll(batch)  # hooks: query caught, logits interpolated with the memory so far
        self._pair = (batch["labels"], self._query)
        return nll

    @torch.no_grad()
    def after_pair(self, batch):
        labels = batch["labels"]
        if self._pair is not None and self._pair[0] is labels:
            states = self._pair[1]  # from the pair_nll that measured ppl_before: the model is unchanged since
        else:
            states = self.model.output_inputs(batch)
        labels = self.model.output_labels(labels)  # what each state predicts (a decoder-only model's: shifted)
        keep = labels != -100
        self.add(states[keep], labels[keep])
        self._pair = None
        return True

    def state_bytes(self, offset_bytes):
        return offset_bytes + self.size * (self.width * self._keys.element_size() + self._values.element_size())

    def info(self):
        return {"k": self.k, "temperature": self.temperature, "lam": self.lam, "key_size": self.width,
                "entries_max": self.max_size}
