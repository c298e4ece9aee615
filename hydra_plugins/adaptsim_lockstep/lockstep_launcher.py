"""`hydra/launcher=lockstep`: all jobs of an `adaptsim run` sweep in one process, in lockstep (adaptsim/lockstep.py).

Hydra loads launchers only from the `hydra_plugins` package; the launcher itself is adaptsim's.
"""

from __future__ import annotations

from hydra.plugins.launcher import Launcher


class LockstepLauncher(Launcher):
    def __init__(self) -> None:
        self.config = self.hydra_context = self.task_function = None

    def setup(self, *, hydra_context, task_function, config) -> None:
        self.config, self.hydra_context, self.task_function = config, hydra_context, task_function

    def launch(self, job_overrides, initial_job_idx: int):
        from adaptsim.lockstep import launch_together

        return launch_together(self, job_overrides, initial_job_idx)
