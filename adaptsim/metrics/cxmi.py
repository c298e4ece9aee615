"""CXMI: how much a run's model gains from the post-edited history (Fernandes, Yin, Neubig & Martins, ACL 2021,
read for online adaptation; docs/design.md §4).

Online adaptation is context use: θ_{i−1} has seen the post-edits before segment i, θ0 has not. Every run
records each reference token's log-probability under its θ_{i−1} (steps.jsonl `logprobs`, from the forward
that measures `ppl_before`: teacher-forced, before adapting on the pair; `memory`'s from its interpolated
distribution), and the baseline run (`none`) records them under θ0. So per token

    P-CXMI_t = log q_θ{i−1}(y_t | y_<t, x) − log q_θ0(y_t | y_<t, x)          (nats; </s> included)

and a segment's CXMI is the sum over its tokens. Three corpus figures, all resampled like R0/R1 (the per-segment
statistics below), all in nats, positive where the history made the references more likely (the baseline against
itself: exactly 0):

- `CXMI/seg`: Σ over segments of a segment's Σ P-CXMI, / segments. The paper's equation (Fernandes et al. §3, eq. 2
  and Appendix A: −1/N Σ_i log q_A(y_i|x_i)/q_C(y_i|x_i,c_i), a sentence's log-likelihood ratio averaged over
  sentences); it grows with segment length (1.9–7.0 nats on the idiom stream).
- `CXMI.sent`: the mean over segments of each segment's Σ P-CXMI / its tokens. The paper's code and so its figures
  (~10⁻² nats): neulab/contextual-mt contextual_mt/docmt_cxmi.py l. 152–156 and 247 take fairseq's
  SequenceScorer `score`, a sentence's mean log-probability per token (</s> included), subtract, and average the
  differences over sentences. Set this one beside the paper's numbers.
- `CXMI`: Σ over all tokens / tokens (nats per token, each token weighing the same: the per-token entropy
  difference H_θ0(Y|X) − H_θ(Y|X)). adaptsim's own figure; it differs from `CXMI.sent` where long and short
  segments gain differently.

What the paper compares is a context-aware model with and without context; adaptsim's reading above compares the
adapted θ_{i−1} (the context: the post-edited history) with θ0, both on the post-edited reference. A model that reads
context in its input (a decoder-only model with method=icl) gives the paper's own reading as well, in the same run
and on one θ (`context_values`):

    P-CXMI_t = log q_θ{i−1}(y_t | y_<t, x, C_i) − log q_θ{i−1}(y_t | y_<t, x)

where C_i are the earlier (source, post-edit) pairs the prompt quoted before segment i (steps.jsonl
`logprobs_context`, with them; `logprobs`, without: the update's first forward). The same three figures follow.
Against neulab/contextual-mt's contextual_mt/docmt_cxmi.py (the authors' code, `compute_cxmi`):

- they score each sentence twice with one model, the context built at size 0 (l. 82–102) and at
  `source_context_size`/`target_context_size` (l. 104–131) from the document's previous source lines and previous
  *reference* lines (l. 72–80, 133–134; emptied at each new document, l. 65–66), joined by a <brk> token
  (contextual_mt/utils.py `create_context`). `retrieval=document` with k pairs is that context at sizes k and k (a
  post-edit is the reference), written as the prompt's examples instead of joined by <brk>; `fuzzy` and `both` are
  contexts the paper does not use (nor its `--random-context`, l. 104–106);
- their sentence score is fairseq's SequenceScorer `score`, the mean log-probability over the target tokens with
  </s> (l. 148–154), the difference contextual − baseline per sentence (l. 156) averaged over sentences (l. 247):
  `CXMI.sent` here, over the prompt's target tokens and its end token (adaptsim/models/prompt.py; the prompt's own
  tokens are never scored);
- a document's first sentence has an empty context at both sizes (`create_context` of no lines) and counts with a
  difference of 0; so does a step here whose prompt quoted nothing (`context_values` gives it zeros);
- P-CXMI per token is their `word_level=True` run: `positional_scores` instead of `score` (l. 152, 248–260), the
  same difference.

Words. A reference's pieces are grouped into words (a piece opening with ▁ starts one; a piece of punctuation
alone is a word of its own, so "Zeit," is two: "Zeit" and ","); a word's P-CXMI is the sum over its pieces, and its
role in the stream is R0/R1's (adaptsim.metrics.roles). In a language written without spaces (adaptsim.metrics.
segmenters) ▁ marks no words: the pieces' text is cut by the metrics' segmenter and each piece goes to the word its
first character is in (`segmented_piece_words`); words a piece runs across are one word, "other content" then, as a
hyphenated compound's part is.

Only the arithmetic is here: which runs may be joined (the baseline, same data, model and settings) is checked with
the other run checks (adaptsim.report.blocks.check_joinable), the report is `adaptsim cxmi` (adaptsim.report.cxmi).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from adaptsim.errors import UserError
from adaptsim.metrics.roles import Roles
from adaptsim.metrics.segmenters import Segmenter
from adaptsim.metrics.words import is_punctuation

METRICS = ("CXMI", "CXMI/seg", "CXMI.sent")


def forced(config: dict) -> int:
    """How many label positions decoding forces (a multilingual model's target-language token opens the labels):
    left out of CXMI, since no translation ever predicts them."""
    languages = ((config or {}).get("model") or {}).get("languages")
    return 1 if isinstance(languages, dict) and languages.get("target_token") else 0


def token_values(base_rows: Sequence[dict], run_rows: Sequence[dict], where: str, skip: int = 0
                 ) -> list[np.ndarray | None]:
    """Per segment, the P-CXMI of each reference token after the first `skip` (forced) ones (None where either run
    has no log-probabilities: a step whose record lacks them, or whose first forward diverged)."""
    out = []
    for i, (b, r) in enumerate(zip(base_rows, run_rows, strict=True)):
        lb, lr = b.get("logprobs"), r.get("logprobs")
        if lb is None or lr is None:
            out.append(None)
            continue
        if b.get("ref_pieces") != r.get("ref_pieces") or len(lb) != len(lr):
            raise UserError(f"{where}: segment {i + 1}'s reference has other pieces than the baseline's; CXMI "
                            "needs runs of one model")
        out.append(np.asarray(lr[skip:], dtype=float) - np.asarray(lb[skip:], dtype=float))
    return out


def context_values(rows: Sequence[dict]) -> list[np.ndarray | None]:
    """Per segment, the P-CXMI of the prompt's context for each reference token (one run, one θ: `logprobs_context`
    − `logprobs`); zeros where the prompt quoted no pair (the paper's empty context), None where the step has no
    log-probabilities. Raises UserError where the run did not read context (no `prompt_tokens`)."""
    if not rows or not any("prompt_tokens" in r for r in rows):
        raise UserError("the context's CXMI needs a model that reads context in its prompt (a decoder-only model: "
                        "steps.jsonl has no prompt_tokens)")
    out = []
    for r in rows:
        without = r.get("logprobs")
        if without is None:
            out.append(None)
            continue
        with_context = r.get("logprobs_context", without)
        if len(with_context) != len(without):
            raise UserError(f"step {r.get('index', '?')}: logprobs_context and logprobs score different tokens")
        out.append(np.asarray(with_context, dtype=float) - np.asarray(without, dtype=float))
    return out


def reads_context(rows: Sequence[dict]) -> bool:
    """Whether a run's steps quoted earlier pairs in a prompt (icl on a decoder-only model)."""
    return any("logprobs_context" in r for r in rows)


def statistics(metric: str, values: Sequence[np.ndarray | None]) -> np.ndarray:
    """Per-segment statistics (segments × 2, numerator and denominator of the ratio) of CXMI (Σ P-CXMI, tokens),
    CXMI/seg (Σ P-CXMI, 1) or CXMI.sent (Σ P-CXMI / tokens, 1); a segment without log-probabilities counts in
    none."""
    def row(v: np.ndarray) -> tuple[float, float]:
        if metric == "CXMI":
            return float(v.sum()), float(len(v))
        return (float(v.mean()) if metric == "CXMI.sent" else float(v.sum())), 1.0

    rows = [(0.0, 0.0) if v is None or not len(v) else row(v) for v in values]
    return np.array(rows, dtype=float).reshape(len(rows), 2)


def missing(values: Sequence[np.ndarray | None]) -> int:
    return sum(v is None for v in values)


# -- words and their roles in the stream (adaptsim.metrics.roles) --------------------------------------------
@dataclass
class Word:
    segment: int
    role: str
    value: float      # Σ P-CXMI over the word's pieces
    distance: int | None  # segments since the word's previous occurrence (second and later occurrences)


def _is_special(piece: str) -> bool:
    """</s>, <unk>, and language tokens such as __de__ or >>deu<<."""
    return (piece.startswith("<") and piece.endswith(">")) or (piece.startswith("__") and piece.endswith("__")) \
        or (piece.startswith(">>") and piece.endswith("<<"))


@functools.cache
def _byte_decoder() -> dict[str, int]:
    """Byte-level BPE's characters → the bytes they stand for (GPT-2's table, which Llama-3, Qwen and RoBERTa share)."""
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    return {c: b for b, c in bytes_to_unicode().items()}


def is_byte_level(pieces: Sequence[str]) -> bool:
    """Whether `pieces` are byte-level BPE's: every character of every piece but the special tokens stands for a
    byte."""
    decoder = _byte_decoder()
    return all(c in decoder for p in pieces if not _is_special(p) for c in p)


def sentencepiece_style(pieces: Sequence[str]) -> list[str]:
    """Byte-level pieces written as sentencepiece writes its own: the bytes decoded (a character split across pieces
    goes to the piece that completes it) and a leading space as ▁, so that `piece_words` and `segmented_piece_words`
    group them into words (Qwen's and GPT-2's references carry ▁ nowhere; their Ġ is the space byte)."""
    import codecs

    decoder, utf8 = _byte_decoder(), codecs.getincrementaldecoder("utf-8")(errors="replace")
    out = []
    for piece in pieces:
        if _is_special(piece):
            out.append(piece)
            continue
        text = utf8.decode(bytes(decoder[c] for c in piece))
        out.append("▁" + text[1:] if text.startswith(" ") else text)
    return out


def piece_words(pieces: Sequence[str]) -> list[tuple[str, list[int]]]:
    """A reference's pieces grouped into words: (text, the pieces' positions)."""
    words: list[tuple[str, list[int]]] = []
    special = False  # whether the last word is a special token (</s>, a language token): a word of its own
    for j, piece in enumerate(pieces):
        text = piece.replace("▁", "")
        if _is_special(piece) or not words or special or piece.startswith("▁") or is_punctuation(text) \
                or is_punctuation(words[-1][0]):
            special = _is_special(piece)
            words.append(("" if special else text, [j]))
        else:  # a bare "▁" opens a word its next piece continues
            words[-1] = (words[-1][0] + text, words[-1][1] + [j])
    return words


def segmented_piece_words(pieces: Sequence[str], segmenter: Segmenter) -> list[tuple[str, list[int]]]:
    """A reference's pieces grouped into the segmenter's words: (text, the pieces' positions); words that a piece runs
    across are one; special tokens are words of their own (text "")."""
    text, extents, specials = "", {}, []  # extents: piece position -> [start, end) of its characters in `text`
    for j, piece in enumerate(pieces):
        if _is_special(piece):
            specials.append((j, ("", [j])))
            continue
        plain = piece.replace("▁", " ")
        start = len(text) + len(plain) - len(plain.lstrip())  # a bare ▁: where the next piece begins
        text += plain
        extents[j] = (start, max(start, len(text)))
    merged: list[list[int]] = []  # [start, end) of each word, words a piece runs across joined
    cursor = 0
    for word in segmenter.words(text):
        at = text.find(word, cursor)
        if at < 0:
            continue
        cursor = at + len(word)
        if merged and any(s < at < e for s, e in extents.values()):
            merged[-1][1] = cursor
        else:
            merged.append([at, cursor])
    groups: list[list[int]] = [[] for _ in merged]
    last = 0  # a piece in no word (whitespace at the end) goes with the word before
    for j, (s, _) in extents.items():
        last = next((k for k, (a, b) in enumerate(merged) if a <= s < b), last)
        if groups:
            groups[last].append(j)
    found = [(g[0], (text[a:b], g)) for (a, b), g in zip(merged, groups) if g]
    return [group for _, group in sorted(found + specials, key=lambda g: g[0])]


def words(roles: Roles, rows: Sequence[dict], values: Sequence[np.ndarray | None],
          judge: Sequence[dict] | None = None) -> list[Word]:
    """Every reference word of the stream with its role and P-CXMI (segments without log-probabilities left
    out). A second occurrence is recalled or missed by the hypotheses of `judge` (another run's rows on the same
    segments: the baseline's, whose hypotheses the adaptation or the context did not make); without them it is just
    "second". Never by the measured run's own hypotheses: a word whose probability the context raised is the more
    likely recalled, so that split would build in the sign of the P-CXMI it reports."""
    out = []
    if rows and "ref_pieces" not in rows[0]:
        raise UserError("word roles need the reference's pieces and the hypotheses, which this run's steps.jsonl does "
                        "not hold (a text-free record, scripts/experiments/export_runs.py); run cxmi on the sweep")
    segmenter = roles.words.segmenter
    byte_level = not any("▁" in p for row in rows for p in row["ref_pieces"])
    if byte_level and not all(is_byte_level(row["ref_pieces"]) for row in rows):
        raise UserError("word roles need sentencepiece pieces (▁ opening a word) or byte-level BPE's (GPT-2's "
                        "bytes as characters); this model's tokenizer writes neither")
    for i, (row, v) in enumerate(zip(rows, values)):
        if v is None:
            continue
        hyp = None if judge is None else roles.words(judge[i].get("hypothesis") or "")
        pieces = row["ref_pieces"][len(row["ref_pieces"]) - len(v):]
        if byte_level:
            pieces = sentencepiece_style(pieces)
        grouped = piece_words(pieces) if segmenter is None else segmented_piece_words(pieces, segmenter)
        for text, positions in grouped:
            role, distance = roles.of(i, text, hyp)
            out.append(Word(i, role, float(v[positions].sum()), distance))
    return out


def flips(roles: Roles, base_rows: Sequence[dict], run_rows: Sequence[dict]) -> np.ndarray:
    """Per segment (segments × 3): reference content words the baseline's hypothesis has and the run's lacks
    (negative flips, the interference a translator notices), the reverse (positive flips), and the reference's
    content words."""
    out = []
    for i, (b, r) in enumerate(zip(base_rows, run_rows)):
        ref = roles.sets[i]
        hb, hr = roles.words(b.get("hypothesis") or ""), roles.words(r.get("hypothesis") or "")
        out.append((len((ref & hb) - hr), len((ref & hr) - hb), len(ref)))
    return np.array(out, dtype=float).reshape(len(out), 3)


DISTANCE_BINS = (1, 2, 3, 5, 9, 17, 33, 65)  # segments since the previous occurrence: 1, 2, 3–4, 5–8, …


def distance_bin(d: int) -> str:
    k = max(i for i, low in enumerate(DISTANCE_BINS) if d >= low)
    low = DISTANCE_BINS[k]
    high = DISTANCE_BINS[k + 1] - 1 if k + 1 < len(DISTANCE_BINS) else None
    return str(low) if high == low else f"{low}–{high}" if high else f"≥{low}"
