"""The paper's update rule: per-tensor clipping, the perplexity stopping rule, reset to θ0.

Models and tensors are on the session's device: `python -m pytest --device cuda tests/test_update.py` on a GPU."""

import math

import pytest
import torch
from omegaconf import OmegaConf

from adaptsim import methods
from adaptsim.loop.update import Snapshot, Updater, clip_per_tensor_
from adaptsim.models import Seq2SeqModel

FULL = OmegaConf.create({"_target_": "adaptsim.methods.full.Full", "name": "full", "lr": 1e-2})
NONE = OmegaConf.create({"_target_": "adaptsim.methods.none.NoAdaptation", "name": "none", "lr": 0.0})
PAIR = ("The dog sees the man.", "Der Hund sieht den Mann.")


@pytest.fixture
def model(tiny_model_dir, device):
    return Seq2SeqModel.load(str(tiny_model_dir), device)


def test_clipping_rescales_each_tensor_on_its_own(device):
    big, small = torch.full((4,), 1.5, device=device), torch.tensor([0.3, 0.4], device=device)  # norms 3.0 and 0.5
    clip_per_tensor_([big, small], 1.0)
    assert big.norm().item() == pytest.approx(1.0, abs=1e-4)
    assert small.tolist() == pytest.approx([0.3, 0.4])  # below the bound: untouched, not scaled globally


def test_one_update_moves_every_tensor_by_at_most_lr_times_clip(model):
    cfg = OmegaConf.merge(FULL, {"lr": 1.0})
    method = methods.build(cfg, model)
    before = {n: p.detach().clone() for n, p in method.parameters().items()}
    Updater(model, method, clip_norm=1.0, ppl_threshold=1e9)(model.pair(*PAIR))
    deltas = [(p.detach() - before[n]).norm().item() for n, p in method.parameters().items()]
    assert max(deltas) <= 1.0 + 1e-4
    # with one global norm the whole update would have norm ≤ 1; per tensor, it is far larger
    assert math.sqrt(sum(d * d for d in deltas)) > 2.0


@pytest.mark.parametrize("threshold, expected", [(1e9, 1), (0.0, 3)])
def test_perplexity_rule_bounds_the_number_of_updates(model, threshold, expected):
    updater = Updater(model, methods.build(FULL, model), ppl_threshold=threshold)
    result = updater(model.pair(*PAIR))
    assert result.updates == expected


def test_perplexity_rule_stops_as_soon_as_the_threshold_is_reached(model):
    """Set the threshold just above the perplexity after two updates: exactly two are made."""
    method = methods.build(OmegaConf.merge(FULL, {"lr": 0.05}), model)
    snapshot = Snapshot(method.parameters())
    probe = Updater(model, method, ppl_threshold=0.0, max_updates=2)(model.pair(*PAIR))
    assert probe.ppl_after < probe.ppl_before
    snapshot.restore()
    result = Updater(model, method, ppl_threshold=probe.ppl_after * 1.0001)(model.pair(*PAIR))
    assert result.updates == 2
    assert result.ppl_after == pytest.approx(probe.ppl_after, rel=1e-4)


def test_none_trains_nothing_but_reports_perplexity(model):
    before = {n: p.detach().clone() for n, p in model.named_parameters().items()}
    result = Updater(model, methods.build(NONE, model))(model.pair(*PAIR))
    assert result.updates == 0 and result.ppl_before == result.ppl_after > 1
    assert all(torch.equal(p, before[n]) for n, p in model.named_parameters().items())


def test_snapshot_restores_theta0_in_place(model):
    method = methods.build(FULL, model)
    params = method.parameters()
    snapshot = Snapshot(params)
    ids = {n: id(p) for n, p in params.items()}
    Updater(model, method, ppl_threshold=0.0)(model.pair(*PAIR))
    assert snapshot.changed() > 0
    snapshot.restore()
    assert snapshot.changed() == 0
    assert {n: id(p) for n, p in method.parameters().items()} == ids  # same tensors, no copies


def test_position_tables_are_never_trained(model):
    names = set(methods.build(FULL, model).parameters())
    assert not any("embed_positions" in n for n in names)
    assert "model.shared.weight" in names


def test_translation_stops_at_the_position_table(model):
    """A decode.max_length beyond the model's positions is capped instead of failing mid-generation."""
    bias = model.add_output_bias()
    with torch.no_grad():  # never end: always emit one ordinary token
        bias[model.tokenizer.eos_token_id] = -1e4
        bias[5] = 1e4
    hyp = model.translate("The dog sees the man.", beam_size=1, max_length=10 * model.max_tokens)
    # max_tokens − 1 new tokens (the decoder start token takes a position), the last of them the forced </s>
    assert len(hyp.pieces) == model.max_tokens - 2
    assert model.tokenizer.convert_tokens_to_string(hyp.pieces) == hyp.text  # the pieces are the text's


def test_bfloat16_update_computes_in_bfloat16_but_keeps_float32_parameters(tiny_model_dir, device):
    results = {}
    for dtype in ("float32", "bfloat16"):
        model = Seq2SeqModel.load(str(tiny_model_dir), device)
        result = Updater(model, methods.build(FULL, model), ppl_threshold=0.0, dtype=dtype)(model.pair(*PAIR))
        assert all(p.dtype == torch.float32 for p in model.net.parameters())
        results[dtype] = result
    # the forward ran in bfloat16: close to the float32 perplexity, but not equal to it
    assert results["bfloat16"].ppl_before != results["float32"].ppl_before
    assert results["bfloat16"].ppl_before == pytest.approx(results["float32"].ppl_before, rel=0.1)
    assert results["bfloat16"].ppl_after < results["bfloat16"].ppl_before  # and it still learns
