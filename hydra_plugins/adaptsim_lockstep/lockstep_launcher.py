"""`hydra/launcher=lockstep`: all jobs of an `adaptsim run` sweep in one process, in lockstep
(adaptsim/loop/lockstep.py).

Hydra loads launchers only from the `hydra_plugins` package. Every job of the sweep gets its directory and
.hydra/ files as with Hydra's basic launcher, then all of them run in lockstep, their summaries closed as
`adaptsim.launch.hydra_app.run_task` closes a job's (finished, failed with the error or the traceback of a bug,
interrupted by SIGINT or SIGTERM: `adaptsim.launch.jobs.closing`).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from hydra.plugins.launcher import Launcher


class LockstepLauncher(Launcher):
    def __init__(self) -> None:
        self.config = self.hydra_context = self.task_function = None

    def setup(self, *, hydra_context, task_function, config) -> None:
        self.config, self.hydra_context, self.task_function = config, hydra_context, task_function

    def launch(self, job_overrides, initial_job_idx: int):
        from adaptsim.launch.jobs import record_failed_job

        sweep = Path(str(self.config.hydra.sweep.dir))
        if self.config.hydra.job.config_name != "run":
            error = "hydra/launcher=lockstep runs `adaptsim run` sweeps only"
            print(f"adaptsim {self.config.hydra.job.config_name}: error: {error}", file=sys.stderr)
            record_failed_job(sweep, sweep, error)
            return []
        collected, returns = self._job_dirs(job_overrides, initial_job_idx)
        _run_together(collected, sweep, getattr(self.task_function, "resume_found", {}))
        return returns

    def _job_dirs(self, job_overrides, initial_job_idx: int):
        """Each job's composed config and directory (with its .hydra/ files), as Hydra's basic launcher makes
        them; the jobs' task is only to be collected here."""
        from hydra.core.hydra_config import HydraConfig
        from hydra.core.utils import configure_log, run_job, setup_globals
        from omegaconf import open_dict, read_write

        setup_globals()
        configure_log(self.config.hydra.hydra_logging, self.config.hydra.verbose)
        Path(str(self.config.hydra.sweep.dir)).mkdir(parents=True, exist_ok=True)
        collected, returns = [], []
        for idx, overrides in enumerate(job_overrides):
            sweep_config = self.hydra_context.config_loader.load_sweep_config(self.config, list(overrides))
            with read_write(sweep_config), open_dict(sweep_config):
                sweep_config.hydra.job.id = f"{sweep_config.hydra.job.name}_{initial_job_idx + idx}"
                sweep_config.hydra.job.num = initial_job_idx + idx
            HydraConfig.instance().set_config(sweep_config)
            returns.append(run_job(hydra_context=self.hydra_context, config=sweep_config,
                                   task_function=lambda cfg: collected.append(
                                       (cfg, Path(HydraConfig.get().runtime.output_dir),
                                        list(HydraConfig.get().overrides.task))),
                                   job_dir_key="hydra.sweep.dir", job_subdir_key="hydra.sweep.subdir"))
        return collected, returns


def _run_together(collected, sweep: Path, found: dict[str, dict]) -> None:
    """Claim every job's directory (with resume=true a finished run is left alone; `found`: the records the checks
    before Hydra found, by job directory), run the others in lockstep, and close each summary as a job alone is
    closed (`adaptsim.launch.jobs.closing`)."""
    from adaptsim.errors import UserError
    from adaptsim.launch.jobs import claim_job, closing, job_context, record_failed_job
    from adaptsim.loop.lockstep import simulate_together
    from adaptsim.records import JobSummary, job_logs, speaking_for

    jobs: list[JobSummary] = []
    claiming = None  # the job being claimed: a refusal there is that job's, not the others'
    try:
        with job_logs([out for _, out, _ in collected]), closing(jobs), job_context(os.getpid()):
            for cfg, out, overrides in collected:
                claiming = out
                with speaking_for(out):
                    jobs.append(claim_job(out, "run", cfg, overrides=overrides, found=found.get(str(out))))
            claiming = None
            pending = [(cfg, job) for (cfg, _, _), job in zip(collected, jobs) if not job.finished]
            if pending:
                simulate_together([cfg for cfg, _ in pending], [job for _, job in pending])
    except UserError as e:  # before the jobs ran: those claimed say so in their summaries (closing), the rest here
        print(f"adaptsim run: error: {e}", file=sys.stderr)
        claimed = {job.dir for job in jobs}
        for out in [out for _, out, _ in collected if out not in claimed]:
            record_failed_job(sweep, out, str(e) if claiming in (None, out) else
                              f"not started: the lockstep sweep stopped at {claiming.name} ({e})")
        return
    for job in jobs:
        if job.data.get("status") == "failed":
            print(f"adaptsim run: error: {job.data.get('error', 'failed')}", file=sys.stderr)
            if job.given_back:  # a resume refused by its replay: its records as they were, the refusal in the sweep's
                record_failed_job(sweep, job.dir, job.data.get("error", "failed"))
