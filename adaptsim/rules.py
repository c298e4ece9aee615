"""The type and allowed values of a setting, declared once: SETTINGS in adaptsim/loop/settings.py for the run's own
keys, each method's `settings` for its parameters. Defaults are not here: they live in configs/ (their one home).

A rule checks one value and refuses it with one line naming the key, the value and what is allowed
("update.clip_norm=-1: must be a number > 0"). Rules that relate two keys (min_updates ≤ max_updates) or
need the model (a layer count) stay with the code that knows both.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from omegaconf import OmegaConf

from adaptsim.errors import UserError


def show(value) -> str:
    """A value as a user would type it on the command line."""
    if OmegaConf.is_config(value):
        value = OmegaConf.to_container(value)
    return "null" if value is None else repr(value) if isinstance(value, str) else str(value)


def flatten(node, prefix: str = "", lists: bool = False) -> dict:
    """{dotted key: value} of nested settings (a config as plain dicts): what a message names and a comparison
    compares. An empty mapping holds no setting (it flattens to nothing, as a missing one); `lists`: a list's items
    too, by index (`model.files.0`)."""
    if isinstance(node, dict):
        items = node.items()
    elif lists and isinstance(node, (list, tuple)):
        items = enumerate(node)
    else:
        return {prefix: node}
    out = {}
    for k, v in items:
        out.update(flatten(v, f"{prefix}.{k}" if prefix else str(k), lists))
    return out


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class Rule:
    def ok(self, value) -> bool:
        raise NotImplementedError

    def allowed(self) -> str:
        raise NotImplementedError

    def check(self, key: str, value):
        """`value` if allowed, else a one-line UserError."""
        if not self.ok(value):
            raise UserError(f"{key}={show(value)}: {self.allowed()}")
        return value


@dataclass(frozen=True)
class Integer(Rule):
    minimum: int
    null: str | None = None  # what null means, where null is allowed
    maximum: int | None = None

    def ok(self, value) -> bool:
        return (value is None and self.null is not None) or (
            _is_int(value) and value >= self.minimum and (self.maximum is None or value <= self.maximum))

    def allowed(self) -> str:
        rule = f"an integer ≥ {self.minimum}" if self.maximum is None else \
            f"an integer from {self.minimum} to {self.maximum}"
        return f"must be null ({self.null}) or {rule}" if self.null else f"must be {rule}"


@dataclass(frozen=True)
class Number(Rule):
    """A finite number, optionally > above, ≥ at_least, ≤ at_most (NaN and ±inf are refused); `null` allowed where it
    means something."""
    above: float | None = None
    at_least: float | None = None
    at_most: float | None = None
    why: str = ""
    null: str | None = None

    def ok(self, value) -> bool:
        return (value is None and self.null is not None) or (_is_number(value) and math.isfinite(value)
                and (self.above is None or value > self.above)
                and (self.at_least is None or value >= self.at_least)
                and (self.at_most is None or value <= self.at_most))

    def allowed(self) -> str:
        if self.at_least is not None and self.at_most is not None:
            bound = f" in [{self.at_least:g}, {self.at_most:g}]"
        else:
            bound = "".join(f" {op} {v:g}" for op, v in ((">", self.above), ("≥", self.at_least), ("≤", self.at_most))
                            if v is not None)
        rule = f"a{' finite' if not bound else ''} number{bound}" + (f" ({self.why})" if self.why else "")
        return f"must be null ({self.null}) or {rule}" if self.null else f"must be {rule}"


@dataclass(frozen=True)
class Choice(Rule):
    values: tuple
    aliases: tuple = ()  # other spellings of the values, accepted but not listed (YAML's false for "off")

    def ok(self, value) -> bool:  # a bool is no number here: 0 is not false
        return any(value == v and isinstance(value, bool) == isinstance(v, bool) for v in self.values + self.aliases)

    def allowed(self) -> str:
        return "choose " + " | ".join(map(show, self.values))


@dataclass(frozen=True)
class Boolean(Rule):
    def ok(self, value) -> bool:
        return isinstance(value, bool)

    def allowed(self) -> str:
        return "must be true or false"


@dataclass(frozen=True)
class Text(Rule):
    def ok(self, value) -> bool:
        return isinstance(value, str) and value != ""

    def allowed(self) -> str:
        return "must be a non-empty string"


@dataclass(frozen=True)
class Strings(Rule):
    """A list of strings (non-empty unless `empty`), optionally from `values`; `null` allowed where it means
    something."""
    values: tuple | None = None
    null: str | None = None
    empty: bool = False

    def ok(self, value) -> bool:
        if value is None:
            return self.null is not None
        if not (OmegaConf.is_list(value) or isinstance(value, (list, tuple))):
            return False
        items = list(value)
        return (self.empty or bool(items)) and all(isinstance(v, str) and (self.values is None or v in self.values)
                                                   for v in items)

    def allowed(self) -> str:
        rule = ("a list of " if self.empty else "a non-empty list of ") + (", ".join(self.values) if self.values
                                                                          else "strings")
        return f"must be null ({self.null}) or {rule}" if self.null else f"must be {rule}"
