"""The wgmma report's figures (matplotlib, PNG): issue interval against N with the fitted model and the paper,
throughput per SM against N, the fit's residuals, the rate and the clock by input distribution."""

from __future__ import annotations

import numpy as np
import pandas as pd

import harness.families.wgmma.model as perfmodel
from harness.families.wgmma.cases import DEFAULT_LAYOUT, K_OF, PAPER_N, WgmmaCase, parse
from harness.families.wgmma.fitting import SPARSE


DTYPE_ORDER = ("f16/f32", "f16/f16", "bf16/f32")


COLORS = {"SS": "#1f77b4", "RS": "#d62728"}


PANELS_PER_ROW = 6


def _type_keys(frame: pd.DataFrame) -> list[str]:
    """The run's input/accumulator types: the paper's three first, then the others by name (same
    A and B types only: mixed fp8 and int8 pairs look like their square ones)."""
    present = set(frame[frame.dtype_a == frame.dtype_b].types)
    return [k for k in DTYPE_ORDER if k in present] + sorted(present - set(DTYPE_ORDER))


def figure_intervals(path, intervals: pd.DataFrame, fits, paper: pd.DataFrame, title: str) -> None:
    """Types side by side (columns), dense above sparse (rows): measured SS and RS, the model fitted to
    each, and the paper's points."""
    import matplotlib.pyplot as plt

    keys = _type_keys(intervals)
    panels = [(key, sparse) for sparse in (False, True) for key in keys
              if ((intervals.types == key) & (intervals["sparse"].astype(bool) == sparse)).any()]
    columns = min(PANELS_PER_ROW, len(panels))
    rows = -(-len(panels) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(3.4 * columns, 3.0 * rows), sharey=True, squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    grid = np.arange(8, 257, 8)
    for ax, (key, sparse) in zip(axes.flat, panels):
        a, acc = key.split("/")
        fit_key = key + (SPARSE if sparse else "")
        fit = fits.fits.get(fit_key) if fits else None
        k = K_OF[a] * (2 if sparse else 1)
        mine = intervals[(intervals.types == key) & (intervals["sparse"].astype(bool) == sparse)]
        for ops in ("SS", "RS"):
            data = mine[mine.operands == ops].sort_values("n")
            ax.plot(data.n, data.value, "o", ms=3, color=COLORS[ops], label=f"measured {ops}")
            if fit is not None:  # b1 has no model
                model = [perfmodel.predict(WgmmaCase(64, int(n), k, a, a, acc, ops, sparse), fit.params).cycles
                         for n in grid]
                ax.plot(grid, model, "-", lw=1.2, color=COLORS[ops], alpha=0.6, label=f"fitted model {ops}")
            points = paper[(paper.key == fit_key) & (paper.operands == ops)]
            if len(points):
                ax.plot(points.n, points.value, "s", ms=9, mfc="none", mew=1.3, color=COLORS[ops],
                        label=f"paper (H800 PCIe) {ops}")
        ax.set_title(f"{'sparse' if sparse else 'dense'} {a} -> {acc}", fontsize=10)
        ax.set_xlabel(f"N (m64nNk{k})", fontsize=8)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log", base=2)
        ax.set_xticks(PAPER_N, labels=[str(n) for n in PAPER_N], fontsize=7)
        ax.set_yticks([8, 16, 32, 64, 128, 256], labels=["8", "16", "32", "64", "128", "256"], fontsize=7)
        ax.grid(True, which="major", alpha=0.3)
    for row in axes:
        row[0].set_ylabel("cycles per wgmma")
    handles = {label: h for ax in axes.flat for h, label in zip(*ax.get_legend_handles_labels())}
    fig.legend(handles.values(), handles.keys(), loc="lower center", ncol=len(handles), fontsize=8)
    fig.suptitle(title, fontsize=11)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    fig.savefig(path, dpi=100)
    plt.close(fig)


def figure_throughput(path, frame: pd.DataFrame, title: str) -> None:
    import matplotlib.pyplot as plt

    key = _type_keys(frame)[0]  # f16/f32 where the run has it
    a, acc = key.split("/")
    frame = frame[(frame.metric == "sm_throughput") & (frame.types == key) & (frame.dtype_b == a)]
    # one line per warpgroup count: dense cases of the default layout only (sparse cases and other
    # layouts at the same N would make it zig-zag), and inputs as the chain's default draws them
    frame = frame.loc[np.array([not (p := parse(c)).sparse and p.layout == DEFAULT_LAYOUT
                                and "inputs" not in launch for c, launch in zip(frame.case_id, frame.launch)], dtype=bool)]
    peak = perfmodel.DENSE_FLOP_PER_SM_PER_CYCLE.get(a)
    fig, axes = plt.subplots(1, 2, figsize=(10.4, 4.2), sharey=True)
    for ax, ops in zip(axes, ("SS", "RS")):
        for wg, data in frame[frame.operands == ops].groupby("warpgroups"):
            data = data.sort_values("n")
            ax.plot(data.n, data.value, "o-", ms=3, lw=1, label=f"{wg} warpgroup{'s' if wg > 1 else ''}/SM")
        if peak:
            ax.axhline(peak, color="black", ls="--", lw=1, label=f"dense peak {peak}")
        ax.set_title(f"{a} inputs, {acc} accumulate, {ops}")
        ax.set_xlabel(f"N (m64nNk{K_OF[a]})")
        ax.set_ylim(0, 1.1 * max(peak or 0, float(frame.value.max()) if len(frame) else 1.0))
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel("FLOP (OP) per cycle per SM")
    axes[0].legend(fontsize=8, loc="lower right")
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def figure_residuals(path, fits, title: str) -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9.5, 3.6))
    intervals = fits.residuals[fits.residuals.metric == "issue_interval_cycles"]
    for (key, ops), data in intervals.groupby(["types", "operands"]):
        data = data.sort_values("n")
        ax.plot(data.n, data.residual, "o-", ms=3, lw=0.8, label=f"{key} {ops}")
    ax.axhline(0, color="black", lw=0.8)
    ax.set_xlabel("N")
    ax.set_ylabel("measured - fitted (cycles)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, ncol=1, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)  # beside the lines
    ax.set_title(title, fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def figure_inputs(path, inputs: pd.DataFrame, title: str) -> None:
    """Throughput at N = 256 (SS, one warpgroup) by input distribution, types side by side, with the
    in-kernel and NVML clocks. The rates are dots on a range that does not start at zero (a bar from
    0.80 would draw an 8 % drop as half a bar), and the axis says so; the clocks are bars from zero."""
    import matplotlib.pyplot as plt

    keys = _type_keys(inputs)
    order = [d for d in ("zeros", "small-int", "uniform01", "uniform11", "normal") if d in set(inputs.inputs)]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(max(7.0, 1.3 * len(keys)), 7.0), sharex=True)
    width = 0.8 / max(1, len(order))
    x = np.arange(len(keys))
    best = inputs.groupby("types").value.max().reindex(keys)
    lowest = 1.0
    for i, dist in enumerate(order):
        rows = inputs[inputs.inputs == dist].set_index("types").reindex(keys)
        ratio = rows.value / best
        lowest = min(lowest, float(np.nanmin(ratio))) if ratio.notna().any() else lowest
        top.plot(x + i * width, ratio, "o", ms=6, label=dist)
        bottom.bar(x + i * width, rows.sm_clock_mhz, width)  # the same colours: one legend, above
    nvml = inputs.groupby("types").nvml_sm_clock_mhz.median().reindex(keys)
    bottom.plot(x + 0.4 - width / 2, nvml, "k_", ms=22, mew=2, label="NVML SM clock (median of the type)")
    floor = min(0.95, np.floor((lowest - 0.01) * 50) / 50)  # a step of 0.02 below the lowest dot
    top.set_ylim(floor, 1.005)
    top.set_ylabel(f"whole-GPU rate / the type's best\n(axis from {floor:.2f}, not zero)")
    top.axhline(1.0, color="0.4", lw=0.8, ls="--")
    bottom.set_ylabel("SM clock in the kernel (MHz)")
    high = float(np.nanmax([np.nanmax(inputs.sm_clock_mhz), np.nanmax(nvml) if nvml.notna().any() else 0.0]))
    bottom.set_ylim(0, 1.3 * high)  # from zero; headroom: the legend sits above the bars
    bottom.set_xticks(x + 0.4 - width / 2, labels=keys, rotation=30, fontsize=8, ha="right", rotation_mode="anchor")
    # the inputs' legend between the title and the panels, where no dot can be under it
    top.legend(fontsize=8, ncol=len(order), loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False)
    bottom.legend(fontsize=7, loc="upper right")
    for ax in (top, bottom):
        ax.grid(True, axis="y", alpha=0.3)
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=100, bbox_inches="tight")  # no tick label cut at the figure's edge
    plt.close(fig)
