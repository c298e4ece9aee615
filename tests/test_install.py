"""A wheel of adaptsim, installed without the checkout (not editable), runs the demo offline from anywhere:
the configs and the embedded demo travel inside the package, and so does the lockstep launcher (Hydra finds
launchers in the `hydra_plugins` package only)."""

import json
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

from adaptsim import PROJECT_ROOT

pytestmark = pytest.mark.slow

@pytest.mark.skipif(not (PROJECT_ROOT / "pyproject.toml").is_file(), reason="needs the checkout to build from")
def test_the_installed_wheel_runs_the_demo_outside_the_checkout(tmp_path):
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(PROJECT_ROOT), "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(wheels)], check=True, capture_output=True, timeout=300)
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    # torch & co. from the environment running the tests, a venv or not (system_site_packages would give the base
    # interpreter's instead); its .pth files are not run, so this checkout's editable adaptsim stays out
    inner = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                           capture_output=True, text=True, check=True).stdout.strip()
    outer = [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))]
    (Path(inner) / "outer-environment.pth").write_text("".join(f"{p}\n" for p in outer))
    wheel = next(wheels.glob("adaptsim-*.whl"))
    assert "hydra_plugins/adaptsim_lockstep/lockstep_launcher.py" in zipfile.ZipFile(wheel).namelist()
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
                   check=True, capture_output=True, timeout=300)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    where = subprocess.run([str(python), "-c", "import adaptsim; print(adaptsim.CONFIG_DIR)"], cwd=elsewhere,
                           capture_output=True, text=True, check=True).stdout.strip()
    assert where.startswith(str(env_dir)) and not where.startswith(str(PROJECT_ROOT))
    extra = subprocess.run([str(python), "-c", "from adaptsim.metrics.segmenters import EXTRA; print(EXTRA)"],
                           cwd=elsewhere, capture_output=True, text=True, check=True).stdout.strip()
    assert extra == 'pip install "adaptsim[cjk]"'  # not the checkout's `pip install -e` (issue #76)
    out = elsewhere / "run"
    done = subprocess.run([str(python), "-m", "adaptsim", "run", "method=none", "progress=false", "threads=1",
                           "dataset.max_documents=1", f"hydra.run.dir={out}"],
                          cwd=elsewhere, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "finished" and summary["segments"] == 15
    sweep = elsewhere / "sweep"
    done = subprocess.run([str(python), "-m", "adaptsim", "run", "-m", "method=none,bias", "hydra/launcher=lockstep",
                           "progress=false", "threads=1", "dataset.max_documents=1", "dataset.max_segments=3",
                           f"hydra.sweep.dir={sweep}"], cwd=elsewhere, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    for run in ("0_none", "1_bias"):
        summary = json.loads((sweep / run / "summary.json").read_text())
        assert summary["status"] == "finished" and summary["timing"]["lockstep"] == 2
