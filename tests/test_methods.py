"""The adaptation methods bias, top, fixed and lasso on tiny models (tied embeddings like OPUS-MT, untied
like the paper): what each trains, what stays bit-identical, lasso's prox step and budgets.

Models and tensors are on the session's device (`python -m pytest --device cuda tests/test_methods.py` on a GPU),
but for the test of CPU thread counts, which runs on cpu whatever the device."""


import pytest
import torch
from omegaconf import OmegaConf

from adaptsim import CONFIG_DIR, methods
from adaptsim.errors import UserError
from adaptsim.loop.offsets import load_offsets, save_offsets
from adaptsim.loop.update import Snapshot, Updater
from adaptsim.methods.bias import OUTPUT_BIAS
from adaptsim.models import Seq2SeqModel

PAIRS = [("The dog sees the man.", "Der Hund sieht den Mann."),
         ("My friend buys a book.", "Mein Freund kauft ein Buch."),
         ("The teacher finds the key.", "Die Lehrerin findet den Schlüssel.")]


UNLIMITED = dict(budget=10**12, budget_fraction=1.0, embedding_budget=10**12, embedding_budget_fraction=1.0)


def method_cfg(name: str, **overrides):
    """configs/method/<name>.yaml with overrides, inside a config whose model is called "tiny" (fixed's list
    is named after the model)."""
    yaml = OmegaConf.load(CONFIG_DIR / "method" / f"{name}.yaml")
    return OmegaConf.create({"model": {"name": "tiny"}, "method": OmegaConf.merge(yaml, overrides)}).method


@pytest.fixture(params=["tied", "untied"])
def model(request, tiny_model_dir, tiny_model_dir_untied, device):
    return Seq2SeqModel.load(str(tiny_model_dir if request.param == "tied" else tiny_model_dir_untied), device)


@pytest.fixture
def tied(tiny_model_dir, device):
    return Seq2SeqModel.load(str(tiny_model_dir), device)


def frozen_copy(model):
    return {n: p.detach().clone() for n, p in model.net.named_parameters()}


def adapt(model, method, pairs=PAIRS, after_step=None):
    """Adapt on `pairs` from θ0 with 3 updates each; return the θ0 snapshot."""
    updater = Updater(model, method, ppl_threshold=0.0)
    theta0 = Snapshot(method.parameters())
    method.start_document(theta0.initial)
    if after_step:
        step = method.after_step
        method.after_step = lambda: (step(), after_step())
    for pair in pairs:
        updater(model.pair(*pair))
    return theta0


def changed_names(model, before):
    return {n for n, p in model.net.named_parameters() if not torch.equal(p, before[n])}


@pytest.mark.parametrize("which", ["tied", "untied"])
def test_bias_updates_from_cached_decoder_states_equal_full_forwards(which, tiny_model_dir, tiny_model_dir_untied,
                                                                      device):
    """bias computes the pair's decoder states once and each update's loss from them: the perplexities and
    the bias it learns must be exactly those of running the whole network at every update."""
    from adaptsim.methods.base import Method

    def learn(cached: bool):
        model = Seq2SeqModel.load(str(tiny_model_dir if which == "tied" else tiny_model_dir_untied), device)
        method = methods.build(method_cfg("bias"), model)
        if not cached:
            method.pair_nll = lambda batch: Method.pair_nll(method, batch)  # the whole network, every time
        updater = Updater(model, method, ppl_threshold=0.0)
        results = [updater(model.pair(*pair)) for pair in PAIRS]
        return [(r.updates, r.ppl_before, r.ppl_after) for r in results], method.bias.detach().clone()

    (cached_ppl, cached_bias), (full_ppl, full_bias) = learn(True), learn(False)
    assert cached_ppl == full_ppl and torch.equal(cached_bias, full_bias) and cached_bias.abs().max() > 0


