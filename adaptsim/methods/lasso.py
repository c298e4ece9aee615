"""`lasso`: fine-tune all parameters with group-lasso-regularised offsets (paper §4, §5.1, after Wuebker,
Simianer & DeNero 2018, "Compact personalized models for NMT").

Parameters are θ = θ0 + δ. Groups: every tensor is one group, except the embedding matrices
(`arch.embeddings`; a tied matrix is one matrix) whose rows are groups. After every SGD step:

1. prox step of ℓ1/ℓ2 group lasso: δ_g ← δ_g · max(0, 1 − γλ/‖δ_g‖₂), γ = the learning rate;
2. only the largest ‖δ_g‖₂ are kept within two budgets, on what differs from θ0 (the θ0 the loop restores,
   i.e. the base model; with `reset: never` the budgets bound the divergence over the whole stream):
   `budget` for non-embedding parameters (paper 1M) and `embedding_budget` for embedding parameters summed
   over all embedding matrices (paper 1M); every other group is reset exactly to θ0.
3. the second output bias of `bias` is always included and trained with the same γ: no prox and not
   counted against the budgets (it is `output_bias_size` more parameters; summary.json's method_info).

Choices where the paper is silent (all settings): budgets ≤ 1.0 are fractions of the model's parameters of
that kind (its figures are for a ~38M-parameter model with 3 × 10M embeddings: 1M/1M ≈ 0.13 of its
non-embedding and 0.033 of its embedding parameters); groups are ranked by ‖δ_g‖₂ without any group-size
weighting, as the formula says; a tensor that does not fit in what is left of the budget is skipped and
smaller ones after it may still be kept (embedding rows of one width are then a plain top-k); the bias is
trained with the method's γ (the paper's γ = 1.0 is for the `bias` method alone). λ is not given: the
default 0.01 makes the prox step shrink every group by γλ = 1e-4 per update, 1% of the largest step a
clipped gradient can make (γ · clip = 1e-2). That removes what a pair barely touches — on small-ende-probe,
after one update, 7,942 of the 8,000 rows of its tied embedding matrix (which gets the output layer's
gradient on every row) and 9 of its 126 other tensors moved by less — while an offset of 1e-3 outlives ten
updates without gradient, so what a document taught is not forgotten at once and the budgets decide
among the rest (`method.lambda=…` to study it).

Everything is tensor-wide work: one norm per tensor (torch._foreach_norm), row norms per embedding
matrix, and δ is formed, scaled and added back in place, so no second copy of the model is made.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch

from adaptsim.errors import UserError
from adaptsim.methods.base import Method
from adaptsim.methods.bias import OUTPUT_BIAS


def resolve_budget(value, total: int, key: str) -> int:
    """A parameter budget: a fraction of `total` if ≤ 1.0 (1.0 = no limit), else an absolute count."""
    v = float(value)
    if v < 0:
        raise UserError(f"{key}={value}: a budget is ≥ 0 (a count, or a fraction ≤ 1.0)")
    return int(v * total) if v <= 1.0 else int(v)


def prox_factors(norms: torch.Tensor, threshold: float) -> torch.Tensor:
    """max(0, 1 − threshold/‖δ_g‖) per group; 0 for a group with δ_g = 0 (nothing to keep)."""
    safe = torch.where(norms > 0, norms, torch.ones_like(norms))
    return torch.where(norms > 0, (1 - threshold / safe).clamp(min=0), torch.zeros_like(norms))


def fill_budget(ranked: Iterable, size, budget: int) -> list:
    """The groups of `ranked` (best first) that fit in what is left of the budget; one that does not fit is
    skipped and smaller ones after it may still be kept. `size[g]` is a group's parameter count."""
    kept, left = [], budget
    for g in ranked:
        if size[g] <= left:
            kept.append(g)
            left -= size[g]
    return kept


def fill_budget_rows(norms: torch.Tensor, sizes: torch.Tensor, budget: int) -> torch.Tensor:
    """`fill_budget` for rows, vectorised: the largest nonzero rows until the budget is full (the same thing
    where all rows have one width, as embedding rows do)."""
    order = torch.argsort(norms, descending=True, stable=True)
    fits = (torch.cumsum(sizes[order], 0) <= budget) & (norms[order] > 0)
    keep = torch.zeros_like(fits)
    keep[order] = fits
    return keep


