"""`adaptsim train`: train a Marian-architecture base model from scratch on parallel text (adaptsim/basemodel/
trainer.py), as a Hydra job (configs/train.yaml).

    python -m adaptsim train model=paper-transformer train.source=train.en train.target=train.de
"""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig


def main(argv: list[str]) -> int:
    from adaptsim.launch.hydra_app import launch

    return launch(task, "train", argv, "train")


def task(cfg: DictConfig, job) -> None:
    """The job: train, and record in its summary.json what was trained where (training.json beside the
    model keeps the same figures with the model)."""
    from adaptsim.basemodel.trainer import train

    summary = train(cfg, began=job.began)
    job.update(output=str(Path(str(cfg.train.out)).expanduser()), **{k: v for k, v in summary.items() if k != "config"})