def test_bias_changes_nothing_but_the_second_bias(model):
    before = frozen_copy(model)
    method = methods.build(method_cfg("bias"), model)
    assert list(method.parameters()) == [OUTPUT_BIAS] and method.lr == 1.0
    bias = method.parameters()[OUTPUT_BIAS]
    assert bias.shape == (model.arch.output_layer.weight.shape[0],) and not bias.any()
    theta0 = adapt(model, method)
    assert changed_names(model, before) == set()
    assert theta0.changed() == bias.count_nonzero() > 0
    theta0.restore()  # the next document starts from a zero bias again
    assert not bias.any()


def test_top_trains_exactly_the_topmost_encoder_and_decoder_layer(model):
    before = frozen_copy(model)
    method = methods.build(method_cfg("top"), model)
    enc, dec = len(model.arch.encoder_layers) - 1, len(model.arch.decoder_layers) - 1
    expected = {n for n in model.named_parameters()
                if n.startswith((f"model.encoder.layers.{enc}.", f"model.decoder.layers.{dec}."))}
    assert set(method.parameters()) == expected
    adapt(model, method)
    changed = changed_names(model, before)
    assert changed <= expected and len(changed) >= len(expected) // 2


@pytest.mark.parametrize("rows", ["source", "pair"])
def test_fixed_trains_listed_tensors_and_only_the_seen_rows_of_the_source_embeddings(model, rows):
    before = frozen_copy(model)
    cfg = method_cfg("fixed", params=["model.decoder.layers.*.fc2.*"], embedding_rows=rows)
    method = methods.build(cfg, model)
    source = next(n for n, roles in model.arch.embeddings.items() if "source" in roles)
    listed = {n for n in model.named_parameters() if ".fc2." in n and "decoder" in n}
    assert set(method.parameters()) == listed | {source}
    adapt(model, method, PAIRS[:1])
    assert changed_names(model, before) == listed | {source}
    batch = model.pair(*PAIRS[0])
    src_ids = set(batch["input_ids"].flatten().tolist())
    tgt_ids = set(batch["labels"].flatten().tolist())
    matrix = dict(model.net.named_parameters())[source]
    rows_changed = set((matrix != before[source]).any(dim=1).nonzero().flatten().tolist())
    tied = len(model.arch.embeddings) == 1
    if rows == "source" or not tied:  # a separate source matrix gets no gradient outside the source tokens
        assert rows_changed and rows_changed <= src_ids
    else:
        assert rows_changed <= src_ids | tgt_ids and rows_changed & (tgt_ids - src_ids)


def test_fixed_rejects_patterns_that_match_nothing(tied):
    with pytest.raises(UserError, match="select-fixed"):
        methods.build(method_cfg("fixed", params=["encoder.no_such_layer.*"]), tied)


def set_offsets(params, theta0, offsets):
    with torch.no_grad():
        for name, p in params.items():
            p.copy_(theta0[name])
        for (name, row), delta in offsets.items():
            target = params[name] if row is None else params[name][row]
            target += torch.as_tensor(delta, device=target.device)


def test_lasso_prox_step_shrinks_known_offsets_by_hand_computed_factors(model):
    # γλ = 0.1 · 1.0 = 0.1: a group with ‖δ‖ = 0.5 is scaled by 1 − 0.1/0.5 = 0.8, one with ‖δ‖ = 0.25
    # by 0.6, and groups with ‖δ‖ ≤ 0.1 are reset to θ0. Budgets: everything (1.0).
    method = methods.build(method_cfg("lasso", lr=0.1, lam=1.0, **UNLIMITED), model)
    params = method.parameters()
    theta0 = Snapshot(params)
    method.start_document(theta0.initial)
    emb = method.emb_names[0]
    d = params[emb].shape[1]
    big = "model.encoder.layers.0.fc2.bias"
    small = "model.encoder.layers.0.fc1.bias"
    set_offsets(params, theta0.initial, {
        (big, None): [0.3, 0.4] + [0.0] * (params[big].numel() - 2),
        (small, None): [0.06, 0.08] + [0.0] * (params[small].numel() - 2),  # ‖δ‖ = 0.1: exactly the threshold
        (emb, 5): [0.15, 0.2] + [0.0] * (d - 2),
        (emb, 7): [0.0, 0.05] + [0.0] * (d - 2)})
    method.after_step()
    delta = {n: (p.detach() - theta0.initial[n]) for n, p in params.items()}
    assert delta[big][:2].tolist() == pytest.approx([0.24, 0.32], abs=1e-6)
    assert not delta[big][2:].any()
    assert not delta[small].any()
    assert delta[emb][5, :2].tolist() == pytest.approx([0.09, 0.12], abs=1e-6)
    assert not delta[emb][7].any() and delta[emb].count_nonzero() == 2
    assert theta0.changed() == 4  # nothing else moved


