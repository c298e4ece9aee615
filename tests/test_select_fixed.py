"""`adaptsim select-fixed` chooses `fixed`'s tensors by held-out performance and writes a list that `fixed`
uses on its own model only."""

import json
import re

import pytest
from omegaconf import OmegaConf

from adaptsim import CONFIG_DIR, methods
from adaptsim.cli import main
from adaptsim.commands.select_fixed import blocks
from adaptsim.errors import UserError
from adaptsim.methods.fixed import Fixed
from adaptsim.models import Seq2SeqModel


def fixed_cfg(**overrides):
    return OmegaConf.merge(OmegaConf.load(CONFIG_DIR / "method" / "fixed.yaml"), {"list": "x"}, overrides)


def test_select_fixed_keeps_the_blocks_that_lower_held_out_loss(tmp_path, tiny_model_dir, tiny_tsv):
    output = tmp_path / "tiny.yaml"
    with pytest.raises(SystemExit) as exit_:
        main(["select-fixed", f"model.path={tiny_model_dir}", "dataset=tsv", f"dataset.path={tiny_tsv}",
              "budget_fraction=0.3", f"output={output}", "progress=false", "prefixes=2",
              f"hydra.run.dir={tmp_path / 'run'}"])
    assert exit_.value.code == 0
    report = json.loads((tmp_path / "run" / "summary.json").read_text())
    model = Seq2SeqModel.load(str(tiny_model_dir))
    sizes = {n: p.numel() for n, p in model.named_parameters().items() if n not in model.arch.embeddings}
    assert report["budget"] == int(0.3 * sum(sizes.values())) and report["documents"] == 2
    params = report["params"]
    assert params and sum(sizes[n] for n in params) == report["parameters"] <= report["budget"]
    # chosen by the score: the written list is the best prefix tried, and better than no tensors at all
    tried = {k: v["loss"] for k, v in report["prefixes"].items()}
    assert report["loss"] == min(tried.values()) < report["baseline_loss"]
    gains = [v["gain"] for v in report["blocks"].values()]
    assert gains == sorted(gains, reverse=True)
    chosen_blocks = report["prefixes"][min(tried, key=lambda k: (tried[k], int(k)))]["blocks"]
    assert all(report["blocks"][b]["gain"] > 0 for b in chosen_blocks)
    # `fixed` reads the list for this model and trains exactly it (plus the source embedding rows)
    method = methods.build(fixed_cfg(list=str(output)), model)
    assert isinstance(method, Fixed) and method.info()["tensors"] == [n for n in sizes if n in params]
    # held out means disjoint, checked: the list records its held-out pairs (keys, no text), and a run of `fixed`
    # on the data it was chosen on is refused before any work
    assert len(method.heldout) == 6 and not any(" " in k for k in method.heldout)
    with pytest.raises(SystemExit) as exit_:
        main(["run", "method=fixed", f"method.list={output}", f"model.path={tiny_model_dir}", "dataset=tsv",
              f"dataset.path={tiny_tsv}", "progress=false", f"hydra.run.dir={tmp_path / 'tested_on_heldout'}"])
    assert exit_.value.code == 1


def test_a_stream_sharing_some_held_out_pairs_is_warned_about(caplog):
    from types import SimpleNamespace

    from adaptsim.methods.fixed import heldout_overlap, pair_key

    stream = [SimpleNamespace(source=f"s{i}", reference=f"r{i}") for i in range(10)]
    heldout = frozenset(pair_key(f"s{i}", f"r{i}") for i in range(8, 20))  # 2 of 12 recur in the stream
    heldout_overlap(heldout, stream, "method.list=x")
    assert "2 of its 12 held-out pairs also occur in the test stream" in caplog.text
    with pytest.raises(UserError, match="chosen on this data: 6 of its 12"):
        heldout_overlap(frozenset(pair_key(f"s{i}", f"r{i}") for i in range(4, 16)), stream, "method.list=x")


