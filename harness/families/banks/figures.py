"""The bank-conflict section of `bench report`: per case, the bank model's wavefronts and prediction beside
the best measured bytes per cycle per SM; and the site's finding, per GPU model: every case's best against the
bank model's prediction (a figure), and the CuTe chapter's own bank check (chapter.BANK_CASES) beside it."""

from __future__ import annotations

import numpy as np
import pandas as pd

from harness.families.banks.cases import parse
from harness.families.banks.chapter import BANK_CASES
from harness.families.banks.model import predicted


def figures(ctx) -> list:
    frame = ctx.measured[(ctx.measured.family == "banks") & (ctx.measured.metric == "sm_throughput")]
    if frame.empty:
        return []
    best = frame.groupby("case_id").value.max()
    cases = {case_id: parse(case_id) for case_id in best.index}
    table = pd.DataFrame({
        "case_id": list(best.index),
        "wavefronts (model)": [cases[c].wavefronts() for c in best.index],
        "predicted B/cycle/SM": [round(predicted(cases[c]), 1) for c in best.index],
        "best B/cycle/SM": best.round(1).tolist(),
    })
    table["measured / predicted"] = (table["best B/cycle/SM"] / table["predicted B/cycle/SM"]).round(3)
    return [("Shared-memory bank conflicts against the bank model", [
        "Every SM with 1..32 warps of independent accesses at the addresses of each layout (`bench show CASE` "
        "prints the layout and its bank map); the prediction is the bytes the access moves over its "
        "wavefronts (per 128-byte phase, the most distinct words one bank holds) x 128 B per bank cycle."], table)]


def _best(frame: pd.DataFrame) -> pd.DataFrame:
    """Per case: its best B/cycle/SM and the bank model's prediction."""
    best = frame.groupby("case_id").value.max()
    predicted_ = [predicted(parse(case_id)) for case_id in best.index]
    return pd.DataFrame({"case_id": best.index, "best": best.to_numpy(), "predicted": predicted_})


def summary(gpu: str, runs: list[int], best: pd.DataFrame) -> list[str]:
    """The GPU's cases against the model, and the chapter's bank check beside the 128-byte swizzle on bytes."""
    ratio = best.best / best.predicted
    lines = [f"{gpu} (run{'s' * (len(runs) > 1)} {', '.join(map(str, runs))}): {len(best)} cases, measured over "
             f"predicted {ratio.min():.4f}-{ratio.max():.4f} (median {ratio.median():.4f}), from "
             f"{best.best.min():.1f} to {best.best.max():.1f} B/cycle/SM."]
    rates = best.set_index("case_id").best
    chapter = BANK_CASES.get("bank_check_sw343_f16")
    on_bytes = chapter.removesuffix(".f16elem") if chapter else None
    if chapter in rates.index and on_bytes in rates.index:
        lines.append(f"The CuTe chapter's Swizzle<3,4,3> composed on f16 element offsets ({chapter}) reads "
                     f"{rates[chapter]:.1f} B/cycle/SM where the chapter's bank check says conflict-free (128); the "
                     f"128-byte swizzle on byte offsets ({on_bytes}) reads {rates[on_bytes]:.1f}.")
    return lines


def _scatter(path, panels: dict[str, pd.DataFrame]):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 5), squeeze=False)
    for ax, (gpu, best) in zip(axes[0], panels.items()):
        ax.loglog(best.predicted, best.best, "o", ms=4, alpha=0.6, label="a case (its best over warps)")
        low, high = best[["predicted", "best"]].min().min() / 1.3, best[["predicted", "best"]].max().max() * 1.3
        ax.plot([low, high], [low, high], "-", color="tab:red", lw=1, label="measured = the bank model")
        ax.set_xlabel("the bank model's prediction (B/cycle/SM, log)")
        ax.set_ylabel("measured (B/cycle/SM, log)")
        ax.set_title(f"{gpu}: {len(best)} shared-memory cases", fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def findings(ctx) -> list:
    """Per GPU model (its newest measurements): every bank case against the model, and the chapter's check."""
    frame = ctx.latest[(ctx.latest.family == "banks") & (ctx.latest.metric == "sm_throughput")]
    if frame.empty:
        return []
    panels, lines = {}, []
    for gpu, part in sorted(frame.groupby("gpu_name")):
        panels[gpu] = _best(part)
        lines += summary(gpu, sorted(int(r) for r in set(part.run_id)), panels[gpu])
    path = _scatter(ctx.directory / "banks_model.png", panels)
    return [("Does shared memory keep to the 32-bank model?", lines + [
        "Every case: ld/st.shared of 16-128 bits and ldmatrix/stmatrix x1/x2/x4 under linear, 2..32-way, column, "
        "swizzled, epilogue and the CuTe chapter's layouts, on every SM with 1..32 warps; the prediction is the bytes "
        "an instruction moves over its wavefronts (per 128-byte phase, the most distinct words one bank holds) x "
        "128 B per bank cycle (docs/banks.md)."], path)]
