"""What every model offers the loop (`Model`): translating and scoring one pair, the trainable tensors, completions
for an interactive translator; and loading a checkpoint's parts (`load_parts`).

adaptsim/models/seq2seq.py `Seq2SeqModel` is an encoder-decoder, adaptsim/models/causal.py `CausalModel` a
decoder-only language model asked to translate by a prompt; adaptsim/models/loading.py `load_model` loads
`model.path` as the one its checkpoint is. The model stays in eval() mode for its whole life: the paper adapts
without dropout, so updates run in eval mode with gradients enabled.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import torch
from torch import nn

from adaptsim import config_defaults
from adaptsim.errors import UserError
from adaptsim.models.arch import Architecture, describe
from adaptsim.models.decode.prefix import PieceIndex, PrefixSearch, Spelling
from adaptsim.rules import Choice

log = logging.getLogger(__name__)
# `model.dtype`: how the weights are loaded (auto: the checkpoint's stored dtype on a GPU, float32 on a CPU)
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
_STORED = {"F32": torch.float32, "BF16": torch.bfloat16, "F16": torch.float16}  # safetensors' names of them


def _from_pretrained(cls, source: str, path, where: Path | None, what: str, **kwargs):
    """`cls.from_pretrained(source, **kwargs)`, failing with one line. A broken local copy (a directory with only
    config.json, an empty or truncated model.safetensors) makes transformers/safetensors raise TypeError,
    SafetensorError, …: name the file (`where`) instead of showing their traceback."""
    try:
        return cls.from_pretrained(source, **kwargs)
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


def _local(path) -> Path | None:
    """The directory `model.path` names, or None for a hub name (owner/name, not a directory here)."""
    local = Path(path).expanduser()
    looks_local = local.exists() or str(path).startswith((".", "/", "~")) or str(path).count("/") != 1
    return local if looks_local else None


def weights_dtype(setting, device: str, path) -> torch.dtype | str:
    """`model.dtype` resolved for `device`: float32, bfloat16, float16 as set; auto = float32 on a CPU (its bf16
    products come from autocast, decode.dtype and update.dtype, over float32 weights) and on a GPU the dtype the
    checkpoint stores (`stored_dtype`): an LLM stored in bf16 takes half the memory of float32 and runs its native
    kernels; float32 where nothing says, and "auto" for a hub name (transformers reads its config)."""
    setting = Choice(("auto", *DTYPES)).check("model.dtype", setting)
    if setting != "auto":
        return DTYPES[setting]
    if not str(device).startswith("cuda"):
        return torch.float32
    local = _local(path)
    if local is None:
        return "auto"
    return stored_dtype(local) or torch.float32


def float32_only(setting) -> None:
    """An encoder-decoder's `model.dtype`: float32 only (its lean beam search and the update rule's record are float32
    arithmetic; decode.dtype and update.dtype give it bf16 products), anything else refused in one line."""
    if Choice(("auto", *DTYPES)).check("model.dtype", setting) != "float32":
        raise UserError(f"model.dtype={setting}: an encoder-decoder model loads float32 (decode.dtype and update.dtype "
                        "autocast its products to bf16); model.dtype is for decoder-only models")


def stored_dtype(local: Path) -> torch.dtype | None:
    """The floating dtype that holds most of a local checkpoint's weights, by the safetensors header (the first shard
    of a sharded one), else config.json's `dtype` (`torch_dtype` before transformers 5); None where neither says. The
    header first: config.json may name another dtype than the file stores (data/demo/lm: float32, stored float16)."""
    files = [local / "model.safetensors"]
    index = local / "model.safetensors.index.json"
    if index.is_file():
        files = [local / next(iter(json.loads(index.read_text())["weight_map"].values()))]
    for file in (f for f in files if f.is_file()):
        with open(file, "rb") as f:
            header = json.loads(f.read(int.from_bytes(f.read(8), "little")))
        counts: dict[torch.dtype, int] = {}
        for name, entry in header.items():
            if name != "__metadata__" and entry["dtype"] in _STORED:
                dtype = _STORED[entry["dtype"]]
                counts[dtype] = counts.get(dtype, 0) + math.prod(entry["shape"])
        if counts:
            return max(counts, key=counts.get)
    config = local / "config.json"
    if config.is_file():
        named = json.loads(config.read_text())
        name = named.get("dtype") or named.get("torch_dtype")
        return DTYPES.get(name) if isinstance(name, str) else None
    return None


def load_parts(path: str, auto_class: str, dtype: torch.dtype | str = torch.float32):
    """(network, tokenizer) of `path`, a local directory or (online) a Hugging Face hub name, the network by
    transformers' `auto_class` (AutoModelForSeq2SeqLM, AutoModelForCausalLM), its weights in `dtype`
    (`weights_dtype`)."""
    import transformers
    from transformers import AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()

    local = _local(path)
    if local is not None and not (local / "config.json").is_file():
        raise UserError(f"model.path={path}: no model there (expected a directory with config.json, "
                        "a tokenizer and weights, e.g. from `adaptsim train` or a downloaded OPUS-MT model)")
    source = str(local if local is not None else path)
    tokenizer = _from_pretrained(AutoTokenizer, source, path, local, "tokenizer")
    # float32 by default whatever the file stores (a model kept in fp16 to halve its size, scripts/device/fp16.py):
    # the update's SGD steps and the recorded perplexities are float32 arithmetic (update.dtype only autocasts)
    net = _from_pretrained(getattr(transformers, auto_class), source, path,
                           _weights_file(local) if local is not None else None, "model", dtype=dtype)
    log.info("loaded %s (%s, %d parameters, %s)", path, net.config.model_type,
             sum(p.numel() for p in net.parameters()), str(next(net.parameters()).dtype).removeprefix("torch."))
    return net, tokenizer


# generation-config settings that change which hypothesis wins (and so the scores), which a checkpoint may ship with
# (Qwen2.5-Instruct: repetition_penalty 1.05, which transformers applies to every prompt token: the quoted post-edits
# of icl) and adaptsim's decode settings do not ask for: reset to transformers' neutral values
PENALTIES = ("repetition_penalty", "encoder_repetition_penalty", "no_repeat_ngram_size", "encoder_no_repeat_ngram_size",
             "exponential_decay_length_penalty", "sequence_bias", "renormalize_logits", "diversity_penalty",
             "min_length", "min_new_tokens")


def neutral_generation(config) -> dict:
    """Reset `PENALTIES` in a generation config to GenerationConfig()'s values; what was set before, by name."""
    from transformers import GenerationConfig

    default, reset = GenerationConfig(), {}
    for key in PENALTIES:
        value, neutral = getattr(config, key, None), getattr(default, key, None)
        if value != neutral:
            reset[key] = value
            setattr(config, key, neutral)
    return reset


