"""`adaptsim select-fixed`: the tensor list of `fixed`, chosen by performance on held-out data (paper §4:
"determining a subset of parameters by performance on a held-out set", after Wuebker et al. 2018).

    python -m adaptsim select-fixed model=small-ende-probe dataset=gnome_help "dataset.documents=[…]"
    python -m adaptsim run method=fixed model=small-ende-probe …    # reads fixed_lists/small-ende-probe.yaml

The score is the held-out *prequential cross-entropy*: each reference's per-token loss under the model
adapted (as `fixed` adapts: the candidate tensors plus the source-embedding rows of each pair, the paper's
update rule) on the segments before it in its document, i.e. `ppl_before` of a run, token-weighted over
all held-out pairs. Why this score: it is what immediate adaptation exists to lower (the next segment's
loss, before its correction is seen), it is smooth where BLEU and R1 on a few hundred held-out segments
move by a handful of words, it needs no decoding (a candidate costs updates only, so a real search is
affordable), and it is none of the metrics the method is evaluated with.

The search (the paper gives none; an exhaustive one over 2^tensors subsets is out of reach):
1. candidate *blocks* are each layer's sub-modules as the architecture names them (self-attention,
   cross-attention, each feed-forward matrix, each LayerNorm; tensors outside the layers are blocks of their
   own module) — the units a subset is naturally made of, far fewer than tensors;
2. every block is simulated alone; its gain is the drop in held-out loss over adapting the source-embedding
   rows only (what `fixed` with an empty list does);
3. blocks with a positive gain fill the budget in order of gain (one that does not fit is skipped);
4. prefixes of that order (`prefixes` evenly spaced lengths, the full list among them) are simulated, and
   the best-scoring one is written.
The budget is the paper's ~2M non-embedding parameters, capped for small models at the fraction that is of
the paper's ~7.5M (0.27). Each simulation's loss goes to `simulations.jsonl` in the run's directory as it is
computed; `resume=true` takes those back instead of simulating them again (a search on a large model takes hours).
The list records the model it was chosen for (name, parameter count, a hash of tensor names and shapes), so `fixed`
refuses it on any other model.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from collections.abc import Callable
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from adaptsim.data.types import fingerprint
from adaptsim.errors import UserError
from adaptsim.fixed_lists import list_path
from adaptsim.loop.learner import Learner, load
from adaptsim.methods.budget import fill_budget, resolve_budget
from adaptsim.methods.fixed import pair_key
from adaptsim.models import Model, load_model
from adaptsim.progress import progress
from adaptsim.records import SIMULATIONS, JobSummary

log = logging.getLogger("adaptsim")


def main(argv: list[str]) -> int:
    from adaptsim.launch.hydra_app import launch

    return launch(task, "select_fixed", argv, "select-fixed")


def task(cfg: DictConfig, job: JobSummary) -> None:
    report = select(cfg, Path(job.dir) / SIMULATIONS, began=job.began)
    job.update(**report)
    print(f"select-fixed: {len(report['params'])} tensors, {report['parameters']:,} parameters "
          f"(budget {report['budget']:,}), held-out loss {report['baseline_loss']:.4f} -> {report['loss']:.4f} "
          f"over {report['documents']} documents -> {report['output']}", flush=True)


def blocks(model: Model) -> dict[str, list[str]]:
    """Candidate blocks: name -> the non-embedding tensors in it (see the module docstring)."""
    named = model.named_parameters()
    name_of = {id(p): n for n, p in named.items()}
    out: dict[str, list[str]] = {}
    for layer in model.arch.encoder_layers + model.arch.decoder_layers:
        for sub, p in layer.named_parameters():
            name = name_of.get(id(p))
            if name is not None:
                out.setdefault(name[: -len(sub)] + sub.split(".")[0], []).append(name)
    inside = {n for names in out.values() for n in names}
    for name in named:
        if name not in inside and name not in model.arch.embeddings:
            out.setdefault(name.rsplit(".", 1)[0], []).append(name)
    return out


def _record(path: Path, lineno: int, line: str) -> tuple[str, float]:
    """(key, loss) of one line of simulations.jsonl, or a one-line error naming the line."""
    try:
        r = json.loads(line)
        return str(r["key"]), float(r["loss"])
    except (ValueError, TypeError, KeyError):
        raise UserError(f"{path}:{lineno}: not a simulation record ({line[:60]!r}); remove the line (it is "
                        "simulated again) or start in another directory") from None


class HeldOut:
    """Simulates `fixed` with a candidate list on the held-out documents and returns its loss."""

    def __init__(self, cfg: DictConfig, record: Path | None = None):
        self.cfg = cfg
        self.model, self.documents = load(cfg)
        self.pairs = [[self.model.pair(s.source, s.reference) for s in doc.segments] for doc in self.documents]
        self.runs = 0
        self.record = record  # simulations.jsonl: every loss as it is computed; with resume=true, taken back
        self.done: dict[str, float] = {}
        if record is not None and cfg.resume and record.is_file():
            text = record.read_text(encoding="utf-8")
            whole = text[:text.rfind("\n") + 1]  # a line torn by the interruption is dropped
            self.done = dict(_record(record, n, line) for n, line in enumerate(whole.splitlines(), 1))
            record.write_text(whole, encoding="utf-8")  # (each line read first: a refusal writes nothing)
            log.info("select-fixed: %d simulations taken back from %s", len(self.done), record)

    def _model(self) -> Model:
        return load_model(self.cfg.model, self.cfg.device)

    def loss(self, params: list[str]) -> float:
        """Token-weighted mean cross-entropy of every held-out reference before its own update."""
        key = hashlib.sha256("\n".join(params).encode()).hexdigest()[:16]
        if key in self.done:
            self.runs += 1
            return self.done[key]
        model = self._model() if self.runs else self.model  # a fresh θ0 and no hooks of earlier candidates
        self.runs += 1
        loss = self._simulate(model, params)
        if self.record is not None:
            with open(self.record, "a", encoding="utf-8") as f:
                f.write(json.dumps({"key": key, "tensors": len(params), "loss": loss}) + "\n")
        return loss

    def _simulate(self, model: Model, params: list[str]) -> float:
        learner = Learner(model, method_cfg=OmegaConf.merge(self.cfg.method, {"params": params}),
                          update_cfg=self.cfg["update"], reset=self.cfg.reset, seed=self.cfg.seed)
        nll = tokens = 0.0
        for doc, pairs in learner.documents(zip(self.documents, self.pairs)):
            for seg, batch in zip(doc.segments, pairs):
                n = int((batch["labels"] >= 0).sum())
                result, _ = learner.adapt(batch, f"held-out document {seg.doc_id}, segment {seg.seg_id}")
                nll += math.log(result.ppl_before) * n
                tokens += n
        return nll / tokens


def select(cfg: DictConfig, record: Path | None = None, began: Callable[[], None] = lambda: None) -> dict:
    """`record`: the file each simulation's loss is written to (and, with resume=true, read back from); `began` is
    called as the first simulation begins, after every check."""
    if cfg.method.name != "fixed":
        raise UserError(f"method={cfg.method.name}: select-fixed chooses the list of method=fixed "
                        "(leave method= unset)")
    held = HeldOut(cfg, record)
    if not held.documents:
        raise UserError(f"dataset={cfg.dataset.name}: no documents to select on")
    model = held.model
    sizes = {n: p.numel() for n, p in model.named_parameters().items() if n not in model.arch.embeddings}
    budget = resolve_budget(cfg.budget, cfg.budget_fraction, sum(sizes.values()))
    candidates = blocks(model)
    bar = progress(len(candidates) + 1 + cfg.prefixes, "select-fixed", "sim", cfg.progress, cfg.progress_every)
    began()
    base = held.loss([])
    bar.update()
    gains = {}
    for block, names in candidates.items():
        gains[block] = base - held.loss(names)
        bar.update()
    block_size = {b: sum(sizes[n] for n in names) for b, names in candidates.items()}
    helping = sorted((b for b in gains if gains[b] > 0), key=lambda b: -gains[b])
    order = fill_budget(helping, block_size, budget)
    if not helping:
        raise UserError(f"dataset={cfg.dataset.name}: no block lowers the held-out loss on its own; "
                        "nothing to select (more held-out data?)")
    if not order:
        smallest = min(block_size[b] for b in helping)
        raise UserError(f"budget={budget:,}: no block that lowers the held-out loss fits it (the smallest has "
                        f"{smallest:,} parameters); raise budget or budget_fraction")
    lengths = sorted({max(1, round(len(order) * (k + 1) / cfg.prefixes)) for k in range(cfg.prefixes)})
    tried = {}
    for k in lengths:
        tried[k] = held.loss([n for b in order[:k] for n in candidates[b]])
        bar.update()
    bar.close()
    best = min(lengths, key=lambda k: (tried[k], k))
    chosen = [n for b in order[:best] for n in candidates[b]]
    output = Path(cfg.output) if cfg.output else list_path(cfg.name, writing=True)
    report = {"output": str(output), "params": chosen, "parameters": sum(sizes[n] for n in chosen), "budget": budget,
              "loss": tried[best], "baseline_loss": base, "score": "held-out prequential cross-entropy (nats/token)",
              "documents": len(held.documents), "segments": sum(len(p) for p in held.pairs),
              "chosen_for": model_identity(cfg, model), "dataset": cfg.dataset.name, "simulations": held.runs,
              "data_fingerprint": fingerprint(held.documents), "heldout_documents": [d.doc_id for d in held.documents],
              # the held-out pairs as keys, no text: a run of `fixed` checks its test stream is not among them
              "heldout": sorted({pair_key(s.source, s.reference) for d in held.documents for s in d.segments}),
              "reset": cfg.reset, "lr": float(cfg.method.lr), "update": OmegaConf.to_container(cfg["update"]),
              "blocks": {b: {"gain": gains[b], "size": block_size[b]} for b in sorted(gains, key=lambda b: -gains[b])},
              "prefixes": {str(k): {"blocks": order[:k], "loss": tried[k]} for k in lengths}}
    write_list(output, report)
    log.info("select-fixed wrote %s", output)
    return report


def model_identity(cfg: DictConfig, model: Model) -> dict:
    return {"name": str(cfg.model.name), "parameters": sum(p.numel() for p in model.named_parameters().values()),
            "signature": model.signature()}


def write_list(path: Path, report: dict) -> None:
    """The list file `fixed` reads: the model it belongs to, how it was chosen, the tensors."""
    header = [f"# Written by `adaptsim select-fixed`: {len(report['params'])} tensors, {report['parameters']:,} "
              f"parameters (budget {report['budget']:,}), chosen on {report['documents']} held-out documents "
              f"({report['segments']} segments) of dataset={report['dataset']} (data {report['data_fingerprint']}; "
              f"documents {', '.join(report['heldout_documents'])}) with reset={report['reset']}, "
              f"γ = {report['lr']:g}, update {dict(report['update'])}, by {report['score']}:",
              f"# {report['baseline_loss']:.4f} adapting the source-embedding rows only -> {report['loss']:.4f} with "
              f"these tensors ({report['simulations']} simulations). Blocks in order of held-out gain:"]
    header += [f"#   {b}: {v['gain']:+.4f} ({v['size']:,} parameters)" for b, v in report["blocks"].items()]
    body = OmegaConf.to_yaml(OmegaConf.create({"model": report["chosen_for"], "params": report["params"],
                                               "heldout": report["heldout"]}))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(header) + "\n" + body, encoding="utf-8")

