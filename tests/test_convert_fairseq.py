"""`adaptsim convert fairseq`: checkpoints in fairseq's key layout from random weights, converted, and the
converted model's logits compared with an independent reference forward of fairseq's transformer written
here from its published architecture (Vaswani et al. 2017 as implemented by fairseq: scaled embeddings,
sinusoidal positions [sin | cos] with frequencies exp(-k·ln(10000)/(d/2 − 1)) starting at padding_idx + 1,
post- or pre-norm layers, q scaled by head_dim^-0.5, shared or separate embeddings). No real fairseq
checkpoint is used (none is reachable here)."""

from __future__ import annotations

import argparse
import datetime
import json
import math

import pytest
import sentencepiece as spm
import torch
import torch.nn.functional as F

from adaptsim.basemodel.convert import convert
from adaptsim.cli import main
from adaptsim.errors import UserError
from adaptsim.models import Seq2SeqModel

D, HEADS, FFN, ENC, DEC, PAD = 16, 2, 32, 2, 2, 1


# -- the reference ---------------------------------------------------------------------------------------
def sinusoidal(n: int, dim: int, padding_idx: int) -> torch.Tensor:
    half = dim // 2
    freq = torch.exp(torch.arange(half, dtype=torch.float) * -(math.log(10000) / (half - 1)))
    angles = torch.arange(n, dtype=torch.float)[:, None] * freq[None]
    table = torch.cat([torch.sin(angles), torch.cos(angles)], dim=1)
    table[padding_idx] = 0
    return table


def attention(w, prefix, x, memory, causal):
    def proj(name, inp):
        return inp @ w[f"{prefix}.{name}.weight"].T + w[f"{prefix}.{name}.bias"]

    head = D // HEADS
    q = proj("q_proj", x) * head ** -0.5
    k, v = proj("k_proj", memory), proj("v_proj", memory)
    split = lambda t: t.view(t.shape[0], HEADS, head).transpose(0, 1)  # noqa: E731
    scores = split(q) @ split(k).transpose(1, 2)
    if causal:
        scores = scores + torch.full(scores.shape[1:], float("-inf")).triu(1)
    out = (scores.softmax(-1) @ split(v)).transpose(0, 1).reshape(x.shape[0], D)
    return out @ w[f"{prefix}.out_proj.weight"].T + w[f"{prefix}.out_proj.bias"]


def norm(w, prefix, x):
    return F.layer_norm(x, (D,), w[f"{prefix}.weight"], w[f"{prefix}.bias"])


def sublayer(w, ln, x, f, pre):
    return x + f(norm(w, ln, x)) if pre else norm(w, ln, x + f(x))


def ffn(w, prefix, x):
    return torch.relu(x @ w[f"{prefix}.fc1.weight"].T + w[f"{prefix}.fc1.bias"]) @ w[f"{prefix}.fc2.weight"].T \
        + w[f"{prefix}.fc2.bias"]


def embed(w, side, tokens):
    positions = torch.arange(len(tokens)) + PAD + 1
    return math.sqrt(D) * w[f"{side}.embed_tokens.weight"][tokens] + sinusoidal(positions[-1] + 1, D, PAD)[positions]


def reference_logits(w: dict, src: list[int], prev: list[int], pre: bool) -> torch.Tensor:
    """fairseq's TransformerModel forward for one unpadded sentence (no dropout)."""
    x = embed(w, "encoder", torch.tensor(src))
    for i in range(ENC):
        p = f"encoder.layers.{i}"
        x = sublayer(w, f"{p}.self_attn_layer_norm", x, lambda h: attention(w, f"{p}.self_attn", h, h, False), pre)
        x = sublayer(w, f"{p}.final_layer_norm", x, lambda h: ffn(w, p, h), pre)
    memory = norm(w, "encoder.layer_norm", x) if pre else x
    y = embed(w, "decoder", torch.tensor(prev))
    for i in range(DEC):
        p = f"decoder.layers.{i}"
        y = sublayer(w, f"{p}.self_attn_layer_norm", y, lambda h: attention(w, f"{p}.self_attn", h, h, True), pre)
        y = sublayer(w, f"{p}.encoder_attn_layer_norm", y,
                     lambda h: attention(w, f"{p}.encoder_attn", h, memory, False), pre)
        y = sublayer(w, f"{p}.final_layer_norm", y, lambda h: ffn(w, p, h), pre)
    if pre:
        y = norm(w, "decoder.layer_norm", y)
    out = w.get("decoder.output_projection.weight", w["decoder.embed_tokens.weight"])
    return y @ out.T


