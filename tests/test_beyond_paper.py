"""The methods beyond the paper: lora, memory, l2 — each starts at θ0, changes the model's output on
what it adapted on, and is reset between documents — and the cost figures (summary.json `cost`, `table --cost`)."""

from __future__ import annotations

import json

import pytest
import torch
from omegaconf import OmegaConf

from adaptsim import CONFIG_DIR, methods
from adaptsim.errors import UserError
from adaptsim.loop.offsets import offsets, offsets_bytes
from adaptsim.loop.update import Snapshot, Updater
from adaptsim.models import Seq2SeqModel
from adaptsim.report import table

NEW = ["lora", "memory", "l2"]
# the tiny model's decoder states are 32-dimensional, ~100 apart (squared): a temperature of that size makes the
# memory's distribution flat over everything stored, so memory's tests use a sharp one (the default was chosen
# for the demo model's 128-dimensional states)
SHARP = {"temperature": 1.0, "lam": 0.5}
DECODE = dict(beam_size=2, max_length=20)


def method_cfg(name: str, **overrides):
    return OmegaConf.merge(OmegaConf.load(CONFIG_DIR / "method" / f"{name}.yaml"), overrides)


@pytest.fixture
def model(tiny_model_dir):
    return Seq2SeqModel.load(str(tiny_model_dir))


def logits(model, pair):
    with torch.no_grad():
        return model.net(**model.pair(*pair)).logits


def wrong_pair(model, corpus):
    """A corpus pair the tiny model does not translate right (there is something to adapt)."""
    return next((s, r) for s, r in corpus if model.translate(s, **DECODE).text != r)


def start(model, name, **overrides):
    method = methods.build(method_cfg(name, **overrides), model)
    updater = Updater(model, method, ppl_threshold=0.0)  # always the maximum of 3 updates
    theta0 = Snapshot(method.parameters())
    method.start_document(theta0.initial)
    return method, updater, theta0


def restart(method, theta0):
    theta0.restore()
    method.start_document(theta0.initial)


@pytest.mark.parametrize("name", NEW)
def test_starts_at_theta0_adapts_and_resets(tiny_model_dir, tiny_corpus, name):
    """Built on the model, the method leaves its output bit-identical; adapting on a pair changes the output on
    that pair (and lowers its loss); back at a document start the output is θ0's again, bit for bit."""
    base = Seq2SeqModel.load(str(tiny_model_dir))
    pair = wrong_pair(base, tiny_corpus)
    expected, expected_hyp = logits(base, pair), base.translate(pair[0], **DECODE)

    model = Seq2SeqModel.load(str(tiny_model_dir))
    network = {n: p.detach().clone() for n, p in model.net.named_parameters()}
    method, updater, theta0 = start(model, name, **(SHARP if name == "memory" else {}))
    assert torch.equal(logits(model, pair), expected)
    assert model.translate(pair[0], **DECODE) == expected_hyp

    result = updater(model.pair(*pair))
    assert result.ppl_after < result.ppl_before
    assert not torch.equal(logits(model, pair), expected)
    changed = [n for n, p in model.net.named_parameters() if not torch.equal(p, network[n])]
    assert bool(changed) == (name == "l2")  # lora trains its adapters only, memory nothing
    assert result.updates == (0 if name == "memory" else 3)
    assert len(result.step_s) == (1 if name == "memory" else 3)

    restart(method, theta0)
    assert torch.equal(logits(model, pair), expected)
    assert model.translate(pair[0], **DECODE) == expected_hyp
    assert all(torch.equal(p, network[n]) for n, p in model.net.named_parameters())


@pytest.mark.parametrize("name", ["lora", "l2"])
def test_adapted_pair_is_translated_differently(tiny_model_dir, tiny_corpus, name):
    base = Seq2SeqModel.load(str(tiny_model_dir))
    pair = wrong_pair(base, tiny_corpus)
    model = Seq2SeqModel.load(str(tiny_model_dir))
    _, updater, _ = start(model, name, lr=0.5)  # a large step, so one pair is enough to move the 1-best
    for _ in range(3):
        updater(model.pair(*pair))
    assert model.translate(pair[0], **DECODE).text != base.translate(pair[0], **DECODE).text


def test_memory_translates_a_repeated_segment_as_its_reference(model, tiny_corpus):
    """Once a pair's states are stored, its source is translated as its reference: no parameter moved, the
    reference's perplexity fell to near 1 (ppl_after), and the memory holds one entry per target token."""
    src, ref = wrong_pair(model, tiny_corpus)
    network = {n: p.detach().clone() for n, p in model.net.named_parameters()}
    method, updater, _ = start(model, "memory", **{**SHARP, "lam": 0.9})
    result = updater(model.pair(src, ref))
    assert result.updates == 0 and result.ppl_after < 1.2 < result.ppl_before
    assert method.size == model.pair(src, ref)["labels"].numel()
    assert model.translate(src, **DECODE).text == ref
    assert all(torch.equal(p, network[n]) for n, p in model.net.named_parameters())
    method.start_document(None)  # emptied with the document
    assert method.size == 0 and model.translate(src, **DECODE).text != ref


