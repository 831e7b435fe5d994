"""What every figure shares so that it does not mislead: lines that coincide are said and both kept
visible (mark_coinciding); a history of one measurement drawn against its noise band (history_range)."""

from __future__ import annotations

import numpy as np

COINCIDE = 0.005  # two lines whose every point is within 0.5 % of the other's are drawn as one


def mark_coinciding(ax, rtol: float = COINCIDE) -> list[str]:
    """Restyle every line of `ax` that lies on an earlier one (the same x, y within `rtol`): hollow,
    larger markers and a dashed line, so that both stay visible, and its legend label says which
    line it coincides with. Returns one sentence per such pair, for the figure's text."""
    said = []
    lines = [line for line in ax.get_lines() if not str(line.get_label()).startswith("_")]
    for i, later in enumerate(lines):
        x, y = np.asarray(later.get_xdata(), dtype=float), np.asarray(later.get_ydata(), dtype=float)
        for earlier in lines[:i]:
            ex, ey = np.asarray(earlier.get_xdata(), dtype=float), np.asarray(earlier.get_ydata(), dtype=float)
            if len(x) == 0 or x.shape != ex.shape or not np.allclose(x, ex):
                continue
            if not np.allclose(y, ey, rtol=rtol, atol=0, equal_nan=True):
                continue
            later.set_linestyle("--")
            later.set_marker(later.get_marker() if later.get_marker() not in (None, "None", "") else "o")
            later.set_markerfacecolor("none")
            later.set_markersize(max(7.0, 2 * float(later.get_markersize())))
            later.set_markeredgewidth(1.5)
            later.set_zorder(earlier.get_zorder() + 1)
            name, other = _name(later.get_label()), _name(earlier.get_label())
            later.set_label(f"{later.get_label()}: on {other}'s line (within {100 * rtol:g} %)")
            said.append(f"{name} coincides with {other} (every point within {100 * rtol:g} %): "
                        f"{name}'s points are the hollow rings on {other}'s line.")
            break
    return said


def _name(label: str) -> str:
    return str(label).split(" (")[0]


def history_range(values: np.ndarray, band: float) -> tuple[float, float]:
    """A y range for a history of `values` that a noise of `band` (relative) cannot fill: at least
    four bands around the middle, so noise reads as noise and a change beyond it as a change."""
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    if not len(values):
        return 0.0, 1.0
    middle = abs(float(np.median(values)))
    low = min(float(values.min()), float(np.median(values)) - 2 * band * middle)
    high = max(float(values.max()), float(np.median(values)) + 2 * band * middle)
    pad = max(0.1 * (high - low), 1e-12)
    return low - pad, high + pad


def gpu_panels(panels: dict, draw, path, size: tuple[float, float] = (6.5, 5.5), rows: int = 1):
    """One column of `rows` panels per GPU, side by side: `draw(axes, gpu, data)` fills the column's axes (a list
    of `rows`) and returns the image whose colour bar goes beside the first, or None; saved at `path`."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(rows, len(panels), figsize=(size[0] * len(panels), size[1]), squeeze=False)
    for k, (gpu, data) in enumerate(panels.items()):
        column = [axes[r][k] for r in range(rows)]
        image = draw(column, gpu, data)
        if image is not None:
            fig.colorbar(image, ax=column[0], shrink=0.8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
