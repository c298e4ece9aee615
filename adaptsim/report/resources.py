"""The resources file shared by `adaptsim litter` and `adaptsim terms`: dictionaries, an idiom list and switches.

A YAML mapping (configs/litter/muse_en-de.yaml, by path; `${adaptsim_shared:}` resolves to ../shared or
$ADAPTSIM_SHARED): `dictionaries` (path, format, from, to each; adaptsim.metrics.litter.Dictionary), `idioms` (a
list matched in sources, LitTER only; null: none) and LitTER's switches `stopwords`, `strip_accents`, `compounds`,
`partial` (adaptsim.metrics.litter.Litter). The languages are the run's (`model.source_lang`, `model.target_lang`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from omegaconf import OmegaConf

from adaptsim import CONFIG_DIR
from adaptsim.errors import UserError
from adaptsim.metrics.litter import Dictionary, Litter

DEFAULT = CONFIG_DIR / "litter" / "muse_en-de.yaml"
KEYS = ("idioms", "dictionaries", "stopwords", "strip_accents", "compounds", "partial")
SWITCHES = ("stopwords", "strip_accents", "compounds", "partial")


@dataclass
class Resources:
    path: Path
    scorer: Litter       # the dictionaries, their normalisation (lower case, accents, lemmas) and the switches
    idioms: str | None   # the idiom list's path, if any (LitTER matches it in sources)


def load(path: Path, run) -> Resources:
    """Read and check a resources file; the dictionaries are loaded for the run's language pair (`run`: a
    finished run, adaptsim.report.runs.Run, or None for en→de)."""
    if not path.is_file():
        raise UserError(f"--resources {path}: no such file")
    try:
        res = OmegaConf.to_container(OmegaConf.load(path), resolve=True)
    except Exception as e:  # YAML syntax, an interpolation that does not resolve: one line, not a traceback
        raise UserError(f"--resources {path}: unreadable ({str(e).splitlines()[0]})") from None
    if not isinstance(res, dict):
        raise UserError(f"--resources {path}: expected a mapping of {', '.join(KEYS)}")
    unknown = sorted(set(res) - set(KEYS))
    if unknown:  # a misspelt switch would silently keep its default
        raise UserError(f"--resources {path}: unknown key(s) {', '.join(unknown)}; known: {', '.join(KEYS)}")
    source, target = languages(run)
    if not res.get("dictionaries"):
        raise UserError(f"{path}: `dictionaries` lists no dictionary")
    dictionary = Dictionary.load(res["dictionaries"], source, target)
    scorer = Litter(dictionary, source, target, **{k: res[k] for k in SWITCHES if k in res})
    return Resources(Path(path), scorer, res.get("idioms") or None)


def languages(run) -> tuple[str, str]:
    """The run's (source, target) languages (en→de for no run)."""
    model = ((run.summary.get("config") or {}).get("model") or {}) if run is not None else {}
    return model.get("source_lang") or "en", model.get("target_lang") or "de"


def loader(path: Path):
    """`load(path, run)` once per language pair: a report over blocks in several directions scores each block with
    its own pair's dictionaries."""
    cache: dict[tuple[str, str], Resources] = {}

    def get(run) -> Resources:
        pair = languages(run)
        if pair not in cache:
            cache[pair] = load(path, run)
        return cache[pair]
    return get