def test_memory_mixes_the_final_distribution(model, tiny_corpus):
    """The network's output becomes log(λ p_kNN + (1 − λ) p_model), p_model including Marian's
    final_logits_bias (added after the output layer), normalised so beam search's log_softmax keeps it."""
    with torch.no_grad():
        model.net.final_logits_bias.normal_()
    (s1, r1), (s2, r2) = tiny_corpus[0], tiny_corpus[5]
    raw = logits(model, (s2, r2))[0]
    states = model.output_inputs(model.pair(s1, r1))[0]
    query = model.output_inputs(model.pair(s2, r2))[0]
    lam, temperature, k = 0.4, 3.0, 4
    method = methods.build(method_cfg("memory", lam=lam, temperature=temperature, k=k), model)
    method.add(states, model.pair(s1, r1)["labels"][0])
    mixed = logits(model, (s2, r2))[0]

    d = torch.cdist(query, states).square()
    dist, index = d.topk(k, largest=False)
    weights = torch.softmax(-dist / temperature, dim=1)
    p_knn = torch.zeros_like(raw).scatter_add_(1, model.pair(s1, r1)["labels"][0][index], weights)
    expected = (lam * p_knn + (1 - lam) * torch.softmax(raw, dim=1)).log()
    assert torch.allclose(mixed, expected, atol=1e-4)
    assert torch.allclose(mixed.logsumexp(1), torch.zeros(len(mixed)), atol=1e-5)
    assert method.state_bytes(0) == states.shape[0] * (states.shape[1] * 4 + 8)


def test_l2_pulls_toward_theta0_after_clipping(tiny_model_dir):
    """Step 1 from θ0 is full's (the penalty is 0 there; equal up to the rounding of adding αθ and subtracting αθ0
    in place); step 2 is full's minus γα(θ1 − θ0)."""
    pair = ("The dog sees the man.", "Der Hund sieht den Mann.")
    lr, alpha = 0.05, 4.0
    runs = {}
    for name in ("full", "l2"):
        model = Seq2SeqModel.load(str(tiny_model_dir))
        over = {"lr": lr, **({"alpha": alpha} if name == "l2" else {})}
        method = methods.build(method_cfg(name, **over), model)
        theta0 = Snapshot(method.parameters())
        method.start_document(theta0.initial)
        history = []
        method.after_step = lambda m=method, h=history: h.append({n: p.detach().clone()
                                                                   for n, p in m.parameters().items()})
        Updater(model, method, ppl_threshold=0.0, max_updates=2)(model.pair(*pair))
        runs[name] = (theta0.initial, history)
    theta0, (full1, full2) = runs["full"][0], runs["full"][1]
    l2_1, l2_2 = runs["l2"][1]
    for n in theta0:
        assert torch.allclose(l2_1[n], full1[n], rtol=0, atol=1e-6)
        assert torch.allclose(l2_2[n], full2[n] - lr * alpha * (full1[n] - theta0[n]), atol=1e-6)


@pytest.mark.parametrize("name, setting, value", [
    ("lora", "rank", 0), ("lora", "alpha", -1.0), ("lora", "modules", ["*.no_such_proj"]),
    ("memory", "k", 0), ("memory", "temperature", 0.0), ("memory", "lam", 1.5),
    ("l2", "alpha", -1.0), ("l2", "alpha", 100.0),  # γα = 1: a step would jump over θ0
])
def test_bad_settings_are_one_line_naming_the_key(model, name, setting, value):
    with pytest.raises(UserError, match=f"method.{setting}="):
        methods.build(method_cfg(name, **{setting: value}), model)


def test_offsets_bytes_is_the_size_of_the_offsets(model):
    """Whole tensors, and rows of an embedding matrix of which only some rows changed (fixed's source rows)."""
    method = methods.build(method_cfg("fixed", list="x", params=["*.fc2.weight"]), model)
    theta0 = Snapshot(method.parameters())
    method.start_document(theta0.initial)
    assert offsets_bytes(theta0) == 0
    Updater(model, method, ppl_threshold=0.0)(model.pair("The dog sees the man.", "Der Hund sieht den Mann."))
    saved = offsets(theta0)
    assert any(n.endswith(":rows") for n in saved)
    assert offsets_bytes(theta0) == sum(t.numel() * t.element_size() for t in saved.values())


def test_offsets_store_rows_only_where_smaller():
    """A matrix with most rows changed (a LoRA B) is stored whole: rows with int64 indices would be larger."""
    params = {"most": torch.nn.Parameter(torch.zeros(4, 2)), "few": torch.nn.Parameter(torch.zeros(100, 2))}
    theta0 = Snapshot(params)
    with torch.no_grad():
        params["most"][:3] += 1
        params["few"][7] += 1
    saved = offsets(theta0)
    assert set(saved) == {"most", "few", "few:rows"} and saved["most"].shape == (4, 2)
    assert offsets_bytes(theta0) == 4 * 2 * 4 + (2 * 4 + 8) == sum(t.numel() * t.element_size() for t in saved.values())


