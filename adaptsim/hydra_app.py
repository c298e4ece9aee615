"""Run a task function under Hydra with adaptsim's configs, and reject bad overrides up front.

Hydra itself reports a bad override with exit code 1 and a hint about HYDRA_FULL_ERROR; we check the
overrides first (composing once per sweep value) so the user gets a short usage line and exit code 2.
"""

from __future__ import annotations

import functools
import os
import sys
from typing import Callable

import hydra
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser

from adaptsim import CONFIG_DIR
from adaptsim.errors import UserError

# Hydra's own flags that take a value as the next argument.
_FLAGS_WITH_VALUE = {"--cfg", "-c", "--package", "-p", "--config-path", "-cp", "--config-name", "-cn",
                     "--config-dir", "-cd", "--experimental-rerun"}
_INFO_VALUES = {"all", "config", "defaults", "defaults-tree", "plugins", "searchpath"}


def split_overrides(argv: list[str]) -> list[str]:
    """The key=value arguments of a Hydra command line (flags and their values left out)."""
    out, skip = [], False
    for i, arg in enumerate(argv):
        if skip:
            skip = False
        elif arg.startswith("-"):
            skip = arg in _FLAGS_WITH_VALUE or (arg in ("--info", "-i") and i + 1 < len(argv)
                                                 and argv[i + 1] in _INFO_VALUES)
        else:
            out.append(arg)
    return out


def check_overrides(config_name: str, argv: list[str]) -> str | None:
    """Return an error message if the overrides do not compose, else None."""
    try:
        parsed = OverridesParser.create().parse_overrides(split_overrides(argv))
    except Exception as e:  # OverrideParseException: bad syntax
        return str(e).splitlines()[0]
    base, sweeps = [], []
    for o in parsed:
        key = o.get_key_element()
        if o.is_sweep_override():
            values = list(o.sweep_string_iterator())
            base.append(f"{key}={values[0]}")
            sweeps.append((len(base) - 1, key, values[1:]))
        else:
            base.append(o.input_line)
    variants = [base] + [base[:i] + [f"{k}={v}"] + base[i + 1:] for i, k, vs in sweeps for v in vs]
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
            for overrides in variants:
                compose(config_name, overrides=overrides, return_hydra_config=True)
    except Exception as e:  # ConfigCompositionException, MissingConfigException, …
        msg = " ".join(str(e).split())
        return msg.split(" Config search path")[0][:400]
    finally:
        GlobalHydra.instance().clear()
    return None


def launch(task: Callable, config_name: str, argv: list[str], command: str) -> int:
    """Run `task(cfg)` as a Hydra app (single run or `-m` multirun) with `argv` as its command line.

    A job's UserError is printed as one line, not Hydra's traceback, and the other jobs of a sweep go on.
    Returns the exit code: 1 if any job in this process failed so. In a parallel launcher's worker process
    (joblib, submitit) the error is raised again after printing: that is how such a launcher learns of it.
    """
    error = check_overrides(config_name, argv)
    if error:
        print(f"usage: adaptsim {command} [-m] [key=value …]   (--help lists config groups)", file=sys.stderr)
        print(f"adaptsim {command}: error: {error}", file=sys.stderr)
        sys.exit(2)
    failures: list[str] = []
    main_pid = os.getpid()

    @functools.wraps(task)
    def job(cfg):
        try:
            return task(cfg)
        except UserError as e:
            print(f"adaptsim {command}: error: {e}", file=sys.stderr)
            failures.append(str(e))
            if os.getpid() != main_pid:
                raise

    app = hydra.main(config_path=str(CONFIG_DIR), config_name=config_name, version_base="1.3")(job)
    saved = sys.argv
    sys.argv = [f"adaptsim {command}", *argv]
    try:
        app()
    finally:
        sys.argv = saved
    return 1 if failures else 0
