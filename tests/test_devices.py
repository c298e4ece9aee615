"""GPU readiness without a GPU: every tensor adaptsim makes from scratch is made on the model's device.

No GPU is lent to this project, so `device=cuda` has not run; what can be checked here is the code: a tensor
made by a torch factory without `device=` lands on the CPU and breaks (or silently slows) a CUDA run at the
first operation that mixes it with the model's tensors. Tensors derived from others (`*_like`, arithmetic,
`stack`) inherit their device and are not factories.
"""

import ast

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
    assert factory_calls_without_device("x = torch.zeros(3)\ny = torch.zeros(3, device=d)\nz = torch.tensor([1]).to(d)") == [1]


def test_every_tensor_the_engine_makes_is_made_on_the_models_device():
    found = {}
    for path in sorted((PROJECT_ROOT / "adaptsim").rglob("*.py")):
        lines = factory_calls_without_device(path.read_text(encoding="utf-8"))
        if lines:
            found[str(path.relative_to(PROJECT_ROOT))] = lines
    assert not found, f"torch factories without device= (file: lines): {found}"
