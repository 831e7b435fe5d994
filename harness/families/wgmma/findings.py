"""The wgmma family's finding (the results site's question and a report's first bullet): where does wgmma turn
compute-bound, from the f16 -> f32 dense issue intervals of every GPU model's newest measurements."""

from __future__ import annotations

import numpy as np
import pandas as pd

import harness.families.wgmma.model as perfmodel
from harness.families.wgmma.cases import DEFAULT_LAYOUT, WgmmaCase, parse
from harness.plotting import mark_coinciding


def findings(ctx) -> list:
    """The results site's question for wgmma (harness/analysis/site.py): where does it turn
    compute-bound? The f16 -> f32 dense issue intervals of every GPU model's newest measurements,
    against N, SS and RS, with the tensor cores' time per instruction and the model fitted to each GPU."""
    import matplotlib.pyplot as plt

    frame = ctx.latest[(ctx.latest.family == "wgmma") & (ctx.latest.metric == "issue_interval_cycles")]
    frame = frame[(frame.dtype_a == "f16") & (frame.dtype_acc == "f32") & ~frame.is_sparse.fillna(False)]
    frame = frame.loc[np.array([parse(c).layout == DEFAULT_LAYOUT for c in frame.case_id], dtype=bool)]
    if frame.empty:
        return []
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    rows = _draw_gpus(axes, frame)
    if not rows:  # no GPU measured at enough N to see where the line bends
        plt.close(fig)
        return []
    table = pd.DataFrame(rows)
    f_tc = float(table["F_tc (FLOP/cycle/TC, fitted)"].median())
    f_tc = f_tc if f_tc == f_tc else perfmodel.datasheet("H100 SXM5").f_tc  # no fit: the datasheet's
    per_n = perfmodel.flops(WgmmaCase(64, 1, 16, "f16", "f16", "f32", "SS")) / (perfmodel.TENSOR_CORES_PER_SM * f_tc)
    ns = np.arange(8, 257, 8)
    coinciding = []
    for ax, operands in zip(axes, ("SS", "RS")):
        # GPUs whose intervals coincide (an H200 on an H100's line): said, and both drawn visibly
        coinciding += [f"{operands}: {sentence}" for sentence in mark_coinciding(ax)]
        ax.plot(ns, ns * per_n, "k:", label=f"tensor cores alone: {per_n:.3g} N cycles ({f_tc:.4g} FLOP/cycle x "
                f"{perfmodel.TENSOR_CORES_PER_SM})")
        ax.set_title(f"wgmma m64nNk16 f16 -> f32, {operands}", fontsize=10)
        ax.set_xlabel("N")
        ax.legend(fontsize=7)
    axes[0].set_ylabel("issue interval (cycles)")
    fig.tight_layout()
    path = ctx.directory / "wgmma_compute_bound.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return [("Where does wgmma turn compute-bound?", _bound_text(table, per_n) + coinciding + [
        "Newest measurements of each GPU model; the model (harness/families/wgmma/model.py) is fitted to each "
        "GPU's own intervals. Every other type scales the same way by its rate (bench compare --against model)."],
        path), ("wgmma: compute-bound from which N", [], table)]


def _draw_gpus(axes, frame: pd.DataFrame) -> list[dict]:
    """Each GPU's SS and RS intervals against N on the two panels (where it measured four N or more), and a row
    per GPU and operand mode: the model's crossover, the first compute-bound N, the fitted parameters."""
    from harness.families.wgmma.fitting import WgmmaModel

    rows = []
    for gpu, part in frame.groupby("gpu_name"):
        fit = WgmmaModel().fit(part, gpu, "fitted to its newest runs")
        params = fit.params_for("f16") if fit is not None and fit.fits else None
        for ax, operands in zip(axes, ("SS", "RS")):
            points = part[part.operands == operands].sort_values("n")
            if points.n.nunique() < 4:  # too few N to say where the line bends (a run at N = 256 alone)
                continue
            ax.plot(points.n.astype(int), points.value, "o-", markersize=3, label=f"{gpu} (measured)")
            crossover = perfmodel.crossover_n("f16", operands, params) if params else float("nan")
            legal = points.n[points.n >= round(crossover, 1)]  # a fitted 64.0004 is 64
            rows.append({"gpu": gpu, "operands": operands, "crossover N (model)": round(crossover, 1),
                         "first N that is compute-bound": int(legal.min()) if len(legal) else None,
                         "interval at N=256 (cycles)": float(points[points.n == 256].value.iloc[0])
                         if (points.n == 256).any() else None,
                         "B_smem (B/cycle/SM, fitted)": params.b_smem if params else None,
                         "F_tc (FLOP/cycle/TC, fitted)": params.f_tc if params else None,
                         "floor (cycles, fitted)": params.l_min if params else None})
    return rows


def _bound_text(table: pd.DataFrame, per_n: float) -> list[str]:
    """Per operand mode: from which N the interval follows the tensor cores, and what bounds it below."""
    def fitted(column: str) -> str:  # the fits' values of a parameter, as the text quotes them
        values = sorted({round(float(v), 1) for v in table[column].dropna()})
        if not values:
            return "?"
        return f"{values[0]:g}" if len(values) == 1 else f"{values[0]:g}..{values[-1]:g}"

    text = []
    for operands in ("SS", "RS"):
        found = table[table.operands == operands]
        if len(found):
            firsts = sorted({int(v) for v in found["first N that is compute-bound"].dropna()})
            text.append(f"{operands}: the issue interval follows the tensor cores' {per_n:.3g} N cycles from N = "
                        f"{', '.join(map(str, firsts))} on every GPU measured (model crossover "
                        f"{', '.join(f'{v:g}' for v in sorted(set(found['crossover N (model)'])))}); below it "
                        + (f"reading A and B from shared memory at {fitted('B_smem (B/cycle/SM, fitted)')} B/cycle "
                           "(fitted) bounds it." if operands == "SS" else
                           f"the {fitted('floor (cycles, fitted)')}-cycle floor (fitted) bounds it."))
    return text
