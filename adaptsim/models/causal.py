"""Decoder-only (causal) language models as translators: GPT-2, Llama, Mistral, Qwen2/3, Gemma 1/2/3
(adaptsim/models/arch.py).

A `CausalModel` offers what a `Seq2SeqModel` offers (adaptsim/models/ `Model`), on the prompt of the model config
(adaptsim/models/prompt.py `Prompt`, the one definition of the ids before the target and of the target's ids).
`context` is
a sequence of earlier (source, post-edit) pairs, oldest first, that the prompt quotes before the source (icl).

- A pair is one sequence: the prompt's ids, then the reference's with the end token. Its labels are -100 on every
  prompt position and the ids themselves on the target's (transformers' layout for causal LMs: the logits at
  position t predict the label at t + 1), so the loss, the update rule's perplexity and the recorded per-token
  log-probabilities are over the target tokens and the end token only. The forward computes logits only at the
  positions that predict them (`logits_to_keep`: the prompt's last position on): an LLM's vocabulary times a prompt
  with context would otherwise be most of an update's memory. `output_labels` aligns the labels with them.
- Translating is transformers' `generate` continuing the prompt: beam search with `decode.beam_size` beams (greedy
  at 1), `decode.length_penalty`, at most `decode.max_length` new tokens, `early_stopping` as for seq2seq models
  (the search ends once it has as many finished hypotheses as beams), never sampling (an instruct checkpoint's
  sampling settings are dropped; its other generation settings are kept, as for seq2seq checkpoints). There is no
  lean search for these models (adaptsim/models/decode/marian.py is Marian's decoder step): `decode.search` is always
  generate. The hypothesis is the text generated before the first end token, whitespace around it stripped (the
  target prefix's space, a chat reply's newline). `cut`: no end token within the new tokens.
- The end tokens: the prompt's (`Prompt.end_id`: a chat template's end of turn, plain the end of sequence) and the
  checkpoint's eos. With `model.prompt.stop: line` (the default) a line's end ends it too (a stop string, not more end
  tokens, which would widen the beam: `_line_stop`), and a hypothesis read from generated ids ends at the first token
  whose text holds a newline: a base
  LM ends a line with a newline rather than with its end of sequence, and what follows is its next example
  ("en: …"); an instruct model may add a note ("Note: …") or its reasoning after the translation's line, in the same
  reply. The text is cut at the first newline (`stop: end`: only the end tokens end it). Generation stops there rather
  than running on to `decode.max_length` for text that is cut anyway (the best hypothesis up to a line's end, in a
  fraction of the time). Where that token carried text before
  its newline (".\n"), the hypothesis' pieces are its text's own (`pieces`), else the generated ones.
- Lengths: the position table bounds prompt and target together, and `model.prompt.max_tokens` the prompt. A segment
  fits (`over_length`) when its source's bare prompt takes at most the smaller of the budget and half the table and
  its reference (with the end token) at most the other half, so the pair fits whole; a source over the budget is
  refused in one line naming `model.prompt.max_tokens` (a budget never removes segments from the test set), one over
  half the table is skipped where `dataset.on_too_long=skip` says so. The pairs a prompt quotes are left out from the
  front until it fits (`fitting`), before anything is computed.
- Lockstep's runs (`translate_runs`): the runs whose clones compute the same function (no run trains or hooks the
  weights: icl without a weights method, none) search each distinct prompt once (exactly as alone); with
  `model.prompt.batch` all distinct prompts in one `generate`, left-padded (the attention mask leaves the padding out
  and sets the positions): the same hypotheses as one at a time in the tests, but logits that differ from alone's in
  float32's last bits (≤ 2e-6 on the tiny models), so not the bit-for-bit equality lockstep keeps otherwise. Runs
  whose clones differ search one at a time.
- A prompt's keys and values are kept from translating with context (the search's cache, its last token's left out)
  and reused when the same model scores a target after that prompt with no gradient (`_forward_inputs`: the reference
  with its context, CXMI's `logprobs_context`): that forward reads the prompt's last token and the target only,
  instead of encoding the prompt a second time. Only while nothing it depends on has changed (`_state`: the version
  counters of the network's tensors and of those its modules' hooks hold, e.g. lora's adapters, and autocast), never
  with gradients, never for the update's pair (which quotes no context: a replayed step computes it as the first run
  did), and not for models whose cache keeps only a sliding window (Gemma 2/3, Mistral). The log-probabilities agree
  with the full forward's to float32 rounding, not bit for bit (measured: within 1.3e-5 on the demo LM in float32;
  up to 0.12 nats a token with bf16 weights, where the cached keys and values were rounded once more).
- `model.languages` is for seq2seq checkpoints: a decoder-only model is told the languages by its prompt, and a
  config that sets language tokens for one is refused.
- The simulated translator (`metrics.interactive`, `serve`) works as for seq2seq models: its prefix search is
  `generate` on the prompt followed by the validated words, the word begun spelt in the vocabulary's alphabet
  (sentencepiece's ▁, or byte-level BPE's bytes: GPT-2, Qwen2, Llama 3; adaptsim/models/decode/prefix.py).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from typing import NamedTuple

import torch

from adaptsim import config_defaults
from adaptsim.errors import UserError
from adaptsim.data.lengths import Over
from adaptsim.models.base import Completions, Model, Translation, languages_from_config, load_parts, weights_dtype
from adaptsim.models.decode.prefix import PrefixSearch
from adaptsim.models.prompt import Pair, Prompt, default_prompt

_DECODE = config_defaults("run.yaml:decode")  # decoding's defaults (their home: configs/run.yaml)
_SAMPLING = ("temperature", "top_p", "top_k", "min_p", "typical_p")  # dropped: translation never samples


@functools.lru_cache(maxsize=8)
def newline_ids(tokenizer) -> frozenset[int]:
    """The ids whose text holds a newline (computed once per tokenizer: one decode of the whole vocabulary)."""
    texts = tokenizer.batch_decode([[i] for i in range(len(tokenizer))])
    return frozenset(i for i, text in enumerate(texts) if "\n" in text)


REASONING = ("<think>", "</think>")  # the reasoning block a thinking model's reply opens with (Qwen3, DeepSeek-R1)


def without_reasoning(text: str) -> tuple[str, bool]:
    """The reply after a reasoning block it opens with, and whether it opened with one: the block is the model's
    thinking, not its translation. An unclosed block (under `stop: line` the line's end comes right after the opening
    tag) leaves no reply: the hypothesis is empty, counted as reasoning only (summary.json `empty_hypotheses`)."""
    opening, closing = REASONING
    if not text.startswith(opening):
        return text, False
    _, closed, reply = text.partition(closing)
    return (reply.strip() if closed else ""), True


class CausalModel(Model):
    reads_context = True

    def __init__(self, net, tokenizer, device: str = "cpu", prompt: Prompt | None = None):
        super().__init__(net, tokenizer, device)
        self.prompt = prompt if prompt is not None else default_prompt()
        self.chat = self.prompt.uses_chat(tokenizer)
        self.end = self.prompt.end_id(tokenizer)
        config = self.net.generation_config
        config.do_sample = False
        for key in _SAMPLING:
            setattr(config, key, None)
        eos = config.eos_token_id
        self._newlines = newline_ids(tokenizer) if self.prompt.stop == "line" else frozenset()
        self._ends = sorted({self.end, *(eos if isinstance(eos, list) else [] if eos is None else [eos])})
        self._stops = frozenset(self._ends) | self._newlines  # what ends a hypothesis read from generated ids
        self._pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else self.end
        self._positions = int(self.arch.max_positions or tokenizer.model_max_length)
        self.reuse_prompt = True  # keep prompts' keys and values for scoring with context (scripts/bench_prompt.py)
        self._kept: Kept | None = None  # the last prompt with context this model translated, its keys and values

    @classmethod
    def from_config(cls, model_cfg, device: str = "cpu") -> CausalModel:
        """Load `model.path` with the config's `model.prompt`, its weights in `model.dtype` (settings checked before
        anything is loaded)."""
        languages = languages_from_config(model_cfg)
        if languages.tokens or languages.source_prefix:
            raise UserError(f"model.languages is set, but {model_cfg.path} is a decoder-only model: it is told the "
                            "languages by its prompt (model.prompt); leave model.languages at its defaults")
        prompt = Prompt.from_config(model_cfg.prompt) if model_cfg.get("prompt") is not None else None
        return cls.load(model_cfg.path, device, prompt, weights_dtype(model_cfg.dtype, device, model_cfg.path))

    @classmethod
    def load(cls, path: str, device: str = "cpu", prompt: Prompt | None = None,
             dtype: torch.dtype | str = torch.float32) -> CausalModel:
        """Load from a local directory, or (online) a hub name; without a `prompt`, the default model config's."""
        return cls(*load_parts(path, "AutoModelForCausalLM", dtype), device, prompt)

    def with_net(self, net) -> CausalModel:
        return CausalModel(net, self.tokenizer, self.device, self.prompt)

    # -- tokens -------------------------------------------------------------------------------------
    @property
    def _line_stop(self) -> dict:
        """`stop: line`'s stopping rule for `generate`: a stop string, matched on the decoded text of each beam's last
        token (transformers' StopStringCriteria), rather than every token whose text holds a newline as an end token:
        beam search keeps (1 + end tokens) × beams candidates, thousands on an LLM's vocabulary."""
        return {"stop_strings": ["\n"], "tokenizer": self.tokenizer} if self._newlines else {}

    @property
    def max_tokens(self) -> int:
        """The most tokens a prompt may take, and a side of a pair with the prompt around it (`count_tokens`): the
        prompt's budget (`model.prompt.max_tokens`), at most half the position table, so that source and reference fit
        together."""
        return min(self.prompt.max_tokens, self._positions // 2)

    def fitting(self, source: str, context: Sequence[Pair]) -> int:
        """How many of `context`'s first pairs to leave out for the prompt to fit `max_tokens` (the fewest: the
        prompt's length falls with every pair left out), or a one-line error where the source's prompt alone is over."""
        def fits(n: int) -> bool:
            return self.prompt_tokens(source, context[n:]) <= self.max_tokens

        if fits(0):
            return 0
        if not fits(len(context)):
            self._budget(self.prompt_tokens(source), quoted=False)
        over, fit = 0, len(context)
        while fit - over > 1:
            mid = (over + fit) // 2
            over, fit = (over, mid) if fits(mid) else (mid, fit)
        return fit

    def _budget(self, tokens: int, quoted: bool, bound: int | None = None) -> None:
        """A prompt of `tokens` over `bound` (`max_tokens`): one line naming the budget."""
        bound = self.max_tokens if bound is None else bound
        if tokens > bound:
            fix = ("quote fewer context pairs (method.k)" if quoted else
                   "the source alone is over it: raise it (a budget never leaves a segment out of the test set)")
            raise UserError(f"model.prompt.max_tokens={self.prompt.max_tokens}: the prompt takes {tokens} tokens, more "
                            f"than its budget of {bound} (at most half the model's {self._positions} positions); {fix}")

    def _prompt(self, source: str, context: Sequence[Pair] = (), bound: int | None = None) -> list[int]:
        """The prompt's ids, refused in one line where they are over `bound` (default `max_tokens`), before anything
        is computed."""
        ids = self.prompt.ids(self.tokenizer, source, context)
        self._budget(len(ids), bool(context), bound)
        return ids

    def count_tokens(self, text: str) -> int:
        """The tokens of the prompt around `text` (as the source, no context)."""
        return len(self.prompt.ids(self.tokenizer, text))

    def over_length(self, side: str, text: str) -> Over | None:
        """Whether a segment's `side` does not fit: a source's bare prompt (no pair quoted) over the prompt's budget
        (`model.prompt.max_tokens`: refused, never skipped, since a budget must not change the test set; the pairs a
        prompt quotes are left out to fit it instead) or over half the position table, a reference (its own tokens
        and the end token) over the other half, so that the pair fits whole."""
        half = self._positions // 2
        if side == "source":
            n = self.count_tokens(text)
            if n > self.prompt.max_tokens and self.prompt.max_tokens <= half:
                return Over(n, self.prompt.max_tokens, "model.prompt.max_tokens, the prompt's budget,", skippable=False)
        else:
            n = len(self._target_body(text)) + 1
        return Over(n, half, f"half the model's {self._positions} positions") if n > half else None

    def prompt_tokens(self, source: str, context: Sequence[Pair] = ()) -> int:
        """The length of the prompt that translating `source` with `context` reads."""
        return len(self.prompt.ids(self.tokenizer, source, context))

    def _target_body(self, text: str) -> list[int]:
        """A target text's ids as they follow the prompt (`target_prefix` + text), no end token."""
        return self.tokenizer(self.prompt.target_prefix + text, add_special_tokens=False, verbose=False).input_ids

    def pieces(self, text: str) -> list[str]:
        """The pieces of a target-side text as they follow the prompt (for the subword-level metrics)."""
        return self.tokenizer.convert_ids_to_tokens(self._target_body(text))

    def label_pieces(self, reference: str) -> list[str]:
        """The pieces of a reference as the labels hold them (the end token included): one per log-probability that
        steps.jsonl records."""
        return self.tokenizer.convert_ids_to_tokens(self.prompt.target_ids(self.tokenizer, reference, self.end))

    def pair(self, source: str, reference: str, context: Sequence[Pair] = ()) -> dict[str, torch.Tensor]:
        """A batch of one pair: the prompt's ids (with `context`) and the reference's with the end token; labels
        -100 on the prompt. The prompt is bounded by its budget alone (the pair's whole length by the positions)."""
        prompt = self._prompt(source, context, self.prompt.max_tokens)
        target = self.prompt.target_ids(self.tokenizer, reference, self.end)
        if len(prompt) + len(target) > self._positions:
            raise UserError(f"the prompt and the reference take {len(prompt) + len(target)} tokens, more than the "
                            f"model's {self._positions} positions; quote fewer context pairs (method.k)")
        ids = torch.tensor([prompt + target], device=self.device)
        labels = torch.tensor([[-100] * len(prompt) + target], device=self.device)
        return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": labels}

    # -- the loss: logits at the positions that predict the target ------------------------------------
    def _forward_inputs(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """The forward's inputs: the whole sequence, or only what follows the prompt's keys and values kept from
        translating (see the module docstring) where they apply."""
        keep = _target_length(batch["labels"]) + 1
        inputs = {"input_ids": batch["input_ids"], "attention_mask": batch["attention_mask"], "use_cache": False,
                  "logits_to_keep": keep}
        kept, ids = self._kept, batch["input_ids"]
        if (kept is None or torch.is_grad_enabled() or ids.shape[0] != 1 or ids.shape[1] < len(kept.ids) + keep
                or not torch.equal(ids[0, :len(kept.ids)], kept.ids) or self._state() != kept.state):
            return inputs
        from transformers import DynamicCache

        return inputs | {"input_ids": ids[:, len(kept.ids):], "past_key_values": DynamicCache(kept.kv),
                         "use_cache": True}

    def _state(self) -> tuple:
        """What a prompt's keys and values depend on besides its ids: the tensors of the network and those its modules'
        hooks hold (lora's adapters, a second output bias), by identity and version counter (every in-place change
        bumps it: SGD, θ0 restored), and autocast."""
        tensors = [*self.net.parameters(), *self.net.buffers()]
        for module in self.net.modules():
            for hook in (*module._forward_hooks.values(), *module._forward_pre_hooks.values()):
                for cell in getattr(hook, "__closure__", None) or ():
                    try:
                        held = cell.cell_contents
                    except ValueError:  # a cell not filled yet
                        continue
                    if isinstance(held, torch.Tensor):
                        tensors.append(held)
        kind = torch.device(self.device).type
        return (tuple((id(t), t._version) for t in tensors), torch.is_autocast_enabled(kind),
                torch.get_autocast_dtype(kind))

    def output_labels(self, labels: torch.Tensor) -> torch.Tensor:
        """The labels of the positions the forward computes logits for (`_forward_inputs`): from the prompt's last
        position, which predicts the target's first token, to the end token's, which predicts nothing."""
        target = labels[:, labels.shape[1] - _target_length(labels):]
        return torch.nn.functional.pad(target, (0, 1), value=-100)

    def source_token_ids(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """The prompt's ids (instruction, context, source): what the model reads before the target."""
        return batch["input_ids"][batch["labels"] == -100]

    def _logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """The output layer, then Gemma 2's soft-capping where the config sets it, in its forward's order."""
        logits = self.arch.output_layer(hidden)
        cap = getattr(self.net.config, "final_logit_softcapping", None)
        if cap is not None:
            logits = logits / cap
            logits = torch.tanh(logits)
            logits = logits * cap
        return logits

    # -- translating ---------------------------------------------------------------------------------
    def translate_together(self, models: list[CausalModel], source: str, beam_size: int = _DECODE["beam_size"],
                           max_length: int = _DECODE["max_length"], length_penalty: float = _DECODE["length_penalty"],
                           search: str = _DECODE["search"], dtype: str = _DECODE["dtype"],
                           context: Sequence[Pair] = ()) -> list[Translation]:
        """`translate` for several clones of this model (lockstep runs): one prompt, one search per clone (no lean
        search to share; `search` is not used). `dtype` bfloat16: the network's products under bf16 autocast."""
        prompt = self._prompt(source, context)
        new = self._new_tokens(max_length, len(prompt))
        hyps = []
        with torch.autocast(torch.device(self.device).type, dtype=torch.bfloat16, enabled=dtype == "bfloat16"):
            for m in models:
                keep = bool(context) and m.reuse_prompt  # (the update's pair quotes none: never reused for it)
                generated, kv = m._search(m.net, [prompt], beam_size, new, length_penalty, keep=keep)
                m._keep(prompt, kv[0] if kv else None)
                hyps.append(self._hypothesis(generated[0]))
        return hyps

    def translate_runs(self, models: list[CausalModel], source: str, contexts: Sequence[Sequence[Pair]],
                       **decode) -> list[tuple[Translation | UserError, float]]:
        """`Model.translate_runs`, but the runs whose models compute the same function (`_weights`: the same tensors
        and no hooks, as lockstep's clones are under icl without a weights method, or none) search each distinct prompt
        once, and with `model.prompt.batch` all of them in one `generate`, left-padded (`_together`); the others one
        search per clone."""
        groups: dict[tuple | None, list[int]] = {}
        for i, model in enumerate(models):
            groups.setdefault(_weights(model), []).append(i)
        out: list = [None] * len(models)
        for key, runs in groups.items():
            translate = self._together if key is not None and len(runs) > 1 else super().translate_runs
            for i, found in zip(runs, translate([models[i] for i in runs], source, [contexts[i] for i in runs],
                                                **decode)):
                out[i] = found
        return out

    def _together(self, models: list[CausalModel], source: str, contexts: Sequence[Sequence[Pair]],
                  beam_size: int = _DECODE["beam_size"], max_length: int = _DECODE["max_length"],
                  length_penalty: float = _DECODE["length_penalty"], search: str = _DECODE["search"],
                  dtype: str = _DECODE["dtype"]) -> list[tuple[Translation | UserError, float]]:
        """Clones of one function, each with its context: each distinct prompt searched once (exactly as alone), or
        with `model.prompt.batch` all in one batch (one per number of new tokens the position table leaves them: the
        same hypotheses in the tests, logits within float32 rounding of alone's), each clone keeping its prompt's keys
        and values; the time shared equally. A prompt refused (over its budget) fails its runs alone."""
        start = time.perf_counter()
        contexts = [tuple(c) for c in contexts]
        prompts: dict[tuple, list[int] | UserError] = {}
        batches: dict[tuple, list[tuple]] = {}  # (new tokens, the context unless batched) -> contexts searched together
        for context in dict.fromkeys(contexts):
            try:
                prompts[context] = self._prompt(source, context)
                new = self._new_tokens(max_length, len(prompts[context]))
                batches.setdefault((new, None if self.prompt.batch else context), []).append(context)
            except UserError as e:
                prompts[context] = e
        hyps, kept = {}, {}
        with torch.autocast(torch.device(self.device).type, dtype=torch.bfloat16, enabled=dtype == "bfloat16"):
            for (new, _), batch in batches.items():
                keep = self.reuse_prompt and any(batch)
                generated, kv = self._search(models[0].net, [prompts[c] for c in batch], beam_size, new,
                                             length_penalty, keep=keep)
                for j, context in enumerate(batch):
                    hyps[context] = self._hypothesis(generated[j])
                    kept[context] = kv[j] if kv and context else None
            for model, context in zip(models, contexts):
                if context in hyps:
                    model._keep(prompts[context], kept[context] if model.reuse_prompt else None)
        share = (time.perf_counter() - start) / len(models)
        return [(hyps.get(context, prompts[context]), share) for context in contexts]

    def _keep(self, prompt: list[int], kv: list | None) -> None:
        """The prompt's keys and values kept for scoring after it (`_forward_inputs`), with what they depend on now (in
        the search's autocast); None: nothing kept."""
        self._kept = None if kv is None else Kept(torch.tensor(prompt[:-1], device=self.device), kv, self._state())

    def _new_tokens(self, max_length: int, prompt: int) -> int:
        """`decode.max_length` within the position table, after a prompt of `prompt` tokens."""
        room = self._positions - prompt
        if room < 1:
            raise UserError(f"the prompt takes {prompt} tokens, the model has {self._positions} positions: no room "
                            "is left to translate; quote fewer context pairs (method.k)")
        return min(max_length, room)

    def _generate(self, net, ids: list[int], beam_size: int, max_new_tokens: int, length_penalty: float,
                  processors: Sequence = ()) -> list[int]:
        """`net.generate` continuing `ids`: the whole sequence, `ids` first."""
        return ids + self._search(net, [ids], beam_size, max_new_tokens, length_penalty, processors)[0][0]

    def _search(self, net, prompts: list[list[int]], beam_size: int, max_new_tokens: int, length_penalty: float,
                processors: Sequence = (), keep: bool = False) -> tuple[list[list[int]], list | None]:
        """`net.generate` continuing each of `prompts`, several left-padded into one batch (the attention mask leaves
        the padding out and sets the positions): the ids generated after each prompt, and with `keep` each prompt's
        keys and values but its last token's, as the search's cache holds them (None for a model whose cache keeps a
        sliding window only), else None."""
        from transformers import LogitsProcessorList
        from transformers.cache_utils import DynamicLayer

        width = max(len(p) for p in prompts)
        pads = [width - len(p) for p in prompts]
        ids = torch.tensor([[self._pad] * n + p for n, p in zip(pads, prompts)], device=self.device)
        mask = (torch.arange(width, device=self.device)[None] >= torch.tensor(pads, device=self.device)[:, None]).long()
        with torch.inference_mode():
            out = net.generate(input_ids=ids, attention_mask=mask, num_beams=beam_size, max_new_tokens=max_new_tokens,
                               length_penalty=length_penalty, do_sample=False, early_stopping=True,
                               eos_token_id=self._ends, pad_token_id=self._pad, **self._line_stop,
                               logits_processor=LogitsProcessorList(processors), return_dict_in_generate=keep)
        sequences = out.sequences if keep else out
        generated = [row[width:].tolist() for row in sequences]
        if not keep:
            return generated, None
        layers = getattr(out.past_key_values, "layers", [])
        if not layers or any(type(layer) is not DynamicLayer for layer in layers):
            return generated, [None] * len(prompts)
        rows = layers[0].keys.shape[0] // len(prompts)  # a beam search's cache: each prompt's beams, its first kept
        with torch.no_grad():  # (copies outside inference mode: tensors a later forward may read)
            kv = [[(layer.keys[i * rows:i * rows + 1, :, n:width - 1].clone(),
                    layer.values[i * rows:i * rows + 1, :, n:width - 1].clone()) for layer in layers]
                  for i, n in enumerate(pads)]
        return generated, kv

    def _hypothesis(self, generated: list[int]) -> Translation:
        """The translation in what was generated after the prompt (see the module docstring)."""
        end = next((j for j, t in enumerate(generated) if t in self._stops), None)
        special = self._special_ids()
        body = [t for t in (generated if end is None else generated[:end]) if t not in special]
        text = self.tokenizer.decode(body, skip_special_tokens=True).strip()
        pieces = self.tokenizer.convert_ids_to_tokens(body)
        if end is not None and generated[end] in self._newlines:  # the line's end: its text before the newline
            line = self.tokenizer.decode(body + [generated[end]], skip_special_tokens=True).split("\n")[0].strip()
            if line != text:
                text, pieces = line, self.pieces(line)
        reply, reasoning = without_reasoning(text)
        if reasoning:
            text, pieces = reply, self.pieces(reply) if reply else []
        return Translation(text, pieces, end is None, reasoning and not reply)

    # -- the simulated translator --------------------------------------------------------------------
    def _end_id(self) -> int:
        return self.end

    def _special_ids(self) -> set[int]:
        return set(self.tokenizer.all_special_ids) | {self.end}

    def _space_before_target(self) -> bool:
        return self.prompt.target_prefix.endswith(" ")

    def _completion_text(self, generated: list[int]) -> str:
        """The text of a completion: up to the first newline with `stop: line` (a line's end ends it)."""
        text = self.tokenizer.decode(generated, skip_special_tokens=True)
        return text.split("\n")[0] if self._newlines else text

    def completions(self, source: str, beam_size: int = _DECODE["beam_size"], max_length: int = _DECODE["max_length"],
                    length_penalty: float = _DECODE["length_penalty"], search: str = _DECODE["search"],
                    dtype: str = "float32", context: Sequence[Pair] = ()) -> Completions:
        """What the system proposes for `source` (with `context`) while a simulated translator corrects its
        hypothesis, as `Seq2SeqModel.completions`: the validated words follow the prompt, generate continues them."""
        if dtype != "float32":
            raise ValueError(f"dtype={dtype!r}: the prefix search runs in float32")

        def prefixes() -> tuple[list[int], PrefixSearch]:
            head = self._prompt(source, context)
            longest = len(head) + self._new_tokens(max_length, len(head))  # translate_together's bound
            return head, PromptSearch(self, beam_size=beam_size, max_length=longest, length_penalty=length_penalty)
        return Completions(self, prefixes)


class PromptSearch(PrefixSearch):
    """`PrefixSearch` for a decoder-only model: the forced ids (the prompt, then the validated target) are the whole
    input, and `generate` continues them with the model's end tokens."""

    def __init__(self, model: CausalModel, *, beam_size: int, max_length: int, length_penalty: float):
        super().__init__(model.net, None, None, beam_size=beam_size, max_length=max_length,
                         length_penalty=length_penalty, search="generate")
        self.model, self.ends = model, set(model._stops)

    def _generate(self, forced: list[int], constraint) -> list[int]:
        return self.model._generate(self.net, forced, self.beam_size, self.max_length - len(forced),
                                    self.length_penalty, [constraint] if constraint else [])


def _weights(model: CausalModel) -> tuple | None:
    """The identity of the function a clone computes: its tensors (lockstep's clones share those no run trains), or
    None where a module has a hook (a method's adapters, second bias or memory act there: its own function)."""
    if any(m._forward_hooks or m._forward_pre_hooks for m in model.net.modules()):
        return None
    return tuple(id(t) for t in (*model.net.parameters(), *model.net.buffers()))


class Kept(NamedTuple):
    """A prompt's keys and values kept from translating (`CausalModel._forward_inputs`): the prompt's ids but its
    last, the keys and values of each layer for them (batch of one), and what they were computed with (`_state`)."""
    ids: torch.Tensor
    kv: list[tuple[torch.Tensor, torch.Tensor]]
    state: tuple


def _target_length(labels: torch.Tensor) -> int:
    """How many labels a pair has (the target's tokens and the end token: they close the sequence)."""
    return int((labels[0] != -100).sum())