def test_fixed_refuses_a_list_chosen_for_another_model(tmp_path, tiny_model_dir, tiny_model_dir_untied):
    demo_list = CONFIG_DIR / "fixed_lists" / "demo.yaml"
    with pytest.raises(UserError, match="chosen for model demo.*select-fixed"):
        methods.build(fixed_cfg(list=str(demo_list)), Seq2SeqModel.load(str(tiny_model_dir)))
    with pytest.raises(UserError, match="no list of fixed tensors.*select-fixed"):
        methods.build(fixed_cfg(list="no-such-model"), Seq2SeqModel.load(str(tiny_model_dir)))


def test_blocks_are_layer_submodules_and_cover_every_non_embedding_tensor(tiny_model_dir):
    model = Seq2SeqModel.load(str(tiny_model_dir))
    found = blocks(model)
    assert "model.decoder.layers.1.encoder_attn" in found and "model.encoder.layers.0.fc1" in found
    assert len(found["model.decoder.layers.1.encoder_attn"]) == 8  # q, k, v, out: weight and bias
    covered = sorted(n for names in found.values() for n in names)
    assert covered == sorted(n for n in model.named_parameters() if n not in model.arch.embeddings)


def test_select_fixed_needs_fixed(tmp_path, tiny_model_dir, tiny_tsv, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["select-fixed", "method=full", f"model.path={tiny_model_dir}", "dataset=tsv", f"dataset.path={tiny_tsv}",
              f"output={tmp_path / 'x.yaml'}", f"hydra.run.dir={tmp_path / 'run'}"])
    assert exit_.value.code == 1
    assert "list of method=fixed" in capsys.readouterr().err and not (tmp_path / "x.yaml").exists()


def test_select_fixed_checks_its_settings_before_loading(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["select-fixed", "update.clip_norm=-1", f"output={tmp_path / 'x.yaml'}",
              f"hydra.run.dir={tmp_path / 'run'}"])
    assert exit_.value.code == 1
    assert "update.clip_norm=-1" in capsys.readouterr().err and not (tmp_path / "x.yaml").exists()


def test_by_default_the_list_is_chosen_on_held_out_documents_in_the_papers_setting():
    from adaptsim.data import load_documents
    from adaptsim.launch.hydra_app import compose

    cfg = compose("select_fixed")
    assert cfg.reset == "never" and cfg.method.name == "fixed"
    held, test = (load_documents(c.dataset) for c in (cfg, compose("run")))
    assert {d.doc_id for d in held} and not {d.doc_id for d in held} & {d.doc_id for d in test}
    sources = lambda docs: {s.source for d in docs for s in d.segments}  # noqa: E731
    assert not sources(held) & sources(test)


def test_an_installed_adaptsim_writes_and_reads_lists_outside_its_package(tmp_path, tiny_model_dir, tiny_tsv,
                                                                           monkeypatch):
    from adaptsim import fixed_lists

    monkeypatch.setattr(fixed_lists, "in_checkout", lambda: False)  # as from a wheel: no pyproject.toml beside it
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    with pytest.raises(SystemExit) as exit_:
        main(["select-fixed", f"model.path={tiny_model_dir}", "model.name=tiny-installed", "dataset=tsv",
              f"dataset.path={tiny_tsv}", "budget_fraction=0.3", "progress=false", "prefixes=2",
              f"hydra.run.dir={tmp_path / 'run'}"])
    assert exit_.value.code == 0
    written = tmp_path / "config" / "adaptsim" / "fixed_lists" / "tiny-installed.yaml"
    assert written.is_file() and not (fixed_lists.LISTS / "tiny-installed.yaml").exists()
    method = methods.build(fixed_cfg(list="tiny-installed"), Seq2SeqModel.load(str(tiny_model_dir)))
    assert set(OmegaConf.load(written).params) <= set(method.parameters())  # method=fixed finds it there


