"""`adaptsim select-fixed`: lasso over held-out documents writes a `fixed` method config that loads."""

import json

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from omegaconf import OmegaConf

from adaptsim import CONFIG_DIR, methods
from adaptsim.cli import main
from adaptsim.methods.fixed import Fixed
from adaptsim.model import Seq2SeqModel


def test_select_fixed_writes_a_loadable_method_config_within_the_budget(tmp_path, tiny_model_dir, tiny_tsv):
    output = tmp_path / "configs" / "method" / "fixed_tiny.yaml"
    with pytest.raises(SystemExit) as exit_:
        main(["select-fixed", f"model.path={tiny_model_dir}", "dataset=tsv", f"dataset.path={tiny_tsv}",
              "budget=0.3", "method.budget=0.2", "name=tiny", f"output={output}", "progress=false",
              f"hydra.run.dir={tmp_path / 'run'}"])
    assert exit_.value.code == 0
    report = json.loads((tmp_path / "run" / "select_fixed.json").read_text())
    model = Seq2SeqModel.load(str(tiny_model_dir))
    sizes = {n: p.numel() for n, p in model.named_parameters().items() if n not in model.arch.embeddings}
    assert report["documents"] == 2 and report["output"] == str(output)
    assert report["budget"] == int(0.3 * sum(sizes.values()))
    # the most often selected tensors come first; the list fits the budget and has no embedding matrix
    params = report["params"]
    assert params and sum(sizes[n] for n in params) == report["parameters"] <= report["budget"]
    counts = [report["selected"][n]["documents"] for n in params]
    assert counts == sorted(counts, reverse=True) and counts[0] >= 1

    # loadable as method=fixed_tiny through Hydra, and it trains exactly that list (+ source embedding rows)
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        cfg = compose("run", overrides=["method=fixed_tiny", "dataset=tsv", f"dataset.path={tiny_tsv}",
                                        f"hydra.searchpath=[file://{tmp_path / 'configs'}]"])
    GlobalHydra.instance().clear()
    assert cfg.method.name == "fixed_tiny" and list(cfg.method.params) == params
    method = methods.build(cfg.method, model)
    assert isinstance(method, Fixed) and method.info()["tensors"] == [n for n in sizes if n in params]
    assert OmegaConf.load(output).source_embeddings is True


def test_select_fixed_needs_lasso(tmp_path, tiny_model_dir, tiny_tsv, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["select-fixed", "method=full", f"model.path={tiny_model_dir}", "dataset=tsv", f"dataset.path={tiny_tsv}",
              f"output={tmp_path / 'x.yaml'}", f"hydra.run.dir={tmp_path / 'run'}"])
    assert exit_.value.code == 1
    assert "selects with lasso" in capsys.readouterr().err and not (tmp_path / "x.yaml").exists()
