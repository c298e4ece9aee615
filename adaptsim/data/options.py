"""Dataset options as a plain dict: the config node resolved, with configs/dataset/_common.yaml as defaults.

The defaults come from that one YAML file so Hydra overrides and the readers can never disagree, and
configs written by others (without `_common` in their defaults) still get every option.
"""

from __future__ import annotations

from functools import lru_cache

from omegaconf import DictConfig, OmegaConf

from adaptsim import CONFIG_DIR
from adaptsim.errors import UserError

CHOICES = {
    "on_empty": ("error", "skip"),
    "on_too_long": ("error", "skip"),
    "on_duplicate_id": ("error", "keep"),
    "group_by": (None, "topic"),
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
    for key, allowed in CHOICES.items():
        if opts.get(key) not in allowed:
            shown = " | ".join("null" if a is None else a for a in allowed)
            raise UserError(f"dataset.{key}={opts.get(key)!r}: choose {shown}")
    for key in ("split_every", "min_segments", "max_documents", "max_segments"):
        value = opts.get(key)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
            raise UserError(f"dataset.{key}={value!r}: must be a positive integer or null")
    if isinstance(opts.get("documents"), str):
        opts["documents"] = [opts["documents"]]
    return opts


def need(opts: dict, key: str):
    """A format-specific option that must be set."""
    value = opts.get(key)
    if value in (None, "???", ""):
        raise UserError(f"dataset.{key} must be set for format {opts['format']!r}")
    return value
