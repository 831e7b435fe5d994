"""The tma report's figures (matplotlib, PNG): bandwidth by box and copies in flight, one tile load's latency by
box size, and the findings' box and copies in flight per GPU."""

from __future__ import annotations

import pandas as pd


def figure_bandwidth(path, loads: pd.DataFrame, roofline: float | None, title: str) -> None:
    import matplotlib.pyplot as plt

    bw = loads[loads.metric == "bandwidth_gbps"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(13.5, 4.4), sharey=True)
    for stages, group in bw.groupby("stages"):
        best = group.groupby("box_bytes").value.max().sort_index()
        left.plot(best.index, best.values, "o-", ms=4, label=f"{int(stages)} in flight per block")
    for box, group in bw.groupby("box_bytes"):
        per_sm = group.assign(inflight=group.stages * group.blocks_per_sm).groupby("inflight").value.max()
        right.plot(per_sm.index, per_sm.values, "o-", ms=4, label=f"box {int(box)} B")
    for ax in (left, right):
        if roofline:
            ax.axhline(roofline, color="black", ls="--", lw=1, label="read roofline (best plain reader, same run)")
        ax.set_xscale("log", base=2)
        ax.grid(True, alpha=0.3)
    left.set_xlabel("box bytes (64 x rows of b16, 128-byte swizzle)")
    left.set_ylabel("GB/s, whole GPU (best over blocks per SM)")
    right.set_xlabel("copies in flight per SM (stages x blocks per SM)")
    left.legend(fontsize=7, loc="lower right")  # the curves rise to the upper right: their corner is empty
    # nine boxes' curves fill the right panel's corners too: their legend stands beside it
    right.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def figure_latency(path, table: pd.DataFrame, title: str) -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.4))
    for source, group in table.groupby("source"):
        group = group.sort_values("box bytes")
        low = group["median"] - (group["median"] - group["min"]).clip(upper=group["IQR"] / 2)
        ax.errorbar(group["box bytes"], group["median"], yerr=[group["median"] - low, group["IQR"] / 2], fmt="o-",
                    ms=4, capsize=3, label=source)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("box bytes")
    ax.set_ylabel("cycles (net of the barrier sequence)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def figure_box_and_stages(path, bandwidth: pd.DataFrame, rooflines: dict) -> None:
    """Each GPU's best 2-D load bandwidth by box (left) and by copies in flight per SM (right), with its read
    roofline dashed."""
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.4), sharey=True)
    for gpu, part in bandwidth.groupby("gpu_name"):
        roofline = rooflines[gpu]
        best = part.groupby("box_bytes").value.max().sort_index()
        line = left.plot(best.index, best.values, "o-", ms=4, label=gpu)[0]
        inflight = part.assign(inflight=part.stages * part.blocks_per_sm)
        per_sm = inflight.groupby("inflight").value.max().sort_index()
        right.plot(per_sm.index, per_sm.values, "o-", ms=4, color=line.get_color(), label=gpu)
        if roofline:
            for ax in (left, right):
                ax.axhline(roofline, color=line.get_color(), ls="--", lw=1)
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    left.set_xlabel("box bytes (64 x rows of b16, 128-byte swizzle)")
    left.set_ylabel("GB/s, whole GPU (best over copies in flight)")
    right.set_xlabel("copies in flight per SM (stages x blocks per SM), best over boxes")
    fig.suptitle("TMA 2-D loads: bandwidth by box and by copies in flight (dashed: each GPU's read roofline)",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