def check_languages(model_cfg) -> None:
    """Refuse, before the weights load, a checkpoint whose tokenizer names a language pair (a Marian/OPUS-MT
    model's tokenizer_config.json: source_lang, target_lang) other than the run's model.source_lang and
    model.target_lang: the run would be labelled and scored (stopwords, tokenisation) as the other language."""
    local = _local(model_cfg.path)
    file = local / "tokenizer_config.json" if local is not None else None
    if file is None or not file.is_file():
        return
    from adaptsim.metrics.segmenters import base_language

    named = json.loads(file.read_text())
    for side in ("source_lang", "target_lang"):
        theirs, ours = named.get(side), model_cfg.get(side)
        if isinstance(theirs, str) and theirs and ours and base_language(theirs) != base_language(ours):
            raise UserError(f"model.{side}={ours}, but the model at model.path={model_cfg.path} is "
                            f"{named.get('source_lang')}→{named.get('target_lang')} (its tokenizer_config.json): "
                            f"set model.source_lang and model.target_lang to its languages, or choose its model= "
                            f"entry (docs/usage.md, \"Your own data and model\")")


def decoder_only(path) -> bool:
    """Whether `path` holds a decoder-only language model, by its configuration's `is_encoder_decoder` (which
    transformers sets for every model type). False where there is no configuration to read or transformers does
    not know its model type: loading it as a seq2seq model then says why, in one line."""
    local = _local(path)
    if local is not None and not (local / "config.json").is_file():
        return False
    from transformers import AutoConfig

    try:  # (a hub name offline: the one line loading gives)
        config = _from_pretrained(AutoConfig, str(local if local is not None else path), path, None, "configuration")
    except (ValueError, KeyError):  # a model type transformers does not know: loading says so
        return False
    return not config.is_encoder_decoder


class Translation(NamedTuple):
    """A hypothesis: its text, the subword pieces the model generated (what the subword metrics score), whether it
    was cut at `decode.max_length` (no end of sentence generated), and whether a decoder-only model's reply held
    reasoning only (its text then empty: adaptsim/models/causal.py `without_reasoning`)."""
    text: str
    pieces: list[str]
    cut: bool = False
    reasoning: bool = False


