"""The gemm report's figures (matplotlib, PNG): the ladder, TFLOPS against stages, where the time goes, the best
pipeline against cuBLAS by size, and the findings' stages needed per GPU."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from harness.families.gemm.frame import config_label, config_lines, ideal_kblock, predict_tflops, stages_needed
from harness.families.pipeline import SMEM_LIMIT


COLORS = {"ours": "#1f77b4", "cublas": "#7f7f7f", "predicted": "#d62728", "worklog": "#2ca02c"}


def figure_ladder(path, ladder: pd.DataFrame, cublas: dict[int, float], worklog: pd.DataFrame, title: str) -> None:
    """Bars of our TFLOPS per step (one colour per size), cuBLAS of the same run as a dashed line per size,
    the planner's prediction as a marker on each bar, the worklog's figure as a hollow diamond."""
    import matplotlib.pyplot as plt

    steps = list(dict.fromkeys(ladder.step))
    sizes = sorted(set(ladder["size"]), reverse=True)
    width = 0.8 / len(sizes)
    x = np.arange(len(steps))
    fig, ax = plt.subplots(figsize=(max(9.0, 1.1 * len(steps) + 2), 5.0))
    shades = plt.cm.Blues(np.linspace(0.85, 0.45, len(sizes)))
    top = 0.0
    for i, (size, shade) in enumerate(zip(sizes, shades)):
        rows = ladder[ladder["size"] == size].set_index("step").reindex(steps)
        offset = x - 0.4 + width * (i + 0.5)
        ax.bar(offset, rows.throughput_tflops.fillna(0), width, color=shade, label=f"ours, {size}^3 (measured)")
        for xi, row in zip(offset, rows.itertuples()):
            if row.throughput_tflops == row.throughput_tflops and row.library_fraction == row.library_fraction:
                ax.text(xi, row.throughput_tflops, f"{row.library_fraction:.2f}", ha="center", va="bottom", fontsize=7)
        if rows.predicted.notna().any():
            ax.plot(offset, rows.predicted, "_", color=COLORS["predicted"], ms=max(8.0, 40 * width), mew=2.5,
                    label="planner (prior), at the clock each case measured" if i == 0 else None)
        if size in cublas:
            ax.axhline(cublas[size], color=COLORS["cublas"], ls="--", lw=1.2 if i == 0 else 0.9,
                       label=f"cuBLAS {size}^3, same run ({cublas[size]:.0f} TFLOPS)")
        top = max(top, float(np.nanmax(rows[["throughput_tflops", "predicted"]].to_numpy(dtype=float), initial=0)),
                  cublas.get(size, 0.0))
    for i, size in enumerate(sizes):  # the worklog's figures at their size, over our bars of that size
        at = worklog[worklog["size"] == size].set_index("step").reindex(steps) if len(worklog) else None
        if at is None or at.value.isna().all():
            continue
        ax.plot(x - 0.4 + width * (i + 0.5), at.value, "D", mfc="none", mec=COLORS["worklog"], mew=1.5, ms=8,
                label=f"the worklog ({worklog.gpu.iloc[0]}, {size}^3, as published)")
        top = max(top, float(np.nanmax(at.value.to_numpy(dtype=float), initial=0)))
    ax.set_xticks(x, labels=[f"{s}\n{config_lines(c)}" for s, c in
                             zip(steps, ladder.drop_duplicates("step").set_index("step").reindex(steps).case)],
                  fontsize=7)
    ax.plot([], [], " ", label="over each bar: ours / cuBLAS, round by round")
    ax.set_xlabel("worklog step (our configuration)")
    ax.set_ylabel("TFLOPS (f16 in, f32 accumulate)")
    ax.set_ylim(0, 1.25 * top if top else 1.0)  # headroom: the legend sits above the bars
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", ncol=2)
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def figure_stages(path, sweeps: list[tuple[str, pd.DataFrame]], params, title: str) -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8.5, 4.6))
    top = 0.0
    for label, group in sweeps:
        line = ax.plot(group.stages, group.throughput_tflops, "o-", ms=5, lw=1.2, label=f"{label} (measured)")[0]
        top = max(top, float(group.throughput_tflops.max()))
        if params is not None:
            case, clock = group.case.iloc[0], float(group.clock_mhz.median())
            points = [(s, predict_tflops(replace(case, stages=s), params, clock)[0]) for s in range(1, 8)
                      if replace(case, stages=s).smem_bytes() <= SMEM_LIMIT]
            points = [(s, v) for s, v in points if v is not None]
            if points:
                ax.plot(*zip(*points), "--", lw=1, color=line.get_color(), alpha=0.7)
                top = max(top, max(v for _, v in points))
    if params is not None:
        ax.plot([], [], "k--", lw=1, alpha=0.7, label="planner (prior), at the sweep's median clock")
    ax.set_xlabel("stages (shared-memory slots of the ring)")
    ax.set_ylabel("TFLOPS")
    ax.set_ylim(0, 1.1 * top if top else 1.0)
    ax.set_xticks(range(1, 8))
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)  # beside the lines
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def figure_time(path, rows: pd.DataFrame, title: str) -> None:
    """Left: cycles per k-block against the tensor cores' time. Right: one tile's cycles, the consumers'
    (mainloop waiting on a full slot, the rest of the mainloop, the epilogue) stacked, the producer's wait
    on an empty slot beside them."""
    import matplotlib.pyplot as plt

    rows = rows.sort_values(["bm", "bn", "stages", "consumers", "rebalance", "cluster", "persistent", "order",
                             "epilogue"], key=lambda s: s.map(str) if s.dtype == object else s)
    labels = [config_label(c) for c in rows.case]
    y = np.arange(len(rows))
    ideal = np.array([ideal_kblock(c) for c in rows.case])
    kblocks = np.array([c.kblocks for c in rows.case], dtype=float)
    fig, (left, right) = plt.subplots(1, 2, figsize=(13.5, 0.32 * len(rows) + 2.2), sharey=True,
                                      gridspec_kw={"width_ratios": [1, 1.5]})
    left.barh(y, rows.cycles_per_kblock, 0.7, color=COLORS["ours"], label="measured (in the kernel)")
    left.plot(ideal, y, "|", color="black", ms=11, mew=2, label="tensor cores alone: 2 BM BN 64 / 4096")
    left.set_xlabel("cycles per k-block (BK = 64)")
    left.set_xlim(0, 1.15 * float(np.nanmax(np.r_[rows.cycles_per_kblock.to_numpy(dtype=float), ideal])))
    mainloop = rows.cycles_per_kblock.to_numpy(dtype=float) * kblocks
    full = rows.full_wait_cycles_per_tile.to_numpy(dtype=float)
    rest = np.clip(mainloop - full, 0, None)
    epilogue = rows.epilogue_cycles_per_tile.to_numpy(dtype=float)
    empty = rows.empty_wait_cycles_per_tile.to_numpy(dtype=float)
    h = 0.4
    right.barh(y - h / 2, full / 1e3, h, color="#ff7f0e", label="consumers: waiting on a full slot")
    right.barh(y - h / 2, rest / 1e3, h, left=full / 1e3, color=COLORS["ours"], label="consumers: rest of the mainloop")
    right.barh(y - h / 2, epilogue / 1e3, h, left=(full + rest) / 1e3, color="#9467bd", label="consumers: epilogue")
    right.barh(y + h / 2, empty / 1e3, h, color="#bcbd22", label="producer: waiting on an empty slot")
    right.plot(ideal * kblocks / 1e3, y - h / 2, "|", color="black", ms=7, mew=2,
               label="tensor cores alone, one tile")
    right.set_xlabel("thousand cycles per tile (in-kernel counters; first consumer warpgroup, producer thread)")
    right.set_xlim(0, 1.1 * float(np.nanmax(np.r_[(mainloop + epilogue), empty]) / 1e3))
    left.set_yticks(y, labels=labels, fontsize=7)
    left.invert_yaxis()
    for ax in (left, right):
        ax.grid(True, axis="x", alpha=0.3)
    # the legends below the panels, where no bar can be under them
    left.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.9 / (0.32 * len(rows) + 2.2) - 0.02),
                frameon=False, ncol=1)
    right.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.9 / (0.32 * len(rows) + 2.2) - 0.02),
                 frameon=False, ncol=2)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(fig)


def figure_sizes(path, best: pd.DataFrame, title: str) -> None:
    import matplotlib.pyplot as plt

    dtypes = list(dict.fromkeys(best.series))
    problems = list(dict.fromkeys(best.sort_values(["flops", "m"]).shape_label))
    x = np.arange(len(problems))
    width = 0.8 / len(dtypes)
    fig, ax = plt.subplots(figsize=(max(7.0, 1.0 * len(problems) + 2), 4.4))
    for i, dtype in enumerate(dtypes):
        rows = best[best.series == dtype].set_index("shape_label").reindex(problems)
        offset = x - 0.4 + width * (i + 0.5)
        ax.bar(offset, rows.library_fraction.fillna(0), width, label=f"{dtype}: the best pipeline / cuBLAS")
        for xi, value in zip(offset, rows.library_fraction):
            if value == value:
                ax.text(xi, value, f"{value:.3f}", ha="center", va="bottom", fontsize=7)
    ax.axhline(1.0, color="black", lw=1, ls="--", label="cuBLAS (1.0)")
    ax.set_xticks(x, labels=problems, fontsize=8, rotation=20)
    ax.set_xlabel("problem M x N x K")
    ax.set_ylabel("library_fraction (ours / cuBLAS, round by round)")
    ax.set_ylim(0, 1.25 * max(1.0, float(best.library_fraction.max())))
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", ncol=len(dtypes) + 1)
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def figure_stages_needed(path, per_gpu: dict[str, list[tuple[str, pd.DataFrame]]]) -> None:
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(per_gpu), figsize=(6.0 * len(per_gpu) + 1.5, 4.2), squeeze=False, sharey=True)
    for ax, (gpu, sweeps) in zip(axes.flat, per_gpu.items()):
        for label, group in sweeps:
            line = ax.plot(group.stages, group.throughput_tflops, "o-", ms=4, lw=1.2, label=label)[0]
            needed = stages_needed(group)["needed"]
            ax.plot([needed.stages], [needed.throughput_tflops], "o", ms=11, mfc="none", mec=line.get_color(), mew=2)
        ax.set_title(f"{gpu}, {sweeps[0][1].problem.iloc[0]}", fontsize=9)
        ax.set_xlabel("stages")
        ax.set_xticks(range(1, 8))
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
    axes.flat[0].set_ylabel("TFLOPS")
    axes.flat[-1].plot([], [], "o", ms=11, mfc="none", mec="black", mew=2, label="stages needed (within 2 %)")
    axes.flat[-1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.suptitle("GEMM pipelines: TFLOPS against stages per tile (newest measurements)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
