"""Adaptation methods. A method is one file here plus one `configs/method/<name>.yaml` whose `_target_`
names its class and whose other keys are its constructor's keyword arguments (their one home); `build`
instantiates it. See `base.Method` for the interface."""

from __future__ import annotations

import inspect

from hydra.errors import InstantiationException
from hydra.utils import get_class, instantiate

from adaptsim.errors import UserError
from adaptsim.methods.base import Method


def method_class(cfg) -> type[Method]:
    """The class `cfg._target_` names, or a UserError naming the setting."""
    try:
        return get_class(cfg._target_)
    except Exception as e:
        raise UserError(f"method._target_={cfg.get('_target_')}: cannot import the method class ({e})") from None


def build(cfg, model) -> Method:
    """`hydra.utils.instantiate(cfg, model=model)`, with a setting the class does not take, or one it
    needs and the config lacks, reported as one line naming the key (not as a TypeError from deep inside
    Hydra), and a method's own UserError passed on as it is."""
    cls = method_class(cfg)
    settings = {k: None for k in cfg if k != "_target_"}
    try:
        inspect.signature(cls).bind(model, **settings)
    except TypeError as e:
        raise UserError(f"method={cfg.get('name')}: {e} (settings come from configs/method/*.yaml)") from None
    try:
        return instantiate(cfg, model=model, _convert_="all")
    except InstantiationException as e:
        if isinstance(e.__cause__, UserError):
            raise e.__cause__ from None
        raise