# -- languages: how a multilingual checkpoint is told the source and target language ----------------
@dataclass(frozen=True)
class Languages:
    """The model config's `languages` block (keys and their "none" values: configs/model/_common.yaml).

    - `source_token`: prepended to the source: `<code> X </s>` (NLLB, M2M100, mBART-50).
    - `target_token`: the first target token. translate forces it as the first generated token
      (`forced_bos_token_id`, how these models are meant to be decoded); the loss puts it first in the
      pair's labels, so the decoder reads `<start> <code> Y` and is trained on `<code> Y </s>` — the
      sequence it produces when translating. (Its own log-probability is in the loss, as in fairseq and
      transformers' fine-tuning; it is near 0 for a trained model.)
    - `source_prefix`: text put before the source (T5's task prefix "translate English to German: ").

    When a token is set, adaptsim writes the ids itself instead of asking the tokenizer for its special
    tokens: tokenizer classes keep the languages as mutable state (`src_lang`/`tgt_lang`) and place them
    differently across versions (NLLB's `legacy_behaviour` puts the code after `</s>`), so building the
    sequence here makes what the model sees the config's, the same in translate and loss, and testable.
    The layout is that of NLLB (non-legacy), M2M100 and mBART-50; mBART-cc25 fine-tunes (`X </s> <code>`,
    decoder start = the code) use another and are not supported by it.
    """
    source_token: str | None
    target_token: str | None
    source_prefix: str

    @property
    def tokens(self) -> bool:
        return bool(self.source_token or self.target_token)


_DECODE = config_defaults("run.yaml:decode")  # decoding's defaults (their home: configs/run.yaml)
NO_LANGUAGES = Languages(None, None, "")  # a monolingual checkpoint (Marian, OPUS-MT, `adaptsim train`)


def languages_from_config(model_cfg) -> Languages:
    """`model.languages` of a composed model config."""
    block = model_cfg.languages
    return Languages(block.source_token or None, block.target_token or None, str(block.source_prefix or ""))


def _token_id(tokenizer, token: str, key: str) -> int:
    """The id of a language token; one line naming the setting when the tokenizer does not know it."""
    ids = tokenizer.convert_tokens_to_ids([token])
    if not ids or ids[0] is None or ids[0] == tokenizer.unk_token_id:
        raise UserError(f"model.languages.{key}={token}: not a token of this model's tokenizer (language tokens "
                        "look like deu_Latn for NLLB, __de__ for M2M100, de_DE for mBART-50)")
    return int(ids[0])


