"""A job's log lines in its own log file, also when a lockstep sweep runs several jobs in one process (`job_logs`,
`speaking_for`)."""

from __future__ import annotations

import contextlib
import contextvars
import logging
from pathlib import Path

_SPEAKING_FOR: contextvars.ContextVar[Path | None] = contextvars.ContextVar("adaptsim_job", default=None)


@contextlib.contextmanager
def speaking_for(job_dir: Path):
    """Log lines inside the block are the job's in `job_dir`: in a lockstep sweep they go to its log only
    (`job_logs`); alone, nothing changes."""
    token = _SPEAKING_FOR.set(Path(job_dir))
    try:
        yield
    finally:
        _SPEAKING_FOR.reset(token)


class _OneJob(logging.Filter):
    def __init__(self, job_dir: Path):
        super().__init__()
        self.job_dir = Path(job_dir)

    def filter(self, record: logging.LogRecord) -> bool:
        speaker = _SPEAKING_FOR.get()
        return speaker is None or speaker == self.job_dir


@contextlib.contextmanager
def job_logs(job_dirs: list[Path]):
    """Each job of a lockstep sweep logs to its own directory's log file, as it would alone: Hydra configures one
    job's logging at a time, so after composing every job the root logger writes to the last job's file only.
    Each file handler is replaced by one per job (same name, format and level) that takes the lines said for its
    job (`speaking_for`) and the lines said for none (loading the model, the data)."""
    root = logging.getLogger()
    files = [h for h in root.handlers if isinstance(h, logging.FileHandler)]
    added = []
    for handler in files:
        root.removeHandler(handler)
        handler.close()
        for job_dir in job_dirs:
            one = logging.FileHandler(Path(job_dir) / Path(handler.baseFilename).name, encoding="utf-8")
            one.setFormatter(handler.formatter)
            one.setLevel(handler.level)
            one.addFilter(_OneJob(job_dir))
            root.addHandler(one)
            added.append(one)
    try:
        yield
    finally:
        for one in added:
            root.removeHandler(one)
            one.close()
        for handler in files:
            root.addHandler(handler)
