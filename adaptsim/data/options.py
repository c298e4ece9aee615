"""Dataset options as a plain dict: the config node resolved, with configs/dataset/_common.yaml as defaults.

The defaults come from that one YAML file so Hydra overrides and the readers can never disagree, and
configs written by others (without `_common` in their defaults) still get every option.
"""

from __future__ import annotations

from functools import lru_cache

from omegaconf import DictConfig, OmegaConf

from adaptsim import CONFIG_DIR
from adaptsim.errors import UserError
from adaptsim.rules import Choice, Integer, Rule

# the type and allowed values of the options every format has (adaptsim/rules.py); a format's own are its reader's
RULES: dict[str, Rule] = {
    "on_empty": Choice(("error", "skip")), "on_too_long": Choice(("error", "skip")),
    "on_duplicate_id": Choice(("error", "keep")), "group_by": Choice((None, "topic")),
    "split_every": Integer(1, null="not split"), "min_segments": Integer(1, null="no minimum"),
    "max_documents": Integer(1, null="all"), "max_segments": Integer(1, null="all"),
}


@lru_cache(maxsize=1)
def common_defaults() -> dict:
    return OmegaConf.to_container(OmegaConf.load(CONFIG_DIR / "dataset" / "_common.yaml"))


def resolve(cfg) -> dict:
    """The dataset node as a dict with defaults filled in; a bad choice is a one-line UserError."""
    if isinstance(cfg, DictConfig):
        try:
            cfg = OmegaConf.to_container(cfg, resolve=True)
        except Exception as e:  # InterpolationResolutionError & co.: a setting the user can fix
            raise UserError(f"dataset config: {' '.join(str(e).split())}") from None
    opts = {**common_defaults(), **dict(cfg)}
    if opts.get("format") in (None, "???"):
        raise UserError("dataset.format is not set")
    for key, rule in RULES.items():
        rule.check(f"dataset.{key}", opts.get(key))
    if isinstance(opts.get("documents"), str):
        opts["documents"] = [opts["documents"]]
    return opts


def need(opts: dict, key: str):
    """A format-specific option that must be set."""
    value = opts.get(key)
    if value in (None, "???", ""):
        raise UserError(f"dataset.{key} must be set for format {opts['format']!r}")
    return value
