"""What the reports' figures share (`adaptsim plot`, `adaptsim cxmi --out`): the check of --out before any work,
and the style of each run's line. matplotlib is imported only where a figure is drawn or checked."""

from __future__ import annotations

from pathlib import Path

from adaptsim.errors import UserError


def check_out(out: Path) -> None:
    """Refuse, before any work, an --out whose file type matplotlib cannot write."""
    from matplotlib.backend_bases import FigureCanvasBase

    types = FigureCanvasBase.get_supported_filetypes()
    if out.suffix.lstrip(".").lower() not in types:
        raise UserError(f"--out {out}: unknown file type {out.suffix or '(none)'}; use one of "
                        + ", ".join(f".{t}" for t in sorted(types)))


_DASHES = ["-", (0, (5, 2)), (0, (1, 1.5)), (0, (6, 2, 1, 2)), (0, (2, 2)), (0, (8, 2, 1, 2, 1, 2))]


def line_style(k: int) -> dict:
    """The k-th run's line: its own dash pattern, and wider the earlier it is drawn, so that runs whose curves
    coincide (common in R1, where few occurrences move a curve) stay visible under the ones drawn after them."""
    return {"ls": _DASHES[k % len(_DASHES)], "lw": max(1.0, 3.2 - 0.35 * k)}

