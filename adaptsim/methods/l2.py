"""`l2`: full fine-tuning with a penalty pulling θ toward θ0 (not in the paper; L2-SP, Li, Grandvalet &
Davoine 2018, "Explicit inductive bias for transfer learning with convolutional networks").

Every learned parameter is trained, as in `full`, on the pair's loss plus (α/2)·‖θ − θ0‖², θ0 being the
loop's snapshot (the base model; under `reset: never` the penalty pulls toward the base model over the whole
stream). It tests directly whether forgetting drives the R0 loss the paper reports for `full`: with α > 0 the
adapted model cannot drift far from θ0, so if `full` loses zero-shot recall by forgetting, `l2` should keep
more of R0 while still raising R1.

Choices the source leaves open (L2-SP is a batch-training regulariser; the paper's rule is one pair, SGD,
tensor-wise clipping, a perplexity stop):

- The penalty's gradient α(θ − θ0) is added *after* tensor-wise clipping (in `before_step`), not to the loss:
  clipping bounds the pair's gradient exactly as the paper's rule does for `full`, and the pull toward θ0 is
  not clipped away. One step is θ ← θ − γ·clip(∇CE) − γα(θ − θ0): besides the pair's update every offset
  shrinks by the factor (1 − γα), i.e. decoupled weight decay toward θ0 rather than toward 0. With it added
  before clipping, large offsets would be hidden by the clip of a pair with a large gradient.
- The perplexity the update rule stops on is the pair's alone; the penalty is not part of it (the rule asks
  whether the pair has been learnt, not how far θ moved).
- A tensor without a gradient for this pair (none in a Marian model under `full`) still decays: its gradient
  is set to α(θ − θ0).
- α (`method.alpha`): no source gives it for this setting; γα is the fraction of the offset removed per step.
  See configs/method/l2.yaml for the value and how it was chosen. γα must be < 1 (at ≥ 1 a step would jump
  over θ0).
- EWC (Kirkpatrick et al. 2017: a per-parameter weight F_i, the diagonal Fisher of the base model's task) is
  not implemented: the Fisher must be estimated on data of the base model's training distribution, which a
  run does not have (the documents being translated must not be used: their references are revealed one by
  one), and a plain L2 already answers the question asked here (does pulling toward θ0 keep R0?).

Cost: like `full` (two fused adds per step); the stored state is the changed offsets, all of them.
"""

from __future__ import annotations

import torch

from adaptsim.errors import UserError
from adaptsim.methods.full import Full
from adaptsim.rules import Number


class L2(Full):
    settings = {**Full.settings, "alpha": Number(at_least=0)}

    def __init__(self, model, *, alpha: float, **common):
        super().__init__(model, **common)
        if not self.lr * alpha < 1:  # (relates two settings)
            raise UserError(f"method.alpha={alpha}: expected a number α ≥ 0 with method.lr · α < 1 "
                            f"(lr {self.lr:g}); at γα ≥ 1 a step jumps over θ0")
        self.alpha = float(alpha)
        self._params = self.model.named_parameters()
        self._theta0: dict[str, torch.Tensor] | None = None

    def parameters(self):
        return dict(self._params)

    def start_document(self, theta0):
        self._theta0 = theta0

    @torch.no_grad()
    def before_step(self, grad_norms):
        if self._theta0 is None:
            raise RuntimeError("l2: start_document(theta0) was not called")
        if self.alpha == 0:
            return
        trained = [(p, self._theta0[n]) for n, p in self._params.items() if p.requires_grad]
        for p, _ in trained:
            if p.grad is None:
                p.grad = torch.zeros_like(p)
        grads, params, theta0 = [p.grad for p, _ in trained], [p for p, _ in trained], [p0 for _, p0 in trained]
        torch._foreach_add_(grads, params, alpha=self.alpha)  # + α(θ − θ0), in place, no copy of the model
        torch._foreach_add_(grads, theta0, alpha=-self.alpha)

    def info(self):
        return {"alpha": self.alpha}
