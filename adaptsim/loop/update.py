"""The paper's update rule (§5.1) and the reset to θ0.

One pair is the batch. Plain SGD (no momentum, so the optimizer has no state and is reused), each
parameter tensor's gradient clipped to L2 norm ≤ clip_norm on its own, and the update repeated until
the pair's per-token perplexity is ≤ ppl_threshold, with at least min_updates and at most max_updates.

Divergence is caught where it happens: a NaN/inf loss or gradient (or a loss so large that its perplexity
overflows a float, > 709 nats per token) raises `Diverged` before anything else is done with it; the
loop decides what follows (`update.on_divergence`: stop the run, or roll the document back to θ0).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import torch

from adaptsim import config_defaults
from adaptsim.methods.base import Method
from adaptsim.models import Model

_RULE = config_defaults("run.yaml:update")  # the update rule's defaults (their home: configs/run.yaml)
MAX_LOSS = 709.0  # nats per token: exp() of more overflows a float64


class Diverged(Exception):
    """The update made (or found) a non-finite loss or gradient; `updates` steps were taken before it."""

    def __init__(self, what: str, updates: int, ppl_before: float | None):
        super().__init__(what)
        self.what, self.updates, self.ppl_before = what, updates, ppl_before
        self.logprobs: list[float] | None = None  # the first forward's (UpdateResult.logprobs), if it was finite


def perplexity(loss: torch.Tensor, updates: int, ppl_before: float | None = None) -> float:
    value = loss.item()
    if not math.isfinite(value) or value > MAX_LOSS:
        raise Diverged(f"the loss is {value:g} nats per token", updates, ppl_before)
    return math.exp(value)


@dataclass
class UpdateResult:
    updates: int
    ppl_before: float
    ppl_after: float
    seconds: float
    # each reference token's log-probability (nats, </s> included) before the pair's first update, under θ_{i−1}:
    # the forward that measured ppl_before gives them (CXMI, docs/design.md §4); None where that forward diverged
    # (a later divergence keeps them: `Diverged.logprobs`)
    logprobs: list[float] | None = None
    # seconds of each adaptation step: an SGD step (backward, clipping, the method's hooks, the step, the forward
    # that measures the new perplexity), or a method's `after_pair` adaptation (memory's store)
    step_s: list[float] = field(default_factory=list)


def clip_per_tensor_(grads: list[torch.Tensor], max_norm: float) -> list[torch.Tensor]:
    """Rescale every gradient tensor to L2 norm ≤ max_norm independently (not one global norm); returns the
    norms before clipping. The factors are computed in one vector operation and only tensors above the bound
    are multiplied (a factor of 1.0 would leave them unchanged anyway: the same values, one pass over the
    gradients fewer)."""
    if not grads:
        return []
    norms = torch._foreach_norm(grads)
    factors = torch.clamp(max_norm / (torch.stack(norms) + 1e-6), max=1.0)
    over = (factors < 1.0).nonzero().flatten().tolist()
    if over:
        torch._foreach_mul_([grads[i] for i in over], list(factors[over].unbind()))
    return norms


class Updater:
    def __init__(self, model: Model, method: Method, clip_norm: float = _RULE["clip_norm"],
                 ppl_threshold: float = _RULE["ppl_threshold"], min_updates: int = _RULE["min_updates"],
                 max_updates: int = _RULE["max_updates"], on_divergence: str = _RULE["on_divergence"],
                 dtype: str = _RULE["dtype"]):
        self.model, self.method = model, method
        # bfloat16: the update's forwards (and so its backwards) under autocast; parameters, gradients and the
        # SGD step stay float32, so small updates are not rounded away. Translation is not affected.
        self.autocast = dict(device_type=str(model.device).split(":")[0], dtype=torch.bfloat16,
                             enabled=dtype == "bfloat16")
        trainable = method.parameters()
        ids = {id(p) for p in trainable.values()}
        for p in model.named_parameters().values():  # frozen tensors get no gradient: backward skips them
            p.requires_grad_(id(p) in ids)
        named = {n: p for n, p in trainable.items() if p.requires_grad}
        self.names, self.params = list(named), list(named.values())
        rates = method.learning_rates()  # per-tensor learning rates, e.g. lasso's second bias at 1.0
        groups: dict[float, list[torch.nn.Parameter]] = {}
        for name, p in named.items():
            groups.setdefault(float(rates.get(name, method.lr)), []).append(p)
        # foreach: one call for all tensors instead of one per tensor (the same `add_` on each)
        self.optimizer = (torch.optim.SGD([{"params": ps, "lr": lr} for lr, ps in groups.items()], lr=method.lr,
                                          foreach=True) if self.params else None)
        self.clip_norm, self.ppl_threshold = clip_norm, ppl_threshold
        self.min_updates, self.max_updates = min_updates, max_updates
        self.on_divergence = on_divergence  # what the loop does with `Diverged` (adaptsim.loop.simulation)

    def _nll(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """The pair's per-token negative log-likelihoods; their mean is the loss."""
        with torch.autocast(**self.autocast):
            return self.method.pair_nll(batch)

    @torch.no_grad()
    def logprobs(self, batch: dict[str, torch.Tensor]) -> list[float]:
        """The pair's per-token log-probabilities under θ as it is, computed as the update's first forward computes
        them (the method's `start_pair`, then its `pair_nll`, in the update's dtype), nothing adapted. (`bias` scores
        the output layer's inputs that `start_pair` keeps: without it, the last pair's.)"""
        with torch.autocast(**self.autocast):
            if self.optimizer is not None and self.method.gradient_steps:
                self.method.start_pair(batch)
        return logprobs(self._nll(batch))

    def __call__(self, batch: dict[str, torch.Tensor], scale: float = 1.0, steps: bool | None = None,
                 until: tuple[float, int] | None = None) -> UpdateResult:
        """The rule on one pair; `scale` multiplies every learning rate for this pair (tm: by the match's score),
        `steps=False` only measures it (default: whether the method takes gradient steps), `until` replaces
        (ppl_threshold, max_updates) for this pair (tm's moment of adaptation)."""
        start = time.perf_counter()
        steps = self.method.gradient_steps if steps is None else steps
        # nothing to train: the pair's perplexity (and a gradient-free adaptation)
        if self.optimizer is None or not steps:
            with torch.no_grad():
                nll = self._nll(batch)
                ppl = perplexity(nll.mean(), 0)
                ppl_after, step_s = self._after_pair(batch, ppl, 0, ppl)
            return UpdateResult(0, ppl, ppl_after, time.perf_counter() - start, logprobs(nll), step_s)
        with torch.autocast(**self.autocast):
            self.method.start_pair(batch)
        nll = self._nll(batch)
        loss = nll.mean()
        ppl_before = ppl = perplexity(loss, 0)
        before = logprobs(nll)
        rates = [group["lr"] for group in self.optimizer.param_groups]
        for group in self.optimizer.param_groups:
            group["lr"] *= scale
        try:
            updates, ppl, step_s = self._updates(batch, loss, ppl, ppl_before,
                                                 *(until or (self.ppl_threshold, self.max_updates)))
        except Diverged as e:
            e.logprobs = before
            raise
        finally:
            for group, lr in zip(self.optimizer.param_groups, rates):
                group["lr"] = lr
        self.optimizer.zero_grad(set_to_none=True)
        with torch.no_grad():
            ppl, more = self._after_pair(batch, ppl, updates, ppl_before)
        return UpdateResult(updates, ppl_before, ppl, time.perf_counter() - start, before, step_s + more)

    def _updates(self, batch, loss: torch.Tensor, ppl: float, ppl_before: float, ppl_threshold: float,
                 max_updates: int) -> tuple[int, float, list[float]]:
        """The SGD steps of one pair, until the stopping rule: (updates, the last perplexity, each step's seconds)."""
        updates = 0
        step_s = []
        while updates < max_updates and (updates < self.min_updates or ppl > ppl_threshold):
            step_start = time.perf_counter()
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            with_grad = [(n, p.grad) for n, p in zip(self.names, self.params) if p.grad is not None]
            norms = clip_per_tensor_([g for _, g in with_grad], self.clip_norm)
            if norms and not torch.stack(norms).isfinite().all():
                bad = next(n for (n, _), g in zip(with_grad, norms) if not g.isfinite())
                raise Diverged(f"the gradient of {bad} is not finite", updates, ppl_before)
            self.method.before_step(dict(zip((n for n, _ in with_grad), norms)))
            self.optimizer.step()
            self.method.after_step()
            updates += 1
            last = updates == max_updates
            with torch.set_grad_enabled(not last):  # the last forward only measures perplexity
                loss = self._nll(batch).mean()
            ppl = perplexity(loss, updates, ppl_before)
            step_s.append(time.perf_counter() - step_start)
        return updates, ppl, step_s

    def _after_pair(self, batch, ppl: float, updates: int = 0, ppl_before: float | None = None):
        """The method's `after_pair`; if it adapted, the pair's perplexity measured again, and its time."""
        step_start = time.perf_counter()
        if not self.method.after_pair(batch):
            return ppl, []
        seconds = time.perf_counter() - step_start  # the adaptation itself, not the measurement after it
        return perplexity(self._nll(batch).mean(), updates, ppl_before), [seconds]


def logprobs(nll: torch.Tensor) -> list[float]:
    """Per-token log-probabilities as recorded in steps.jsonl: 1e-5 nats is far below any difference CXMI
    reports, and identical computations round identically (a run against itself scores exactly 0)."""
    return [round(-v, 5) for v in nll.detach().float().tolist()]


class Snapshot:
    """θ0 of the trainable tensors, restored in place (no model copies) at each document start."""

    def __init__(self, params: dict[str, torch.nn.Parameter]):
        self.params = params
        self.initial = {name: p.detach().clone() for name, p in params.items()}

    @torch.no_grad()
    def restore(self) -> None:
        for name, p in self.params.items():
            p.copy_(self.initial[name])

    @torch.no_grad()
    def changed(self) -> int:
        """How many scalar parameters differ from θ0."""
        return int(sum((p != self.initial[n]).sum().item() for n, p in self.params.items()))
