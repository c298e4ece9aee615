"""`fixed`: train a fixed subset of tensors chosen beforehand on held-out data, plus source embeddings
(paper §4, §5.1; the subset comes from `adaptsim select-fixed`, which chooses it by held-out performance).

The subset is the list `select-fixed` wrote for this model, `configs/fixed_lists/<list>.yaml` (`list`
defaults to the model's name; a path to such a file also works). The file records the model it was chosen
for, and a list chosen for another model (other tensor names or shapes) stops the run: a subset chosen for
one model says nothing about another. `params` instead gives names or shell patterns
(`model.decoder.layers.*.fc2.*`) directly, for studies of a hand-made subset; each must match some
parameter. Listed tensors are trained whole, embedding matrices included.

`source_embeddings: true` adds the source embedding matrix, of which only the rows of the tokens seen in
the current pair change (paper: "potentially the full source embeddings, but in practice [...] limited"):
the gradient of every other row is zeroed as it is computed, before tensor-wise clipping, so the clipping
norm is that of the rows actually trained. The paper's model has a separate source matrix. Where it is
tied to the target embeddings and the output projection (OPUS-MT), the paper is silent; we keep its
intent: `embedding_rows: source` (default) trains only the rows of the pair's source tokens (their
gradient then also carries the target/output roles of those tokens); `pair` also trains the rows of its
reference tokens. With a separate source matrix both are the same, as no other row gets a gradient.
A decoder-only model reads its source in the prompt through the one input embedding matrix: its source rows are
those of the prompt's tokens (instruction, context and source; `Model.source_token_ids`).
"""

from __future__ import annotations

import hashlib
import logging
from fnmatch import fnmatchcase

import torch
from omegaconf import OmegaConf

from adaptsim.errors import UserError
from adaptsim.fixed_lists import list_path
from adaptsim.methods.base import Method
from adaptsim.rules import Boolean, Choice, Strings, Text

log = logging.getLogger("adaptsim")


def pair_key(source: str, reference: str) -> str:
    """A short hash of a (source, reference) pair: how a list records its held-out data without its text, so that
    a run can check it is not tested on it (`heldout_overlap`)."""
    return hashlib.sha256(f"{source}\t{reference}".encode()).hexdigest()[:12]


def read_list(name: str, model) -> tuple[list[str], frozenset[str]]:
    """The tensors of list `name` (after checking it was chosen for `model`) and its held-out pairs' keys (none in
    lists written before select-fixed recorded them)."""
    path = list_path(name)
    fix = "choose one for this model with `python -m adaptsim select-fixed model=… dataset=<held-out data>`"
    if not path.is_file():
        raise UserError(f"method.list={name}: no list of fixed tensors at {path}; {fix}")
    saved = OmegaConf.load(path)
    chosen_for = saved.get("model") or {}
    if chosen_for.get("signature") != model.signature():
        total = sum(p.numel() for p in model.named_parameters().values())
        raise UserError(f"method.list={name}: {path.name} was chosen for model {chosen_for.get('name')} "
                        f"({chosen_for.get('parameters')} parameters), not this one ({total}); {fix}")
    return [str(p) for p in saved.params], frozenset(map(str, saved.get("heldout") or []))


def heldout_overlap(heldout: frozenset[str], segments, where: str) -> None:
    """Held-out means disjoint from the test stream, checked: refuse a stream holding half of the pairs the list
    was chosen on or more (it is that data), warn where some recur (short stock segments recur across documents)."""
    if not heldout:
        return
    shared = {pair_key(s.source, s.reference) for s in segments} & heldout
    if 2 * len(shared) >= len(heldout):
        raise UserError(f"{where} was chosen on this data: {len(shared)} of its {len(heldout)} held-out pairs are in "
                        "the test stream; choose the list on held-out data disjoint from it (select-fixed dataset=…)")
    if shared:
        log.warning("%s: %d of its %d held-out pairs also occur in the test stream", where, len(shared), len(heldout))


class Fixed(Method):
    settings = {**Method.settings, "list": Text(), "params": Strings(null="use the list", empty=True),
                "source_embeddings": Boolean(), "embedding_rows": Choice(("source", "pair"))}

    def __init__(self, model, *, list: str, params: list[str] | None, source_embeddings: bool,  # noqa: A002
                 embedding_rows: str, **common):
        super().__init__(model, **common)
        named = model.named_parameters()
        patterns, self.heldout = ([str(p) for p in params], frozenset()) if params is not None \
            else read_list(str(list), model)
        unmatched = [pat for pat in patterns if not any(fnmatchcase(n, pat) for n in named)]
        if unmatched:
            raise UserError(f"method.params: {unmatched} match no parameter of the model (names look like "
                            f"{next(iter(named))!r}); make a list for this model with `adaptsim select-fixed`")
        self._params = {n: p for n, p in named.items() if any(fnmatchcase(n, pat) for pat in patterns)}
        self.list = None if params is not None else str(list)
        self.rows_of = embedding_rows
        self.row_masked: list[str] = []
        self._rows: torch.Tensor | None = None  # token ids whose rows train on the current pair
        if source_embeddings:
            for name, roles in model.arch.embeddings.items():
                if "source" in roles and name not in self._params:
                    self._params[name] = named[name]
                    self.row_masked.append(name)
                    named[name].register_hook(self._mask_rows)

    def parameters(self):
        return dict(self._params)

    def check_stream(self, segments):
        heldout_overlap(self.heldout, segments, f"method.list={self.list}")

    def start_pair(self, batch):
        ids = self.model.source_token_ids(batch)  # a decoder-only model's: its prompt's
        if self.rows_of == "pair":
            labels = batch["labels"]
            ids = torch.cat([ids.flatten(), labels[labels >= 0]])
        self._rows = ids.flatten().unique()

    def _mask_rows(self, grad: torch.Tensor) -> torch.Tensor:
        if self._rows is None:  # a gradient outside the update loop: leave it alone
            return grad
        masked = torch.zeros_like(grad)
        masked[self._rows] = grad[self._rows]
        return masked

    def info(self):
        listed = [n for n in self._params if n not in self.row_masked]
        return {"list": self.list, "tensors": listed, "tensor_parameters": sum(self._params[n].numel() for n in listed),
                "row_masked_embeddings": self.row_masked, "embedding_rows": self.rows_of}
