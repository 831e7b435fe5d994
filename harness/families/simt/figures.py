"""The SIMT sections of `bench report`: latency, issue interval and best rate per instruction, against the CUDA
Programming Guide's rate where one was found (reference.py), and what each instruction compiles to."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd

import harness.families.simt.overlap as _overlap
from harness.families.simt.ops import OPS
from harness.families.simt.reference import PEAK_RESULTS_PER_SM


def figures(ctx) -> list:
    frame = ctx.measured[ctx.measured.family == "simt"].copy()
    if frame.empty:
        return []
    overlap = frame[frame.case_id.str.startswith("simt.overlap.")]
    frame = frame[~frame.case_id.str.startswith("simt.overlap.")]
    sections = _overlap_sections(overlap, ctx.directory, f"{ctx.gpu}, run {ctx.run_id}: one SM, wgmma beside a SIMT instruction")
    if frame.empty:
        return sections
    frame["warps"] = frame.launch.map(lambda text: json.loads(text).get("warps"))
    frame["ilp"] = frame.launch.map(lambda text: json.loads(text).get("ilp"))
    cycles = frame[frame.metric.isin(["latency_cycles", "issue_interval_cycles", "call_interval_cycles"])]
    cycles = cycles.pivot_table(index="case_id", columns="metric", values="value", aggfunc="first")
    interval = cycles.get("issue_interval_cycles", pd.Series(dtype=float))
    if "call_interval_cycles" in cycles:
        interval = interval.reindex(cycles.index).fillna(cycles["call_interval_cycles"])
    best = frame[frame.metric == "sm_throughput"].sort_values("value", ascending=False).groupby("case_id").first()
    names = pd.Series({case_id: case_id.removeprefix("simt.") for case_id in cycles.index})
    guide = names.map(lambda name: PEAK_RESULTS_PER_SM.get(OPS[name].throughput) if name in OPS else None)
    table = pd.DataFrame({
        "latency (cycles)": cycles.get("latency_cycles").round(2),
        "issue interval, one warp, 8 chains (cycles)": interval.round(2),
        "best results/cycle/SM": best.value.round(1),
        "at warps x ILP": best.warps.astype("Int64").astype(str) + " x " + best.ilp.astype("Int64").astype(str),
        "guide, CC 9.0": guide,
        "of the guide": (best.value / guide.astype(float)).round(3),
        "runs as": names.map(lambda name: OPS[name].executes if name in OPS else ""),
    }).reset_index().rename(columns={"index": "case_id"})
    return [*sections, ("SIMT instructions: latency, issue interval and best rate", [
        "Latency: one warp's dependent chain of the instruction (its step: `bench show CASE`; ex2 and rcp chain "
        "through a negation folded into the MUFU operand, lg2's step is lg2 then ex2). Issue interval: one warp "
        "with 8 independent chains. Best rate: every SM with 1..32 warps x 1, 2 or 4 chains, results per cycle "
        "per SM as the CUDA Programming Guide counts them (an x2 instruction makes two). 'guide, CC 9.0': the "
        "guide's rate where a copy of its 9.0 column was found (docs/simt.md); blank where none was."], table)]


HEAD_DIMS = (64, 128, 256)


def findings(ctx) -> list:
    """The results site's question for the SIMT family: can MUFU keep up with the tensor cores in attention?
    Per GPU model, from the newest measurements: MUFU's ex2 rate and latency, the tensor cores' best dense rate
    (wgmma's rows of the same GPU, f16 and e4m3), and the share of MUFU's rate that one exp per score takes at each
    head dim (QK^T and PV cost 4 d FLOP a score)."""
    latest = ctx.latest
    sections = []
    overlap = latest[latest.case_id.str.startswith("simt.overlap.")]
    for gpu, part in overlap.groupby("gpu_name"):
        slug = re.sub(r"[^a-z0-9]+", "-", gpu.lower()).strip("-")
        found = _overlap_sections(part, getattr(ctx, "directory", None),
                                  f"{gpu}, newest runs: one SM, wgmma beside a SIMT instruction", f"simt_overlap_{slug}.png")
        sections += [(f"{heading} ({gpu})", text, body) for heading, text, body in found
                     if "heat map" in heading or "what each side keeps" in heading]
    ex2 = latest[(latest.case_id == "simt.ex2.approx.ftz.f32")]
    if ex2.empty:
        return sections
    rows = []
    for gpu, part in ex2.groupby("gpu_name"):
        rate = part[part.metric == "sm_throughput"].value.max()
        latency = part[part.metric == "latency_cycles"].value.min()
        tensor = latest[(latest.gpu_name == gpu) & (latest.family == "wgmma") & (latest.metric == "sm_throughput")
                        & ~latest.is_sparse.fillna(False).astype(bool)]
        row = {"gpu": gpu, "ex2 results/cycle/SM": round(float(rate), 2), "ex2 latency (cycles)": round(float(latency), 2)}
        for dtype in ("f16", "e4m3"):
            best = tensor[tensor.dtype_a == dtype].value.max()
            if best == best:  # measured on this GPU
                row[f"wgmma {dtype} FLOP/cycle/SM"] = round(float(best))
                for d in HEAD_DIMS:
                    row[f"{dtype} d={d}: exps of MUFU"] = round(float(best) / (4 * d) / float(rate), 2)
        rows.append(row)
    return sections + [("Beside the tensor cores: can MUFU keep up with attention?", [
        "An attention forward pass spends 4 d FLOP on the tensor cores per score (QK^T and PV, d the head dim) and one "
        "exponential on MUFU. At the tensor cores' best dense rate, 'exps of MUFU' is the share of MUFU's measured ex2 "
        "rate the softmax needs: 1.0 means MUFU is as busy as the tensor cores, so softmax can hide only if the two "
        "overlap perfectly and nothing else needs MUFU. From each GPU model's newest measurements; docs/simt.md."],
        pd.DataFrame(rows))]


def _overlap_sections(frame: pd.DataFrame, directory=None, title: str = "", name: str = "simt_overlap.png") -> list:
    """What runs beside the tensor cores: per SIMT instruction (rows) and wgmma N (columns), the share of wgmma's
    rate it keeps with the instruction running beside it (its interval alone over beside), and the share of the
    instruction's rate kept beside wgmma; a heat map of both where `directory` is given."""
    frame = frame[frame.metric == "issue_interval_cycles"].copy()
    if frame.empty:
        return []
    frame["role"] = frame.launch.map(lambda launch: (json.loads(launch) if isinstance(launch, str) else launch).get("role"))
    cases = {case_id: _overlap.parse(case_id) for case_id in frame.case_id.unique()}
    with_tma = _tma_section(frame, cases)
    frame = frame[~frame.case_id.map(lambda case_id: cases[case_id].tma).astype(bool)]
    cases = {case_id: case for case_id, case in cases.items() if not case.tma}
    if frame.empty:
        return with_tma
    frame["op"] = frame.case_id.map(lambda case_id: cases[case_id].op or "none")
    frame["shape"] = frame.case_id.map(lambda case_id: _shape(cases[case_id]))
    wgmma = frame[frame.role == "wgmma"].pivot_table(index="op", columns="shape", values="value", aggfunc="first")
    simt = frame[frame.role == "simt"].pivot_table(index="op", columns="shape", values="value", aggfunc="first")
    order = {_shape(case): (_overlap.FORMS.index(case.form), case.n) for case in cases.values() if case.n}
    shapes = sorted((c for c in wgmma.columns), key=order.get)
    ops = [op for op in simt.index]
    wgmma_kept = pd.DataFrame({shape: [float(wgmma.loc["none", shape] / wgmma.loc[op, shape])
                                       if "none" in wgmma.index and op in wgmma.index else np.nan for op in ops]
                               for shape in shapes}, index=ops)
    simt_kept = pd.DataFrame({shape: [float(simt.loc[op, "alone"] / simt.loc[op, shape])
                                      if "alone" in simt.columns and shape in simt.columns else np.nan for op in ops]
                              for shape in shapes}, index=ops)
    table = pd.DataFrame({"instruction": ops, "alone (cycles/instr, a warp)": [round(float(simt.loc[op].get("alone", np.nan)), 2)
                                                                            for op in ops]})
    for shape in shapes:
        table[f"{shape}: wgmma kept"] = wgmma_kept[shape].round(3).values
        table[f"{shape}: instruction kept"] = simt_kept[shape].round(3).values
    text = ["One SM: warpgroup 0 issues wgmma m64nNk16 (f16 -> f32, A and B in shared memory) back to back; warpgroup "
            "1's four warps (one per scheduler) run 8 independent chains each of a SIMT instruction. Each side is timed "
            "while the other runs (the other runs until it is done), and alone. 'kept' is the side's interval alone "
            "over its interval beside the other: 1 means the other costs it nothing."]
    sections = [("Beside the tensor cores: what each side keeps of its rate", text, table)]
    if directory is not None and len(ops) and len(shapes):
        path = directory / name
        _heat_map(path, wgmma_kept, simt_kept, title)
        sections.append(("Beside the tensor cores: the heat map", [
            "Left: the share of wgmma's rate kept with the instruction beside it; right: the share of the "
            "instruction's rate kept beside wgmma. Rows: the instruction; columns: wgmma's N."], path))
    intervals = wgmma.reindex(columns=shapes).round(2).reset_index().rename(columns={"op": "beside"})
    sections.append(("Beside the tensor cores: cycles per wgmma", [
        "Warpgroup 0's cycles per wgmma, alone (beside 'none') and beside each instruction."], intervals))
    return sections + with_tma


def _tma_section(frame: pd.DataFrame, cases: dict) -> list:
    """The .tma cases beside their counterparts without TMA traffic: each side's cycles without and with a producer
    warp's TMA loads in flight, and the loads' bytes per cycle alone and beside the others."""
    value = {(cases[c].op, cases[c].n, cases[c].form, cases[c].tma, role): v
             for c, role, v in zip(frame.case_id, frame.role, frame.value)}
    alone_tma = value.get((None, None, "f16.SS", True, "tma"))
    rows = []
    for case in sorted({c for c in cases.values() if c.tma and (c.n or c.op)},
                       key=lambda c: (c.form, c.n or 0, c.op or "")):
        key = (case.op, case.n, case.form)
        tma = value.get((*key, True, "tma"))
        rows.append({"instruction": case.op or "none", "wgmma": _shape(case).removesuffix(".tma"),
                     "wgmma cycles": value.get((*key, False, "wgmma")), "wgmma cycles, TMA": value.get((*key, True, "wgmma")),
                     "instruction cycles": value.get((*key, False, "simt")),
                     "instruction cycles, TMA": value.get((*key, True, "simt")),
                     "TMA B/cycle": round(_overlap.TMA_TILE_BYTES / tma, 1) if tma else None})
    if not rows:
        return []
    table = pd.DataFrame(rows)
    for column in ("wgmma cycles", "wgmma cycles, TMA", "instruction cycles", "instruction cycles, TMA"):
        table[column] = table[column].astype(float).round(2)
    return [("Beside the tensor cores, with TMA loads in flight", [
        f"The same sides with a third role: one producer warp keeping TMA loads of {_overlap.TMA_TILE_BYTES} bytes "
        f"({_overlap.TMA_BOX_ROWS} rows of {_overlap.TMA_BOX_COLS * 4} bytes from an L2-resident source) in flight into "
        f"a ring of {_overlap.TMA_STAGES} slots. Cycles per wgmma and per instruction of one warp without the loads "
        "(simt-overlap's case in the same run, blank if not measured) and with them; the loads' bytes per cycle "
        "beside both" + (f" (alone: {_overlap.TMA_TILE_BYTES / alone_tma:.1f})" if alone_tma else "") + "."], table)]


def _shape(case) -> str:
    """A column of the overlap tables: the wgmma beside (its id's tail: m64n256k16, m64n64k16.RS, m64n64k32.e4m3)."""
    return case.base_id.split(".", 2)[2][len(case.op or "none") + 1:] if case.n else "alone"


def _heat_map(path, wgmma_kept: pd.DataFrame, simt_kept: pd.DataFrame, title: str) -> None:
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 0.55 * len(wgmma_kept) + 2.2), sharey=True)
    for ax, kept, label in ((axes[0], wgmma_kept, "wgmma's rate kept"), (axes[1], simt_kept, "the instruction's rate kept")):
        image = ax.imshow(kept.values, vmin=0, vmax=1, cmap="RdYlGn", aspect="auto")
        ax.set_xticks(range(len(kept.columns)), labels=list(kept.columns), rotation=30, ha="right", fontsize=8)
        ax.set_yticks(range(len(kept.index)), labels=kept.index)
        for (i, j), value in np.ndenumerate(kept.values):
            if value == value:
                ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=9)
        ax.set_title(label, fontsize=10)
    fig.colorbar(image, ax=axes, shrink=0.8)
    fig.suptitle(title, fontsize=10)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
