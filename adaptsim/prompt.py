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

The target is tokenized on its own (`target_prefix` + text, no special tokens), then the end token: tokenizing prompt
and target apart keeps the boundary where the loss starts exact, whatever the tokenizer would merge across it.
`target_prefix` is " " for byte-level BPE tokenizers (GPT-2, Qwen2, Llama 3), which mark a word start with the space
before it; "" for sentencepiece ones (Llama 2, Gemma, the demo), which mark it themselves.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from adaptsim.errors import UserError

Pair = tuple[str, str]  # (source, post-edit)


@dataclass(frozen=True)
class Prompt:
    instruction: str
    example: str
    query: str
    target_prefix: str
    source_lang: str
    target_lang: str
    chat: bool | str = "auto"  # true | false | "auto": the tokenizer's chat template where it has one

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
        return cls(str(block.instruction or ""), str(block.example), str(block.query), str(block.target_prefix or ""),
                   str(block.source_lang), str(block.target_lang), chat)

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
                                                tokenize=True)
            return list(out["input_ids"] if isinstance(out, dict) or hasattr(out, "keys") else out)
        bos = [tokenizer.bos_token_id] if tokenizer.bos_token_id is not None else []
        return bos + tokenizer(text, add_special_tokens=False, verbose=False).input_ids

    def target_ids(self, tokenizer, target: str, end: int) -> list[int]:
        """The target's ids, then `end` (the token that ends a translation)."""
        return tokenizer(self.target_prefix + target, add_special_tokens=False, verbose=False).input_ids + [end]
