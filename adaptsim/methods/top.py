"""`top`: train only the topmost encoder layer and the topmost decoder layer, all of their tensors (paper §4).

Embeddings and every other layer stay frozen. `layers` (default 1, the paper's setting) generalises it to
the top N layers of each stack. A decoder-only model has one stack: its top N blocks are trained.
"""

from adaptsim.errors import UserError
from adaptsim.methods.base import Method
from adaptsim.rules import Integer


class Top(Method):
    settings = {**Method.settings, "layers": Integer(1)}

    def __init__(self, model, *, layers: int, **common):
        super().__init__(model, **common)
        n = layers
        arch = model.arch
        if not 1 <= n <= min(len(stack) for stack in (arch.encoder_layers, arch.decoder_layers) if stack):
            raise UserError(f"method.layers={n}: the model has {len(arch.encoder_layers)} encoder and "
                            f"{len(arch.decoder_layers)} decoder layers")
        ids = {id(p) for layer in arch.encoder_layers[-n:] + arch.decoder_layers[-n:] for p in layer.parameters()}
        self._params = {name: p for name, p in model.named_parameters().items() if id(p) in ids}

    def parameters(self):
        return dict(self._params)

    def info(self):
        return {"tensors": len(self._params)}
