"""`bias`: train only a second bias vector on the output logits (paper §4, after Michel & Neubig 2018).

The vector has the size of the target vocabulary and starts at zero, so the adapted model starts out
exactly as the base model; it is the only trained tensor and the loop's θ0 snapshot of it is zeros,
so every document starts again from zero. The paper trains it with γ = 1.0 (configs/method/bias.yaml).
"""

from adaptsim.methods.base import Method

OUTPUT_BIAS = "output_bias"  # its name among a method's parameters (not a parameter of the network)


class Bias(Method):
    def __init__(self, model, **common):
        super().__init__(model, **common)
        self.bias = model.add_output_bias()

    def parameters(self):
        return {OUTPUT_BIAS: self.bias}

    def info(self):
        return {"output_bias_size": self.bias.numel()}
