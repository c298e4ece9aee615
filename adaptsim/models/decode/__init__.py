"""Translating one source: adaptsim's lean beam search where it applies, transformers' `generate` elsewhere.

`decode.search: lean` (the default) decodes with adaptsim/models/decode/beam.py over an incremental decoder step
(adaptsim/models/decode/marian.py) — the same hypotheses as `generate` in less time (0.73–0.78× its CPU time on
small-ende-probe on two hosts: docs/performance.md). It applies when the model is a Marian model, nothing hooks the
whole network (the `memory` method does), and the model's generation config asks for nothing beyond what the lean search
reproduces (the end token, the forced first and last tokens, banned tokens). Anything else, or
`decode.search: generate`, uses `generate` with the same settings.
"""

from __future__ import annotations

import torch
from transformers import GenerationConfig
from transformers.generation.logits_process import (
    ForcedBOSTokenLogitsProcessor,
    ForcedEOSTokenLogitsProcessor,
    NoBadWordsLogitsProcessor,
)

from adaptsim.models.decode import hooks, marian
from adaptsim.models.decode.beam import Search, beam_search

SEARCHES = ("lean", "generate")

# generation-config settings that make `generate` do something the lean search does not reproduce
_NOT_REPRODUCED = ("min_length", "min_new_tokens", "max_time", "stop_strings", "repetition_penalty",
                   "encoder_repetition_penalty", "no_repeat_ngram_size", "encoder_no_repeat_ngram_size",
                   "renormalize_logits", "remove_invalid_values", "exponential_decay_length_penalty",
                   "suppress_tokens", "begin_suppress_tokens", "sequence_bias", "guidance_scale",
                   "watermarking_config", "diversity_penalty", "num_beam_groups", "constraints", "force_words_ids",
                   "token_healing", "penalty_alpha", "dola_layers", "prompt_lookup_num_tokens")


def lean_applies(net) -> bool:
    """Whether the lean search gives what `generate` gives for this model as it is now (hooks included)."""
    config, default = net.generation_config, GenerationConfig()
    eos = config.eos_token_id
    return (marian.supports(net) and not hooks.has_forward_hooks(net)
            and all(getattr(config, key, None) == getattr(default, key, None) for key in _NOT_REPRODUCED)
            and (isinstance(eos, int) or (isinstance(eos, list) and len(eos) == 1)))


@torch.inference_mode()
def best_ids(nets: list, input_ids: torch.Tensor, attention_mask: torch.Tensor, *, beam_size: int,
             max_new_tokens: int, length_penalty: float, forced_bos_token_id: int | None = None,
             search: str = "lean") -> list[list[int]]:
    """The token ids of each model's best hypothesis (decoder start token first) for one source [1, length].
    Several models (clones of one checkpoint: adaptsim/loop/lockstep.py) are searched together by the lean search."""
    if search not in SEARCHES:
        raise ValueError(f"search={search!r}: expected one of {SEARCHES}")
    settings = dict(beam_size=beam_size, max_new_tokens=max_new_tokens, length_penalty=length_penalty,
                    forced_bos_token_id=forced_bos_token_id)
    lean = [k for k, net in enumerate(nets) if search == "lean" and lean_applies(net)]
    out = dict(zip(lean, _lean([nets[k] for k in lean], input_ids, attention_mask, **settings))) if lean else {}
    forced = {} if forced_bos_token_id is None else {"forced_bos_token_id": forced_bos_token_id}
    for k, net in enumerate(nets):
        if k not in out:
            out[k] = net.generate(input_ids=input_ids, attention_mask=attention_mask, num_beams=beam_size,
                                  max_new_tokens=max_new_tokens, length_penalty=length_penalty, do_sample=False,
                                  early_stopping=True, **forced)[0].tolist()
    return [out[k] for k in range(len(nets))]


def _lean(nets: list, input_ids, attention_mask, *, beam_size: int, max_new_tokens: int, length_penalty: float,
          forced_bos_token_id: int | None) -> list[list[int]]:
    """The lean search over `nets` together (clones of one checkpoint: its generation settings are theirs)."""
    first = nets[0]
    starts = torch.full((len(nets), 1), start_token(first), dtype=torch.long, device=input_ids.device)
    search, processors = lean_search(first, beam_size, 1 + max_new_tokens, length_penalty, forced_bos_token_id,
                                     input_ids.device)
    step = marian.MarianStep(nets, input_ids, attention_mask, beam_size)
    return beam_search(step, starts, search, processors).tolist()


def start_token(net) -> int:
    """The decoder's first token (what generate starts every hypothesis with)."""
    config = net.generation_config
    return (config.decoder_start_token_id if config.decoder_start_token_id is not None
            else net.config.decoder_start_token_id)


def end_tokens(net) -> set[int]:
    """The ids that end a hypothesis (the generation config's eos, one or several)."""
    eos = net.generation_config.eos_token_id
    return set(eos) if isinstance(eos, list) else {eos}


def lean_search(net, beam_size: int, max_length: int, length_penalty: float, forced_bos_token_id: int | None,
                device) -> tuple[Search, list]:
    """The lean search's settings for `net` and the logits processors generate builds from its generation config,
    in generate's order; `max_length` counts the whole decoder sequence (start token and any forced prefix)."""
    config = net.generation_config
    eos = torch.tensor([config.eos_token_id], device=device).flatten()
    processors = []
    if config.bad_words_ids is not None:
        processors.append(NoBadWordsLogitsProcessor(config.bad_words_ids, eos))
    if forced_bos_token_id is not None:
        processors.append(ForcedBOSTokenLogitsProcessor(forced_bos_token_id))
    if config.forced_eos_token_id is not None:
        processors.append(ForcedEOSTokenLogitsProcessor(max_length, config.forced_eos_token_id, device=device))
    fill = config.pad_token_id or int(eos[0])  # what generate fills unused positions with (pad; eos if none or 0)
    return Search(beam_size, max_length, eos, fill, length_penalty), processors
