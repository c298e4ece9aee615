"""The memory allocator of the commands that run a model (`run`, `bench`, `select-fixed`, `train`): jemalloc with a
60-second decay where the library is installed (Debian: `libjemalloc2`), glibc's otherwise or with `allocator=system`.

Why: every training step and every update allocates and frees the same large buffers (logits, activations, dense
gradients of the embedding matrices). glibc maps blocks above its mmap threshold (capped at 32 MiB, so
`malloc_tuning` cannot keep a 200–400 MB logits tensor) and hands them back to the kernel on free; the next step
faults them in again, zeroed page by page. jemalloc keeps freed pages in the process and hands back those unused for
a minute (`dirty_decay_ms:60000,muzzy_decay_ms:0`): a step reuses its buffers long before that, and a long training's
resident memory stays bounded (with its decay off it grew with every step: ~10 MB a step for the paper-transformer;
jemalloc's own 10 s decay cost a quarter of the speed where a step takes longer than that). An allocator is chosen
when a process starts, so the command line re-executes itself once with LD_PRELOAD set (`reexec`); a process
started by `cli.main(argv)` from Python (the tests) is left alone.
Figures: docs/performance.md, "The allocator".
"""

from __future__ import annotations

import ctypes.util
import os
import sys
from pathlib import Path

from adaptsim import CONFIG_DIR

# The commands that run a model, and the primary config holding their `allocator` setting.
CONFIGS = {"run": "run", "bench": "run", "select-fixed": "run", "train": "train", "serve": "run"}
MALLOC_CONF = "dirty_decay_ms:60000,muzzy_decay_ms:0"  # freed pages unused for a minute go back to the kernel
CHOICES = ("jemalloc", "system")
_MARK = "ADAPTSIM_ALLOCATOR"  # set in the re-executed process to what it runs under
_PLACES = ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/lib")


def jemalloc_library() -> str | None:
    """The path of libjemalloc.so.2, or None where it is not installed."""
    for place in _PLACES:
        if (Path(place) / "libjemalloc.so.2").is_file():
            return str(Path(place) / "libjemalloc.so.2")
    name = ctypes.util.find_library("jemalloc")
    return name if name and Path(name).is_absolute() else None


def requested(command: str, argv: list[str]) -> str:
    """The `allocator` a command line asks for: its override (`allocator=…`, `+allocator=…`, `++allocator=…`),
    else the command's config. Read before Hydra composes anything: the choice must precede the first malloc."""
    for arg in reversed(argv):
        key, _, value = arg.lstrip("+").partition("=")
        if key == "allocator":
            return value
    from omegaconf import OmegaConf

    return str(OmegaConf.load(CONFIG_DIR / f"{CONFIGS[command]}.yaml").get("allocator", "system"))


def active() -> str:
    """What this process allocates with: `jemalloc` when the library is mapped into it (preloaded), else
    `system`."""
    try:
        mapped = Path("/proc/self/maps").read_text()
    except OSError:  # no /proc: what was asked for
        mapped = os.environ.get("LD_PRELOAD", "")
    return "jemalloc" if "libjemalloc" in mapped else "system"


def reexec(argv: list[str]) -> None:
    """Start `python -m adaptsim ARGV` again under jemalloc when the command runs a model, the setting asks
    for jemalloc, the library is installed and this process is not already under it. Returns otherwise
    (a bad setting is left for the command's own check to refuse, with its one line)."""
    if not argv or argv[0] not in CONFIGS or os.environ.get(_MARK) or active() == "jemalloc":
        return
    if requested(argv[0], argv[1:]) != "jemalloc" or not (library := jemalloc_library()):
        return
    preload = " ".join(p for p in (library, os.environ.get("LD_PRELOAD", "")) if p)
    env = dict(os.environ, LD_PRELOAD=preload, MALLOC_CONF=MALLOC_CONF, **{_MARK: "jemalloc"})
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, "-m", "adaptsim", *argv], env)


def describe(setting: str) -> str:
    """The one log line a command writes about its allocator (`setting`: its `allocator` value)."""
    if active() == "jemalloc":  # (the settings in effect: a process preloaded by hand may have its own)
        return f"allocator: jemalloc ({os.environ.get('MALLOC_CONF') or 'its default settings'}; allocator=system " \
               "for glibc's)"
    if setting == "jemalloc":
        why = ("libjemalloc.so.2 not found (Debian: apt install libjemalloc2)" if not jemalloc_library() else
               "not re-executed (adaptsim called from Python, not from its command line)")
        return f"allocator: system — {why}"
    return "allocator: system (allocator=system)"
