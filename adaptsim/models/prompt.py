"""How a decoder-only model is asked to translate: the token ids before the target and the target's own ids.

One definition for every use: translating (the prompt, then generation), adapting on a pair (prompt + target, the
loss on the target only), scoring a reference with and without context (CXMI), and training the demo model
(scripts/make_demo_lm.py), so the model is adapted and measured on exactly the sequences it translates with.

A prompt is the instruction, then each context pair (an earlier source and its post-edit, oldest first: method=icl),
then the source; the target follows. Written one of two ways:

- plain (`chat: false`): `instruction`, `example` once per context pair, then `query` ({source}, {target},
  {source_lang}, {target_lang} filled in), tokenized as one text after the tokenizer's begin-of-sequence token
  where it has one;
- chat (`chat: true`, or `auto` where the tokenizer has a chat template): the same text as one user message through
  the tokenizer's chat template with its generation prompt; the target is the assistant's reply.

The target is tokenized on its own (`target_prefix` + text, no special tokens), then the end token (`end_id`):
tokenizing prompt and target apart keeps the boundary where the loss starts exact, whatever the tokenizer would merge
across it. `target_prefix` is the text between the prompt and the target as the model saw it in training. After a
plain prompt ending in "de:" that is a space: " " for tokenizers that mark a word start by the space before it and do
not add one to a text's first word (byte-level BPE: GPT-2, Qwen2, Llama 3; Gemma's sentencepiece, which adds no dummy
prefix); "" for sentencepiece tokenizers that mark a text's first word themselves (Llama 2's, the demo's). After a
chat template's generation prompt the reply starts a line of its own: "" for every tokenizer.

The end token (`end_id`) is the one the model writes after a translation: with a chat template, the token the
template puts after an assistant message (<|im_end|>, <|eot_id|>, <end_of_turn>, found by rendering one), plain the
tokenizer's end-of-sequence token. `chat_vars` are more variables for the chat template: Llama 3's fills the date
into its system message from the clock unless `date_string` is given, and a prompt that changes with the day would
make runs (and their resumes) differ.

`max_tokens` is the prompt's budget (adaptsim/models/causal.py `CausalModel.max_tokens`, `fitting`).

`stop` says where a hypothesis ends (adaptsim/models/causal.py): `line`, at the first newline or the end token, or
`end`, at the end token only. A segment is one line, and an instruct model that adds "Note: …" after its translation
(or a base LM that writes its next example) would otherwise have that scored as the hypothesis.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from omegaconf import OmegaConf

from adaptsim import CONFIG_DIR
from adaptsim.errors import UserError
from adaptsim.rules import Boolean, Choice, Integer

STOPS = ("line", "end")  # `stop`: where a hypothesis ends

Pair = tuple[str, str]  # (source, post-edit)
_MARK = "adaptsimreply"  # an assistant message's text, to find what a chat template writes after it (`end_id`)


@dataclass(frozen=True)
class Prompt:
    instruction: str
    example: str
    query: str
    target_prefix: str
    source_lang: str
    target_lang: str
    stop: str  # line | end
    max_tokens: int  # the prompt's budget in tokens
    batch: bool  # lockstep runs of the same weights: their distinct prompts in one generate (adaptsim/models/causal.py)
    chat: bool | str = "auto"  # true | false | "auto": the tokenizer's chat template where it has one
    # more variables for the chat template, as YAML typed them (("date_string", "26 Jul 2024"), ("enable_thinking",
    # False)): a template tests `enable_thinking is false`, which the text "False" fails
    chat_vars: tuple[tuple[str, str | bool | int | float | None], ...] = ()

    @classmethod
    def from_config(cls, block) -> "Prompt":
        """The model config's `prompt` block (configs/model/_common.yaml)."""
        chat = block.chat
        if chat not in (True, False, "auto"):
            raise UserError(f"model.prompt.chat={chat}: expected true, false or auto")
        for key in ("example", "query"):
            if "{source}" not in str(block[key]):
                raise UserError(f"model.prompt.{key}={block[key]!r}: has no {{source}}")
        if "{target}" not in str(block.example):
            raise UserError(f"model.prompt.example={block.example!r}: has no {{target}}")
        chat_vars = block.get("chat_vars") or {}
        if not (OmegaConf.is_dict(chat_vars) or isinstance(chat_vars, dict)):
            raise UserError(f"model.prompt.chat_vars={chat_vars}: expected a mapping of names to values")
        for k, v in chat_vars.items():
            if v is not None and not isinstance(v, (str, bool, int, float)):
                raise UserError(f"model.prompt.chat_vars.{k}={v}: expected a text, a number, true, false or null")
        stop = Choice(STOPS).check("model.prompt.stop", block.stop)
        max_tokens = Integer(1).check("model.prompt.max_tokens", block.max_tokens)
        batch = Boolean().check("model.prompt.batch", block.batch)
        return cls(str(block.instruction or ""), str(block.example), str(block.query), str(block.target_prefix or ""),
                   str(block.source_lang), str(block.target_lang), stop, max_tokens, batch, chat,
                   tuple((str(k), v) for k, v in chat_vars.items()))

    def uses_chat(self, tokenizer) -> bool:
        return bool(getattr(tokenizer, "chat_template", None)) if self.chat == "auto" else bool(self.chat)

    def text(self, source: str, context: Sequence[Pair] = ()) -> str:
        """The prompt's text (the user message, with a chat template)."""
        langs = {"source_lang": self.source_lang, "target_lang": self.target_lang}
        examples = "".join(self.example.format(source=s, target=t, **langs) for s, t in context)
        return self.instruction.format(**langs) + examples + self.query.format(source=source, **langs)

    def ids(self, tokenizer, source: str, context: Sequence[Pair] = ()) -> list[int]:
        """The ids before the target."""
        text = self.text(source, context)
        if self.uses_chat(tokenizer):
            out = tokenizer.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True,
                                                tokenize=True, **dict(self.chat_vars))
            return list(out["input_ids"] if isinstance(out, dict) or hasattr(out, "keys") else out)
        bos = [tokenizer.bos_token_id] if tokenizer.bos_token_id is not None else []
        return bos + tokenizer(text, add_special_tokens=False, verbose=False).input_ids

    def target_ids(self, tokenizer, target: str, end: int) -> list[int]:
        """The target's ids, then `end` (the token that ends a translation)."""
        return tokenizer(self.target_prefix + target, add_special_tokens=False, verbose=False).input_ids + [end]

    def end_id(self, tokenizer) -> int:
        """The token that ends a translation (see the module docstring); the end-of-sequence token where a chat
        template writes nothing after a reply."""
        if self.uses_chat(tokenizer):
            messages = [{"role": "user", "content": "x"}, {"role": "assistant", "content": _MARK}]
            text = tokenizer.apply_chat_template(messages, tokenize=False, **dict(self.chat_vars))
            after = tokenizer(text[text.rindex(_MARK) + len(_MARK):], add_special_tokens=False).input_ids
            if after:
                return int(after[0])
        if tokenizer.eos_token_id is None:
            raise UserError("the model's tokenizer has no end-of-sequence token to end a translation with")
        return int(tokenizer.eos_token_id)


def model_config(name: str):
    """configs/model/<name>.yaml over _common.yaml, as a composed run has it under `model` (without Hydra: for a
    model loaded without a config, and tests)."""
    merged = OmegaConf.load(CONFIG_DIR / "model" / "_common.yaml")
    if name != "_common":
        own = OmegaConf.load(CONFIG_DIR / "model" / f"{name}.yaml")
        own.pop("defaults", None)
        merged = OmegaConf.merge(merged, own)
    return OmegaConf.create({"model": merged}).model


def default_prompt() -> Prompt:
    """The prompt of a model loaded without a config: the default model's (configs/run.yaml), its languages
    included."""
    run = OmegaConf.load(CONFIG_DIR / "run.yaml")
    name = next(d["model"] for d in run.defaults if OmegaConf.is_dict(d) and "model" in d)
    return Prompt.from_config(model_config(name).prompt)
