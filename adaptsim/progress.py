"""Progress of a long command (`run`, `bench`, `select-fixed`, `train`): a bar redrawn in place on a terminal,
and one plain log line every `every` seconds when stderr (where the bar would go) is a file or a pipe; the
line goes where the command's log goes (Hydra's console handler: stdout, and the job's .log file).

A bar written into the log of a job run in the background (`nohup … > log 2>&1 &`) is one endless line of
carriage returns, which after hours can neither be read nor tailed. The line says where the job is, its
rate, the time elapsed and an estimate of the time remaining (from the rate since it started, or since it
was resumed), with whatever figures the command shows on its bar.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Mapping

from tqdm import tqdm

log = logging.getLogger("adaptsim")


def progress(total: int | None, desc: str, unit: str, enabled: bool, every: float, initial: int = 0):
    """A tqdm bar on a terminal, a `LineProgress` elsewhere, a silent bar when `enabled` is false. Both take
    `update(n)`, `set_postfix(mapping, refresh=…)`, `close()` and `with`."""
    if enabled and not sys.stderr.isatty():
        return LineProgress(total, desc, unit, every, initial)
    return tqdm(total=total, initial=initial, disable=not enabled, desc=desc, unit=unit, dynamic_ncols=True,
                file=sys.stderr)


def clock(seconds: float) -> str:
    """h:mm:ss."""
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


class LineProgress:
    """tqdm's interface, written as one log line at most every `every` seconds, and once more at the end."""

    def __init__(self, total: int | None, desc: str, unit: str, every: float, initial: int = 0):
        self.total, self.desc, self.unit, self.every = total, desc, unit, float(every)
        self.n = self.start_n = initial
        self.started = self.last_line = time.perf_counter()
        self.logged = initial  # the position of the last line written
        self.postfix: dict = {}
        self.closed = False

    def __enter__(self) -> LineProgress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def set_postfix(self, ordered_dict: Mapping | None = None, refresh: bool = True, **kwargs) -> None:
        self.postfix = {**(ordered_dict or {}), **kwargs}

    def update(self, n: int = 1) -> None:
        self.n += n
        now = time.perf_counter()
        if now - self.last_line >= self.every:
            self.write(now)

    def close(self) -> None:
        if not self.closed and self.n > self.logged:
            self.write(time.perf_counter())
        self.closed = True

    def write(self, now: float) -> None:
        self.last_line, self.logged = now, self.n
        log.info("%s", self.line(now))

    def line(self, now: float) -> str:
        """e.g. `train: 1200/4000 steps (30%) | nll 3.412 | 2.10 steps/s | elapsed 0:09:31 | remaining ~0:22:13`."""
        elapsed = now - self.started
        done = self.n - self.start_n
        rate = done / elapsed if elapsed > 0 else 0.0
        where = f"{self.n}/{self.total} {self.unit}s ({100 * self.n / self.total:.0f}%)" if self.total else \
            f"{self.n} {self.unit}s"
        parts = [f"{self.desc}: {where}"]
        if self.postfix:
            parts.append(" ".join(f"{k} {v}" for k, v in self.postfix.items()))
        parts += [f"{rate:.2f} {self.unit}s/s", f"elapsed {clock(elapsed)}"]
        if self.total and rate > 0 and self.n < self.total:
            parts.append(f"remaining ~{clock((self.total - self.n) / rate)}")
        return " | ".join(parts)
