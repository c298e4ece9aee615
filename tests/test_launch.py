"""adaptsim's launch of a command (adaptsim/launch/hydra_app.py) against Hydra's own `hydra.main`: the same record of
the run, and the command line read as Hydra reads it."""

import sys

import hydra
import pytest

from adaptsim import CONFIG_DIR
from adaptsim.launch.hydra_app import launch

HYDRA_FILES = ("config.yaml", "overrides.yaml", "hydra.yaml")


def noop(cfg, job):
    """A task that writes nothing of its own: what is compared is what the launch writes around it."""


def hydra_main_run(out, overrides):
    """The run as `hydra.main` launches it, with the claimed directory added as adaptsim adds it."""
    @hydra.main(config_path=str(CONFIG_DIR), config_name="run", version_base="1.3")
    def app(cfg):
        pass

    saved = sys.argv
    sys.argv = ["adaptsim run", *overrides, f"hydra.run.dir={out}"]
    try:
        app()
    finally:
        sys.argv = saved


def normalised(path, out):
    return path.read_text().replace(str(out), "OUT")


def test_a_single_run_records_what_hydras_own_main_records(tmp_path):
    overrides = ["method=bias", "method.lr=0.5", "reset=never", "progress=false"]
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    assert launch(noop, "run", [*overrides, f"hydra.run.dir={ours}"], "run") == 0
    hydra_main_run(theirs, [*overrides, f"hydra.run.dir={theirs}"])
    for name in HYDRA_FILES:
        assert normalised(ours / ".hydra" / name, ours) == normalised(theirs / ".hydra" / name, theirs), name
    assert (ours / "adaptsim.log").is_file() and (ours / "summary.json").is_file()


def test_a_sweep_without_m_is_one_line_not_the_first_value_run(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        launch(noop, "run", ["method=none,bias", f"hydra.run.dir={tmp_path / 'x'}"], "run")
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "method=none,bias: a sweep needs -m" in err
    assert not (tmp_path / "x").exists()


def test_hydras_flags_show_without_running_and_other_config_dirs_are_refused(tmp_path, capsys):
    assert launch(noop, "run", ["--cfg", "job", "method=bias", "method.lr=0.25"], "run") == 0
    shown = capsys.readouterr().out
    assert "lr: 0.25" in shown and "hydra:" not in shown
    with pytest.raises(SystemExit) as exit_:
        launch(noop, "run", ["--config-dir", str(tmp_path), "method=bias"], "run")
    assert exit_.value.code == 2 and "--config-dir is not supported" in capsys.readouterr().err


def md5s(directory) -> dict:
    """Every file under `directory`: its md5."""
    import hashlib

    return {str(p.relative_to(directory)): hashlib.md5(p.read_bytes()).hexdigest()
            for p in sorted(directory.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("launcher", ["basic", "lockstep"])
def test_a_refused_sweep_resume_changes_nothing(tmp_path, tiny_model_dir, tiny_tsv, common, launcher, capsys):
    """One job's summary.json lost: the resumed sweep is refused before Hydra starts, as a single run in that state
    is, and no file under the sweep changes (the other job's summary, every .hydra/, the sweep's claim)."""
    from adaptsim.cli import main

    out = tmp_path / "sweep"
    args = ["run", "-m", f"hydra/launcher={launcher}", f"hydra.sweep.dir={out}", "hydra.sweep.subdir=${method.name}",
            *common(tiny_model_dir, tiny_tsv), "method=none,full"]
    with pytest.raises(SystemExit) as exit_:
        main(args)
    assert exit_.value.code == 0
    (out / "full" / "summary.json").unlink()
    before = md5s(out)
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        main([*args, "resume=true"])
    err = capsys.readouterr().err.strip().splitlines()
    assert exit_.value.code == 1 and len(err) == 1, err
    assert f"{out / 'full'}: holds a run's steps but no summary.json" in err[0]
    assert md5s(out) == before
