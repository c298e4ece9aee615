"""The interface between the simulation loop and an adaptation method.

The loop owns the paper's update rule (adaptsim/update.py: SGD, tensor-wise clipping, the perplexity
stopping rule) and the reset to θ0. A method only says *what* is trained and may act around each SGD
step (e.g. lasso's proximal step, or restricting embedding rows):

    method.parameters()     -> the trainable tensors, by name; the loop snapshots them as θ0
    method.start_document() -> after the loop restored θ0 (per-document state, e.g. counters)
    method.before_step()    -> after backward and clipping, before the SGD step (edit gradients)
    method.after_step()     -> after the SGD step (edit parameters)
    method.info()           -> method-specific figures for summary.json
"""

from __future__ import annotations

from torch import nn


class Method:
    def __init__(self, cfg, model):
        self.cfg = cfg
        self.model = model
        self.name: str = cfg.name
        self.lr: float = float(cfg.lr)

    def parameters(self) -> dict[str, nn.Parameter]:
        return {}

    def start_document(self) -> None:
        pass

    def before_step(self) -> None:
        pass

    def after_step(self) -> None:
        pass

    def info(self) -> dict:
        return {}
