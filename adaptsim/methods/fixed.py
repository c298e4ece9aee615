"""`fixed`: train a fixed subset of tensors chosen beforehand on held-out data, plus source embeddings
(paper §4, §5.1; the subset comes from `adaptsim select-fixed`, which runs `lasso` on held-out documents).

`params` lists parameter names or shell patterns (`model.decoder.layers.*.fc2.*`); each must match some
parameter, so a list made for another architecture fails loudly instead of training nothing. Listed
tensors are trained whole, embedding matrices included.

`source_embeddings: true` adds the source embedding matrix, of which only the rows of the tokens seen in
the current pair change (paper: "potentially the full source embeddings, but in practice [...] limited"):
the gradient of every other row is zeroed as it is computed, before tensor-wise clipping, so the clipping
norm is that of the rows actually trained. The paper's model has a separate source matrix. Where it is
tied to the target embeddings and the output projection (OPUS-MT), the paper is silent; we keep its
intent: `embedding_rows: source` (default) trains only the rows of the pair's source tokens (their
gradient then also carries the target/output roles of those tokens); `pair` also trains the rows of its
reference tokens. With a separate source matrix both are the same, as no other row gets a gradient.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

import torch

from adaptsim.errors import UserError
from adaptsim.methods.base import Method


class Fixed(Method):
    def __init__(self, cfg, model):
        super().__init__(cfg, model)
        named = model.named_parameters()
        patterns = [str(p) for p in (cfg.get("params") or [])]
        unmatched = [pat for pat in patterns if not any(fnmatchcase(n, pat) for n in named)]
        if unmatched:
            raise UserError(f"method.params: {unmatched} match no parameter of the model (names look like "
                            f"{next(iter(named))!r}); make a list for this model with `adaptsim select-fixed`")
        self._params = {n: p for n, p in named.items() if any(fnmatchcase(n, pat) for pat in patterns)}
        self.rows_of = str(cfg.get("embedding_rows", "source"))
        if self.rows_of not in ("source", "pair"):
            raise UserError(f"method.embedding_rows={self.rows_of}: expected source or pair")
        self.row_masked: list[str] = []
        self._rows: torch.Tensor | None = None  # token ids whose rows train on the current pair
        if cfg.get("source_embeddings", True):
            for name, roles in model.arch.embeddings.items():
                if "source" in roles and name not in self._params:
                    self._params[name] = named[name]
                    self.row_masked.append(name)
                    named[name].register_hook(self._mask_rows)

    def parameters(self):
        return dict(self._params)

    def start_pair(self, batch):
        ids = batch["input_ids"]
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
        return {"tensors": listed, "tensor_parameters": sum(self._params[n].numel() for n in listed),
                "row_masked_embeddings": self.row_masked, "embedding_rows": self.rows_of}
