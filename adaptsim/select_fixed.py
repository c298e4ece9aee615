"""`adaptsim select-fixed`: the tensor list of `fixed`, chosen on held-out data (paper §5.1, after Wuebker
et al. 2018: "selecting a subset of parameters on held-out data").

    python -m adaptsim select-fixed model=small-ende-probe dataset=gnome_help budget=2000000
    python -m adaptsim run method=fixed_small-ende-probe …

Runs `lasso` (its settings: method.lambda=…, method.budget=…) over every held-out document from θ0, as the
simulation would but without translating (hypotheses do not change the updates), and counts for each
non-embedding tensor in how many documents it differs from θ0 at the document's end. The most often
selected tensors (ties: larger summed ‖δ‖ first) that fit in `budget` are written as a ready method config.
Embedding matrices are left out of the list: `fixed` adds the source embeddings itself, row by row.
"""

from __future__ import annotations

import json
import logging
from collections import Counter, defaultdict
from pathlib import Path

import torch
from omegaconf import DictConfig, OmegaConf
from tqdm import tqdm

from adaptsim import CONFIG_DIR
from adaptsim.errors import UserError
from adaptsim.methods.lasso import Lasso, fill_budget, resolve_budget
from adaptsim.outputs import write_json_atomic
from adaptsim.simulate import prepare

log = logging.getLogger("adaptsim")

def main(argv: list[str]) -> int:
    from adaptsim.hydra_app import launch

    return launch(task, "select_fixed", argv, "select-fixed")


def task(cfg: DictConfig) -> None:
    from hydra.core.hydra_config import HydraConfig

    run_dir = Path(HydraConfig.get().runtime.output_dir)
    report = select(cfg)
    write_json_atomic(run_dir / "select_fixed.json", report)
    print(f"select-fixed: {len(report['params'])} tensors, {report['parameters']:,} parameters "
          f"(budget {report['budget']:,}) from {report['documents']} documents -> {report['output']}", flush=True)


def select(cfg: DictConfig) -> dict:
    model, documents, method, updater, theta0 = prepare(cfg)
    if not documents:
        raise UserError(f"dataset={cfg.dataset.name}: no documents to select on")
    if not isinstance(method, Lasso):
        raise UserError(f"method={cfg.method.name}: select-fixed selects with lasso (leave method= unset)")
    counts, norms = Counter(), defaultdict(float)
    for doc in tqdm(documents, disable=not cfg.progress, desc="select-fixed", unit="doc", dynamic_ncols=True):
        theta0.restore()
        method.start_document(theta0.initial)
        for seg in doc.segments:
            updater(model.pair(seg.source, seg.reference))
        with torch.no_grad():
            for name, p in zip(method.names, method.tensors):
                norm = (p - theta0.initial[name]).norm().item()
                if norm > 0:
                    counts[name] += 1
                    norms[name] += norm
    sizes = dict(zip(method.names, method.sizes))
    budget = resolve_budget(cfg.budget, sum(sizes.values()), "budget")
    ranked = sorted(counts, key=lambda n: (-counts[n], -norms[n]))
    chosen = fill_budget(ranked, sizes, budget)
    output = Path(cfg.output) if cfg.output else CONFIG_DIR / "method" / f"fixed_{cfg.name}.yaml"
    write_config(output, f"fixed_{cfg.name}", chosen, counts, len(documents), cfg, budget)
    log.info("select-fixed wrote %s", output)
    return {"output": str(output), "params": chosen, "parameters": sum(sizes[n] for n in chosen), "budget": budget,
            "documents": len(documents), "model": cfg.model.name, "dataset": cfg.dataset.name,
            "lasso": OmegaConf.to_container(cfg.method),
            "selected": {n: {"documents": counts[n], "norm_sum": norms[n], "size": sizes[n]}
                         for n in ranked}}


def write_config(path: Path, name: str, params: list[str], counts: Counter, documents: int, cfg: DictConfig,
                 budget: int) -> None:
    """A self-contained method config: `fixed`'s own settings with this list (usable where fixed.yaml is not)."""
    base = OmegaConf.load(CONFIG_DIR / "method" / "fixed.yaml")
    lasso = cfg.method
    lines = [f"# Written by `adaptsim select-fixed`: the non-embedding tensors lasso (λ={lasso['lambda']}, "
             f"budget={lasso.budget}, embedding_budget={lasso.embedding_budget})",
             f"# selected most often at the end of {documents} held-out documents of dataset={cfg.dataset.name}, "
             f"model={cfg.model.name}, within {budget:,} parameters.",
             f"# Use: method={path.stem} (in configs/method/) or method=fixed 'method.params=[…]'."]
    for key, value in OmegaConf.to_container(base).items():
        if key == "params":
            lines += ["params:"] + ([f"  - {json.dumps(p)}  # {counts[p]}/{documents}" for p in params] or ["  []"])
        else:
            lines.append(f"{key}: {json.dumps(name if key == 'name' else value)}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