def test_an_interrupted_search_resumes_with_the_simulations_it_had_done(tmp_path, tiny_model_dir, tiny_tsv):
    args = [f"model.path={tiny_model_dir}", "dataset=tsv", f"dataset.path={tiny_tsv}", "budget_fraction=0.3",
            "progress=false", "prefixes=2"]

    def search(name, *extra):
        with pytest.raises(SystemExit) as exit_:
            main(["select-fixed", *args, f"output={tmp_path / 'list.yaml'}", f"hydra.run.dir={tmp_path / name}",
                  *extra])
        assert exit_.value.code == 0
        return json.loads((tmp_path / name / "summary.json").read_text())

    whole = search("whole")
    lines = (tmp_path / "whole" / "simulations.jsonl").read_text().splitlines(keepends=True)
    assert len(lines) == whole["simulations"]
    # an interruption after three simulations, the fourth torn as it was written
    (tmp_path / "cut").mkdir()
    (tmp_path / "cut" / "simulations.jsonl").write_text("".join(lines[:3]) + lines[3][:10])
    summary = json.loads((tmp_path / "whole" / "summary.json").read_text())
    (tmp_path / "cut" / "summary.json").write_text(json.dumps({**summary, "status": "interrupted"}))
    resumed = search("cut", "resume=true")
    # the torn line dropped, the three taken back, only the others simulated and appended
    assert (tmp_path / "cut" / "simulations.jsonl").read_text().splitlines(keepends=True) == lines
    assert {k: resumed[k] for k in ("params", "loss", "baseline_loss", "blocks", "simulations")} == \
        {k: whole[k] for k in ("params", "loss", "baseline_loss", "blocks", "simulations")}
    # held-out data rewritten under its name: refused before anything is written (was accepted, and the list
    # written named the new data with the old base loss)
    (tmp_path / "cut" / "summary.json").write_text(json.dumps({**summary, "status": "interrupted"}))
    before = {p.name: p.read_bytes() for p in (tmp_path / "cut").iterdir() if p.is_file()}
    original = tiny_tsv.read_bytes()
    tiny_tsv.write_bytes(original.replace(b"Hund", b"Katze"))
    with pytest.raises(SystemExit) as exit_:
        main(["select-fixed", *args, f"output={tmp_path / 'list.yaml'}", f"hydra.run.dir={tmp_path / 'cut'}",
              "resume=true"])
    assert exit_.value.code == 1
    assert {p.name: p.read_bytes() for p in (tmp_path / "cut").iterdir() if p.is_file()} == before
    tiny_tsv.write_bytes(original)


def test_a_damaged_simulation_record_is_refused_in_one_line(tmp_path, tiny_model_dir, tiny_tsv, capsys):
    """A line of simulations.jsonl that is not a record (not the torn last one) is named, not a traceback, and
    refused before anything is written (the resume once rewrote the summary and the .hydra files first)."""
    args = [f"model.path={tiny_model_dir}", "dataset=tsv", f"dataset.path={tiny_tsv}", "budget_fraction=0.3",
            "progress=false", "prefixes=2", f"output={tmp_path / 'list.yaml'}", f"hydra.run.dir={tmp_path / 'r'}"]
    with pytest.raises(SystemExit):
        main(["select-fixed", *args])
    record = tmp_path / "r" / "simulations.jsonl"
    lines = record.read_text().splitlines(keepends=True)
    record.write_text(lines[0] + "{not json\n" + "".join(lines[2:]))
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    (tmp_path / "r" / "summary.json").write_text(json.dumps({**summary, "status": "interrupted"}))
    before = {p.relative_to(tmp_path): p.read_bytes() for p in (tmp_path / "r").rglob("*") if p.is_file()}
    with pytest.raises(SystemExit) as exit_:
        main(["select-fixed", *args, "resume=true"])
    assert exit_.value.code == 1
    assert re.search(r"simulations.jsonl:2: not a whole simulation record, and \d+ simulation\(s\) follow it",
                     capsys.readouterr().err)
    assert {p.relative_to(tmp_path): p.read_bytes() for p in (tmp_path / "r").rglob("*") if p.is_file()} == before


def test_a_budget_no_block_fits_says_so(tmp_path, tiny_model_dir, tiny_tsv, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["select-fixed", f"model.path={tiny_model_dir}", "dataset=tsv", f"dataset.path={tiny_tsv}", "budget=10",
              "progress=false", f"output={tmp_path / 'list.yaml'}",
              f"hydra.run.dir={tmp_path / 'r'}"])
    assert exit_.value.code == 1
    assert re.search(r"budget=10: no block that lowers the held-out loss fits it \(the smallest has [\d,]+ "
                     r"parameters\)", capsys.readouterr().err)