# -- checkpoints in fairseq's layout ------------------------------------------------------------------------
def fairseq_weights(src_rows, tgt_rows, share_all, share_out, pre, seed=0) -> dict:
    g = torch.Generator().manual_seed(seed)
    rand = lambda *shape: torch.randn(*shape, generator=g) * 0.3  # noqa: E731
    w = {"encoder.embed_tokens.weight": rand(src_rows, D), "encoder.version": torch.tensor([3.0]),
         "encoder.embed_positions._float_tensor": torch.zeros(1),
         "decoder.embed_positions._float_tensor": torch.zeros(1)}
    w["decoder.embed_tokens.weight"] = w["encoder.embed_tokens.weight"] if share_all else rand(tgt_rows, D)
    if not (share_all or share_out):
        w["decoder.output_projection.weight"] = rand(tgt_rows, D)

    def layer_norm(name):
        w[f"{name}.weight"], w[f"{name}.bias"] = 1 + rand(D), rand(D)

    def attn(name):
        for p in ("q_proj", "k_proj", "v_proj", "out_proj"):
            w[f"{name}.{p}.weight"], w[f"{name}.{p}.bias"] = rand(D, D), rand(D)

    for side, n in (("encoder", ENC), ("decoder", DEC)):
        for i in range(n):
            p = f"{side}.layers.{i}"
            attn(f"{p}.self_attn")
            layer_norm(f"{p}.self_attn_layer_norm")
            if side == "decoder":
                attn(f"{p}.encoder_attn")
                layer_norm(f"{p}.encoder_attn_layer_norm")
            w[f"{p}.fc1.weight"], w[f"{p}.fc1.bias"] = rand(FFN, D), rand(FFN)
            w[f"{p}.fc2.weight"], w[f"{p}.fc2.bias"] = rand(D, FFN), rand(D)
            layer_norm(f"{p}.final_layer_norm")
        if pre:
            layer_norm(f"{side}.layer_norm")
    return w


def fairseq_args(share_all, share_out, pre) -> argparse.Namespace:
    return argparse.Namespace(
        arch="transformer", encoder_embed_dim=D, decoder_embed_dim=D, encoder_layers=ENC, decoder_layers=DEC,
        encoder_attention_heads=HEADS, decoder_attention_heads=HEADS, encoder_ffn_embed_dim=FFN,
        decoder_ffn_embed_dim=FFN, encoder_normalize_before=pre, decoder_normalize_before=pre,
        share_all_embeddings=share_all, share_decoder_input_output_embed=share_out, no_scale_embedding=False,
        activation_fn="relu", max_source_positions=64, max_target_positions=64, encoder_learned_pos=False,
        decoder_learned_pos=False, dropout=0.1, source_lang="en", target_lang="de")


@pytest.fixture(scope="module")
def spm_and_dicts(tmp_path_factory, tiny_corpus):
    """A joint sentencepiece model and fairseq dictionaries of its pieces (source: all pieces; target: all
    but the last, so a piece the dictionary lacks maps to <unk>)."""
    d = tmp_path_factory.mktemp("fairseq_spm")
    spm.SentencePieceTrainer.train(sentence_iterator=iter([t for p in tiny_corpus for t in p]),
                                   model_prefix=str(d / "spm"), vocab_size=100, character_coverage=1.0,
                                   hard_vocab_limit=False, num_threads=1, minloglevel=2)
    sp = spm.SentencePieceProcessor(model_file=str(d / "spm.model"))
    pieces = [sp.id_to_piece(i) for i in range(3, sp.get_piece_size())]
    (d / "dict.en.txt").write_text("".join(f"{p} {100 - i}\n" for i, p in enumerate(pieces)), encoding="utf-8")
    (d / "dict.de.txt").write_text("".join(f"{p} {100 - i}\n" for i, p in enumerate(pieces[:-1])), encoding="utf-8")
    (d / "dict.joint.txt").write_text((d / "dict.en.txt").read_text(encoding="utf-8"), encoding="utf-8")
    return d, sp, pieces


def rows(n_symbols):  # fairseq pads dictionaries to a multiple of 8 with madeupwords
    return (n_symbols + 4 + 7) // 8 * 8


def make_checkpoint(d, pieces, share_all, share_out, pre, as_cfg=False):
    src_rows = rows(len(pieces))
    tgt_rows = src_rows if share_all else rows(len(pieces) - 1)
    w = fairseq_weights(src_rows, tgt_rows, share_all, share_out, pre)
    args = fairseq_args(share_all, share_out, pre)
    state = {"model": w, "cfg": {"model": vars(args), "task": {"source_lang": "en", "target_lang": "de"}}} if as_cfg \
        else {"model": w, "args": args}
    path = d / f"ckpt_{share_all}_{share_out}_{pre}_{as_cfg}.pt"
    torch.save(state, path)
    return path, w


