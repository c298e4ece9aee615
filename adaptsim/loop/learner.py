"""What every command that adapts shares (`run`, `bench`, `select-fixed`, `serve`): the checked start (`load`), a
`Learner` — the model, the method, the paper's update rule and θ0 — that walks a stream of documents,
restoring θ0 where `reset` says and handling divergence the one way `update.on_divergence` says, and K learners on
clones of one model (`cloned_learners`: lockstep's runs, a serve study's methods).
"""

from __future__ import annotations

import copy
import logging
import os
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import torch
from omegaconf import DictConfig

from adaptsim import allocator, methods
from adaptsim.data import Dataset, check_lengths, load_documents
from adaptsim.errors import UserError
from adaptsim.loop.settings import validate
from adaptsim.loop.update import Diverged, Snapshot, Updater, UpdateResult
from adaptsim.methods.retrieval import Retrieval
from adaptsim.models import Model, load_model

log = logging.getLogger("adaptsim")
Doc = TypeVar("Doc")


def load(cfg: DictConfig, limit: int | None = None) -> tuple[Model, Dataset]:
    """`prepare`, then the data (its first `limit` segments that fit the model, if given), then the model (bad data
    fails before a model is loaded)."""
    prepare(cfg)
    documents = load_documents(cfg.dataset)
    model = load_model(cfg.model, cfg.device)
    documents, _ = check_lengths(documents, cfg.dataset, model.over_length, limit)
    return model, documents


def prepare(cfg: DictConfig) -> None:
    """The process set up for a run: settings checked, seed, threads, allocator (glibc's tuned where jemalloc is not
    in use), CUDA's determinism. (`load` goes on with the data; serve's API, whose client sends the data, with the
    model alone.)"""
    validate(cfg)
    torch.manual_seed(cfg.seed)
    if cfg.threads:
        torch.set_num_threads(int(cfg.threads))
    log.info("%s", allocator.describe(cfg.allocator))
    if cfg.malloc_tuning and allocator.active() == "system":
        tune_malloc()
    if str(cfg.device).startswith("cuda"):
        deterministic_cuda()


def deterministic_cuda() -> None:
    """A resume replays its steps and checks their perplexities bit for bit, and a lockstep run must get the
    hypotheses it gets alone: on CUDA that takes cuBLAS's fixed workspace (set before its first use) and torch's
    deterministic kernels. A kernel that has none warns instead of failing; the device check (scripts/device/gpu.sh)
    logs which."""
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(True, warn_only=True)


def describe_device(device: str) -> str:
    """The device as a record should name it: cpu, or the GPU with its CUDA and torch versions."""
    if not str(device).startswith("cuda"):
        return "cpu"
    return f"{torch.cuda.get_device_name(torch.device(device))}, CUDA {torch.version.cuda}, torch {torch.__version__}"


