"""The wgmma sections of `bench report`: issue interval against N with the fitted model and the
paper, throughput per SM against N, the fitted parameters and their residuals."""

from __future__ import annotations

import numpy as np
import pandas as pd

from harness.families.wgmma import model as perfmodel
from harness.families.wgmma.cases import K_OF, WgmmaCase

DTYPE_ORDER = ("f16/f32", "f16/f16", "bf16/f32")
COLORS = {"SS": "#1f77b4", "RS": "#d62728"}
PAPER_GPU = "H800 PCIe"
PAPER_N_TICKS = [8, 16, 32, 64, 128, 256]


def _paper_points(store) -> pd.DataFrame:
    return store.query(f"""SELECT n, operands, dtype_a || '/' || dtype_acc AS types, value FROM reference_values
                          WHERE gpu_name = '{PAPER_GPU}' AND metric = 'issue_interval_cycles'
                          AND case_id LIKE 'wgmma.%' AND NOT sparse AND k = 16""").drop_duplicates()


def _type_keys(frame: pd.DataFrame) -> list[str]:
    """The run's input/accumulator types: the paper's three first, then the others by name (same
    A and B types only: mixed fp8 and int8 pairs look like their square ones)."""
    present = set(frame[frame.dtype_a == frame.dtype_b].types)
    return [k for k in DTYPE_ORDER if k in present] + sorted(present - set(DTYPE_ORDER))


def _figure_intervals(path, intervals: pd.DataFrame, fits, paper: pd.DataFrame, title: str) -> None:
    import matplotlib.pyplot as plt

    keys = _type_keys(intervals)
    fig, axes = plt.subplots(1, len(keys), figsize=(5.2 * len(keys), 4.4), sharey=True, squeeze=False)
    grid = np.arange(8, 257, 8)
    for ax, key in zip(axes[0], keys):
        a, acc = key.split("/")
        fit = fits.fits.get(key) if fits else None
        for ops in ("SS", "RS"):
            data = intervals[(intervals.types == key) & (intervals.operands == ops)].sort_values("n")
            ax.plot(data.n, data.value, "o", ms=4, color=COLORS[ops], label=f"measured {ops}")
            if fit is not None:  # b1 has no model
                model = [perfmodel.predict(WgmmaCase(64, int(n), K_OF[a], a, a, acc, ops), fit.params).cycles
                         for n in grid]
                ax.plot(grid, model, "-", lw=1.2, color=COLORS[ops], alpha=0.6, label=f"fitted model {ops}")
            points = paper[(paper.types == key) & (paper.operands == ops)]
            if len(points):
                ax.plot(points.n, points.value, "s", ms=10, mfc="none", mew=1.5, color="black",
                        label=f"paper (H800 PCIe) {ops}" if ops == "SS" else "_nolegend_")
        ax.set_title(f"{a} inputs, {acc} accumulate")
        ax.set_xlabel(f"N (m64nNk{K_OF[a]})")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log", base=2)
        ax.set_xticks(PAPER_N_TICKS, labels=[str(n) for n in PAPER_N_TICKS])
        ax.set_yticks([8, 16, 32, 64, 128], labels=["8", "16", "32", "64", "128"])
        ax.grid(True, which="major", alpha=0.3)
    axes[0][0].set_ylabel("issue interval (cycles per wgmma)")
    axes[0][0].legend(fontsize=8, loc="upper left")
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _figure_throughput(path, frame: pd.DataFrame, title: str) -> None:
    import matplotlib.pyplot as plt

    key = _type_keys(frame)[0]  # f16/f32 where the run has it
    a, acc = key.split("/")
    frame = frame[(frame.metric == "sm_throughput") & (frame.types == key) & (frame.dtype_b == a)]
    from harness.families.wgmma import DENSE_FLOP_PER_SM_PER_CYCLE

    peak = DENSE_FLOP_PER_SM_PER_CYCLE.get(a)
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


def _figure_residuals(path, fits, title: str) -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 3.6))
    for (key, ops), data in fits.residuals.groupby(["types", "operands"]):
        data = data.sort_values("n")
        ax.plot(data.n, data.residual, "o-", ms=3, lw=0.8, label=f"{key} {ops}")
    ax.axhline(0, color="black", lw=0.8)
    ax.set_xlabel("N")
    ax.set_ylabel("measured - fitted (cycles)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, ncol=3)
    ax.set_title(title, fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def figures(ctx) -> list:
    """[(heading, paragraphs, Path | DataFrame | None)] for the report (harness/analysis/report.py)."""
    import json

    frame = ctx.measured[ctx.measured.family == "wgmma"].copy()
    frame["types"] = frame.dtype_a + "/" + frame.dtype_acc
    frame["warpgroups"] = [json.loads(launch).get("warpgroups") for launch in frame.launch]
    intervals = frame[frame.metric == "issue_interval_cycles"]
    if intervals.empty:
        return []
    from harness.families.wgmma.fitting import WgmmaModel

    fits = WgmmaModel().fit(frame, ctx.gpu, f"fitted to run {ctx.run_id}")
    if fits is not None and not fits.fits:
        fits = None  # only types without a model (b1)
    gpu, run = ctx.gpu, ctx.run_id
    paths = [ctx.directory / name for name in ("issue_interval_vs_n.png", "sm_throughput_vs_n.png", "residuals.png")]
    _figure_intervals(paths[0], intervals, fits, _paper_points(ctx.store),
                      f"{gpu}, run {run}: wgmma issue interval against N (measured, fitted model, paper)")
    _figure_throughput(paths[1], frame, f"{gpu}, run {run}: tensor-core throughput per SM (clock-independent)")
    throughput = ("wgmma: throughput against N", [
        "Work per cycle per SM with W warpgroups per SM on every SM, for the run's first input type; the "
        "peak is 4 tensor cores x 1024 FLOP per cycle for 16-bit inputs (half for tf32, twice for fp8 and "
        "int8). The W lines lie on top of each other: one warpgroup's chain already keeps the tensor cores "
        "as busy as four do."], paths[1])
    if fits is None:
        return [("wgmma: issue interval against N", [], paths[0]), throughput]
    _figure_residuals(paths[2], fits, f"{gpu}, run {run}: residuals of the fitted model")
    params = fits.parameters
    prior = fits.prior
    worst = fits.residuals.residual.abs().max()
    fit_text = [
        f"Fitted model: B_smem = {params.B_smem.min():g}..{params.B_smem.max():g} B/cycle/SM, "
        f"F_tc = {params.F_tc.min():g}..{params.F_tc.max():g} FLOP/cycle per tensor core, "
        f"L_min = {params.L_min.min():g}..{params.L_min.max():g} cycles (starting from {prior.b_smem:g}, "
        f"{prior.f_tc:g}, {prior.l_min:g}: {prior.source}); the largest residual is {worst:.3f} cycles "
        f"over {len(fits.residuals)} cases.",
        "Least squares per dtype (harness/families/wgmma/model.py fit): each case is assigned to the term "
        "that bounds it, each term is fitted on its cases, until the assignment is stable. Crossover N: where "
        "the instruction turns tensor-core bound (SS: arithmetic overtakes reading A and B; RS: overtakes "
        "the floor)."]
    return [
        ("wgmma: issue interval against N", [], paths[0]),
        throughput,
        ("wgmma: fitted model", fit_text, params.round(4)),
        ("wgmma: residuals", [], paths[2]),
    ]
