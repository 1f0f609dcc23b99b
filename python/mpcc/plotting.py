"""Figure output shared by every engine and analysis: each figure as PNG and SVG."""

from __future__ import annotations

from pathlib import Path


def save_figure(fig, out_dir, stem: str, *, dpi: int = 120, tight: bool = False,
                formats=("png", "svg")) -> list[Path]:
    """Write ``fig`` as ``out_dir/stem.{png,svg}``, close it, and return the paths."""
    import matplotlib.pyplot as plt

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for ext in formats:
        p = out / f"{stem}.{ext}"
        fig.savefig(p, dpi=dpi, bbox_inches="tight" if tight else None)
        paths.append(p)
    plt.close(fig)
    return paths
