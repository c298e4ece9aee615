"""Adaptation methods. A method is one file here plus one `configs/method/<name>.yaml` whose `_target_`
names its class and whose other keys are its constructor's keyword arguments (their one home); `build`
instantiates it. See `base.Method` for the interface."""

from __future__ import annotations

import inspect

from hydra.errors import InstantiationException
from hydra.utils import get_class, instantiate

from adaptsim.errors import UserError
from adaptsim.methods.base import Method

INSTANTIATION = ("_target_", "_recursive_")  # Hydra's keys of a method config, not the class's (icl's inner method:
# `_recursive_: false`, so that it is built with the model, by `build`)


def method_class(cfg) -> type[Method]:
    """The class `cfg._target_` names, or a UserError naming the setting."""
    try:
        return get_class(cfg._target_)
    except Exception as e:
        raise UserError(f"method._target_={cfg.get('_target_')}: cannot import the method class ({e})") from None


def check_method(cfg) -> type[Method]:
    """The method's class, once its settings are checked against what the class declares (`Method.settings`:
    types and allowed values) and takes (its constructor's keywords): a setting the class does not take, or one
    it needs and the config lacks, is one line naming the key, not a TypeError from deep inside Hydra."""
    cls = method_class(cfg)
    try:
        inspect.signature(cls).bind(None, **{k: None for k in cfg if k not in INSTANTIATION})
    except TypeError as e:
        raise UserError(f"method={cfg.get('name')}: {e} (settings come from configs/method/*.yaml)") from None
    for key, rule in cls.settings.items():
        rule.check(f"method.{key}", cfg.get(key))
    return cls


def build(cfg, model) -> Method:
    """The method `cfg` describes (`check_method`, then `hydra.utils.instantiate(cfg, model=model)`), a
    method's own UserError (a rule that needs the model) passed on as it is."""
    check_method(cfg)
    try:
        return instantiate(cfg, model=model, _convert_="all")
    except InstantiationException as e:
        if isinstance(e.__cause__, UserError):
            raise e.__cause__ from None
        raise
