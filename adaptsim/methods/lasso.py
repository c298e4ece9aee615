"""`lasso`: fine-tune all parameters with group-lasso-regularised offsets and a budget on what is served
(paper §4, §5.1, after Wuebker, Simianer & DeNero 2018, "Compact personalized models for NMT").

Parameters are θ = θ0 + δ. Groups: every tensor is one group, except the embedding matrices
(`arch.embeddings`; a tied matrix is one matrix) whose rows are groups (Wuebker et al.'s choice: a word's
embedding is the natural unit for a vocabulary-sized matrix). After every SGD step:

1. prox step of ℓ1/ℓ2 group lasso (the proximal-gradient form Wuebker et al. use): every group's
   accumulated offset is shrunk, δ_g ← δ_g · max(0, 1 − γλ/‖δ_g‖₂), γ = the method's learning rate;
2. the paper's "select a fixed number of parameters after each update": only the groups with the largest
   ‖δ_g‖₂ are *served* (take part in translation and in the next gradient), within two budgets —
   non-embedding parameters (paper 1M) and embedding parameters summed over all embedding matrices (paper
   1M); every other group is served at θ0.
3. the second output bias of `bias` is always included ("this scheme also always includes the previously
   described second bias term"), outside the budgets and without prox, with its own learning rate `bias_lr`
   (the paper does not say which rate; 0 leaves the bias out, for ablations; the default and why: the config).

Which reading of "select after each update" this is, and why. The obvious one — reset the groups outside
the budget to θ0 and forget them — fails here: with tensor-wise clipping to 1.0
every tensor whose gradient norm is ≥ 1 moves by exactly γ = 0.01 at a document's first update, so ‖δ_g‖
ties across a quarter of the tensors and float32 rounding chose the kept set; and a forgotten group can never
grow again, so that first choice was final (on TED: 0 changes of the kept set in 87 updates). Here instead:

- out-of-budget groups keep their accumulated, prox-shrunk offset in a *reserve* (not served), so the kept
  set is a top-k of the proximal-gradient iterate, and a group whose gradient keeps pointing the same way
  accumulates until it enters the kept set, while one that stops mattering decays (γλ per update) and
  leaves it. `method_info.selection_changes` counts the updates after which the kept tensor set changed.
- norms are compared at a relative `resolution` (default 1e-4: well below differences that mean something);
  groups equal at that resolution are ordered by the learning signal clipping hides, their summed unclipped
  gradient norm, then by position. So the float32 ties of the first update (tensors that all moved by exactly γ)
  do not leave the kept set to rounding. What the grid cannot do is make a run independent of the thread count:
  the norms of given tensors are the same with 1 and 2 threads, but the gradients are not (one pair with
  small-ende-probe: 5.2M of its 7.6M gradient elements differ in the last bit), so the offsets drift apart and a
  norm near a cell boundary can fall on either side (docs/performance.md, "Threads" under "What adaptsim does"). No
  selection rule fixes that; summary.json records `timing.threads`, and a resume with another thread count is refused at
  the first step whose update differs.
- `hysteresis` (default 0: the plain top-k) favours the groups served after the last update: an outside group
  displaces one only when its norm is larger by more than that relative margin, against swaps by margins of
  ~1 % (an ablation setting; the paper's rule is the plain top-k).

Choices where the paper is silent (all settings): the budgets are the paper's absolute 1M + 1M, capped for
small models at the fraction of parameters the paper's 1M are of its ~38M-parameter model (0.13 of its ~7.5M
non-embedding, 0.033 of its ~30M embedding parameters), so a small model keeps the paper's sparsity instead
of being adapted densely; a group that does not fit in what is left of the budget is skipped and smaller
ones after it may still be kept; λ (not given in the paper) was chosen on held-out documents (see
configs/method/lasso.yaml). With `reset: never` the budgets bound the divergence from the base model over the
whole stream.

Cost: the reserve is a second copy of the trainable tensors at most (allocated only for groups that left or
never entered the kept set); everything else is tensor-wide in-place work (one norm per tensor, row norms
per embedding matrix).
"""

from __future__ import annotations

import math

import torch

from adaptsim.methods.base import Method
from adaptsim.methods.bias import OUTPUT_BIAS, bias_figures
from adaptsim.methods.budget import fill_budget, resolve_budget
from adaptsim.rules import Number


