"""Adaptation methods. A method is one file here plus one `configs/method/<name>.yaml` whose `_target_`
names its class; `build` instantiates it. See `base.Method` for the interface."""

from __future__ import annotations

from hydra.utils import get_class

from adaptsim.errors import UserError
from adaptsim.methods.base import Method


def build(cfg, model) -> Method:
    """Instantiate the method class named by `cfg._target_` with the method config and the model."""
    try:
        cls = get_class(cfg._target_)
    except Exception as e:
        raise UserError(f"method._target_={cfg.get('_target_')}: cannot import the method class ({e})") from None
    return cls(cfg, model)
