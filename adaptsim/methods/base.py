"""The interface between the simulation loop and an adaptation method.

The loop owns the paper's update rule (adaptsim/loop/update.py: SGD, tensor-wise clipping, the perplexity
stopping rule) and the reset to θ0. A method only says *what* is trained and may act around each SGD
step (e.g. lasso's proximal step, or restricting embedding rows):

    method.parameters()          -> the trainable tensors, by name; the loop snapshots them as θ0
    method.start_document(theta0) -> after the loop restored θ0; `theta0` is the loop's read-only copy
                                    of θ0 by name, so methods working on offsets θ − θ0 keep no copy
    method.start_pair(batch)     -> once per pair, before its first update (e.g. which tokens it has)
    method.pair_nll(batch)       -> the pair's per-token negative log-likelihoods, whose mean is the update
                                    rule's loss (default: the model's forward; a method that freezes most of
                                    the network may compute them more cheaply, with the same values; memory
                                    from its interpolated distribution)
    method.learning_rates()      -> {name: γ} for tensors trained at another rate than method.lr
    method.before_step(grad_norms) -> after backward and clipping, before the SGD step (edit gradients);
                                    `grad_norms`: each trained tensor's gradient norm *before* clipping
    method.after_step()          -> after the SGD step (edit parameters)
    method.after_pair(batch)     -> once per pair, after its updates: a method that adapts without gradient
                                    steps does it here (memory stores the pair's decoder states) and returns
                                    True, so the update rule measures the pair's perplexity again
    method.check_stream(segments) -> before the run: refuse (UserError) a stream the method must not be tested on
                                    (fixed: the held-out data its list was chosen on)
    method.state_bytes(offset_bytes) -> bytes to store one document's adapted state; `offset_bytes` is the size
                                    of the trainable tensors' offsets θ − θ0 that changed (adaptsim/loop/offsets.py),
                                    the default; a method with state outside its parameters adds it
    method.info()                -> method-specific figures for summary.json

A method that keeps the post-edits and retrieves from them (tm, icl) is also a `Retrieval`
(adaptsim/methods/retrieval.py: `revealed`, `matches`, `context`).
"""

from __future__ import annotations

import torch
from torch import nn

from adaptsim.rules import Number, Rule, Text


class Method:
    gradient_steps = True  # False: adapts without SGD steps (or not at all), so its lr is not used
    # the type and allowed values of each setting (adaptsim/rules.py); a subclass adds its own
    settings: dict[str, Rule] = {"name": Text(), "lr": Number(above=0)}

    def __init__(self, model, *, name: str, lr: float):
        self.model = model
        self.name = name
        self.lr = float(lr)

    def parameters(self) -> dict[str, nn.Parameter]:
        return {}

    def start_document(self, theta0: dict[str, torch.Tensor]) -> None:
        pass

    def start_pair(self, batch: dict[str, torch.Tensor]) -> None:
        pass

    def pair_nll(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        return self.model.token_nll(batch)

    def learning_rates(self) -> dict[str, float]:
        return {}

    def before_step(self, grad_norms: dict[str, torch.Tensor]) -> None:
        pass

    def after_step(self) -> None:
        pass

    def after_pair(self, batch: dict[str, torch.Tensor]) -> bool:
        return False

    def check_stream(self, segments) -> None:
        pass

    def state_bytes(self, offset_bytes: int) -> int:
        return offset_bytes

    def info(self) -> dict:
        return {}