def test_lasso_budgets_keep_the_largest_groups(tied):
    # λ = 0: no shrinking; the budget decides alone. Sizes: fc1.bias 64, fc2.bias 32, k_proj.bias 32.
    names = ["model.encoder.layers.0.fc1.bias", "model.encoder.layers.0.fc2.bias",
             "model.encoder.layers.1.self_attn.k_proj.bias"]
    method = methods.build(method_cfg("lasso", **{**UNLIMITED, "lam": 0.0, "budget": 70, "embedding_budget": 3 * 32}),
                           tied)
    params = method.parameters()
    theta0 = Snapshot(params)
    method.start_document(theta0.initial)
    emb = method.emb_names[0]
    rows = {2: 0.4, 3: 0.1, 4: 0.3, 5: 0.2, 6: 0.5}
    set_offsets(params, theta0.initial, {
        (names[0], None): [0.9], (names[1], None): [0.5], (names[2], None): [0.3],  # 64 fits, then 32 does not
        **{(emb, r): [v] for r, v in rows.items()}})
    method.after_step()
    kept = {n for n in names if not torch.equal(params[n], theta0.initial[n])}
    assert kept == {names[0]}  # 64 of 70: neither 32-sized tensor fits in what is left
    changed_rows = (params[emb] != theta0.initial[emb]).any(dim=1).nonzero().flatten().tolist()
    assert changed_rows == [2, 4, 6]  # the three largest rows fill 3 × 32
    method.budget = 100
    method.start_document(theta0.initial)  # empties the reserve
    set_offsets(params, theta0.initial, {(names[0], None): [0.9], (names[1], None): [0.5], (names[2], None): [0.3]})
    method.after_step()
    assert {n for n in names if not torch.equal(params[n], theta0.initial[n])} == {names[0], names[1]}


def test_lasso_respects_both_budgets_after_every_step(model):
    cfg = method_cfg("lasso", lr=0.05, lam=0.01, budget_fraction=0.2, embedding_budget_fraction=0.05)
    method = methods.build(cfg, model)
    params = method.parameters()
    emb = set(method.emb_names)
    bias_size = params[OUTPUT_BIAS].numel()
    checked = []

    def check():
        ne = sum(int((p != theta0.initial[n]).sum()) for n, p in params.items() if n not in emb and n != OUTPUT_BIAS)
        e = sum(int((params[n] != theta0.initial[n]).sum()) for n in emb)
        assert 0 < ne <= method.budget and 0 < e <= method.embedding_budget
        assert theta0.changed() <= method.budget + method.embedding_budget + bias_size
        assert params[OUTPUT_BIAS].any()  # the second bias is always trained
        checked.append(ne + e)

    theta0 = Snapshot(params)  # adapt() snapshots the same θ0; this one is for check()
    adapt(model, method, after_step=check)
    assert len(checked) == 3 * len(PAIRS) and method.steps == len(checked)
    assert method.budget < sum(method.sizes) / 4  # the budgets bind: selection happened
    info = method.info()
    assert info["selected_max"]["parameters"] <= method.budget
    assert info["selected_max"]["embedding_parameters"] <= method.embedding_budget


