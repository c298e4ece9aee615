"""Check the composed configuration of `run`, `bench`, `select-fixed` and `serve` before any work is done.

A wrong setting must not silently change the method (a misspelt `reset=documents` read as `never`,
`update.clip_norm=-1` turning SGD into gradient ascent), and must not surface after minutes of loading
as a traceback. Every rule here stops with one line naming the key, the value and what is allowed.

This module holds rules only, never defaults: the rules are declared (SETTINGS, adaptsim/rules.py; a
method declares its parameters' in its class), the defaults stay in configs/ (their one home), and which
keys exist is read from those same YAML files.
"""

from __future__ import annotations

import logging
import re
from functools import lru_cache

from omegaconf import DictConfig, OmegaConf

from adaptsim import CONFIG_DIR, allocator
from adaptsim.errors import UserError
from adaptsim.loop.interactive import COSTS as INTERACTIVE_COSTS
from adaptsim.loop.interactive import MODES as INTERACTIVE
from adaptsim.loop.interactive import check_language as check_interactive_language
from adaptsim.methods import check_method
from adaptsim.metrics import SCOPES
from adaptsim.metrics.sacre import AUTO, METRICS, TOKENIZERS, check_tokenize
from adaptsim.metrics.segmenters import check as check_words
from adaptsim.metrics.words import check_stopwords
from adaptsim.models.base import check_languages
from adaptsim.metrics.words import CASES
from adaptsim.models.decode import SEARCHES
from adaptsim.rules import Boolean, Choice, Integer, Number, Rule, Strings, Text, show

_ABSENT = object()

log = logging.getLogger("adaptsim")

# Below this many new tokens hypotheses are cut off (or empty); allowed, but said.
SHORT_MAX_LENGTH = 8
_DEVICE = re.compile(r"^(cpu|cuda(:\d+)?)$")
DTYPES = ("float32", "bfloat16")  # update.dtype, decode.dtype, train.dtype

# The type and allowed values of every setting of run/bench/select-fixed other than the method's (a method
# declares its own: Method.settings) and the dataset's (its reader checks it). Keys a config does not have
# (only bench has `segments`, only select-fixed `budget`) are skipped.
SETTINGS: dict[str, Rule] = {
    "seed": Integer(0),
    "threads": Integer(1, null="torch's default"),
    "reset": Choice(("document", "never")),
    "progress": Boolean(), "save_offsets": Boolean(), "compress": Boolean(), "resume": Boolean(),
    "malloc_tuning": Boolean(),
    "progress_every": Number(above=0), "allocator": Choice(allocator.CHOICES),
    "decode.beam_size": Integer(1),
    "decode.max_length": Integer(1),
    "decode.length_penalty": Number(),
    "decode.search": Choice(SEARCHES),
    "decode.dtype": Choice(DTYPES),
    "update.clip_norm": Number(above=0),
    "update.ppl_threshold": Number(at_least=1, why="a perplexity is never below 1"),
    "update.min_updates": Integer(0),
    "update.max_updates": Integer(1),
    "update.on_divergence": Choice(("stop", "rollback")),
    "update.dtype": Choice(DTYPES),
    "metrics.k_max": Integer(1),
    "metrics.probe.every": Integer(1), "metrics.probe.segments": Integer(1),
    "metrics.scope": Choice((None, *SCOPES)),  # null: follow `reset`
    "metrics.case": Choice(CASES),
    "metrics.sacrebleu": Strings(tuple(METRICS), empty=True),
    "metrics.tokenize": Choice((AUTO, *TOKENIZERS)),  # sacrebleu's BLEU tokenisers; auto: by metrics.lang
    "metrics.interactive": Choice(INTERACTIVE, aliases=(False,)),  # YAML reads a bare off as false
    "metrics.interactive_costs": Choice(INTERACTIVE_COSTS),
    "metrics.max_corrections": Integer(1),
    "segments": Integer(1),                                                        # bench
    "budget": Number(at_least=0), "budget_fraction": Number(at_least=0, at_most=1),  # select-fixed
    "prefixes": Integer(1),
    "serve.host": Text(), "serve.port": Integer(0, maximum=65535),                 # serve (port 0: a free one)
    "serve.max_chars": Integer(1), "serve.max_request_bytes": Integer(1024), "serve.translator": Integer(0),
    "serve.api": Choice((None, "modernmt")), "serve.finish": Boolean(),
}


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
        raise UserError(f"device={show(device)}: choose cpu | cuda | cuda:N")
    if device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            build = "a CPU-only build of torch" if torch.version.cuda is None else "no usable GPU found"
            raise UserError(f"device={show(device)}: CUDA is not available here ({build}, torch "
                            f"{torch.__version__}); use device=cpu")
        index = int(device.split(":")[1]) if ":" in device else 0
        if index >= torch.cuda.device_count():
            raise UserError(f"device={show(device)}: this machine has {torch.cuda.device_count()} CUDA device(s): "
                            f"cuda:0 … cuda:{torch.cuda.device_count() - 1}")


