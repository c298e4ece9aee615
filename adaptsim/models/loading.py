"""One loader above both kinds of model: the checkpoint, not a setting, says which class it needs."""

from __future__ import annotations

from adaptsim.models.base import Model, check_languages, decoder_only
from adaptsim.models.causal import CausalModel
from adaptsim.models.seq2seq import Seq2SeqModel


def load_model(model_cfg, device: str = "cpu") -> Model:
    """The model of a composed model config (`model.path`, its languages or prompt) as the class its checkpoint
    needs: a decoder-only language model as `CausalModel`, any other as `Seq2SeqModel`. What `run`, `bench`,
    `select-fixed`, `serve` and a resume's checks load; no setting says which, the checkpoint does."""
    check_languages(model_cfg)
    if decoder_only(model_cfg.path):
        return CausalModel.from_config(model_cfg, device)
    return Seq2SeqModel.from_config(model_cfg, device)
