"""The moment of `tm`'s adaptation, chosen on held-out data: how fast and how hard to train on a retrieved match.

    python scripts/experiments/choose_tm.py [model=demo dataset=demo_heldout …]

For every held-out pair (A, A′) alone, from θ0: the moment's adaptation on (A, A′) as an exact match (score 100),
then A translated. A setting is as good as the share of pairs translated exactly as their post-edit (what a
translator expects of a 100 % match), at the cost of the updates it takes; printed for a grid of the moment's
learning rate and stopping rule. configs/method/tm.yaml records the choice: the cheapest setting that reproduces
at least 90 % of the pairs.
"""

from __future__ import annotations

import itertools
import sys

from omegaconf import OmegaConf

from adaptsim.launch.hydra_app import compose
from adaptsim.loop.learner import Learner, load

LRS, THRESHOLDS, MOST = (0.01, 0.03, 0.1, 0.3), (2.0, 1.05, 1.01), (3, 10, 30)  # the grid


def main(overrides: list[str]) -> None:
    cfg = compose("run", ["method=tm", "method.online=false", "method.k=1", "method.threshold=100",
                          "dataset=demo_heldout", *overrides])
    model, documents = load(cfg)
    pairs = [(s.source, s.reference) for d in documents for s in d.segments]
    print(f"{cfg.model.name} on {cfg.dataset.name}: {len(pairs)} held-out pairs, each a 100 % match of itself")
    print("| moment_lr | ppl ≤ | max updates | reproduced | updates per match |")
    print("|--:|--:|--:|--:|--:|")
    for lr, threshold, most in itertools.product(LRS, THRESHOLDS, MOST):
        method = OmegaConf.merge(cfg.method, {"moment_lr": lr, "moment_ppl_threshold": threshold,
                                              "moment_max_updates": most})
        learner = Learner(model, method_cfg=method, update_cfg=cfg["update"], reset="document", seed=cfg.seed)
        same = updates = matches = 0
        for source, reference in pairs:
            learner.restart()
            learner.method.revealed(source, reference)
            with learner.adapted_for(source) as moment:
                same += model.translate(source, **cfg.decode).text == reference
            updates, matches = updates + moment["updates"], matches + moment["matches"]
        updates = updates / max(matches, 1)
        print(f"| {lr:g} | {threshold:g} | {most} | {same}/{len(pairs)} | {updates:.1f} |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
