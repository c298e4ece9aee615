"""`adaptsim run`: simulate post-editing with online adaptation into the job's directory (adaptsim/loop/simulation.py).

    python -m adaptsim run method=lasso dataset=autodesk model=opus-mt-en-de
    python -m adaptsim run -m method=none,full,bias,fixed,top,lasso      # a sweep, one job per method
"""

from __future__ import annotations

from omegaconf import DictConfig

from adaptsim.records import JobSummary


def main(argv: list[str]) -> int:
    from adaptsim.launch.hydra_app import launch

    return launch(task, "run", argv, "run")


def task(cfg: DictConfig, job: JobSummary) -> None:
    from adaptsim.loop.simulation import simulate

    simulate(cfg, job)
