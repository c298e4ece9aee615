"""K simulations of one model in one process, in lockstep: the same source segment at the same step.

The runs of a sweep (methods, learning rates, seeds) translate the same source at every step. In lockstep
each run has its own modules and its own copies of the tensors its method trains, and shares every other
tensor with the base model (`share`): the frozen tensors of `top`, `fixed`, `bias`, `lora` and `none` are
then one tensor in memory, read once per decoding step for all the runs that hold it
(adaptsim/decode/marian.py stacks their beams). Each run's hypotheses are those it gives alone.
"""

from __future__ import annotations

import copy

from omegaconf import DictConfig

from adaptsim import methods
from adaptsim.model import Seq2SeqModel
from adaptsim.session import Session


def share(model: Seq2SeqModel, own: set[int] = frozenset()) -> Seq2SeqModel:
    """A clone of `model` with modules of its own, sharing its parameters and buffers except the parameters whose
    ids are in `own`, which the clone gets copies of (everywhere they occur: tied matrices stay tied)."""
    memo = {id(t): t for t in (*model.net.parameters(), *model.net.buffers()) if id(t) not in own}
    net = copy.deepcopy(model.net, memo)
    for p in net.parameters():
        if id(p) not in memo:  # a copy of its own: trainable, whatever another run made of the original
            p.requires_grad_(True)
    return Seq2SeqModel(net, model.tokenizer, model.device, model.languages)


def sessions(base: Seq2SeqModel, method_cfgs: list[DictConfig], update_cfg: DictConfig, reset: str) -> list[Session]:
    """One session per method config, each on a clone of `base` that owns exactly the tensors its method trains.
    Which tensors those are, each method says once built: on a private copy of the model (methods add hooks to
    modules and tensors they are built on), before any run freezes the tensors it shares."""
    names = {id(p): n for n, p in base.net.named_parameters()}
    copy_all = set(names)
    trained = [set(methods.build(cfg, share(base, copy_all)).parameters()) for cfg in method_cfgs]
    return [Session(share(base, {i for i, n in names.items() if n in own}), cfg, update_cfg, reset)
            for cfg, own in zip(method_cfgs, trained)]
