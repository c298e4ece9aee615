"""Prefix-constrained decoding for the simulated translator of `metrics.interactive` (adaptsim/interactive.py): the
best continuation of a forced decoder prefix (the pieces the user has validated), optionally constrained to first
spell out some characters (the word the user has begun to type).

One `PrefixSearch` serves one source and one model for all the corrections of one segment, so that what the
corrections share is computed once: the source is encoded once, and the decoder's key/value cache of the forced
prefix is kept and extended, so a longer prefix decodes only its new tokens (what the corrections cost beyond
that is the searches themselves). It decodes with the lean beam search (adaptsim/decode/beam.py) where that
applies, with the semantics of `generate(decoder_input_ids=prefix)`: the forced tokens are the prompt, the length
penalty counts generated tokens only, and `max_length` is the prompt plus `max_new_tokens`; elsewhere (other
architectures, `memory`) it calls `generate` with the prefix as `decoder_input_ids`, re-encoding each time.

`Spelling` is the constraint, a logits processor usable by both: the first generated pieces must spell `text`
(sentencepiece pieces, whose "▁" marks a word's start): a piece is allowed while it is a prefix of what is left to
spell, or the rest of it is a prefix of the piece. "▁" alone means "the next piece starts a word" (word-level
corrections: the user typed a whole word), and then the end of the sentence is allowed too.
"""

from __future__ import annotations

import bisect
import copy

import torch

from adaptsim.decode import lean_applies, lean_search, marian
from adaptsim.decode.beam import beam_search

WORD_START = "▁"  # sentencepiece's mark of a piece that begins a word


class Spelling:
    """Logits processor: the pieces generated after the first `prompt` positions must first spell `text`."""

    def __init__(self, vocabulary: PieceIndex, prompt: int, text: str):
        self.vocabulary, self.prompt, self.text = vocabulary, prompt, text

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        for row, ids in enumerate(input_ids.tolist()):
            spelt = "".join(self.vocabulary.piece(t) for t in ids[self.prompt:])
            if len(spelt) >= len(self.text):
                continue
            allowed = self.vocabulary.allowed(self.text[len(spelt):], scores.device)
            if allowed is not None:  # nothing can spell it: left free (the caller sees the word is not completed)
                scores[row] = scores[row].masked_fill(~allowed, -float("inf"))
        return scores


class PieceIndex:
    """A sentencepiece target vocabulary, indexed to find the pieces that can spell a given rest of text."""

    def __init__(self, tokenizer, size: int, eos: int):
        special = set(tokenizer.all_special_ids)
        self.pieces = [("" if i in special else p) for i, p in
                       enumerate(tokenizer.convert_ids_to_tokens(list(range(min(size, len(tokenizer))))))]
        self.pieces += [""] * (size - len(self.pieces))  # output rows beyond the tokenizer (padding): never allowed
        self.size, self.eos = size, eos
        self.ids = {}
        for i, p in enumerate(self.pieces):
            if p:
                self.ids.setdefault(p, []).append(i)
        self.sorted = sorted(self.ids)
        self._allowed: dict[tuple[str, str], torch.Tensor | None] = {}  # (rest, device) -> mask

    @classmethod
    def sentencepiece(cls, tokenizer, size: int, eos: int) -> PieceIndex | None:
        """The index, or None where the vocabulary does not mark word starts with "▁" (BPE with "</w>", FSMT's)."""
        index = cls(tokenizer, size, eos)
        return index if any(p.startswith(WORD_START) for p in index.sorted) else None

    def piece(self, token: int) -> str:
        return self.pieces[token] if 0 <= token < self.size else ""

    def allowed(self, rest: str, device) -> torch.Tensor | None:
        """Which tokens can come next when `rest` is left to spell (None: none can)."""
        key = (rest, str(device))
        if key not in self._allowed:
            ids = [i for j in range(1, len(rest) + 1) for i in self.ids.get(rest[:j], ())]
            lo = bisect.bisect_left(self.sorted, rest)
            hi = bisect.bisect_left(self.sorted, rest + "\U0010ffff")
            ids += [i for p in self.sorted[lo:hi] for i in self.ids[p]]
            if rest == WORD_START:
                ids.append(self.eos)
            mask = None
            if ids:
                mask = torch.zeros(self.size, dtype=torch.bool)
                mask[ids] = True
                mask = mask.to(device)
            self._allowed[key] = mask
        return self._allowed[key]