CASES = {"shared": (True, True, False), "separate_tied_output": (False, True, False),
         "separate": (False, False, False)}


@pytest.mark.parametrize("case", list(CASES))
def test_converted_model_computes_the_reference_logits_and_tokenizes_with_the_dictionaries(
        spm_and_dicts, tmp_path, case):
    d, sp, pieces = spm_and_dicts
    share_all, share_out, pre = CASES[case]
    ckpt, w = make_checkpoint(d, pieces, share_all, share_out, pre, as_cfg=case == "separate")
    dict_tgt = d / ("dict.joint.txt" if share_all else "dict.de.txt")
    out = convert(ckpt, d / "dict.en.txt", dict_tgt, d / "spm.model", d / "spm.model", tmp_path / "model")
    model = Seq2SeqModel.load(str(out))
    assert model.net.config.model_type == "fsmt" and model.arch.constants  # frozen sinusoidal tables

    source, reference = "The man sees the dog.", "Der Mann sieht den Hund."
    batch = model.pair(source, reference)
    src_ids = [4 + pieces.index(p) for p in sp.encode(source, out_type=str)] + [2]  # fairseq: ids + </s>
    tgt_dict = pieces if share_all else pieces[:-1]
    tgt_ids = [4 + tgt_dict.index(p) if p in tgt_dict else 3 for p in sp.encode(reference, out_type=str)] + [2]
    assert batch["input_ids"][0].tolist() == src_ids and batch["labels"][0].tolist() == tgt_ids
    prev = [2] + tgt_ids[:-1]  # fairseq's prev_output_tokens: </s> first
    assert batch["decoder_input_ids"][0].tolist() == prev

    with torch.no_grad():
        logits = model.net(**batch).logits[0]
        expected = reference_logits(w, src_ids, prev, pre)
    diff = (logits - expected).abs().max().item()
    assert diff < 1e-5, diff
    loss = F.cross_entropy(expected, torch.tensor(tgt_ids))
    assert model.loss(batch).item() == pytest.approx(loss.item(), abs=1e-5)


def test_convert_command_writes_a_model_run_adapts(spm_and_dicts, tmp_path, tiny_tsv):
    d, _, pieces = spm_and_dicts
    ckpt, _ = make_checkpoint(d, pieces, False, True, False)
    out = tmp_path / "converted"
    with pytest.raises(SystemExit) as exit_:
        main(["convert", "fairseq", str(ckpt), "--dict-src", str(d / "dict.en.txt"), "--dict-tgt",
              str(d / "dict.de.txt"), "--spm", str(d / "spm.model"), "--out", str(out)])
    assert exit_.value.code == 0
    run_dir = tmp_path / "run"
    with pytest.raises(SystemExit) as exit_:
        main(["run", f"hydra.run.dir={run_dir}", "progress=false", "decode.beam_size=2", "decode.max_length=10",
              f"model.path={out}", "dataset=tsv", f"dataset.path={tiny_tsv}", "method=full"])
    assert exit_.value.code == 0
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "finished" and all(doc["changed_parameters"] > 0 for doc in summary["per_document"])


def test_unsupported_checkpoints_stop_with_one_line(spm_and_dicts, tmp_path):
    d, _, pieces = spm_and_dicts
    ckpt, _ = make_checkpoint(d, pieces, True, True, True)  # pre-norm: the reference computes it, FSMT cannot
    with pytest.raises(UserError, match="encoder_normalize_before=True"):
        convert(ckpt, d / "dict.en.txt", d / "dict.joint.txt", d / "spm.model", d / "spm.model", tmp_path / "m")
    ckpt, _ = make_checkpoint(d, pieces, True, True, False)
    with pytest.raises(UserError, match="not this checkpoint's dictionary"):
        short = tmp_path / "dict.big.txt"
        short.write_text("".join(f"x{i} 1\n" for i in range(500)), encoding="utf-8")
        convert(ckpt, short, short, d / "spm.model", d / "spm.model", tmp_path / "m")
    bad = tmp_path / "evil.pt"
    torch.save({"model": {}, "args": datetime.date(2020, 1, 1)}, bad)  # a class weights_only refuses
    with pytest.raises(UserError, match="--trust-checkpoint"):
        convert(bad, d / "dict.en.txt", d / "dict.en.txt", d / "spm.model", d / "spm.model", tmp_path / "m")