def test_lasso_budget_is_the_papers_count_capped_at_a_fraction_of_small_models(tiny_model_dir, device):
    def build(**overrides):
        return methods.build(method_cfg("lasso", **overrides), Seq2SeqModel.load(str(tiny_model_dir), device))

    method = build()  # defaults: 1M + 1M, capped at 0.13 / 0.033 of the model's parameters of that kind
    assert method.budget == int(0.13 * sum(method.sizes)) < 1_000_000
    method = build(budget_fraction=0.5, embedding_budget=1000, embedding_budget_fraction=1.0)
    assert method.budget == int(0.5 * sum(method.sizes)) and method.embedding_budget == 1000
    with pytest.raises(UserError, match="budget"):
        build(budget=-1)
    with pytest.raises(UserError, match="budget"):
        build(budget_fraction=1.5)


def test_offsets_store_changed_groups_only_and_restore_the_adapted_model(tied, tmp_path):
    method = methods.build(method_cfg("fixed", params=["model.decoder.layers.1.fc2.weight"]), tied)
    theta0 = adapt(tied, method, PAIRS[:1])
    adapted = {n: p.detach().clone() for n, p in method.parameters().items()}
    size = save_offsets(theta0, tmp_path, "doc/1")
    from safetensors.torch import load_file

    stored = load_file(str(tmp_path / "doc_1.safetensors"))
    rows = stored["model.shared.weight:rows"]
    assert 0 < len(rows) < tied.net.config.vocab_size  # the tied matrix is stored row by row
    assert set(stored) == {"model.decoder.layers.1.fc2.weight", "model.shared.weight", "model.shared.weight:rows"}
    assert size == (tmp_path / "doc_1.safetensors").stat().st_size
    theta0.restore()
    load_offsets(tmp_path / "doc_1.safetensors", method.parameters())
    for n, p in method.parameters().items():
        assert torch.allclose(p, adapted[n], atol=1e-6)


def test_offsets_file_is_written_once_per_document_name(tied, tmp_path):
    """Two ids that read the same once made file-safe get a file each; a document written again (a resumed run
    replaying it) replaces its own file."""
    method = methods.build(method_cfg("bias"), tied)
    theta0 = adapt(tied, method, PAIRS[:1])
    save_offsets(theta0, tmp_path, "a/b")
    save_offsets(theta0, tmp_path, "a_b")
    save_offsets(theta0, tmp_path, "a/b")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_b-2.safetensors", "a_b.safetensors"]


def test_updater_gives_frozen_tensors_no_gradient(tied):
    method = methods.build(method_cfg("bias"), tied)
    Updater(tied, method)(tied.pair(*PAIRS[0]))
    assert not any(p.requires_grad for p in tied.net.parameters())  # backward stops at the logits
    assert all(p.grad is None for p in tied.net.parameters())


def test_every_method_runs_end_to_end_and_reports_its_parameters(run_adaptsim, tiny_model_dir, tiny_tsv, device):
    data = [f"model.path={tiny_model_dir}", "dataset=tsv", f"dataset.path={tiny_tsv}"]  # (run_adaptsim: device=…)
    model = Seq2SeqModel.load(str(tiny_model_dir), device)
    total = sum(p.numel() for p in model.named_parameters().values())
    vocab = model.arch.output_layer.weight.shape[0]
    summaries = {}
    for method, *extra in (["bias"], ["top"], ["fixed", "method.params=[model.decoder.layers.1.fc2.weight]"],
                           ["lasso", "method.budget_fraction=0.2", "method.embedding_budget_fraction=0.05",
                            "save_offsets=true"]):
        out, summaries[method] = run_adaptsim(method, *data, f"method={method}", *extra)
        s = summaries[method]
        assert s["status"] == "finished" and s["method"] == method and len(s["per_document"]) == 2
        assert all(0 < d["changed_parameters"] <= s["trainable_parameters"] for d in s["per_document"])
    assert summaries["bias"]["trainable_parameters"] == vocab
    assert summaries["top"]["trainable_parameters"] < total / 2
    assert summaries["fixed"]["method_info"]["tensors"] == ["model.decoder.layers.1.fc2.weight"]
    lasso = summaries["lasso"]
    info = lasso["method_info"]
    assert lasso["trainable_parameters"] == total + vocab
    assert info["budget"] == int(0.2 * info["non_embedding_parameters"])
    for d in lasso["per_document"]:
        assert d["changed_parameters"] <= info["budget"] + info["embedding_budget"] + info["output_bias_size"]
        path = out / "offsets" / f"{d['doc_id']}.safetensors"
        assert path.stat().st_size == d["offsets_bytes"]


