"""K simulations of one model in one process, in lockstep: the same source segment at the same step.

    python -m adaptsim run -m +experiment=paper_methods hydra/launcher=lockstep

The runs of a sweep (methods, learning rates, seeds) translate the same source at every step. In lockstep
each run has its own modules and its own copies of the tensors its method trains, and shares every other
tensor with the base model (`share`): the frozen tensors of `top`, `fixed`, `bias`, `lora` and `none` are
then one tensor in memory, read once per decoding step for all the runs that hold it, and one beam search
decodes all the runs (adaptsim/decode/marian.py stacks their beams). Each run writes what it writes alone
(adaptsim/simulate.py `Run`), with the same hypotheses (tests/test_lockstep.py); its `translate_s` is its
share of the joint search (the search's time / the runs decoding). Each run then adapts on its own.

What the runs must share: the model, the data, the decoding settings, the device and threads (anything else —
method, learning rates, update rule, reset, seed, metrics — may differ). A run that fails (divergence under
`update.on_divergence=stop`) is closed as failed and the others go on. With `resume=true` (and the interrupted
sweep's `hydra.sweep.dir`) finished runs are left alone and each interrupted run replays the steps it wrote,
as it would alone, and joins the joint search at its first unwritten segment.
The gain is the weights read once for several runs, so it grows with the tensors the runs share and with the
model's size; where no lean search applies (other architectures, `memory`), the runs decode one by one.
"""

from __future__ import annotations

import copy
import logging
import time
from contextlib import ExitStack
from pathlib import Path

import torch
from omegaconf import DictConfig, OmegaConf, open_dict, read_write

from adaptsim import methods
from adaptsim.errors import UserError
from adaptsim.model import Seq2SeqModel
from adaptsim.outputs import JobSummary, RunWriter
from adaptsim.session import Session, load
from adaptsim.simulate import Run
from adaptsim.validate import validate

log = logging.getLogger("adaptsim")
SHARED = ("model", "dataset", "decode", "device", "threads", "malloc_tuning")  # settings lockstep runs must share


def share(model: Seq2SeqModel, own: set[int] = frozenset()) -> Seq2SeqModel:
    """A clone of `model` with modules of its own, sharing its parameters and buffers except the parameters whose
    ids are in `own`, which the clone gets copies of (everywhere they occur: tied matrices stay tied)."""
    memo = {id(t): t for t in (*model.net.parameters(), *model.net.buffers()) if id(t) not in own}
    net = copy.deepcopy(model.net, memo)
    for p in net.parameters():
        if id(p) not in memo:  # a copy of its own: trainable, whatever another run made of the original
            p.requires_grad_(True)
    return Seq2SeqModel(net, model.tokenizer, model.device, model.languages)


def sessions(base: Seq2SeqModel, cfgs: list[DictConfig], rng: dict | None = None) -> list[Session]:
    """One session per run config, each on a clone of `base` that owns exactly the tensors its method trains.
    Which tensors those are, each method says once built: on a private copy of the model (methods add hooks to
    modules and tensors they are built on), before any run freezes the tensors it shares. `rng`: seed -> the
    random state a run with that seed has when it builds its method alone (`lora` draws its initial adapters)."""
    names = {id(p): n for n, p in base.net.named_parameters()}
    trained = [set(methods.build(cfg.method, share(base, set(names))).parameters()) for cfg in cfgs]
    out = []
    for cfg, own in zip(cfgs, trained):
        if rng is not None:
            torch.set_rng_state(rng[cfg.seed])
        out.append(Session(share(base, {i for i, n in names.items() if n in own}), cfg.method, cfg["update"],
                           cfg.reset))
    return out


def check_together(cfgs: list[DictConfig]) -> None:
    """One line naming the first setting in which the runs differ but must not."""
    for key in SHARED:
        values = [OmegaConf.to_container(c[key], resolve=True) if OmegaConf.is_config(c[key]) else c[key]
                  for c in cfgs]
        if any(v != values[0] for v in values[1:]):
            raise UserError(f"hydra/launcher=lockstep: the runs differ in {key} ({values[0]} vs "
                            f"{next(v for v in values if v != values[0])}); lockstep runs share "
                            f"{', '.join(SHARED)}: sweep the others, or use another launcher")


