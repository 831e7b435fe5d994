"""Figures that do not mislead (issue 35 items 5-7): a bar starts at zero or its axis says loudly that
it does not, and no tick label is cut at the figure's edge."""

from __future__ import annotations

import pandas as pd
import pytest


def checked_figures(monkeypatch) -> list:
    """Every figure saved from now on, checked as it is saved: [(axes, problems)]."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    seen = []
    save = Figure.savefig

    def checking(fig, *args, **kwargs):
        save(fig, *args, **kwargs)
        renderer = fig.canvas.get_renderer()
        tight = kwargs.get("bbox_inches") == "tight"  # then the saved page is the tight box (in inches)
        whole = fig.get_tightbbox(renderer).transformed(fig.dpi_scale_trans) if tight else fig.bbox
        problems = []
        for ax in fig.axes:
            if ax.patches and any(type(p).__name__ == "Rectangle" for p in ax.patches) and ax.containers:
                low = ax.get_ylim()[0]
                if low != 0 and "not zero" not in ax.get_ylabel():
                    problems.append(f"bars of {ax.get_ylabel()!r} start at {low}")
            for label in ax.get_xticklabels():
                if not label.get_visible() or not label.get_text():
                    continue
                box = label.get_window_extent(renderer)
                if box.x0 < whole.x0 - 1 or box.x1 > whole.x1 + 1 or box.y0 < whole.y0 - 1:
                    problems.append(f"x label {label.get_text()!r} cut at the edge")
        seen.append(problems)

    monkeypatch.setattr(Figure, "savefig", checking)
    return seen


def test_the_input_distribution_figure_starts_its_bars_at_zero(tmp_path, monkeypatch):
    from harness.families.wgmma.figures import _figure_inputs

    rows = []
    for types in ("f16/f32", "bf16/f32", "e4m3/f32", "s8/s32"):
        for i, dist in enumerate(("zeros", "small-int", "uniform01", "normal")):
            rows.append({"types": types, "dtype_a": types.split("/")[0], "dtype_b": types.split("/")[0],
                         "inputs": dist, "value": 900 * (1 - 0.02 * i), "sm_clock_mhz": 1980 - 40 * i,
                         "nvml_sm_clock_mhz": 1755.0})
    seen = checked_figures(monkeypatch)
    _figure_inputs(tmp_path / "inputs.png", pd.DataFrame(rows), "a run's rate by input distribution")
    assert seen == [[]]