def validate(cfg: DictConfig, config_name: str | None = None, warn: bool = True) -> None:
    """Raise a one-line UserError for the first invalid setting; warn about legal but suspicious ones (`warn`: the
    check that precedes the job's own, before its log exists, says nothing but errors)."""
    known = known_keys(config_name or _config_name())
    for key in cfg:
        if key not in known:
            raise UserError(f"{key}={show(cfg.get(key))}: unknown setting (added with +?); known: "
                            + ", ".join(sorted(k for k in known if not k.startswith("_"))))
    for block in ("decode", "update"):
        for key in cfg[block]:
            if known[block] is not None and key not in known[block]:
                raise UserError(f"{block}.{key}={show(cfg[block].get(key))}: unknown setting; {block}.* are: "
                                + ", ".join(sorted(known[block])))
    for key, rule in SETTINGS.items():
        if OmegaConf.select(cfg, key, default=_ABSENT) is not _ABSENT:
            rule.check(key, OmegaConf.select(cfg, key))
    check_device(cfg.device)
    if OmegaConf.select(cfg, "metrics.tokenize", default=None) is not None:  # its packages, before any work
        check_tokenize(cfg.metrics.lang, cfg.metrics.tokenize, metrics=list(cfg.metrics.sacrebleu or ()))
    update, decode = cfg["update"], cfg["decode"]  # (cfg.update is DictConfig's method)
    if update.min_updates > update.max_updates:
        raise UserError(f"update.min_updates={update.min_updates}: must be ≤ update.max_updates={update.max_updates}")
    if decode.max_length < SHORT_MAX_LENGTH and warn:
        log.warning("decode.max_length=%d: hypotheses are cut off after %d tokens (often empty or truncated)",
                    decode.max_length, decode.max_length)
    lang = OmegaConf.select(cfg, "metrics.lang", default=None)
    if lang is not None:  # words by language (adaptsim/metrics/segmenters.py): refused before any work
        check_words(lang)
        if OmegaConf.select(cfg, "metrics.stopwords", default=None) is None:
            check_stopwords(lang)
    if OmegaConf.select(cfg, "model.path", default=None) is not None:  # a checkpoint for another language pair
        check_languages(cfg.model)  # (load_model checks again for the commands that load without this check)
    check_interactive_language(cfg.metrics.get("interactive"), lang)
    if decode.get("dtype") == "bfloat16" and cfg.metrics.get("interactive") not in ("off", False, None):
        raise UserError("decode.dtype=bfloat16: the simulated translator's prefix search runs in float32; use it "
                        "with metrics.interactive=off, or decode.dtype=float32")
    if "serve" in cfg:
        if OmegaConf.select(cfg, "metrics.probe.path", default=None) is not None:
            raise UserError(f"metrics.probe.path={cfg.metrics.probe.path}: not with serve (the probe translates its "
                            "whole set between two segments, and the page would wait); probe a run on the session's "
                            "references.tsv instead")
        if decode.get("dtype") != "float32":
            raise UserError(f"decode.dtype={decode.dtype}: the completions' prefix search runs in float32; use "
                            "decode.dtype=float32 with serve")
        serve = cfg.serve
        if serve.get("finish") and (serve.get("api") is None or not cfg.resume):
            raise UserError("serve.finish=true: finishes a session of serve's API (serve.api=modernmt resume=true "
                            "serve.dir=DIR); the page's session ends with its Finish now")
        if serve.get("api") is not None and (serve.get("methods") is not None or serve.get("translator")):
            raise UserError(f"serve.api={serve.api}: one method (`method`) on the client's documents; a study "
                            "(serve.methods, serve.translator) assigns a dataset's documents, with the page")
    check_method(cfg.method)