def tune_malloc() -> bool:
    """Keep freed memory in the process (glibc only; elsewhere nothing happens and False is returned).

    Every update allocates and frees the same large buffers (dense gradients of the embedding matrices,
    activations). glibc's default hands blocks above its mmap threshold back to the kernel on free, so the
    next update page-faults them in again, zeroed (docs/performance.md says how often).
    A fixed 16 MiB mmap threshold and a 128 MiB trim threshold keep them (what MALLOC_MMAP_THRESHOLD_ /
    MALLOC_TRIM_THRESHOLD_ in the environment do at start-up; mallopt does it at run time): one update's buffers
    fit in 128 MiB, while a larger threshold let the resident memory creep up with the stream
    (docs/performance.md, "Memory")."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError, TypeError):
        return False
    M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
    return bool(mallopt(M_MMAP_THRESHOLD, 16 * 2**20)) and bool(mallopt(M_TRIM_THRESHOLD, 128 * 2**20))


class Learner:
    """One method adapting one model over a stream, from θ0.

    `method_cfg` is `cfg.method` (select-fixed passes a variant of it); `update_cfg` the update rule's
    settings; `reset` is document | never. The random numbers are seeded with `seed` right before the method is
    built (lora draws its adapters there; nothing later draws), so what a run draws does not depend on what was
    loaded or built before it in the same process (lockstep builds K methods after one model)."""

    def __init__(self, model: Model, *, method_cfg: DictConfig, update_cfg: DictConfig, reset: str, seed: int):
        self.model = model
        torch.manual_seed(seed)
        self.method = methods.build(method_cfg, model)
        # what the method retrieves from the post-edits it keeps (tm, icl), if it does
        self.retrieval = self.method if isinstance(self.method, Retrieval) else None
        self.updater = Updater(model, self.method, **update_cfg)
        self.theta0 = Snapshot(self.method.parameters())
        self.reset = reset
        self.at_theta0 = True  # nothing adapted since the last restart
        # the moments of adaptation before translating (tm) of the steps made: segments with matches, matches, updates,
        # seconds (`add_moment`)
        self.temporary = {"retrievals": 0, "matches": 0, "updates": 0, "seconds": 0.0, "divergences": 0}

    def add_moment(self, added: dict) -> None:
        """A step's moment (`adapted_for`'s record) counted, when the step is committed or replayed (as its steps.jsonl
        line recorded it): the counts are the steps' sum, a resumed run's the uninterrupted run's, and a segment
        begun and left (serve's reopen, a session finished on the page) counts nothing."""
        for k, v in added.items():
            self.temporary[k] = self.temporary.get(k, 0) + v

    def restart(self) -> None:
        """Back to θ0: the tensors, then the method's own state."""
        self.theta0.restore()
        self.method.start_document(self.theta0.initial)
        self.at_theta0 = True

    def state_bytes(self) -> int:
        """Bytes to store the adapted state now (the changed offsets θ − θ0, plus what the method keeps
        outside its parameters, e.g. memory's keys and values)."""
        from adaptsim.loop.offsets import offsets_bytes

        return self.method.state_bytes(offsets_bytes(self.theta0))

    def documents(self, documents: Iterable[Doc]) -> Iterator[Doc]:
        """The documents in order, each started from θ0 under reset=document (the first one always)."""
        for d, doc in enumerate(documents):
            self.start_document(d)
            yield doc

    def start_document(self, d: int) -> None:
        """Document `d` (0, 1, …) of the stream begins: back to θ0 under reset=document, and at the first."""
        if self.reset == "document" or d == 0:
            self.restart()

    @contextmanager
    def adapted_for(self, source: str):
        """θ, fine-tuned for a moment on the earlier pairs the method retrieves for `source` (tm; none for the other
        methods), each with the update rule at a rate scaled by its score; every trained tensor is restored exactly
        on leaving. A divergence there leaves θ as it was: the segment is translated with it and it is counted. Yields
        the moment's record (its retrieval, matches, updates, divergences, seconds; None without a match), which
        `add_moment` counts once the step is made."""
        matches = self.retrieval.matches(source) if self.retrieval else []
        if not matches:
            yield None
            return
        start = time.perf_counter()
        moment = {"retrievals": 1, "matches": len(matches), "updates": 0, "seconds": 0.0, "divergences": 0}
        saved = Snapshot(dict(zip(self.updater.names, self.updater.params)))  # θ as the moment finds it
        try:
            lr, until = self.retrieval.moment  # the moment's rate at a score of 100, and its stopping rule
            for src, ref, score in matches:
                result = self.updater(self.model.pair(src, ref), lr / self.method.lr * score / 100, steps=True,
                                      until=until)
                moment["updates"] += result.updates
        except Diverged as e:
            log.warning("the moment's adaptation for %r diverged (%s); translated without it", source[:40], e.what)
            moment["divergences"] += 1
            saved.restore()
        moment["seconds"] = time.perf_counter() - start
        try:
            yield moment
        finally:
            saved.restore()

    def logprobs(self, batch: dict[str, torch.Tensor]) -> list[float]:
        """The pair's per-token log-probabilities under θ now (`Updater.logprobs`)."""
        return self.updater.logprobs(batch)

    def adapt(self, batch: dict[str, torch.Tensor], where: str,
              revealed: tuple[str, str, str, int, str] | None = None) -> tuple[UpdateResult, bool]:
        """The update on one pair, and whether it diverged (then, under on_divergence=rollback, the document
        starts again from θ0; under stop, the run stops with one line naming `where`); `revealed`: the pair's
        (source, reference) text, document, step and the machine translation it corrected, given to the method after
        its update (tm's and icl's memory, icl's glossary)."""
        try:
            result = self.updater(batch)
            self.at_theta0 = False
            if revealed is not None and self.retrieval:
                self.retrieval.revealed(*revealed)
            return result, False
        except Diverged as e:
            if e.updates == 0 and e.ppl_before is None and self.at_theta0:
                raise UserError(f"{where}: the model's outputs are not finite before any update ({e.what}): "
                                "the model file is broken, or the input is too much for its dtype") from None
            if self.updater.on_divergence == "stop":
                raise UserError(f"{where}: adaptation diverged after {e.updates} update(s): {e.what}; lower "
                                f"method.lr={self.method.lr:g} or set update.on_divergence=rollback") from None
            log.warning("%s: adaptation diverged (%s); the document restarts from θ0", where, e.what)
            self.restart()
            return UpdateResult(e.updates, e.ppl_before, None, 0.0, e.logprobs), True


def share(model: Model, own: set[int] = frozenset()) -> Model:
    """A clone of `model` with modules of its own, sharing its parameters and buffers except the parameters whose
    ids are in `own`, which the clone gets copies of (everywhere they occur: tied matrices stay tied)."""
    memo = {id(t): t for t in (*model.net.parameters(), *model.net.buffers()) if id(t) not in own}
    net = copy.deepcopy(model.net, memo)
    for p in net.parameters():
        if id(p) not in memo:  # a copy of its own: trainable, whatever another run made of the original
            p.requires_grad_(True)
    return model.with_net(net)


def cloned_learners(base: Model, cfgs: list[DictConfig]) -> list[Learner]:
    """One learner per run config, each on a clone of `base` that owns exactly the tensors its method trains.
    Which tensors those are, each method says once built: on a private copy of the model (methods add hooks to
    modules and tensors they are built on), before any run freezes the tensors it shares. (Each learner seeds
    right before building its method, so the runs draw as they would alone.)"""
    names = {id(p): n for n, p in base.net.named_parameters()}
    trained = [set(methods.build(cfg.method, share(base, set(names))).parameters()) for cfg in cfgs]
    return [Learner(share(base, {i for i, n in names.items() if n in own}), method_cfg=cfg.method,
                    update_cfg=cfg["update"], reset=cfg.reset, seed=cfg.seed)  # cfg.update is DictConfig.update
            for cfg, own in zip(cfgs, trained)]
