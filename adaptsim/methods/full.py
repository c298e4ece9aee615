"""`full`: fine-tune every learned parameter (paper §4)."""

from adaptsim.methods.base import Method


class Full(Method):
    def parameters(self):
        return self.model.named_parameters()