def lasso_at(model, **overrides):
    """A lasso on `model` with its θ0 snapshot, started on a document."""
    method = methods.build(method_cfg("lasso", **overrides), model)
    theta0 = Snapshot(method.parameters())
    method.start_document(theta0.initial)
    return method, theta0


def step(method, theta0, offsets, grad_norms):
    """One simulated SGD step: add `offsets` {name: value} to the served parameters, then lasso's after_step."""
    params = method.parameters()
    with torch.no_grad():
        for name, value in offsets.items():
            params[name].view(-1)[0] += value
    device = next(iter(params.values())).device  # the norms an update gives are on the model's device
    method.before_step({n: torch.tensor(g, device=device) for n, g in grad_norms.items()})
    method.after_step()
    return {n for n in method.names if not torch.equal(params[n], theta0.initial[n])}


def restart(method, theta0):
    theta0.restore()
    method.start_document(theta0.initial)


A, B = "model.encoder.layers.0.fc2.bias", "model.decoder.layers.0.fc2.bias"  # 32 parameters each


def test_lasso_selection_is_not_decided_by_float_rounding(tied):
    # Both tensors were clipped to the same step size; B's offset norm is larger by float noise only, A had
    # the larger gradient before clipping: A is kept. (The old selection kept B: rounding decided.)
    method, theta0 = lasso_at(tied, **{**UNLIMITED, "lam": 0.0, "budget": 32})
    assert step(method, theta0, {A: 0.0099999821, B: 0.0100000100}, {A: 1.85, B: 1.20}) == {A}
    restart(method, theta0)
    assert step(method, theta0, {A: 0.0100000100, B: 0.0099999821}, {A: 1.20, B: 1.85}) == {B}
    restart(method, theta0)  # a real difference in the offsets still wins over the gradient
    assert step(method, theta0, {A: 0.011, B: 0.010}, {A: 1.20, B: 1.85}) == {A}


def test_lasso_group_that_starts_mattering_later_enters_the_kept_set(tied):
    # Budget: one of the two. A learns first; then only B gets gradient, consistently: its reserved offset
    # grows while A's decays under the prox step, until B is served and A waits in the reserve.
    method, theta0 = lasso_at(tied, **{**UNLIMITED, "lam": 0.1, "lr": 0.01, "budget": 32})
    assert step(method, theta0, {A: 0.01}, {A: 1.0}) == {A}
    assert step(method, theta0, {A: 0.01}, {A: 1.0}) == {A}
    kept = [step(method, theta0, {B: 0.01}, {B: 1.0}) for _ in range(3)]
    assert kept[0] == {A} and kept[-1] == {B}
    assert method.selection_changes == 1 and method.info()["kept_tensors"] == [B]
    assert A in {method.names[i] for i in method.reserve}  # A's offset was kept for later, not forgotten