def simulate_together(cfgs: list[DictConfig], jobs: list[JobSummary]) -> None:
    """The runs of `cfgs` into their jobs' directories, in lockstep. A run that fails (its error is a UserError:
    a divergence under on_divergence=stop) is closed as failed with its error, and the others go on."""
    check_together(cfgs)
    for cfg in cfgs[1:]:
        validate(cfg)
    base, documents = load(cfgs[0])
    skipped = dict(documents.skipped)
    rng = {cfgs[0].seed: torch.get_rng_state()}  # alone, a run builds its method right after `load`
    for cfg in cfgs:
        if cfg.seed not in rng:  # loading the model draws random numbers: the state after loading with that seed
            load(cfg)
            rng[cfg.seed] = torch.get_rng_state()
    runs_sessions = sessions(base, cfgs, rng)
    decode = cfgs[0].decode
    with ExitStack() as stack:
        runs = []
        for k, (cfg, job, session) in enumerate(zip(cfgs, jobs, runs_sessions)):
            writer = stack.enter_context(RunWriter(job.dir, resume=cfg.resume))
            runs.append(Run(OmegaConf.merge(cfg, {"progress": cfg.progress and k == 0}), job, writer, session,
                            documents, skipped))
        done = [run.resumable_steps() for run in runs]
        active = list(range(len(runs)))
        for d, doc in enumerate(documents):
            for k in active:
                runs_sessions[k].start_document(d)
            for seg in doc.segments:
                if not active:  # every run failed
                    break
                fresh = [k for k in active if runs[k].index >= len(done[k])]  # the others replay a written step
                hyps = {}
                if fresh:
                    t = time.perf_counter()
                    hyps = dict(zip(fresh, base.translate_together([runs_sessions[k].model for k in fresh],
                                                                   seg.source, **decode)))
                    seconds = (time.perf_counter() - t) / len(fresh)
                for k in list(active):
                    session = runs_sessions[k]
                    try:
                        adapted = session.adapt(session.model.pair(seg.source, seg.reference), runs[k].where(seg))
                        if k in hyps:
                            runs[k].step(seg, *hyps[k], seconds, *adapted)
                        else:
                            runs[k].replay(seg, done[k][runs[k].index], *adapted)
                    except UserError as e:
                        jobs[k].close("failed", str(e))
                        log.error("%s: %s", jobs[k].dir, e)
                        active.remove(k)
            for k in active:
                runs[k].end_document(doc)
        for k in active:
            runs[k].finish(lockstep=len(runs))


def launch_together(launcher, job_overrides, initial_job_idx: int) -> list:
    """What `hydra/launcher=lockstep` does (hydra_plugins/adaptsim_lockstep): every job of the sweep gets its
    directory and .hydra/ files as with Hydra's basic launcher, then all of them run in lockstep here, their
    summaries closed as `run_task` closes a job's (finished, failed with the error or the traceback of a bug,
    interrupted by SIGINT or SIGTERM)."""
    import os
    import traceback

    from hydra.core.hydra_config import HydraConfig
    from hydra.core.utils import configure_log, run_job, setup_globals

    from adaptsim.hydra_app import job_context, job_fields, report_failure

    if launcher.config.hydra.job.config_name != "run":
        report_failure(str(launcher.config.hydra.job.config_name), "hydra/launcher=lockstep runs `adaptsim run` "
                       "sweeps only")
        return []
    setup_globals()
    configure_log(launcher.config.hydra.hydra_logging, launcher.config.hydra.verbose)
    Path(str(launcher.config.hydra.sweep.dir)).mkdir(parents=True, exist_ok=True)
    collected: list[tuple[DictConfig, Path]] = []
    returns = []
    for idx, overrides in enumerate(job_overrides):
        sweep_config = launcher.hydra_context.config_loader.load_sweep_config(launcher.config, list(overrides))
        with read_write(sweep_config), open_dict(sweep_config):
            sweep_config.hydra.job.id = f"{sweep_config.hydra.job.name}_{initial_job_idx + idx}"
            sweep_config.hydra.job.num = initial_job_idx + idx
        HydraConfig.instance().set_config(sweep_config)
        returns.append(run_job(hydra_context=launcher.hydra_context, config=sweep_config,
                               task_function=lambda cfg: collected.append(
                                   (cfg, Path(HydraConfig.get().runtime.output_dir))),
                               job_dir_key="hydra.sweep.dir", job_subdir_key="hydra.sweep.subdir"))
    jobs: list[JobSummary] = []

    def close_running(status: str, error: str) -> None:
        for job in jobs:
            if job.data.get("status") == "running":
                job.close(status, error)

    try:
        for cfg, out in collected:  # each claims its directory; with resume=true a finished run is left alone
            jobs.append(JobSummary(out, job_fields("run", cfg), resume=bool(cfg.resume)))
            if jobs[-1].finished:
                log.info("%s: finished already; nothing to resume", out)
        pending = [(cfg, job) for (cfg, _), job in zip(collected, jobs) if not job.finished]
        jobs = [job for _, job in pending]
        with job_context(os.getpid()):
            if pending:
                simulate_together([cfg for cfg, _ in pending], jobs)
    except UserError as e:
        close_running("failed", str(e))
        report_failure("run", str(e))
        return returns
    except KeyboardInterrupt as e:  # SIGINT, or SIGTERM as Terminated
        close_running("interrupted", f"interrupted by {getattr(e, 'signal_name', 'SIGINT')}")
        raise
    except Exception:
        close_running("failed", traceback.format_exc())
        raise
    for job in jobs:
        if job.data.get("status") == "failed":
            report_failure("run", job.data.get("error", "failed"))
        else:
            job.close("finished")
    return returns