class PrefixSearch:
    """The best hypothesis of one source under one model that begins with a forced prefix, for many prefixes in a
    row (see the module docstring). `max_length` bounds the whole decoder sequence (the model's position table)."""

    def __init__(self, net, input_ids: torch.Tensor, attention_mask: torch.Tensor, *, beam_size: int,
                 max_new_tokens: int, max_length: int, length_penalty: float, search: str = "lean"):
        self.net, self.input_ids, self.attention_mask = net, input_ids, attention_mask
        self.beam_size, self.max_new_tokens, self.max_length = beam_size, max_new_tokens, max_length
        self.length_penalty = length_penalty
        self.lean = search == "lean" and lean_applies(net)
        self.calls = 0
        if self.lean:
            self._fed: list[int] = []  # the tokens whose keys and values `self._step`'s cache holds
            self._empty = marian.MarianStep([net], input_ids, attention_mask, beam_size)
            self._step = self._empty

    @torch.inference_mode()
    def __call__(self, forced: list[int], constraint=None) -> list[int]:
        """The best hypothesis' token ids (the forced ones first, the start token among them; through its end token);
        `constraint`: a logits processor (`Spelling`) applied after generate's own."""
        self.calls += 1
        prompt = len(forced)
        max_length = min(prompt + self.max_new_tokens, self.max_length)
        if not self.lean:
            from transformers import LogitsProcessorList

            out = self.net.generate(input_ids=self.input_ids, attention_mask=self.attention_mask,
                                    decoder_input_ids=torch.tensor([forced], device=self.input_ids.device),
                                    num_beams=self.beam_size, max_new_tokens=max(max_length - prompt, 1),
                                    length_penalty=self.length_penalty, do_sample=False, early_stopping=True,
                                    logits_processor=LogitsProcessorList([constraint] if constraint else []))
            return self._through_end(out[0].tolist(), prompt)
        search, processors = lean_search(self.net, self.beam_size, max_length, self.length_penalty, None,
                                         self.input_ids.device)
        step = self._prefilled(forced[:-1])
        start = torch.tensor([forced], dtype=torch.long, device=self.input_ids.device)
        ids = beam_search(step, start, search, processors + ([constraint] if constraint else [])).tolist()[0]
        return self._through_end(ids, prompt)

    def _through_end(self, ids: list[int], prompt: int) -> list[int]:
        """The hypothesis up to its first end-of-sentence token after the prompt (what follows is padding)."""
        eos = self.net.generation_config.eos_token_id
        eos = set(eos) if isinstance(eos, list) else {eos}
        end = next((j for j in range(prompt, len(ids)) if ids[j] in eos), len(ids) - 1)
        return ids[:end + 1]

    def _prefilled(self, tokens: list[int]):
        """A decoder step whose cache holds `tokens` (each fed to all beams' rows, as the search would), extending the
        kept one when it holds a prefix of them; the search works on a copy, so the kept cache stays the prefix's."""
        if self._fed != tokens[:len(self._fed)]:
            self._fed, self._step = [], self._empty
        for token in tokens[len(self._fed):]:
            self._step = copy.copy(self._step)  # `logits` replaces the cache list, never changes its tensors
            self._step.logits(torch.full((self.beam_size,), token, dtype=torch.long, device=self.input_ids.device))
            self._fed = self._fed + [token]
        return copy.copy(self._step)