@pytest.mark.parametrize("hysteresis, swaps_at", [(0.0, 0), (0.05, 1)])
def test_lasso_hysteresis_keeps_the_served_group_against_a_marginally_larger_one(tied, hysteresis, swaps_at):
    # Budget: one of the two. A is served; then B's offset overtakes A's by 2 %: the plain top-k swaps them,
    # a 5 % hysteresis keeps A until B is larger by more than 5 % (8 % after B's second step).
    method, theta0 = lasso_at(tied, **{**UNLIMITED, "lam": 0.0, "budget": 32, "hysteresis": hysteresis})
    assert step(method, theta0, {A: 0.0100}, {A: 1.0}) == {A}
    kept = [step(method, theta0, {B: 0.0102}, {B: 1.0}), step(method, theta0, {B: 0.0006}, {B: 1.0})]
    assert kept[swaps_at] == {B} and all(k == {A} for k in kept[:swaps_at])
    assert method.info()["hysteresis"] == hysteresis


def test_lasso_without_its_second_bias(tiny_model_dir, device):
    model = Seq2SeqModel.load(str(tiny_model_dir), device)
    method = methods.build(method_cfg("lasso", bias_lr=0.0), model)
    assert "output_bias" not in method.parameters() and method.learning_rates() == {}
    assert method.info()["output_bias_size"] == 0
    method.start_document(Snapshot(method.parameters()).initial)
    Updater(model, method, min_updates=1, max_updates=1)(model.pair(*PAIRS[0]))  # adapts without it
    with pytest.raises(UserError, match="hysteresis"):
        methods.build(method_cfg("lasso", hysteresis=-0.1), Seq2SeqModel.load(str(tiny_model_dir), device))


def test_lasso_second_bias_learns_at_its_own_rate(tiny_model_dir, device):
    moved = {}
    for rate in (0.01, 1.0):
        model = Seq2SeqModel.load(str(tiny_model_dir), device)
        method = methods.build(method_cfg("lasso", bias_lr=rate), model)
        method.start_document(Snapshot(method.parameters()).initial)
        Updater(model, method, min_updates=1, max_updates=1)(model.pair(*PAIRS[0]))
        moved[rate] = method.bias.norm().item()
        assert method.info()["bias_lr"] == rate
    # tensor-wise clipping bounds one step to γ · 1.0; the bias's gradient is large enough to be clipped
    assert moved[0.01] <= 0.01 + 1e-6 and moved[1.0] > 50 * moved[0.01]


def test_lasso_keeps_the_same_tensors_with_one_or_two_threads():
    """Float sums differ between thread counts (~1e-7); the kept set, after every update, must not. (On cpu
    whatever --device says: the thread count is the CPU's.)"""
    import csv

    from adaptsim import DATA_DIR

    with open(DATA_DIR / "demo" / "docs.tsv", encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))[:12]
    histories, before = [], torch.get_num_threads()
    try:
        for threads in (1, 2):
            torch.set_num_threads(threads)
            model = Seq2SeqModel.load(str(DATA_DIR / "demo" / "model"), "cpu")
            method, _ = lasso_at(model)
            updater, history = Updater(model, method), []
            for row in rows:
                updater(model.pair(row["source"], row["reference"]))
                history.append(list(method.kept))
            histories.append((history, method.selection_changes))
    finally:
        torch.set_num_threads(before)
    assert histories[0] == histories[1]
    assert histories[0][1] > 0  # the selection moved during the document: there was something to decide


def test_only_the_methods_that_retrieve_carry_the_retrieval_hooks():
    """`Method` is the SGD side alone; what tm and icl add (keeping post-edits, retrieving from them) is `Retrieval`,
    which the loop asks for, so a method that only trains implements none of it."""
    from adaptsim.methods.base import Method
    from adaptsim.methods.retrieval import Retrieval

    assert not any(hasattr(Method, hook) for hook in ("revealed", "matches", "context", "moment"))
    retrieving = {path.stem for path in (CONFIG_DIR / "method").glob("*.yaml")
                  if issubclass(methods.method_class(OmegaConf.load(path)), Retrieval)}
    assert retrieving == {"tm", "icl"}
