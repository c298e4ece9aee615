"""Check the composed configuration of `run`, `bench` and `select-fixed` before any work is done.

A wrong setting must not silently change the method (`reset=documents` once behaved as `never`,
`update.clip_norm=-1` turned SGD into gradient ascent), and must not surface after minutes of loading
as a traceback. Every rule here stops with one line naming the key, the value and what is allowed.

This module holds rules only, never defaults: the defaults stay in configs/ (their one home), and
which keys exist is read from those same YAML files.
"""

from __future__ import annotations

import logging
import math
import re
from functools import lru_cache

from omegaconf import DictConfig, OmegaConf

from adaptsim import CONFIG_DIR
from adaptsim.decode import SEARCHES
from adaptsim.errors import UserError

log = logging.getLogger("adaptsim")

# Below this many new tokens hypotheses are cut off (or empty); allowed, but said.
SHORT_MAX_LENGTH = 8
_DEVICE = re.compile(r"^(cpu|cuda(:\d+)?)$")


def _show(value) -> str:
    return "null" if value is None else repr(value) if isinstance(value, str) else str(value)


def _bad(key: str, value, allowed: str) -> UserError:
    return UserError(f"{key}={_show(value)}: {allowed}")


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def integer(cfg, key: str, minimum: int):
    value = OmegaConf.select(cfg, key)
    if not _is_int(value) or value < minimum:
        raise _bad(key, value, f"must be an integer ≥ {minimum}")
    return value


def positive(cfg, key: str):
    """A number > 0 (NaN is not > 0, so it is refused too)."""
    value = OmegaConf.select(cfg, key)
    if not _is_number(value) or not value > 0:
        raise _bad(key, value, "must be a number > 0")
    return value


def choice(cfg, key: str, allowed: tuple):
    value = OmegaConf.select(cfg, key)
    if value not in allowed:
        raise _bad(key, value, "choose " + " | ".join(map(_show, allowed)))
    return value


def boolean(cfg, key: str):
    value = OmegaConf.select(cfg, key)
    if not isinstance(value, bool):
        raise _bad(key, value, "must be true or false")
    return value


@lru_cache(maxsize=None)
def known_keys(config_name: str) -> dict[str, set | None]:
    """Top-level keys of a primary config, following its defaults list (bench → run): key -> its sub-keys
    when the YAML spells them out as a fixed block (decode, update), None for anything else.
    Config groups (model, dataset, method, metrics, experiment, …) are known keys too."""
    keys: dict[str, set | None] = {p.name: None for p in CONFIG_DIR.iterdir() if p.is_dir()}
    node = OmegaConf.to_container(OmegaConf.load(CONFIG_DIR / f"{config_name}.yaml"), resolve=False)
    for entry in node.pop("defaults", []):
        if isinstance(entry, str) and entry != "_self_" and (CONFIG_DIR / f"{entry}.yaml").is_file():
            keys.update(known_keys(entry))
    node.pop("hydra", None)
    for key, value in node.items():
        keys[key] = set(value) if key in ("decode", "update") and isinstance(value, dict) else None
    return keys


def _config_name() -> str:
    from hydra.core.hydra_config import HydraConfig

    return HydraConfig.get().job.config_name if HydraConfig.initialized() else "run"


def check_device(device) -> None:
    """cpu, cuda or cuda:N, and a GPU that exists: otherwise torch fails later with a long traceback."""
    if not isinstance(device, str) or not _DEVICE.match(device):
        raise _bad("device", device, "choose cpu | cuda | cuda:N")
    if device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            build = "a CPU-only build of torch" if torch.version.cuda is None else "no usable GPU found"
            raise _bad("device", device, f"CUDA is not available here ({build}, torch {torch.__version__}); "
                                         "use device=cpu")
        index = int(device.split(":")[1]) if ":" in device else 0
        if index >= torch.cuda.device_count():
            raise _bad("device", device, f"this machine has {torch.cuda.device_count()} CUDA device(s): "
                                         f"cuda:0 … cuda:{torch.cuda.device_count() - 1}")


def check_threads(threads) -> None:
    if threads is not None and (not _is_int(threads) or threads < 1):
        raise _bad("threads", threads, "must be null (torch's default) or an integer ≥ 1")


def validate(cfg: DictConfig, config_name: str | None = None) -> None:
    """Raise a one-line UserError for the first invalid setting; warn about legal but suspicious ones."""
    known = known_keys(config_name or _config_name())
    for key in cfg:
        if key not in known:
            raise _bad(key, cfg.get(key), "unknown setting (added with +?); known: "
                       + ", ".join(sorted(k for k in known if not k.startswith("_"))))
    for block in ("decode", "update"):
        for key in cfg[block]:
            if known[block] is not None and key not in known[block]:
                raise _bad(f"{block}.{key}", cfg[block].get(key), f"unknown setting; {block}.* are: "
                           + ", ".join(sorted(known[block])))

    integer(cfg, "seed", 0)
    check_device(cfg.device)
    check_threads(cfg.threads)
    choice(cfg, "reset", ("document", "never"))
    for key in ("progress", "save_offsets", "resume", "malloc_tuning"):
        if key in cfg:
            boolean(cfg, key)

    integer(cfg, "decode.beam_size", 1)
    choice(cfg, "decode.search", SEARCHES)
    max_length = integer(cfg, "decode.max_length", 1)
    if max_length < SHORT_MAX_LENGTH:
        log.warning("decode.max_length=%d: hypotheses are cut off after %d tokens (often empty or truncated)",
                    max_length, max_length)
    if not _is_number(cfg.decode.length_penalty) or not math.isfinite(cfg.decode.length_penalty):
        raise _bad("decode.length_penalty", cfg.decode.length_penalty, "must be a finite number")

    positive(cfg, "update.clip_norm")
    positive(cfg, "update.ppl_threshold")
    if cfg["update"].ppl_threshold < 1:
        raise _bad("update.ppl_threshold", cfg["update"].ppl_threshold, "must be ≥ 1 (a perplexity is never below 1)")
    low = integer(cfg, "update.min_updates", 0)
    high = integer(cfg, "update.max_updates", 1)
    if low > high:
        raise _bad("update.min_updates", low, f"must be ≤ update.max_updates={high}")
    choice(cfg, "update.on_divergence", ("stop", "rollback"))
    choice(cfg, "update.dtype", ("float32", "bfloat16"))

    lr = cfg.method.get("lr")
    from adaptsim.methods import method_class

    if not method_class(cfg.method).gradient_steps:
        if not _is_number(lr):
            raise _bad("method.lr", lr, "must be a number")
    else:
        positive(cfg, "method.lr")

    from adaptsim.metrics import SCOPES
    from adaptsim.metrics.sacre import METRICS
    from adaptsim.metrics.words import CASES

    integer(cfg, "metrics.k_max", 1)
    choice(cfg, "metrics.scope", (None, *SCOPES))  # null: follow `reset`
    choice(cfg, "metrics.case", CASES)
    wanted = cfg.metrics.get("sacrebleu")
    if not isinstance(wanted, (list, tuple)) and not OmegaConf.is_list(wanted) or not set(wanted) <= set(METRICS):
        raise _bad("metrics.sacrebleu", wanted, "a list of " + ", ".join(METRICS))
