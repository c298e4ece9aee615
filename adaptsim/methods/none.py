"""`none`: the baseline, the same loop without adaptation."""

from adaptsim.methods.base import Method
from adaptsim.rules import Number


class NoAdaptation(Method):
    gradient_steps = False
    settings = {**Method.settings, "lr": Number()}  # not used
