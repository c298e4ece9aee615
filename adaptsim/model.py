"""The model layer: a seq2seq NMT model + its sentencepiece tokenizer, translating and scoring one pair.

The model stays in eval() mode for its whole life: the paper adapts without dropout, so updates run
in eval mode with gradients enabled.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import NamedTuple

import torch
from torch import nn

from adaptsim.arch import Architecture, describe
from adaptsim.errors import UserError

log = logging.getLogger(__name__)


def _from_pretrained(cls, source: str, path, where: Path | None, what: str):
    """`cls.from_pretrained(source)`, failing with one line. A broken local copy (a directory with only
    config.json, an empty or truncated model.safetensors) makes transformers/safetensors raise TypeError,
    SafetensorError, …: name the file (`where`) instead of showing their traceback."""
    try:
        return cls.from_pretrained(source)
    except OSError as e:
        raise UserError(f"model.path={path}: could not load ({_first_line(e)}); offline, "
                        "point model.path at a local copy of the model") from None
    except Exception as e:
        if where is None:
            raise
        raise UserError(f"{where}: cannot load the {what} ({type(e).__name__}: {_first_line(e)}); the model "
                        "directory is incomplete or a file is truncated: save or copy the model again") from None


def _first_line(e: Exception) -> str:
    return (str(e).strip().splitlines() or [""])[0][:200]


def _weights_file(local: Path) -> Path:
    return next((local / n for n in ("model.safetensors", "pytorch_model.bin") if (local / n).exists()), local)


class Translation(NamedTuple):
    """A hypothesis: its text, and the subword pieces the model generated (what the subword metrics score)."""
    text: str
    pieces: list[str]


class Seq2SeqModel:
    def __init__(self, net, tokenizer, device: str = "cpu"):
        self.net = net.to(device).eval()
        self.tokenizer = tokenizer
        self.device = device
        self.arch: Architecture = describe(net)
        for name, param in self.net.named_parameters():
            if name in self.arch.constants:
                param.requires_grad_(False)
        self._output_bias_hook = None

    @classmethod
    def load(cls, path: str, device: str = "cpu") -> "Seq2SeqModel":
        """Load from a local directory, or (online) a Hugging Face hub name such as Helsinki-NLP/opus-mt-en-de."""
        from transformers import AutoModelForSeq2SeqLM, AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()

        local = Path(path).expanduser()
        looks_local = local.exists() or str(path).startswith((".", "/", "~")) or str(path).count("/") != 1
        if looks_local and not (local / "config.json").is_file():
            raise UserError(f"model.path={path}: no model there (expected a directory with config.json, "
                            "a tokenizer and weights, e.g. from `adaptsim train` or a downloaded OPUS-MT model)")
        source = str(local) if looks_local else str(path)
        tokenizer = _from_pretrained(AutoTokenizer, source, path, local if looks_local else None, "tokenizer")
        net = _from_pretrained(AutoModelForSeq2SeqLM, source, path, _weights_file(local) if looks_local else None,
                               "model")
        log.info("loaded %s (%s, %d parameters)", path, net.config.model_type, sum(p.numel() for p in net.parameters()))
        return cls(net, tokenizer, device)

    # -- tokens -------------------------------------------------------------------------------------
    @property
    def max_tokens(self) -> int:
        """The longest input (in tokens, with </s>) the model's position table accepts."""
        return int(self.net.config.max_position_embeddings)

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer(text, verbose=False).input_ids)  # over-long is what we check for: no warning

    def pieces(self, text: str) -> list[str]:
        """The sentencepiece pieces of a target-side text (for the subword-level metrics)."""
        ids = self.tokenizer(text_target=text, add_special_tokens=False, verbose=False).input_ids
        return self.tokenizer.convert_ids_to_tokens(ids)

    def pair(self, source: str, reference: str) -> dict[str, torch.Tensor]:
        """A batch of one (source, reference) pair for `loss`."""
        batch = self.tokenizer(source, text_target=reference, return_tensors="pt")
        return {k: v.to(self.device) for k, v in batch.items()}

    # -- inference and loss ------------------------------------------------------------------------
    @torch.inference_mode()
    def translate(self, source: str, beam_size: int = 5, max_length: int = 256,
                  length_penalty: float = 1.0) -> Translation:
        inputs = self.tokenizer(source, return_tensors="pt").to(self.device)
        max_length = min(max_length, self.max_tokens - 1)  # the decoder start token takes one position
        out = self.net.generate(**inputs, num_beams=beam_size, max_new_tokens=max_length,
                                length_penalty=length_penalty, do_sample=False, early_stopping=True)
        special = set(self.tokenizer.all_special_ids)
        ids = [i for i in out[0].tolist() if i not in special]
        return Translation(self.tokenizer.decode(ids, skip_special_tokens=True),
                           self.tokenizer.convert_ids_to_tokens(ids))

    def loss(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Mean per-token cross-entropy of the reference (no label smoothing); exp() is the perplexity."""
        return self.net(**batch).loss

    # -- parameters --------------------------------------------------------------------------------
    def named_parameters(self) -> dict[str, nn.Parameter]:
        return {n: p for n, p in self.net.named_parameters() if n not in self.arch.constants}

    def signature(self) -> str:
        """A short hash of the trainable tensors' names and shapes: what a list of tensors chosen for one
        model (method=fixed) must match to be used on another."""
        import hashlib

        text = "\n".join(f"{n}:{tuple(p.shape)}" for n, p in self.named_parameters().items())
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def add_output_bias(self) -> nn.Parameter:
        """A second, zero-initialised bias on the output logits (Michel & Neubig 2018), trained by `bias`/`lasso`."""
        if self._output_bias_hook is not None:
            raise RuntimeError("the output bias was added already")
        vocab = self.arch.output_layer.weight.shape[0]
        bias = nn.Parameter(torch.zeros(vocab, device=self.device))
        self._output_bias_hook = self.arch.output_layer.register_forward_hook(lambda _m, _i, out: out + bias)
        return bias

