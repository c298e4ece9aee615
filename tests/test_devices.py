"""GPU readiness: every tensor adaptsim makes from scratch is made on the model's device, and the tests can run on one.

A GPU machine may be lent to this project by chance (rarely, for minutes); `python -m pytest --device cuda
tests/test_lockstep.py tests/test_decode.py tests/test_resume.py tests/test_methods.py tests/test_update.py
tests/test_devices.py` runs the device tests there (tests/conftest.py: the `--device` option and the `device`
fixture). Without a GPU, `device=cuda` does not run, so what is checked here on every machine is the code: a tensor
made by a torch factory without `device=` lands on the CPU and breaks (or silently slows) a CUDA run at the
first operation that mixes it with the model's tensors. Tensors derived from others (`*_like`, arithmetic,
`stack`) inherit their device and are not factories. And the `--device` option itself: a cuda device asked for
where CUDA is not available ends the session at once with one line.
"""

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import check_device_option

from adaptsim import PROJECT_ROOT

FACTORIES = {"tensor", "zeros", "ones", "empty", "full", "arange", "rand", "randn", "randint", "eye", "linspace"}


def factory_calls_without_device(source: str) -> list[int]:
    """Line numbers of torch.<factory>(…) calls with no device= that are not moved at once with .to(…)."""
    tree = ast.parse(source)
    moved = {id(node.func.value) for node in ast.walk(tree) if isinstance(node, ast.Call)
             and isinstance(node.func, ast.Attribute) and node.func.attr == "to"}
    bad = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in FACTORIES
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "torch"
                and not any(k.arg == "device" for k in node.keywords) and id(node) not in moved):
            bad.append(node.lineno)
    return bad


def test_the_check_finds_a_factory_without_a_device():
    assert factory_calls_without_device("x = torch.zeros(3)\ny = torch.zeros(3, device=d)\n"
                                        "z = torch.tensor([1]).to(d)") == [1]


def test_every_tensor_the_engine_makes_is_made_on_the_models_device():
    found = {}
    for path in sorted((PROJECT_ROOT / "adaptsim").rglob("*.py")):
        lines = factory_calls_without_device(path.read_text(encoding="utf-8"))
        if lines:
            found[str(path.relative_to(PROJECT_ROOT))] = lines
    assert not found, f"torch factories without device= (file: lines): {found}"


def test_the_device_option_gives_the_device_fixture(device, pytestconfig):
    assert device == pytestconfig.getoption("--device") and re.fullmatch(r"cpu|cuda(:\d+)?", device)
    check_device_option(device)  # this session's device is one this machine has
    with pytest.raises(pytest.UsageError, match=r"^--device gpu: choose cpu \| cuda \| cuda:N$"):
        check_device_option("gpu")


def test_an_unavailable_cuda_ends_the_session_at_once_with_one_line():
    """CUDA hidden (CUDA_VISIBLE_DEVICES empty, so this holds on a GPU machine too): a usage error before anything
    is collected, not a session of skipped tests."""
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    here = Path(__file__).resolve()
    done = subprocess.run([sys.executable, "-m", "pytest", "--device", "cuda", "-q", "-p", "no:cacheprovider",
                           str(here.parent / "test_update.py"), "-x"], cwd=here.parents[1], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout + done.stderr
    errors = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(errors) == 1 and errors[0].startswith("ERROR: --device cuda: CUDA is not available here"), errors
    assert "passed" not in done.stdout and "skipped" not in done.stdout
