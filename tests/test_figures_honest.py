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
                # a bar's length is along y (vertical bars) or x (horizontal: barh), where the axis must start at 0
                horizontal = all(getattr(c, "orientation", None) == "horizontal" for c in ax.containers)
                low = (ax.get_xlim() if horizontal else ax.get_ylim())[0]
                label = ax.get_xlabel() if horizontal else ax.get_ylabel()
                if low != 0 and "not zero" not in label:
                    problems.append(f"bars of {label!r} start at {low}")
            low, high = sorted(ax.get_xlim())
            for where, label in zip(ax.get_xticks(), ax.get_xticklabels()):
                if not label.get_visible() or not label.get_text() or not low <= where <= high:
                    continue  # matplotlib lists ticks beyond the axis that it never draws
                box = label.get_window_extent(renderer)
                if box.x0 < whole.x0 - 1 or box.x1 > whole.x1 + 1 or box.y0 < whole.y0 - 1:
                    problems.append(f"x label {label.get_text()!r} cut at the edge")
        seen.append(problems)

    monkeypatch.setattr(Figure, "savefig", checking)
    return seen


def test_the_input_distribution_figure_starts_its_bars_at_zero(tmp_path, monkeypatch):
    from harness.families.wgmma.plots import figure_inputs

    rows = []
    for types in ("f16/f32", "bf16/f32", "e4m3/f32", "s8/s32"):
        for i, dist in enumerate(("zeros", "small-int", "uniform01", "normal")):
            rows.append({"types": types, "dtype_a": types.split("/")[0], "dtype_b": types.split("/")[0],
                         "inputs": dist, "value": 900 * (1 - 0.02 * i), "sm_clock_mhz": 1980 - 40 * i,
                         "nvml_sm_clock_mhz": 1755.0})
    seen = checked_figures(monkeypatch)
    figure_inputs(tmp_path / "inputs.png", pd.DataFrame(rows), "a run's rate by input distribution")
    assert seen == [[]]


def test_coinciding_lines_are_said_and_both_visible():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from harness.plotting import mark_coinciding

    fig, ax = plt.subplots()
    ax.plot([8, 16, 256], [18.0, 20.0, 128.0], "o-", ms=3, label="NVIDIA H100 80GB HBM3 (measured)")
    ax.plot([8, 16, 256], [18.0, 20.05, 128.1], "o-", ms=3, label="NVIDIA H200 (measured)")
    ax.plot([8, 16, 256], [30.0, 40.0, 128.0], "o-", ms=3, label="another")
    said = mark_coinciding(ax)
    h100, h200, other = ax.get_lines()
    assert said == ["NVIDIA H200 coincides with NVIDIA H100 80GB HBM3 (every point within 0.5 %): "
                    "NVIDIA H200's points are the hollow rings on NVIDIA H100 80GB HBM3's line."]
    assert h200.get_markerfacecolor() == "none" and h200.get_markersize() > h100.get_markersize()
    assert "on NVIDIA H100 80GB HBM3's line" in h200.get_label() and other.get_linestyle() == "-"
    plt.close(fig)


def test_history_is_drawn_against_the_noise_band_and_changes_only_where_compare_would():
    import numpy as np

    from harness.analysis.site_history import _history_changes
    from harness.plotting import history_range

    # 0.002-cycle noise about 128 cycles: a range of several noise bands, not of the noise itself
    values = np.array([128.000, 128.002, 127.999, 128.001])
    low, high = history_range(values, 0.005)
    assert low <= 128 * (1 - 0.01) and high >= 128 * (1 + 0.01)

    class Samples:  # samples of fractional cycles: the 0.5 % floor applies, as in compare.against_run
        def samples_of(self, ids):
            return {i: np.array([1.5, 2.5]) for i in ids}

    series = pd.DataFrame({"measurement_id": range(5), "run_id": [1, 2, 3, 4, 5], "gpu_name": "H100",
                           "metric": "issue_interval_cycles", "value": [128.0, 128.002, 127.999, 134.4, 134.4],
                           "spread": [0.001] * 5, "sm_clock_mhz": [1755.0] * 5})
    changes = _history_changes(Samples(), series)
    assert list(changes.verdict) == ["same", "same", "same", "slower", "same"]
    assert (changes.noise_here >= 0.005).all()


SHIPPED = __import__("pathlib").Path(__file__).resolve().parent.parent / "results.db"


@pytest.mark.parametrize("run", [52, 47, 56, 130])
def test_every_figure_of_a_shipped_report_is_honest(tmp_path, monkeypatch, run):
    """Runs 52 (wgmma input distributions and clocks), 47 (TMA), 56 (wgmma, every N) and 130 (fp8 GEMMs, plain and
    block-scaled, each beside its own cuBLASLt anchor; horizontal bars)."""
    if not SHIPPED.exists():
        pytest.skip("no shipped results.db in this checkout")
    from harness.analysis.report import build
    from harness.db.files import copy_sqlite
    from harness.db.store import Store

    copy = tmp_path / "results.db"
    copy_sqlite(SHIPPED, copy)
    seen = checked_figures(monkeypatch)
    with Store.open(str(copy), read_only=True) as store:
        build(store, run, tmp_path / "reports")
    assert seen and all(problems == [] for problems in seen), seen


def test_the_check_reads_a_bars_length_along_its_own_axis(tmp_path, monkeypatch):
    """Vertical bars must start at y = 0 and horizontal ones (barh) at x = 0; a categorical axis may start anywhere."""
    import matplotlib.pyplot as plt

    seen = checked_figures(monkeypatch)
    for horizontal, start in ((False, 0), (False, 5), (True, 0), (True, 5)):
        fig, ax = plt.subplots()
        (ax.barh if horizontal else ax.bar)([3, 4, 5], [10, 12, 11])
        (ax.set_xlim if horizontal else ax.set_ylim)(start, 13)
        fig.savefig(tmp_path / f"{horizontal}{start}.png")
        plt.close(fig)
    assert [bool(problems) for problems in seen] == [False, True, False, True], seen
