"""adaptsim: simulated post-editing with online adaptation of neural MT (Simianer et al., 2019)."""

from pathlib import Path

from omegaconf import OmegaConf

__version__ = "0.1.0"

PACKAGE_DIR = Path(__file__).resolve().parent
# configs/ and data/ travel inside the package (in a checkout, adaptsim/configs and adaptsim/resources are
# links to them), so an installed adaptsim finds its configs and the embedded demo without a checkout.
CONFIG_DIR = PACKAGE_DIR / "configs"
DATA_DIR = PACKAGE_DIR / "resources"
PROJECT_ROOT = PACKAGE_DIR.parent  # the checkout, where there is one (scripts/, tests/, ../shared)

# Config paths that do not depend on the working directory: ${adaptsim_data:} is the project's data/,
# ${adaptsim_shared:} the shared data/models folder beside the checkout (or $ADAPTSIM_SHARED).
def install_line(extra: str) -> str:
    """How to install an optional extra: the checkout's editable install, or an installed adaptsim's."""
    if (PROJECT_ROOT / "pyproject.toml").is_file():
        return f'pip install -e ".[{extra}]"'
    return f'pip install "adaptsim[{extra}]"'


def shared_dir() -> Path:
    """The shared data and models folder (docs/data.md): $ADAPTSIM_SHARED, else ../shared beside the checkout."""
    return Path(__import__("os").environ.get("ADAPTSIM_SHARED", str(PROJECT_ROOT.parent / "shared")))


OmegaConf.register_new_resolver("adaptsim_data", lambda: str(DATA_DIR), replace=True)
OmegaConf.register_new_resolver("adaptsim_shared", lambda: str(shared_dir()), replace=True)


def config_defaults(path: str) -> dict:
    """A block of one YAML file under configs/ ("run.yaml:decode", "metrics/default.yaml"), as plain values:
    where code that also runs without Hydra (a library call, score, a test) takes a setting's default from, so
    every default keeps its one home in configs/. Interpolations are left unresolved (as strings)."""
    file, _, block = path.partition(":")
    node = OmegaConf.to_container(OmegaConf.load(CONFIG_DIR / file), resolve=False)
    return dict(node[block] if block else node)