class Model:
    """What a seq2seq model and a decoder-only one share: the network (eval mode, on its device), its tokenizer and
    `Architecture`; the trainable tensors; a pair's per-token loss from the logits the network computes; the output
    layer's inputs and the loss from them (`bias`); the second output bias; the vocabulary index of the simulated
    translator. A subclass says how a pair is laid out and fed (`pair`, `_forward_inputs`, `output_labels`), what
    follows the output layer (`_logits`), and how it translates (`translate_together`, `completions`; `translate` is
    `translate_together` alone)."""

    reads_context = False  # whether earlier (source, post-edit) pairs can go into its input (icl)
    languages = NO_LANGUAGES  # a multilingual seq2seq checkpoint's language tokens (`Seq2SeqModel`)

    def __init__(self, net, tokenizer, device: str = "cpu"):
        self.net = net.to(device).eval()
        self.tokenizer = tokenizer
        self.device = device
        self.arch: Architecture = describe(net)
        # `decode.max_length` is the one bound on a hypothesis: the checkpoint's own (512 in OPUS-MT's generation
        # config) would make every `generate` call warn that two bounds are set
        self.net.generation_config.max_length = None
        self.reset_generation = neutral_generation(self.net.generation_config)
        if self.reset_generation:
            log.info("the checkpoint's generation config reset to neutral (adaptsim's decode settings decide): %s",
                     ", ".join(f"{k}={v}" for k, v in self.reset_generation.items()))
        for name, param in self.net.named_parameters():
            if name in self.arch.constants:
                param.requires_grad_(False)
        self._output_bias_hook = None
        self._pieces_index: PieceIndex | None = None  # the target vocabulary for prefix searches (`completions`)

    def with_net(self, net) -> Model:
        """This model (tokenizer, settings) around another network: a clone's (adaptsim/loop/lockstep.py `share`)."""
        raise NotImplementedError

    # -- a pair's loss ----------------------------------------------------------------------------------
    def _forward_inputs(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        return _forward_inputs(batch)

    def output_labels(self, labels: torch.Tensor) -> torch.Tensor:
        """What each position the output layer computes must predict (-100: nothing), from a pair's labels: the
        labels themselves where the decoder reads the target shifted (seq2seq)."""
        return labels

    def source_token_ids(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """The ids of the pair's source side, what the model reads before the target (`fixed`'s embedding rows)."""
        return batch["input_ids"]

    def _logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """The logits from the output layer's inputs, as the network's forward computes them after that layer."""
        return self.arch.output_layer(hidden)

    def token_nll(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Each reference token's negative log-probability (nats; </s> included), teacher-forced: their mean is
        the update rule's loss, the values themselves are what CXMI compares across runs (docs/design.md §4)."""
        logits = self.net(**self._forward_inputs(batch)).logits
        return token_nll(logits, self.output_labels(batch["labels"]))

    def loss(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Mean per-token cross-entropy of the reference (no label smoothing); exp() is the perplexity."""
        return self.token_nll(batch).mean()

    @torch.no_grad()
    def output_inputs(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """What the output layer receives for the pair (the decoder's last states, as the architecture
        prepares them): with everything below the output layer frozen, `nll_from_output_inputs` then gives
        the pair's loss without running the network again."""
        seen = []
        hook = self.arch.output_layer.register_forward_hook(lambda _m, inputs, _out: seen.append(inputs[0]))
        try:
            self.net(**self._forward_inputs(batch))
        finally:
            hook.remove()
        return seen[-1]

    def nll_from_output_inputs(self, hidden: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """`token_nll` from `output_inputs`: the output layer (with its hooks, e.g. a second bias) and what the
        architecture applies after it (`_logits`), in the same order of operations as transformers' forward, so the
        values are identical."""
        return token_nll(self._logits(hidden), self.output_labels(labels))

    # -- translating (what the stepper, lockstep, serve and the simulated translator call) -------------------
    def translate(self, source: str, beam_size: int = _DECODE["beam_size"], max_length: int = _DECODE["max_length"],
                  length_penalty: float = _DECODE["length_penalty"], search: str = _DECODE["search"],
                  dtype: str = _DECODE["dtype"], context: Sequence[tuple[str, str]] = ()) -> Translation:
        """The best hypothesis for `source` (after `context`, earlier pairs, where the model reads them): this model's
        `translate_together` alone."""
        return self.translate_together([self], source, beam_size, max_length, length_penalty, search, dtype,
                                       context)[0]

    def translate_together(self, models: list[Model], source: str, beam_size: int = _DECODE["beam_size"],
                           max_length: int = _DECODE["max_length"], length_penalty: float = _DECODE["length_penalty"],
                           search: str = _DECODE["search"], dtype: str = _DECODE["dtype"],
                           context: Sequence[tuple[str, str]] = ()) -> list[Translation]:
        """`translate` for several clones of this model at once (lockstep's runs, adaptsim/loop/lockstep.py), each
        model's hypothesis the one it gives alone."""
        raise NotImplementedError

    def fitting(self, source: str, context: Sequence[tuple[str, str]]) -> int:
        """How many of `context`'s first pairs to leave out for the input to fit the model (a decoder-only model's
        prompt budget: `CausalModel.fitting`); a model that reads no context takes none."""
        _no_context(context)
        return 0

    def translate_runs(self, models: list[Model], source: str, contexts: Sequence[Sequence[tuple[str, str]]],
                       **decode) -> list[tuple[Translation | UserError, float]]:
        """`source` translated by each of `models` (clones of this one: lockstep's runs) after its own context, with
        its share of the seconds: the runs whose contexts are the same in one `translate_together` (`decode`: its
        settings). A search that fails with a one-line error fails its runs alone (the error in their translation's
        place)."""
        together: dict[tuple, list[int]] = {}
        for i, context in enumerate(contexts):
            together.setdefault(tuple(context), []).append(i)
        out: list = [None] * len(models)
        for context, runs in together.items():
            start = time.perf_counter()
            try:
                hyps = self.translate_together([models[i] for i in runs], source, context=context, **decode)
            except UserError as e:
                hyps = [e] * len(runs)
            share = (time.perf_counter() - start) / len(runs)
            for i, hyp in zip(runs, hyps):
                out[i] = (hyp, share)
        return out

    def completions(self, source: str, beam_size: int = _DECODE["beam_size"], max_length: int = _DECODE["max_length"],
                    length_penalty: float = _DECODE["length_penalty"], search: str = _DECODE["search"],
                    dtype: str = "float32", context: Sequence[tuple[str, str]] = ()) -> Completions:
        """What the system proposes for `source` while a translator corrects its hypothesis (`metrics.interactive`,
        adaptsim/loop/interactive.py; `adaptsim serve`)."""
        raise NotImplementedError

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

    # -- the simulated translator ------------------------------------------------------------------
    def _end_id(self) -> int:
        """The token that ends a hypothesis (what a simulated translator's word may be followed by)."""
        return self.tokenizer.eos_token_id

    def _special_ids(self) -> set[int]:
        """The ids that are no text of a hypothesis."""
        return set(self.tokenizer.all_special_ids)

    def _completion_text(self, generated: list[int]) -> str:
        """The text of the ids a completion generated (special ids left out already)."""
        return self.tokenizer.decode(generated, skip_special_tokens=True)

    def _space_before_target(self) -> bool:
        """Whether a space precedes the target's first word where the pieces spell it (a decoder-only prompt's
        target prefix says; an encoder-decoder's target starts a word)."""
        return True

    def piece_index(self) -> PieceIndex:
        """The target vocabulary indexed for spelling a word begun (built once), or a one-line error where it marks
        word starts neither the sentencepiece way nor byte-level BPE's."""
        if self._pieces_index is None:
            self._pieces_index = PieceIndex.of(self.tokenizer, self.net.config.vocab_size, self._end_id())
            if self._pieces_index is None:
                raise UserError(f"metrics.interactive and serve need a target vocabulary that marks word starts "
                                f"(sentencepiece's ▁ or byte-level BPE's space byte); the "
                                f"{self.net.config.model_type} model's has neither")
        return self._pieces_index


class Completions:
    """The system's side of an interactive session on one source: `propose(validated)` is the hypothesis it shows once
    the user has validated the reference's first characters `validated` — whole words, then maybe the beginning of
    the next (everything after the last space). The whole words are forced as pieces; the word begun must be spelt
    by the first generated pieces (adaptsim/models/decode/prefix.py `Spelling`); the user's text is kept verbatim and
    the continuation appended (nothing, where no pieces spell the word begun)."""

    def __init__(self, model: Model, start: Callable[[], tuple[list[int], PrefixSearch]]):
        self.model, self.start = model, start
        self.head: list[int] | None = None
        self.prefixes: PrefixSearch | None = None
        self.special = model._special_ids()

    def propose(self, validated: str) -> str:
        if self.prefixes is None:
            self.head, self.prefixes = self.start()
        whole, _, begun = validated.rpartition(" ")
        index = self.model.piece_index()
        spelt = index.spelling(begun, after_space=bool(whole) or self.model._space_before_target())
        if not index.spells(spelt):  # no pieces spell the word begun: nothing to offer after it
            return validated
        forced = self.head + (self.model._target_body(whole) if whole else [])
        ids = self.prefixes(forced, Spelling(index, len(forced), spelt))
        generated = [i for i in ids[len(forced):] if i not in self.special]
        text = self.model._completion_text(generated)
        if index.byte_level and spelt.startswith(index.word_start):  # (sentencepiece's decoding drops that space)
            text = text.removeprefix(" ")
        return validated + text[len(begun):] if text.startswith(begun) else validated

    @property
    def calls(self) -> int:
        return 0 if self.prefixes is None else self.prefixes.calls


def _no_context(context: Sequence[tuple[str, str]]) -> None:
    if context:
        raise UserError("earlier pairs in the input (method=icl) need a model that reads context: a decoder-only "
                        "model (model=demo-lm offline, or a causal LM's config such as model=qwen2.5-0.5b-instruct); "
                        "this one is an encoder-decoder")


def token_nll(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """The labels' negative log-probabilities under `logits` (…, V), positions labelled -100 left out."""
    keep = labels.reshape(-1) != -100
    logits = logits.float()  # (weights in bf16, `model.dtype`: the log-softmax in float32, as autocast computes it)
    nll = nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), reduction="none")
    return nll[keep]


def _forward_inputs(batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """A pair's forward inputs: without the labels where the decoder's inputs are given (`pair`), and no cache
    (FSMT leaves out its causal mask when it expects to decode step by step from a cache)."""
    return {"use_cache": False, **{k: v for k, v in batch.items() if k != "labels" or "decoder_input_ids" not in batch}}
