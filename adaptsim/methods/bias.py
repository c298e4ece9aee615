"""`bias`: train only a second bias vector on the output logits (paper §4, after Michel & Neubig 2018).

The vector has the size of the target vocabulary and starts at zero, so the adapted model starts out
exactly as the base model; it is the only trained tensor and the loop's θ0 snapshot of it is zeros,
so every document starts again from zero. The paper trains it with γ = 1.0 (configs/method/bias.yaml).

Speed: nothing below the output layer changes, so the decoder's last states for the pair are computed once
per pair (`start_pair`) and every update's loss is the output layer on them (`pair_nll`): the same values
as a full forward, without running the network up to four times per pair.
"""

from adaptsim.methods.base import Method

OUTPUT_BIAS = "output_bias"  # its name among a method's parameters (not a parameter of the network)


class Bias(Method):
    def __init__(self, model, **common):
        super().__init__(model, **common)
        self.bias = model.add_output_bias()

    def parameters(self):
        return {OUTPUT_BIAS: self.bias}

    def start_pair(self, batch):
        self._hidden = self.model.output_inputs(batch)

    def pair_nll(self, batch):
        return self.model.nll_from_output_inputs(self._hidden, batch["labels"])

    def info(self):
        return {"output_bias_size": self.bias.numel(), **bias_figures(self.bias)}


def bias_figures(bias) -> dict:
    """How far the second output bias has moved the logits at the end of the run (for bias and lasso, whose
    bias trains at a high rate over a whole stream under reset=never)."""
    bias = bias.detach()
    return {"output_bias_norm": float(bias.norm()), "output_bias_max": float(bias.abs().max())}
