"""The resources file shared by `adaptsim litter` and `adaptsim terms`: dictionaries, an idiom list and switches.

A YAML mapping (configs/litter/muse_en-de.yaml, by path; `${adaptsim_shared:}` resolves to ../shared or
$ADAPTSIM_SHARED): `dictionaries` (path, format, from, to each; adaptsim.metrics.litter.Dictionary), `idioms` (a
list matched in sources, LitTER only; null: none), and optionally any setting of configs/litter/presets.yaml,
which overrides it there: a preset's switches (`stopwords`, `strip_accents`, `compounds`, `partial`, `lemmas`,
`headline`) and `gap` (words allowed inside an idiom where it is located in a source,
adaptsim.metrics.litter.IdiomList). The languages are the run's (`model.source_lang`, `model.target_lang`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from omegaconf import OmegaConf

from adaptsim import CONFIG_DIR
from adaptsim.errors import UserError
from adaptsim.metrics.litter import Dictionary, IdiomList, Litter

DEFAULT = CONFIG_DIR / "litter" / "muse_en-de.yaml"
PRESETS_FILE = CONFIG_DIR / "litter" / "presets.yaml"
SWITCHES = ("stopwords", "strip_accents", "compounds", "partial", "lemmas")
KEYS = ("idioms", "dictionaries", "gap", *SWITCHES, "headline")
HEADLINES = ("macro", "micro")


def presets() -> dict:
    """configs/litter/presets.yaml: {"default": name, "gap": words, name: {switch: value, …, "headline": …}, …}."""
    return OmegaConf.to_container(OmegaConf.load(PRESETS_FILE))


@dataclass
class Resources:
    path: Path
    scorer: Litter       # the dictionaries, their normalisation (lower case, accents, lemmas) and the switches
    idioms: IdiomList    # the idiom list (empty if none), which also locates a labelled idiom in its source
    preset: str          # the preset's name, "+" the switches the file overrides ("paper+compounds")
    headline: str        # macro or micro: LitTER's first figure


def load(path: Path, run, preset: str) -> Resources:
    """Read and check a resources file, switches as `preset` says unless the file sets them; the dictionaries are
    loaded for the run's language pair (`run`: a finished run, adaptsim.report.runs.Run, or None for en→de)."""
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
    every = presets()
    known = {k: v for k, v in every.items() if isinstance(v, dict)}
    if preset not in known:
        raise UserError(f"--preset {preset}: no such preset; known: {', '.join(known)}")
    settings = {**known[preset], **{k: res[k] for k in (*SWITCHES, "headline") if k in res}}
    if settings["headline"] not in HEADLINES:
        raise UserError(f"--resources {path}: headline must be macro or micro, not {settings['headline']!r}")
    gap = res.get("gap", every["gap"])
    if not isinstance(gap, int) or gap < 0:
        raise UserError(f"--resources {path}: `gap` must be a whole number of words ≥ 0, not {gap!r}")
    source, target = languages(run)
    if not res.get("dictionaries"):
        raise UserError(f"{path}: `dictionaries` lists no dictionary")
    dictionary = Dictionary.load(res["dictionaries"], source, target)
    scorer = Litter(dictionary, source, target, **{k: settings[k] for k in SWITCHES})
    idioms = IdiomList.load(res["idioms"], source, gap) if res.get("idioms") else IdiomList([], source, gap)
    overridden = [k for k in (*SWITCHES, "headline") if k in res and res[k] != known[preset][k]]
    return Resources(Path(path), scorer, idioms, "+".join([preset, *overridden]), settings["headline"])


def languages(run) -> tuple[str, str]:
    """The run's (source, target) languages (en→de for no run)."""
    model = ((run.summary.get("config") or {}).get("model") or {}) if run is not None else {}
    return model.get("source_lang") or "en", model.get("target_lang") or "de"


def loader(path: Path, preset: str):
    """`load(path, run, preset)` once per language pair: a report over blocks in several directions scores each
    block with its own pair's dictionaries."""
    cache: dict[tuple[str, str], Resources] = {}

    def get(run) -> Resources:
        pair = languages(run)
        if pair not in cache:
            cache[pair] = load(path, run, preset)
        return cache[pair]
    return get