def prox_factors(norms: torch.Tensor, threshold: float) -> torch.Tensor:
    """max(0, 1 − threshold/‖δ_g‖) per group; 0 for a group with δ_g = 0 (nothing to keep)."""
    safe = torch.where(norms > 0, norms, torch.ones_like(norms))
    return torch.where(norms > 0, (1 - threshold / safe).clamp(min=0), torch.zeros_like(norms))


def ranked(norms: list[float], signal: list[float], resolution: float) -> list[int]:
    """Indices of the groups with ‖δ_g‖ > 0, largest first: norms compared on a log grid of relative width
    `resolution`, ties broken by the larger `signal`, then by position. An infinite norm (a diverging update)
    ranks first, so that the next forward meets it and the update rule reports the divergence."""
    def key(i):
        grid = math.log(norms[i]) / resolution
        return (-math.floor(grid) if math.isfinite(grid) else -math.inf, -signal[i], i)
    return sorted((i for i, n in enumerate(norms) if n > 0), key=key)


def fill_budget_rows(norms: torch.Tensor, sizes: torch.Tensor, budget: int) -> torch.Tensor:
    """`fill_budget` for rows, vectorised: the largest nonzero rows until the budget is full (the same thing
    where all rows have one width, as embedding rows do; equal norms: the lower row index first)."""
    order = torch.argsort(norms, descending=True, stable=True)
    fits = (torch.cumsum(sizes[order], 0) <= budget) & (norms[order] > 0)
    keep = torch.zeros_like(fits)
    keep[order] = fits
    return keep


