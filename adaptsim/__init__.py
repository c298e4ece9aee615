"""adaptsim: simulated post-editing with online adaptation of neural MT (Simianer et al., 2019)."""

from pathlib import Path

from omegaconf import OmegaConf

__version__ = "0.1.0"

PROJECT_ROOT = Path(__file__).resolve().parent.parent
CONFIG_DIR = PROJECT_ROOT / "configs"
DATA_DIR = PROJECT_ROOT / "data"

# Config paths that do not depend on the working directory: ${adaptsim_data:} is the project's data/,
# ${adaptsim_shared:} the shared data/models folder beside the checkout (or $ADAPTSIM_SHARED).
OmegaConf.register_new_resolver("adaptsim_data", lambda: str(DATA_DIR), replace=True)
OmegaConf.register_new_resolver(
    "adaptsim_shared",
    lambda: __import__("os").environ.get("ADAPTSIM_SHARED", str(PROJECT_ROOT.parent / "shared")),
    replace=True,
)