def _twice_tsv(tmp_path, corpus):
    rows = ["doc_id\tseg_id\tsource\treference"]
    rows += [f"{d}\t{i}\t{s}\t{r}" for d in ("a", "b") for i, (s, r) in enumerate(corpus[:4])]
    path = tmp_path / "twice.tsv"
    path.write_text("\n".join(rows) + "\n")
    return path


@pytest.mark.parametrize("name", NEW)
def test_run_resets_between_documents_and_reports_cost(run_adaptsim, tmp_path, tiny_model_dir, tiny_corpus, name):
    """Two identical documents under reset=document: the second is translated exactly like the first (the
    method's state was reset); summary.json reports the cost figures."""
    tsv = _twice_tsv(tmp_path, tiny_corpus)
    out, summary = run_adaptsim(name, f"model.path={tiny_model_dir}", "dataset=tsv", f"dataset.path={tsv}",
                                f"method={name}", "reset=document", "threads=1",
                                *([f"method.{k}={v}" for k, v in SHARP.items()] if name == "memory" else []))
    steps = [json.loads(line) for line in (out / "steps.jsonl").read_text().splitlines()]
    assert [s["hypothesis"] for s in steps[:4]] == [s["hypothesis"] for s in steps[4:]]
    assert [s["ppl_before"] for s in steps[:4]] == [s["ppl_before"] for s in steps[4:]]
    cost = summary["cost"]
    assert cost["steps"] == sum(s["updates"] for s in steps) + (len(steps) if name == "memory" else 0)
    assert cost["step_ms_median"] > 0
    per_doc = [d["state_bytes"] for d in summary["per_document"]]
    assert per_doc[0] == per_doc[1] > 0 and cost["state_bytes_median"] == per_doc[0]
    if name == "memory":
        assert all(s["updates"] == 0 for s in steps) and summary["trainable_parameters"] == 0
        tokens = sum(Seq2SeqModel.load(str(tiny_model_dir)).pair(s, r)["labels"].numel() for s, r in tiny_corpus[:4])
        assert per_doc[0] == tokens * (summary["method_info"]["key_size"] * 4 + 8)


def test_memory_over_a_stream_repeats_what_it_stored(run_adaptsim, tmp_path, tiny_model_dir, tiny_corpus):
    """reset=never: the memory keeps the first document, so its repetition is translated as the references. (The
    four segments share the prefix "Der Mann sieht den": T = 1 makes the exact key, at distance ~0, outweigh the
    other segments' keys for the next word; at larger T their neighbours share the mass.)"""
    tsv = _twice_tsv(tmp_path, tiny_corpus)
    out, summary = run_adaptsim("never", f"model.path={tiny_model_dir}", "dataset=tsv", f"dataset.path={tsv}",
                                "method=memory", "method.lam=0.9", "method.temperature=1.0", "reset=never", "threads=1")
    steps = [json.loads(line) for line in (out / "steps.jsonl").read_text().splitlines()]
    assert [s["hypothesis"] for s in steps[4:]] == [s["reference"] for s in steps[4:]]
    assert [s["hypothesis"] for s in steps[:4]] != [s["reference"] for s in steps[:4]]
    assert summary["per_document"][1]["state_bytes"] == 2 * summary["per_document"][0]["state_bytes"]


def test_table_cost_columns(tmp_path, capsys):
    from test_report import BASE, csv_rows, make_run

    root = tmp_path / "sweep"
    make_run(root, "0_none", "none", BASE)
    for i, (method, cost) in enumerate([("memory", {"step_ms_median": 0.26, "state_bytes_median": 123456}),
                                        ("lora", {"step_ms_median": 12.34, "state_bytes_median": 2.5e6})]):
        d = make_run(root, f"{i + 1}_{method}", method, BASE)
        summary = json.loads((d / "summary.json").read_text())
        (d / "summary.json").write_text(json.dumps({**summary, "cost": cost}))
    assert table.main([str(root), "--cost"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "| ms/step | state |" in lines[2]
    assert lines[4].endswith("| – | – |")  # the baseline run reports no cost here
    assert lines[5].startswith("| lora") and lines[5].endswith("| 12.3 | 2.5 MB |")  # after the paper's methods
    assert lines[6].startswith("| memory") and lines[6].endswith("| 0.3 | 123.5 kB |")
    assert table.main([str(root), "--cost", "--format", "csv"]) == 0
    rows = csv_rows(capsys.readouterr().out)
    assert (rows["lora"]["step_ms_median"], rows["lora"]["state_bytes_median"]) == ("12.34", "2500000.0")
    assert rows["baseline"]["step_ms_median"] == ""