class Lasso(Method):
    settings = {**Method.settings, "lam": Number(at_least=0), "bias_lr": Number(at_least=0, why="0: no second bias"),
                "budget": Number(at_least=0), "budget_fraction": Number(at_least=0, at_most=1),
                "embedding_budget": Number(at_least=0), "embedding_budget_fraction": Number(at_least=0, at_most=1),
                "resolution": Number(above=0), "hysteresis": Number(at_least=0)}

    def __init__(self, model, *, lam: float, bias_lr: float, budget: int, budget_fraction: float,
                 embedding_budget: int, embedding_budget_fraction: float, resolution: float, hysteresis: float,
                 **common):
        super().__init__(model, **common)
        named = model.named_parameters()
        self.emb_names = [n for n in named if n in model.arch.embeddings]
        self.names = [n for n in named if n not in model.arch.embeddings]
        self.tensors = [named[n] for n in self.names]
        self.embeddings = [named[n] for n in self.emb_names]
        self.sizes = [p.numel() for p in self.tensors]
        widths, rows = (torch.tensor([e.shape[i] for e in self.embeddings], dtype=torch.long, device=model.device)
                        for i in (1, 0))
        self.row_sizes = widths.repeat_interleave(rows)  # parameters per row, all matrices
        self.lam, self.resolution, self.bias_lr = float(lam), float(resolution), float(bias_lr)
        self.hysteresis = float(hysteresis)
        self.budget = resolve_budget(budget, budget_fraction, sum(self.sizes))
        self.embedding_budget = resolve_budget(embedding_budget, embedding_budget_fraction,
                                               sum(e.numel() for e in self.embeddings))
        self.bias = model.add_output_bias() if self.bias_lr > 0 else None
        self._theta0: list[torch.Tensor] | None = None
        self._emb_theta0: list[torch.Tensor] = []
        self.reserve: dict[int, torch.Tensor] = {}  # tensor index -> its prox-shrunk offset, while not served
        self.emb_reserve: list[torch.Tensor] = []  # per embedding matrix: offsets of the rows not served
        self.rows_kept: torch.Tensor | None = None  # which embedding rows (all matrices) the last update served
        self.signal = [0.0] * len(self.names)  # summed unclipped gradient norms since θ0 (the tie-breaker)
        self.kept: list[int] | None = None  # indices of the served tensors after the last update
        self._grad_norms: dict[str, torch.Tensor] = {}
        self.selected = {"tensors": 0, "parameters": 0, "embedding_rows": 0, "embedding_parameters": 0}
        self.selected_max = dict(self.selected)
        self.steps = self.selection_changes = 0

    def parameters(self):
        bias = {OUTPUT_BIAS: self.bias} if self.bias is not None else {}
        return {**dict(zip(self.names, self.tensors)), **dict(zip(self.emb_names, self.embeddings)), **bias}

    def learning_rates(self):
        return {OUTPUT_BIAS: self.bias_lr} if self.bias is not None else {}

    def start_document(self, theta0):
        self._theta0 = [theta0[n] for n in self.names]
        self._emb_theta0 = [theta0[n] for n in self.emb_names]
        self.reserve.clear()
        self.emb_reserve = [torch.zeros_like(e) for e in self.embeddings]
        self.rows_kept = torch.zeros(len(self.row_sizes), dtype=torch.bool, device=self.row_sizes.device)
        self.signal = [0.0] * len(self.names)
        self.kept = None

    def before_step(self, grad_norms):
        self._grad_norms = grad_norms

    @torch.no_grad()
    def after_step(self):
        if self._theta0 is None:
            raise RuntimeError("lasso: start_document(theta0) was not called")
        threshold = self.lr * self.lam
        if self.tensors:
            self._select_tensors(threshold)
        if self.embeddings:
            self._select_rows(threshold)
        self.steps += 1
        self.selected_max = {k: max(v, self.selected[k]) for k, v in self.selected_max.items()}

    def _select_tensors(self, threshold: float) -> None:
        tensors = self.tensors
        torch._foreach_sub_(tensors, self._theta0)  # served offset (+ this step's update) ...
        for i, r in self.reserve.items():
            tensors[i].add_(r)  # ... plus the reserve: the full offset δ of every group
        norms = torch.stack(torch._foreach_norm(tensors))
        shrink = prox_factors(norms, threshold)
        torch._foreach_mul_(tensors, shrink.unbind())
        with_grad = [i for i, name in enumerate(self.names) if name in self._grad_norms]
        if with_grad:  # one transfer of all the norms, not one per tensor
            values = torch.stack([self._grad_norms[self.names[i]] for i in with_grad]).tolist()
            for i, value in zip(with_grad, values):
                self.signal[i] += value
        ranking = norms * shrink
        if self.hysteresis and self.kept:  # the served groups favoured by the relative margin
            ranking[self.kept] *= 1 + self.hysteresis
        kept = fill_budget(ranked(ranking.tolist(), self.signal, self.resolution), self.sizes, self.budget)
        served, old, shrunk = set(kept), self.reserve, shrink.tolist()
        self.reserve = {}
        for i, t in enumerate(tensors):
            if i not in served:
                if shrunk[i] > 0:  # keep the offset for later, in last step's buffer where there is one
                    self.reserve[i] = old[i].copy_(t) if i in old else t.clone()
                t.zero_()
        torch._foreach_add_(tensors, self._theta0)
        if self.kept is not None and served != set(self.kept):
            self.selection_changes += 1
        self.kept = kept
        self.selected["tensors"] = len(kept)
        self.selected["parameters"] = sum(self.sizes[i] for i in kept)

    def _select_rows(self, threshold: float) -> None:
        # rows of all embedding matrices compete for one budget
        for e, e0, r in zip(self.embeddings, self._emb_theta0, self.emb_reserve):
            e.sub_(e0).add_(r)
        norms = torch.cat([torch.linalg.vector_norm(e, dim=1) for e in self.embeddings])
        shrink = prox_factors(norms, threshold)
        ranking = norms * shrink
        if self.hysteresis:
            ranking[self.rows_kept] *= 1 + self.hysteresis
        keep = self.rows_kept = fill_budget_rows(ranking, self.row_sizes, self.embedding_budget)
        splits = [e.shape[0] for e in self.embeddings]
        for e, e0, r, s, k in zip(self.embeddings, self._emb_theta0, self.emb_reserve,
                                  shrink.split(splits), keep.split(splits)):
            e.mul_(s[:, None])
            torch.mul(e, (~k)[:, None], out=r)
            e.mul_(k[:, None]).add_(e0)
        self.selected["embedding_rows"] = int(keep.sum())
        self.selected["embedding_parameters"] = int(self.row_sizes[keep].sum())

    def info(self):
        return {"lam": self.lam, "budget": self.budget, "embedding_budget": self.embedding_budget,
                "bias_lr": self.bias_lr, "resolution": self.resolution, "hysteresis": self.hysteresis,
                "non_embedding_parameters": sum(self.sizes),
                "embedding_parameters": sum(e.numel() for e in self.embeddings),
                "output_bias_size": self.bias.numel() if self.bias is not None else 0,
                **(bias_figures(self.bias) if self.bias is not None else {}),
                "steps": self.steps, "selected_max": self.selected_max,
                "selection_changes": self.selection_changes,
                "kept_tensors": [self.names[i] for i in (self.kept or [])],
                "reserved_tensors": len(self.reserve)}
