"""Prefix-constrained decoding for the simulated translator of `metrics.interactive` (adaptsim/loop/interactive.py): the
best continuation of a forced decoder prefix (the pieces the user has validated), optionally constrained to first
spell out some characters (the word the user has begun to type).

One `PrefixSearch` serves one source and one model for all the corrections of one segment, so that what the
corrections share is computed once: the source is encoded once, and the decoder's key/value cache of the forced
prefix is kept and extended, so a longer prefix decodes only its new tokens (another prefix reuses what it shares
with the last one). It decodes with the lean beam search (adaptsim/models/decode/beam.py) where that applies, with the
semantics of `generate(decoder_input_ids=prefix)`: the forced tokens are the prompt (fed to every beam's row, as
generate's prompt is) and the length penalty counts generated tokens only; elsewhere (other architectures, `memory`)
it calls `generate` with the prefix as `decoder_input_ids`, re-encoding each time. `max_length` bounds the whole
decoder sequence, prefix included: a hypothesis is never longer than the first translation may be, and a prefix that
fills it is returned as it is.

A decoder-only model (adaptsim/models/causal.py) has no source to encode: its forced ids are the prompt followed by the
validated target, and `generate` continues them (`_generate` is its to override).

`Spelling` is the constraint, a logits processor usable by both: the first generated pieces must spell `text`
(sentencepiece pieces, whose "▁" marks a word's start): a piece is allowed while it is a prefix of what is left to
spell, or what is left is a prefix of the piece; a beam that cannot go on spelling is dropped (-inf). "▁" alone means
"the next piece starts a word" (word-level corrections: the user typed a whole word), and then the end of the
sentence is allowed too. Whether any pieces spell a text at all is checked before searching (`PieceIndex.spells`).

Byte-level BPE vocabularies (GPT-2, Qwen2, Llama 3) are spelt the same way in their own alphabet: a piece's characters
stand for bytes (GPT-2's table), the space byte "Ġ" opens a word, so the word begun is written as the UTF-8 bytes of
" " + the word in that alphabet (`PieceIndex.spelling`) and a character split across pieces is spelt byte by byte.
"""

from __future__ import annotations

import bisect
import functools
from collections import OrderedDict

import torch

from adaptsim.models.decode import end_tokens, lean_applies, lean_search, marian
from adaptsim.models.decode.beam import beam_search

WORD_START = "▁"  # sentencepiece's mark of a piece that begins a word
BYTE_SPACE = "Ġ"  # byte-level BPE's space byte, which opens a word


@functools.cache
def byte_alphabet() -> dict[int, str]:
    """Byte-level BPE's character for each byte (GPT-2's table, which Llama-3, Qwen and RoBERTa share)."""
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    return bytes_to_unicode()
MASKS_KEPT = 64   # spelling masks (one bool per vocabulary entry) kept for reuse, the most recently used


class Spelling:
    """Logits processor: the pieces generated after the first `prompt` positions must first spell `text`."""

    def __init__(self, vocabulary: PieceIndex, prompt: int, text: str):
        self.vocabulary, self.prompt, self.text = vocabulary, prompt, text

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        for row, ids in enumerate(input_ids.tolist()):
            spelt = "".join(self.vocabulary.piece(t) for t in ids[self.prompt:])
            if len(spelt) >= len(self.text):
                continue  # spelt out (the mask let only pieces through that agree with the text)
            allowed = self.vocabulary.allowed(self.text[len(spelt):], scores.device)
            scores[row] = -float("inf") if allowed is None else scores[row].masked_fill(~allowed, -float("inf"))
        return scores


class PieceIndex:
    """A target vocabulary (sentencepiece or byte-level BPE), indexed to find the pieces that can spell a given rest
    of text."""

    def __init__(self, tokenizer, size: int, eos: int):
        special = set(tokenizer.all_special_ids)
        self.pieces = [("" if i in special else p) for i, p in
                       enumerate(tokenizer.convert_ids_to_tokens(list(range(min(size, len(tokenizer))))))]
        self.pieces += [""] * (size - len(self.pieces))  # output rows beyond the tokenizer (padding): never allowed
        self.size, self.eos = size, eos
        self.byte_level = False  # (`of` says which: the pieces are the same either way)
        self.ids: dict[str, list[int]] = {}
        for i, p in enumerate(self.pieces):
            if p:
                self.ids.setdefault(p, []).append(i)
        self.sorted = sorted(self.ids)
        self._masks: OrderedDict[tuple[str, str], torch.Tensor] = OrderedDict()

    @classmethod
    def of(cls, tokenizer, size: int, eos: int) -> PieceIndex | None:
        """The index, or None where the vocabulary marks word starts neither with "▁" (sentencepiece) nor with the
        space byte of a byte-level BPE (BPE with "</w>", FSMT's)."""
        index = cls(tokenizer, size, eos)
        if any(p.startswith(WORD_START) for p in index.sorted):
            return index
        alphabet = set(byte_alphabet().values())
        if any(p.startswith(BYTE_SPACE) for p in index.sorted) and all(c in alphabet for p in index.sorted for c in p):
            index.byte_level = True
            return index
        return None

    @property
    def word_start(self) -> str:
        """What opens a word in this vocabulary's pieces."""
        return BYTE_SPACE if self.byte_level else WORD_START

    def spelling(self, begun: str, after_space: bool = True) -> str:
        """What the pieces must spell for a word begun with `begun`: "▁" + it (sentencepiece), or its UTF-8 bytes in
        the byte alphabet, after the space byte where a space precedes the word (byte-level: the first word after a
        prompt that ends a line has none). An empty `begun`: the next piece starts a word."""
        if not self.byte_level:
            return WORD_START + begun
        alphabet = byte_alphabet()
        return "".join(alphabet[b] for b in ((" " if after_space else "") + begun).encode("utf-8"))

    def piece(self, token: int) -> str:
        return self.pieces[token] if 0 <= token < self.size else ""

    def _longer(self, rest: str) -> list[str]:
        """The pieces that begin with `rest`."""
        return self.sorted[bisect.bisect_left(self.sorted, rest):bisect.bisect_left(self.sorted, rest + "\U0010ffff")]

    def spells(self, text: str) -> bool:
        """Whether some sequence of pieces spells `text` (the last one may run on past it)."""
        reachable = [True] + [False] * len(text)
        for at in range(len(text)):
            if reachable[at]:
                if self._longer(text[at:]):
                    return True
                for end in range(at + 1, len(text) + 1):
                    reachable[end] |= text[at:end] in self.ids
        return reachable[-1]

    def allowed(self, rest: str, device) -> torch.Tensor | None:
        """Which tokens can come next when `rest` is left to spell (None: none can)."""
        key = (rest, str(device))
        if key in self._masks:
            self._masks.move_to_end(key)
            return self._masks[key]
        ids = [i for j in range(1, len(rest) + 1) for i in self.ids.get(rest[:j], ())]
        ids += [i for p in self._longer(rest) for i in self.ids[p]]
        if rest == self.word_start:
            ids.append(self.eos)
        if not ids:
            return None
        mask = torch.zeros(self.size, dtype=torch.bool, device=device)
        mask[ids] = True
        self._masks[key] = mask
        if len(self._masks) > MASKS_KEPT:
            self._masks.popitem(last=False)
        return mask


