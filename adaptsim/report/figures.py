"""What the reports' figures share (`adaptsim plot`, `cxmi --out`, `forgetting --out`): the check of --out before
any work, the style of each run's line, and writing the file. matplotlib is imported only where a figure is drawn or
checked."""

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


def save(fig, out: Path, **options) -> None:
    """Write `fig` to `out` (its folder made), one line if that fails; the figure is closed either way. A PNG is
    written with a palette of at most 256 colours (Pillow, which matplotlib needs anyway), undithered: line plots
    hold a few dozen colours, and the file is about a fifth of matplotlib's RGBA one, committed figures included."""
    import matplotlib.pyplot as plt

    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        if out.suffix.lower() == ".png":
            _save_palette_png(fig, out, **options)
        else:
            fig.savefig(out, **options)
    except OSError as e:
        raise UserError(f"--out {out}: cannot write it ({e.strerror or e})") from None
    finally:
        plt.close(fig)


def _save_palette_png(fig, out: Path, **options) -> None:
    import io

    from PIL import Image

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", **options)
    buffer.seek(0)
    with Image.open(buffer) as image:
        rgb = image.convert("RGB")  # the figure's background is opaque white
    rgb.quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(out, optimize=True)
