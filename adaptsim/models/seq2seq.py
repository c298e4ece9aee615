"""An encoder-decoder model (Marian/OPUS-MT, adaptsim's own, M2M100/NLLB, mBART-50, T5/mT5, FSMT): the source is the
encoder's input, with the language token or task prefix the model config names, the reference the decoder's labels.
Translation is adaptsim's lean beam search (adaptsim/models/decode/) for Marian models, `generate` for the others."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from adaptsim.errors import UserError
from adaptsim.models import decode
from adaptsim.data.lengths import Over
from adaptsim.models.base import (
    _DECODE,
    NO_LANGUAGES,
    Completions,
    Languages,
    Model,
    Translation,
    _no_context,
    _token_id,
    float32_only,
    languages_from_config,
    load_parts,
)
from adaptsim.models.decode.prefix import PrefixSearch


class Seq2SeqModel(Model):
    """An encoder-decoder: the source is the encoder's input (with the config's language token or prefix), the
    reference the decoder's labels."""

    def __init__(self, net, tokenizer, device: str = "cpu", languages: Languages = NO_LANGUAGES):
        super().__init__(net, tokenizer, device)
        self.languages = languages
        self._set_language_ids()

    def with_net(self, net) -> Seq2SeqModel:
        return Seq2SeqModel(net, self.tokenizer, self.device, self.languages)

    def _set_language_ids(self) -> None:
        lang = self.languages
        if self.arch.needs_target_token and not lang.target_token:
            raise UserError(f"model.languages.target_token is not set: {self.net.config.model_type} checkpoints "
                            "translate into the language of their first target token; set it (e.g. deu_Latn for "
                            "NLLB, __de__ for M2M100, de_DE for mBART-50)")
        self.source_token_id = (_token_id(self.tokenizer, lang.source_token, "source_token") if lang.source_token
                                else None)
        self.target_token_id = (_token_id(self.tokenizer, lang.target_token, "target_token") if lang.target_token
                                else None)

    @classmethod
    def from_config(cls, model_cfg, device: str = "cpu") -> "Seq2SeqModel":
        """Load `model.path` with the config's `model.languages`: what `run`, `bench` and `select-fixed` use."""
        float32_only(model_cfg.dtype)
        return cls.load(model_cfg.path, device, languages_from_config(model_cfg))

    @classmethod
    def load(cls, path: str, device: str = "cpu", languages: Languages = NO_LANGUAGES) -> "Seq2SeqModel":
        """Load from a local directory, or (online) a Hugging Face hub name such as Helsinki-NLP/opus-mt-en-de."""
        return cls(*load_parts(path, "AutoModelForSeq2SeqLM"), device, languages)

    # -- tokens -------------------------------------------------------------------------------------
    @property
    def max_tokens(self) -> int:
        """The longest input (in tokens, with </s>) the model's position table accepts; for relative positions
        (T5) the length the tokenizer says the checkpoint was trained with."""
        return int(self.arch.max_positions or self.tokenizer.model_max_length)

    def count_tokens(self, text: str) -> int:
        return len(self._source_ids(text))

    def over_length(self, side: str, text: str) -> Over | None:
        """Whether a segment's `side` (source, reference) is longer than the position table accepts (both sides are
        counted as the encoder reads a text: the tokenizer and the vocabulary are shared)."""
        n = self.count_tokens(text)
        return Over(n, self.max_tokens, "the model's positions") if n > self.max_tokens else None

    def _source_ids(self, text: str) -> list[int]:
        """The encoder input of a source text: language token and prefix as the config says, then </s>."""
        lang = self.languages
        text = lang.source_prefix + text
        if not lang.tokens:
            return self.tokenizer(text, verbose=False).input_ids  # over-long is checked elsewhere: no warning
        ids = self.tokenizer(text, add_special_tokens=False, verbose=False).input_ids
        head = [self.source_token_id] if self.source_token_id is not None else []
        return head + ids + [self.tokenizer.eos_token_id]

    def _target_body(self, text: str) -> list[int]:
        """A target text's pieces, no special tokens. Multilingual checkpoints have one vocabulary for both
        sides and their tokenizers' target mode only switches language state (M2M100's fails without a
        `tgt_lang`), so with language tokens the plain call is used; Marian's target mode picks target.spm."""
        if self.languages.tokens:
            return self.tokenizer(text, add_special_tokens=False, verbose=False).input_ids
        return self.tokenizer(text_target=text, add_special_tokens=False, verbose=False).input_ids

    def _target_ids(self, text: str) -> list[int]:
        """The labels of a reference: the forced target-language token first when there is one, then </s>."""
        if not self.languages.tokens:
            return self.tokenizer(text_target=text, verbose=False).input_ids
        ids = self._target_body(text)
        head = [self.target_token_id] if self.target_token_id is not None else []
        return head + ids + [self.tokenizer.eos_token_id]

    def pieces(self, text: str) -> list[str]:
        """The sentencepiece pieces of a target-side text (for the subword-level metrics)."""
        return self.tokenizer.convert_ids_to_tokens(self._target_body(text))

    def label_pieces(self, reference: str) -> list[str]:
        """The pieces of a reference as the update's labels hold them (</s> and any language token included):
        one per log-probability that steps.jsonl records."""
        return self.tokenizer.convert_ids_to_tokens(self._target_ids(reference))

    def pair(self, source: str, reference: str, context: Sequence[tuple[str, str]] = ()) -> dict[str, torch.Tensor]:
        """A batch of one (source, reference) pair for `loss` (languages applied as in `translate`)."""
        _no_context(context)
        if not self.languages.tokens and not self.languages.source_prefix:
            batch = dict(self.tokenizer(source, text_target=reference, return_tensors="pt"))
        else:
            ids = torch.tensor([self._source_ids(source)], device=self.device)
            batch = {"input_ids": ids, "attention_mask": torch.ones_like(ids),
                     "labels": torch.tensor([self._target_ids(reference)], device=self.device)}
        # the decoder's inputs given where the model says how it builds them from the labels (FSMT must: it would
        # shift the source): then `token_nll` leaves the labels out of the forward, which computes no loss of its
        # own; M2M100/NLLB say nothing and build them in the forward (which then also computes its loss, unused)
        if hasattr(self.net, "prepare_decoder_input_ids_from_labels"):
            batch["decoder_input_ids"] = self.net.prepare_decoder_input_ids_from_labels(labels=batch["labels"].clone())
        return {k: v.to(self.device) for k, v in batch.items()}

    # -- inference and loss ------------------------------------------------------------------------
    def translate_together(self, models: list["Seq2SeqModel"], source: str, beam_size: int = _DECODE["beam_size"],
                           max_length: int = _DECODE["max_length"], length_penalty: float = _DECODE["length_penalty"],
                           search: str = _DECODE["search"], dtype: str = _DECODE["dtype"],
                           context: Sequence[tuple[str, str]] = ()) -> list[Translation]:
        """`translate` for several clones of this model at once (lockstep runs, adaptsim/loop/lockstep.py): one lean
        beam search over all of them (or transformers' generate, `search`), each model's hypothesis the one it gives
        alone. `dtype` bfloat16: the
        network's products under bf16 autocast; the beam's scores stay float32 (docs/performance.md: what it
        changes)."""
        _no_context(context)
        inputs, forced = self._encoder_inputs(source)
        max_length = self._new_tokens(max_length, forced)
        with torch.autocast(torch.device(self.device).type, dtype=torch.bfloat16, enabled=dtype == "bfloat16"):
            outs = decode.best_ids([m.net for m in models], inputs["input_ids"], inputs["attention_mask"],
                                   beam_size=beam_size, max_new_tokens=max_length, length_penalty=length_penalty,
                                   forced_bos_token_id=forced, search=search)
        special, eos = self._special_ids(), decode.end_tokens(self.net)
        hyps = []
        for out in outs:
            ids = [i for i in out if i not in special]
            # cut: no end of sentence before the limit (at the limit Marian's generation config forces one; what
            # follows the first one is padding)
            end = next((j for j, t in enumerate(out[1:], 1) if t in eos), None)
            hyps.append(Translation(self.tokenizer.decode(ids, skip_special_tokens=True),
                                    self.tokenizer.convert_ids_to_tokens(ids), end is None or end >= max_length))
        return hyps

    def _new_tokens(self, max_length: int, forced: int | None) -> int:
        """`decode.max_length` within the position table: the decoder start token (and a forced language token) take
        positions too."""
        return min(max_length, self.max_tokens - 1 - (forced is not None))

    def _special_ids(self) -> set[int]:
        """The ids that are no text of a hypothesis (a forced language token among them)."""
        return super()._special_ids() | {self.target_token_id}

    def _encoder_inputs(self, source: str) -> tuple[dict[str, torch.Tensor], int | None]:
        """The encoder's inputs for a source, and the target-language token the decoder must begin with (or None)."""
        if self.languages.tokens or self.languages.source_prefix:
            ids = torch.tensor([self._source_ids(source)], device=self.device)
            return {"input_ids": ids, "attention_mask": torch.ones_like(ids)}, self.target_token_id
        return dict(self.tokenizer(source, return_tensors="pt").to(self.device)), None

    def completions(self, source: str, beam_size: int = _DECODE["beam_size"], max_length: int = _DECODE["max_length"],
                    length_penalty: float = _DECODE["length_penalty"], search: str = _DECODE["search"],
                    dtype: str = "float32", context: Sequence[tuple[str, str]] = ()) -> Completions:
        """What the system proposes for `source` while a simulated translator corrects its hypothesis
        (`metrics.interactive`, adaptsim/loop/interactive.py): one prefix search kept over all the corrections, started
        at the first (so a hypothesis needing none costs nothing). Its hypotheses are as long as `translate`'s may be.
        It searches in float32 (decode.dtype=bfloat16 is refused with metrics.interactive:
        adaptsim/loop/settings.py)."""
        if dtype != "float32":
            raise ValueError(f"dtype={dtype!r}: the prefix search runs in float32")
        _no_context(context)
        def prefixes() -> tuple[list[int], PrefixSearch]:
            inputs, forced = self._encoder_inputs(source)
            head = [decode.start_token(self.net)] + ([forced] if forced is not None else [])
            longest = 1 + self._new_tokens(max_length, forced)  # translate_together's bound
            return head, PrefixSearch(self.net, inputs["input_ids"], inputs["attention_mask"], beam_size=beam_size,
                                      max_length=longest, length_penalty=length_penalty, search=search)
        return Completions(self, prefixes)

    def _logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """The output layer, then the fixed `final_logits_bias` where the architecture adds one (Marian, mBART)."""
        logits = self.arch.output_layer(hidden)
        final = getattr(self.net, "final_logits_bias", None)
        if final is not None:
            logits = logits + final
        return logits