class Lasso(Method):
    def __init__(self, cfg, model):
        super().__init__(cfg, model)
        named = model.named_parameters()
        self.emb_names = [n for n in named if n in model.arch.embeddings]
        self.names = [n for n in named if n not in model.arch.embeddings]
        self.tensors = [named[n] for n in self.names]
        self.embeddings = [named[n] for n in self.emb_names]
        self.sizes = [p.numel() for p in self.tensors]
        widths, rows = (torch.tensor([e.shape[i] for e in self.embeddings], dtype=torch.long) for i in (1, 0))
        self.row_sizes = widths.repeat_interleave(rows).to(model.device)  # parameters per row, all matrices
        self.lam = float(cfg["lambda"])
        self.budget = resolve_budget(cfg.budget, sum(self.sizes), "method.budget")
        self.embedding_budget = resolve_budget(cfg.embedding_budget, sum(e.numel() for e in self.embeddings),
                                               "method.embedding_budget")
        self.bias = model.add_output_bias()
        self._theta0: list[torch.Tensor] | None = None
        self._emb_theta0: list[torch.Tensor] = []
        self.selected = {"tensors": 0, "parameters": 0, "embedding_rows": 0, "embedding_parameters": 0}
        self.selected_max = dict(self.selected)
        self.steps = 0

    def parameters(self):
        return {**dict(zip(self.names, self.tensors)), **dict(zip(self.emb_names, self.embeddings)),
                OUTPUT_BIAS: self.bias}

    def start_document(self, theta0):
        self._theta0 = [theta0[n] for n in self.names]
        self._emb_theta0 = [theta0[n] for n in self.emb_names]

    @torch.no_grad()
    def after_step(self):
        if self._theta0 is None:
            raise RuntimeError("lasso: start_document(theta0) was not called")
        threshold = self.lr * self.lam
        if self.tensors:  # whole tensors: params become δ, are scaled (0 = dropped), then θ0 is added back
            torch._foreach_sub_(self.tensors, self._theta0)
            norms = torch.stack(torch._foreach_norm(self.tensors))
            shrink = prox_factors(norms, threshold)
            post = (norms * shrink).tolist()
            ranked = sorted((i for i, n in enumerate(post) if n > 0), key=lambda i: -post[i])  # ties: in order
            kept = fill_budget(ranked, self.sizes, self.budget)
            keep = torch.zeros_like(shrink)
            keep[kept] = 1
            torch._foreach_mul_(self.tensors, (shrink * keep).unbind())
            torch._foreach_add_(self.tensors, self._theta0)
            self.selected["tensors"] = len(kept)
            self.selected["parameters"] = sum(self.sizes[i] for i in kept)
        if self.embeddings:  # rows of all embedding matrices compete for one budget
            torch._foreach_sub_(self.embeddings, self._emb_theta0)
            norms = torch.cat([torch.linalg.vector_norm(e, dim=1) for e in self.embeddings])
            shrink = prox_factors(norms, threshold)
            keep = fill_budget_rows(norms * shrink, self.row_sizes, self.embedding_budget)
            factors = (shrink * keep).split([e.shape[0] for e in self.embeddings])
            for e, f, e0 in zip(self.embeddings, factors, self._emb_theta0):
                e.mul_(f[:, None]).add_(e0)
            self.selected["embedding_rows"] = int(keep.sum())
            self.selected["embedding_parameters"] = int(self.row_sizes[keep].sum())
        self.steps += 1
        self.selected_max = {k: max(v, self.selected[k]) for k, v in self.selected_max.items()}

    def info(self):
        return {"lambda": self.lam, "budget": self.budget, "embedding_budget": self.embedding_budget,
                "non_embedding_parameters": sum(self.sizes),
                "embedding_parameters": sum(e.numel() for e in self.embeddings),
                "output_bias_size": self.bias.numel(), "steps": self.steps, "selected_max": self.selected_max}
