"""`adaptsim COMMAND --help`: the config groups a command composes, and its composed config with each key's meaning as
the YAML files that set it say (their comments)."""

from __future__ import annotations

import re
from pathlib import Path

from adaptsim import CONFIG_DIR

# configs/ folders that are not groups a run composes: files code reads itself (method=fixed's lists, LitTER's
# resources) and Hydra's own groups (`--hydra-help` lists those)
NOT_GROUPS = {"fixed_lists", "litter", "hydra"}


def help_text(command: str, cfg) -> str:
    """`adaptsim COMMAND --help`: the groups a run composes, with their options (the `_common` files every option
    of a group includes are none), then the composed config with the command line's overrides."""
    lines = [f"usage: adaptsim {command} [-m] [group=option …] [key=value …]", "",
             "Configuration groups (group=option; -m and comma-separated options: a sweep):"]
    for group in sorted(p for p in CONFIG_DIR.iterdir() if p.is_dir() and p.name not in NOT_GROUPS):
        options = sorted(f.stem for f in group.glob("*.yaml") if not f.stem.startswith("_"))
        lines.append(f"  {group.name}: {', '.join(options)}")
    from omegaconf import OmegaConf

    body = OmegaConf.to_yaml(OmegaConf.masked_copy(cfg, [k for k in cfg if k != "hydra"]))
    meanings = _meanings(cfg)
    return "\n".join(lines + ["", "Config (override anything: key=value; after #, what the YAML says it means):", "",
                              *_annotated(body, meanings), "", "Hydra's own options: --hydra-help"])


_KEY_LINE = re.compile(r"^( *)([A-Za-z_][\w.+-]*):(?:\s+(?:[^#]*?))?\s*(?:#\s?(.*))?$")


def _meanings(cfg) -> dict[str, str]:
    """{dotted key: its comment, with the comment lines aligned below it} from the YAML files the config was composed
    of: the primary config and those it extends, and each group's chosen option (with the group's _common.yaml)."""
    from omegaconf import OmegaConf

    files: list[tuple[Path, str]] = []
    name = OmegaConf.select(cfg, "hydra.job.config_name", default=None) or "run"
    while (CONFIG_DIR / f"{name}.yaml").is_file():
        files.append((CONFIG_DIR / f"{name}.yaml", ""))
        parent = [d for d in OmegaConf.load(CONFIG_DIR / f"{name}.yaml").get("defaults", [])
                  if isinstance(d, str) and d != "_self_" and (CONFIG_DIR / f"{d}.yaml").is_file()]
        name = parent[0] if parent else ""
    for group, option in (OmegaConf.select(cfg, "hydra.runtime.choices", default=None) or {}).items():
        for path in (CONFIG_DIR / group / "_common.yaml", CONFIG_DIR / group / f"{option}.yaml"):
            if not group.startswith("hydra") and option and path.is_file():
                package = "" if "@package _global_" in path.read_text(encoding="utf-8")[:200] else group
                files.append((path, package))
    out: dict[str, str] = {}
    for path, package in reversed(files):  # the primary config last: its words win
        stack: list[tuple[int, str]] = []
        last = None  # (dotted key, column of its comment's #): comment lines below at that column continue it
        for line in path.read_text(encoding="utf-8").splitlines():
            if last and line.lstrip().startswith("#") and line.index("#") == last[1]:
                out[last[0]] += " " + line.strip().lstrip("#").strip()
                continue
            last = None
            found = _KEY_LINE.match(line)
            if not found or line.lstrip().startswith("#"):
                continue
            indent, key, comment = len(found[1]), found[2], found[3]
            stack = [(i, k) for i, k in stack if i < indent] + [(indent, key)]
            if comment and stack[0][1] != "defaults":
                dotted = ".".join(filter(None, [package, *(k for _, k in stack)]))
                out[dotted], last = comment.strip(), (dotted, line.index("#", len(found[1]) + len(key)))
    return out


def _annotated(body: str, meanings: dict[str, str]) -> list[str]:
    """The composed config's YAML lines, each key's meaning beside it where a YAML file gives one."""
    lines, stack = [], []
    for line in body.rstrip().splitlines():
        found = _KEY_LINE.match(line)
        if found:
            indent = len(found[1])
            stack = [(i, k) for i, k in stack if i < indent] + [(indent, found[2])]
            meaning = meanings.get(".".join(k for _, k in stack))
            if meaning:
                line = f"{line}  # {meaning}"
        lines.append(line)
    return lines
