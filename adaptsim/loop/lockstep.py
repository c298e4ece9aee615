"""K simulations of one model in one process, in lockstep: the same source segment at the same step.

    python -m adaptsim run -m +experiment=paper_methods hydra/launcher=lockstep

The runs of a sweep (methods, learning rates, seeds) translate the same source at every step. In lockstep each run
has its own modules and its own copies of the tensors its method trains, and shares every other tensor with the base
model (adaptsim/loop/learner.py `cloned_learners`): the frozen tensors of `top`, `fixed`, `bias`, `lora` and `none`
are then one tensor in memory, read once per decoding step for all the runs that hold it, and one beam search decodes
all the runs (adaptsim/models/decode/marian.py stacks their beams) in the one simulation loop
(adaptsim/loop/simulation.py `loop`, K runs). Each run writes what it writes alone (`Simulation`), with the same
hypotheses (tests/test_lockstep.py); its `translate_s` is its share of the joint search (the search's time / the runs
decoding). Each run then adapts on its own.

What the runs must share: the model, the data, the decoding settings, the device and threads (anything else —
method, learning rates, update rule, reset, seed, metrics — may differ). A run that fails (divergence under
`update.on_divergence=stop`) is closed as failed and the others go on. With `resume=true` (and the interrupted
sweep's `hydra.sweep.dir`) every job's recorded run is checked first, before Hydra writes into the sweep
(adaptsim/launch/resume.py), finished runs are left alone and each interrupted run replays the steps it wrote, as it
would alone, and joins the joint search at its first unwritten segment. The Hydra launcher that makes the
jobs' directories and closes their summaries is hydra_plugins/adaptsim_lockstep.
The gain is the weights read once for several runs, so it grows with the tensors the runs share and with the
model's size; where no lean search applies (other architectures, `memory`), the runs decode one by one. A decoder-only
model's runs that compute the same function (icl without a weights method, none: no run trains or hooks the weights)
search each distinct prompt once, and with `model.prompt.batch` all their prompts in one left-padded `generate`
(adaptsim/models/causal.py `CausalModel.translate_runs`: the same hypotheses in the tests, logits within float32's last
bits of alone's, so not bit for bit).
"""

from __future__ import annotations

from omegaconf import DictConfig, OmegaConf

from adaptsim.errors import UserError
from adaptsim.loop.simulation import simulate_runs
from adaptsim.records import JobSummary
from adaptsim.rules import flatten

SHARED = ("model", "dataset", "decode", "device", "threads", "malloc_tuning")  # settings lockstep runs must share


def check_together(cfgs: list[DictConfig]) -> None:
    """One line naming the first setting in which the runs differ but must not."""
    for key in SHARED:
        values = [flatten(OmegaConf.to_container(c[key], resolve=True) if OmegaConf.is_config(c[key]) else c[key],
                          key) for c in cfgs]
        for other in values[1:]:
            differ = [k for k in sorted({*values[0], *other}) if values[0].get(k) != other.get(k)]
            if differ:
                k = differ[0]
                raise UserError(f"hydra/launcher=lockstep: the runs differ in {k} ({values[0].get(k)} vs "
                                f"{other.get(k)}); lockstep runs share {', '.join(SHARED)}: sweep the others, "
                                "or use another launcher")


def simulate_together(cfgs: list[DictConfig], jobs: list[JobSummary]) -> None:
    """The runs of `cfgs` into their jobs' directories, in lockstep: `simulate_runs` over K clones of one model, once
    the settings they must share are checked. A run that fails (its error is a UserError: a divergence under
    on_divergence=stop) is closed as failed with its error, and the others go on."""
    check_together(cfgs)
    simulate_runs(cfgs, jobs, lockstep=len(cfgs))
