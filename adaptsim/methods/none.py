"""`none`: the baseline, the same loop without adaptation."""

from adaptsim.methods.base import Method


class NoAdaptation(Method):
    gradient_steps = False
