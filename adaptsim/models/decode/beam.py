"""Beam search over an incremental decoder step, with the semantics (and the arithmetic) of transformers'
`generate(num_beams=n, early_stopping=True, do_sample=False)`.

Why not `generate` itself: on a small model most of its time is not the network. Per decoding step it
rebuilds attention masks, routes the call through the model's output wrappers, runs the encoder-decoder
model's whole forward for one token and keeps its bookkeeping in general form (sampling, scores, several
return sequences). adaptsim needs the one best hypothesis of one source at a time, so this loop does only
that, and asks the step (adaptsim/models/decode/marian.py) for the next-token logits.

What "the same as generate" means here, operation by operation (transformers 5.23 `_beam_search`, the version
pyproject.toml pins; tests/test_decode.py checks it): log-softmax of the float32 logits, then the logits processors
(`processors`, built by the caller from the model's generation config), the running beams' scores added, the top 2·n
continuations over all beams, candidates that end in </s> (or reach the maximum length) set aside as finished with
score / length^length_penalty (length = generated tokens), the best n unfinished ones kept, the finished list kept
to the best n, the cache reordered by the kept beams' origins, and the same stopping rule: all n finished
(early_stopping=True), no running beam can still beat the worst finished one, or every candidate hit a stopping
criterion. The -1e9 masks, the reshapes and the topk calls are those of transformers, so ties resolve the same way
and the hypotheses are identical (tested against `generate` in tests/test_decode.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import torch
from torch import nn

NEG = -1.0e9  # transformers' "impossible" score (not -inf: sums with it stay finite)


class Step(Protocol):
    """The decoder as beam search drives it."""

    def logits(self, tokens: torch.Tensor) -> torch.Tensor:
        """Next-token logits [beams, vocab] (float32) for the beams' last tokens [beams], extending the cache."""

    def reorder(self, beams: torch.Tensor) -> None:
        """Keep the cache rows of `beams` (indices into the current beams), in that order."""


@dataclass(frozen=True)
class Search:
    beams: int
    max_length: int            # decoder sequence length, the start token included
    eos: torch.Tensor          # the end-of-sequence token ids, a 1-d tensor
    fill: int                  # what unused positions hold (transformers: pad, or else the first eos)
    length_penalty: float = 1.0


def beam_search(step: Step, start: torch.Tensor, search: Search, processors: list) -> torch.Tensor:
    """The best sequence of each source: `start` [batch, 1] holds each source's decoder start token; returns
    [batch, length] (start token first, then the generated tokens, padded with `search.fill`). `processors` are
    transformers logits processors, applied in order to the log-probabilities as `generate` applies them.

    A batch is searched as each of its sources would be alone: a source whose search would have stopped keeps
    its result while the others go on (transformers' batched search lets it take late finishers instead)."""
    n, device = search.beams, start.device
    batch, prompt = start.shape[0], start.shape[1]
    keep = 2 * n  # transformers: max(2, 1 + number of eos tokens) · n, for one eos token
    if search.eos.numel() != 1:
        raise ValueError("beam_search supports models with one end-of-sequence token")
    top_n = torch.cat((torch.ones(n, dtype=torch.bool, device=device),
                       torch.zeros(keep - n, dtype=torch.bool, device=device)))

    running = torch.full((batch, n, search.max_length), search.fill, dtype=torch.int64, device=device)
    running[:, :, :prompt] = start[:, None, :]
    sequences = running.clone()
    running_scores = torch.zeros((batch, n), dtype=torch.float, device=device)
    running_scores[:, 1:] = NEG
    scores = torch.full((batch, n), NEG, dtype=torch.float, device=device)
    finished = torch.zeros((batch, n), dtype=torch.bool, device=device)
    improvable = torch.ones((batch, 1), dtype=torch.bool, device=device)
    batch_offset = torch.arange(batch, device=device).view(-1, 1) * n

    active = torch.ones((batch, 1), dtype=torch.bool, device=device)  # sources whose search goes on
    length = prompt
    while True:
        flat = running[:, :, :length].reshape(batch * n, length)
        log_probs = nn.functional.log_softmax(step.logits(flat[:, -1]), dim=-1)
        for processor in processors:
            log_probs = processor(flat, log_probs)
        vocab = log_probs.shape[-1]
        log_probs = log_probs.view(batch, n, vocab) + running_scores[:, :, None]
        top_scores, top_index = torch.topk(log_probs.reshape(batch, -1), k=keep)
        origin = top_index // vocab
        candidates = torch.take_along_dim(running, origin[:, :, None], dim=1)
        candidates[:, :, length] = top_index % vocab

        ends = torch.isin(candidates[:, :, length], search.eos) | (length + 1 >= search.max_length)

        # the best n unfinished candidates continue
        open_scores = top_scores + ends.to(torch.float32) * NEG
        chosen = torch.topk(open_scores, k=n)[1]
        running = torch.take_along_dim(candidates, chosen[:, :, None], dim=1)
        running_scores = torch.take_along_dim(open_scores, chosen, dim=1)
        beam_origin = torch.take_along_dim(origin + batch_offset, chosen, dim=1)

        # finished candidates among the top n enter the finished list if they beat its worst
        just_finished = ends & top_n[None, :]
        final = top_scores / ((length + 1 - prompt) ** search.length_penalty)
        final += torch.all(finished, dim=-1, keepdim=True).to(torch.float32) * NEG
        final += (~improvable).to(torch.float32) * NEG
        final += (~just_finished) * NEG
        merged = torch.topk(torch.cat((scores, final), dim=1), k=n)[1]
        # a source whose search has stopped keeps its finished list (its beams are still computed, unused)
        sequences = torch.where(active[:, :, None], torch.take_along_dim(
            torch.cat((sequences, candidates), dim=1), merged[:, :, None], dim=1), sequences)
        scores = torch.where(active, torch.take_along_dim(torch.cat((scores, final), dim=1), merged, dim=1), scores)
        finished = torch.where(active, torch.take_along_dim(torch.cat((finished, just_finished), dim=1), merged,
                                                            dim=1), finished)

        length += 1
        best_possible = running_scores[:, :1] / ((length - prompt) ** search.length_penalty)
        worst_finished = torch.where(finished, torch.min(scores, dim=1, keepdim=True)[0], NEG)
        improvable = improvable & torch.any(best_possible > worst_finished, dim=-1, keepdim=True)
        # transformers' stopping rule, per source: it stops where its search alone would have stopped
        active = active & improvable & ~finished.all(dim=-1, keepdim=True) & ~ends.all(dim=-1, keepdim=True)
        if not bool(active.any()):
            break
        step.reorder(beam_origin.view(-1))
    return sequences[:, 0, :length]
