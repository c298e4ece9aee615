"""The model layer (docs/design.md §2): what every model offers the loop (`base.Model`), an encoder-decoder
(`seq2seq`), a decoder-only language model asked by a prompt (`causal`, `prompt`), the one loader above both
(`loading`), the architectures' descriptions (`arch`) and the searches (`decode/`)."""

from adaptsim.models.base import (
                                  NO_LANGUAGES,
                                  Completions,
                                  Languages,
                                  Model,
                                  Translation,
                                  decoder_only,
                                  languages_from_config,
                                  load_parts,
                                  token_nll,
)
from adaptsim.models.causal import CausalModel
from adaptsim.models.loading import load_model
from adaptsim.models.seq2seq import Seq2SeqModel

__all__ = ["NO_LANGUAGES", "CausalModel", "Completions", "Languages", "Model", "Seq2SeqModel", "Translation",
           "decoder_only", "languages_from_config", "load_model", "load_parts", "token_nll"]
