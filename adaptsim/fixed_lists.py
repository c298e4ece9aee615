"""Where `fixed`'s tensor lists are (adaptsim/methods/fixed.py reads them, `select-fixed` writes them): the ones a
checkout ships and versions in configs/fixed_lists, a user's in ~/.config/adaptsim/fixed_lists where adaptsim is
installed. Apart from the method, which needs torch: a resume fingerprints a list (adaptsim/fingerprints.py) without it.
"""

from __future__ import annotations

import os
from pathlib import Path

from adaptsim import CONFIG_DIR, PROJECT_ROOT

LISTS = CONFIG_DIR / "fixed_lists"  # the lists the project ships (and select-fixed writes, in a checkout)


def user_lists() -> Path:
    """Where select-fixed writes lists when adaptsim is installed (not a checkout): never into site-packages."""
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "adaptsim" / "fixed_lists"


def in_checkout() -> bool:
    return (PROJECT_ROOT / "pyproject.toml").is_file()


def list_path(name: str, writing: bool = False) -> Path:
    """Where the list of model `name` is read from (the user's lists first, then the shipped ones) or written to
    (a checkout's configs/fixed_lists, where it is versioned; else the user's), or `name` itself, if it is a path
    to a YAML file."""
    if str(name).endswith((".yaml", ".yml")):
        return Path(name)
    if writing:
        return (LISTS if in_checkout() else user_lists()) / f"{name}.yaml"
    user = user_lists() / f"{name}.yaml"
    return user if user.is_file() else LISTS / f"{name}.yaml"