class PrefixSearch:
    """The best hypothesis of one source under one model that begins with a forced prefix, for many prefixes in a
    row (see the module docstring). `max_length` bounds the whole decoder sequence, the prefix included."""

    def __init__(self, net, input_ids: torch.Tensor, attention_mask: torch.Tensor, *, beam_size: int,
                 max_length: int, length_penalty: float, search: str = "lean"):
        self.net, self.input_ids, self.attention_mask = net, input_ids, attention_mask
        self.beam_size, self.max_length, self.length_penalty = beam_size, max_length, length_penalty
        self.lean = search == "lean" and lean_applies(net)
        self.calls = 0
        self.ends = end_tokens(net)  # the tokens that end a hypothesis
        if self.lean:
            self._fed: list[int] = []  # the tokens whose keys and values `self._step`'s cache holds
            self._step = marian.MarianStep([net], input_ids, attention_mask, beam_size)

    @torch.inference_mode()
    def __call__(self, forced: list[int], constraint=None) -> list[int]:
        """The best hypothesis' token ids (the forced ones first, the start token among them; through its end token);
        `constraint`: a logits processor (`Spelling`) applied after generate's own."""
        prompt = len(forced)
        if prompt >= self.max_length:  # no room left: the prefix is the hypothesis
            return list(forced)
        self.calls += 1
        if not self.lean:
            return self._through_end(self._generate(forced, constraint), prompt)
        search, processors = lean_search(self.net, self.beam_size, self.max_length, self.length_penalty, None,
                                         self.input_ids.device)
        step = self._prefilled(forced[:-1])
        start = torch.tensor([forced], dtype=torch.long, device=self.input_ids.device)
        ids = beam_search(step, start, search, processors + ([constraint] if constraint else [])).tolist()[0]
        return self._through_end(ids, prompt)

    def _generate(self, forced: list[int], constraint) -> list[int]:
        """`generate` from the source with the forced decoder prefix (the search where the lean one does not apply)."""
        from transformers import LogitsProcessorList

        out = self.net.generate(input_ids=self.input_ids, attention_mask=self.attention_mask,
                                decoder_input_ids=torch.tensor([forced], device=self.input_ids.device),
                                num_beams=self.beam_size, max_new_tokens=self.max_length - len(forced),
                                length_penalty=self.length_penalty, do_sample=False, early_stopping=True,
                                logits_processor=LogitsProcessorList([constraint] if constraint else []))
        return out[0].tolist()

    def _prefilled(self, tokens: list[int]) -> marian.MarianStep:
        """A decoder step whose cache holds `tokens`, from the kept one: cut back to what it shares with them, then
        extended; the search works on a copy, so the kept cache stays the prefix's."""
        shared = next((j for j, (a, b) in enumerate(zip(self._fed, tokens)) if a != b),
                      min(len(self._fed), len(tokens)))
        if shared < len(self._fed):
            self._step, self._fed = self._step.truncated(shared), self._fed[:shared]
        for token in tokens[shared:]:
            self._step = self._step.truncated(len(self._fed))  # a copy: `logits` replaces its cache, not the kept one's
            self._step.logits(torch.full((self.beam_size,), token, dtype=torch.long, device=self.input_ids.device))
            self._fed = self._fed + [token]
        return self._step.truncated(len(self._fed))

    def _through_end(self, ids: list[int], prompt: int) -> list[int]:
        """The hypothesis up to its first end-of-sentence token after the prompt (what follows is padding)."""
        end = next((j for j in range(prompt, len(ids)) if ids[j] in self.ends), len(ids) - 1)
        return ids[:end + 1]
