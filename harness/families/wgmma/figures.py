"""The wgmma sections of `bench report`: issue interval against N with the fitted model and the
paper, throughput per SM against N, the fitted parameters and their residuals.
The figures are plots.py's; the family's finding is findings.py's."""

from __future__ import annotations

import numpy as np
import pandas as pd

import harness.families.wgmma.model as perfmodel
from harness.families.wgmma.cases import DEFAULT_LAYOUT, parse
from harness.families.wgmma.fitting import SPARSE
from harness.families.wgmma.plots import figure_inputs, figure_intervals, figure_residuals, figure_throughput
from harness.paper import PAPER_GPU


LAYOUT_NOISE = 0.01  # a layout "changes" the interval when it moves it by more than this fraction


MIN_N_FOR_A_CURVE = 2  # distinct N a run needs before its intervals are drawn against N (one N: a table)


def _paper_points(store) -> pd.DataFrame:
    frame = store.query(f"""SELECT n, operands, dtype_a || '/' || dtype_acc AS types, sparse, value
                           FROM reference_values WHERE gpu_name = '{PAPER_GPU}' AND metric = 'issue_interval_cycles'
                           AND case_id LIKE 'wgmma.%'""").drop_duplicates()
    frame["key"] = frame.types + np.where(frame["sparse"].astype(bool), SPARSE, "")
    return frame


def _layout_changes(intervals: pd.DataFrame) -> pd.DataFrame:
    """Per type, layout and operand mode: the largest change of the issue interval against the same
    instruction in the default layout (K-major, no swizzle)."""
    from dataclasses import replace

    default = intervals[intervals.layout_key == DEFAULT_LAYOUT].set_index("case_id").value
    others = intervals[intervals.layout_key != DEFAULT_LAYOUT].copy()
    others["base"] = [default.get(str(replace(parse(case_id), layout=DEFAULT_LAYOUT)), np.nan)
                      for case_id in others.case_id]
    others["change"] = others.value - others.base
    rows = []
    for (types, b, ops, layout), group in others.groupby(["types", "dtype_b", "operands", "layout_key"]):
        rows.append({"types": types if b == types.split("/")[0] else f"{types} (B {b})", "operands": ops,
                     "layout": layout, "N": ", ".join(str(int(n)) for n in sorted(group.n)),
                     "largest change (cycles)": group.change.abs().max(),
                     "largest change / interval": (group.change.abs() / group.base).max()})
    return pd.DataFrame(rows)


def _layout_table(changes: pd.DataFrame) -> pd.DataFrame:
    """_layout_changes as a reader takes it in: a row per type and operand mode, a column per layout
    (the largest change in cycles), the N measured and the largest change relative to the interval."""
    table = changes.pivot_table(index=["types", "operands"], columns="layout", values="largest change (cycles)",
                                aggfunc="max", sort=False)
    order = sorted(table.columns, key=lambda layout: (layout.split("-")[0], int(layout.partition("SW")[2] or 0)))
    table = table[order]  # K-SW32, K-SW64, K-SW128, MN, MN-SW32, ...
    table.columns = [f"{layout} (cycles)" for layout in table.columns]
    grouped = changes.groupby(["types", "operands"], sort=False)
    table.insert(0, "N", grouped.N.agg(lambda ns: ", ".join(sorted(set(", ".join(ns).split(", ")), key=int))))
    table["largest change / interval"] = grouped["largest change / interval"].max()
    return table.reset_index()


def _inputs_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """throughput_tflops at N = 256, SS, one warpgroup, default layout, dense: one row per type and input
    distribution (the launch without an `inputs` key is the normal(0,1) one)."""
    import json

    rows = frame[(frame.metric == "throughput_tflops") & (frame.n == 256) & (frame.operands == "SS")
                 & (~frame["sparse"].astype(bool)) & (frame.layout_key == DEFAULT_LAYOUT)
                 & (frame.warpgroups == 1) & (frame.dtype_a == frame.dtype_b)
                 & np.array([not parse(case_id).satfinite for case_id in frame.case_id])].copy()
    launches = [json.loads(launch) for launch in rows.launch]
    rows["inputs"] = [launch.get("inputs", "normal") for launch in launches]
    rows["burst"] = [bool(launch.get("idle_ms")) for launch in launches]
    return rows


def _burst_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Dense, N = 256, one warpgroup: sustained (back-to-back launches) against burst (each launch after
    idle), per type, operand mode and fill, with the in-kernel clock of each."""
    import json

    rows = frame[(frame.metric == "throughput_tflops") & (frame.n == 256) & (~frame["sparse"].astype(bool))
                 & (frame.layout_key == DEFAULT_LAYOUT) & (frame.warpgroups == 1)].copy()
    launches = [json.loads(launch) for launch in rows.launch]
    rows["inputs"] = [launch.get("inputs", "normal") for launch in launches]
    rows["idle_ms"] = [launch.get("idle_ms", 0) for launch in launches]
    burst = rows[rows.idle_ms > 0]
    if burst.empty:
        return pd.DataFrame()
    sustained = rows[rows.idle_ms == 0].set_index(["case_id", "inputs"])
    out = []
    for (case_id, inputs), row in burst.set_index(["case_id", "inputs"]).iterrows():
        if (case_id, inputs) not in sustained.index:
            continue
        base = sustained.loc[(case_id, inputs)]
        out.append({"instruction": case_id, "inputs": inputs, "sustained": base.value, "burst": row.value,
                    "burst / sustained": row.value / base.value, "sustained MHz": base.sm_clock_mhz,
                    "burst MHz": row.sm_clock_mhz})
    return pd.DataFrame(out).round({"sustained": 1, "burst": 1, "burst / sustained": 3, "sustained MHz": 0,
                                    "burst MHz": 0})


def figures(ctx) -> list:
    """[(heading, paragraphs, Path | DataFrame | None)] for the report (harness/analysis/report.py): issue
    intervals against N, layouts, inputs and the clock, sustained against burst, the fitted model."""
    frame = _wgmma_frame(ctx.measured)
    if frame.empty:
        return []
    every_layout = frame[frame.metric == "issue_interval_cycles"]
    intervals = every_layout[every_layout.layout_key == DEFAULT_LAYOUT]
    if intervals.empty:
        return []
    from harness.families.wgmma.fitting import WgmmaModel

    fits = WgmmaModel().fit(frame, ctx.gpu, f"fitted to run {ctx.run_id}")
    if fits is not None and not fits.fits:
        fits = None  # only types without a model (b1)
    paths = [ctx.directory / name for name in ("issue_interval_vs_n.png", "sm_throughput_vs_n.png", "residuals.png",
                                                "inputs_vs_clock.png")]
    curves = intervals.n.nunique() >= MIN_N_FOR_A_CURVE
    sections = (_interval_sections(ctx, frame, intervals, fits, paths, curves) + _layout_sections(every_layout)
                + _inputs_sections(frame, paths[3], f"{ctx.gpu}, run {ctx.run_id}") + _burst_sections(frame))
    if fits is None or not curves:  # a fit to one N says nothing about the model
        return sections
    figure_residuals(paths[2], fits, f"{ctx.gpu}, run {ctx.run_id}: residuals of the fitted model")
    return sections + [
        ("wgmma: fitted model", _fit_text(fits), fits.parameters.round(4)),
        ("wgmma: residuals", [], paths[2]),
    ]


def _wgmma_frame(measured: pd.DataFrame) -> pd.DataFrame:
    """The run's wgmma rows with their types, warpgroups and shared-memory layout as columns."""
    import json

    frame = measured[measured.family == "wgmma"].copy()
    if frame.empty:
        return frame
    frame["types"] = frame.dtype_a + "/" + frame.dtype_acc
    frame["warpgroups"] = [json.loads(launch).get("warpgroups") for launch in frame.launch]
    frame["layout_key"] = [parse(case_id).layout for case_id in frame.case_id]
    return frame


def _interval_sections(ctx, frame: pd.DataFrame, intervals: pd.DataFrame, fits, paths, curves: bool) -> list:
    """Issue intervals and throughput against N (figures), or a table where the run measured too few N."""
    gpu, run = ctx.gpu, ctx.run_id
    if not curves:  # e.g. a run at N = 256 alone: a table, no curve against N
        return [("wgmma: issue intervals", [
            f"This run measured {intervals.n.nunique()} value(s) of N, too few to draw against N."],
            intervals[["case_id", "value"]].rename(columns={"value": "issue interval (cycles)"})
            .drop_duplicates("case_id").sort_values("case_id").round(3))]
    figure_intervals(paths[0], intervals, fits, _paper_points(ctx.store),
                     f"{gpu}, run {run}: wgmma issue interval against N, every type (measured, fitted model, paper)")
    figure_throughput(paths[1], frame, f"{gpu}, run {run}: tensor-core throughput per SM (clock-independent)")
    return _against_n_sections(paths)


def _layout_sections(every_layout: pd.DataFrame) -> list:
    """Whether a shared-memory layout (swizzle, major-ness) changes the issue interval, and by how much."""
    changes = _layout_changes(every_layout)
    if not len(changes):
        return []
    layouts = _layout_table(changes)
    worst = changes["largest change (cycles)"].max()
    relative = changes["largest change / interval"].max()
    verdict = (f"No layout changes the issue interval: across every swizzle and major-ness, N and operand "
               f"mode, the interval differs from the default layout's by at most {worst:.3g} cycles "
               f"({relative:.2%}), within the chain's noise (under 1 %). MN-major layouts exist for 16-bit inputs "
               f"only (the PTX ISA's transpose flags); the other types' cells are empty." if relative < LAYOUT_NOISE
               else f"The layout changes the issue interval by up to {worst:.3g} cycles ({relative:.1%}): see "
               f"the rows below.")
    return [("wgmma: shared-memory layouts", [verdict], layouts)]


def _inputs_sections(frame: pd.DataFrame, path, title: str) -> list:
    """The whole-GPU rate and the in-kernel clock by input distribution (back-to-back launches), where the run
    measured more than one distribution."""
    inputs = _inputs_frame(frame)
    inputs = inputs[~inputs.burst.astype(bool)]  # back-to-back launches only: the bursts have their own table
    if inputs.inputs.nunique() <= 1:
        return []
    figure_inputs(path, inputs, f"{title}: whole-GPU rate by input distribution, N = 256 SS")
    rate = inputs.value / inputs.groupby("types").value.transform("max")
    clock = inputs.sm_clock_mhz / inputs.groupby("types").sm_clock_mhz.transform("max")
    follows = (f"Across types and inputs the TFLOPS follow the in-kernel clock (correlation of the two, each "
               f"relative to its type's best: {np.corrcoef(rate, clock)[0, 1]:.3f}); FLOP per cycle does not "
               f"move." if rate.std() > 0 and clock.std() > 0 else
               "The in-kernel clock and the rate did not move with the inputs in this run.")
    table = inputs.pivot_table(index="types", columns="inputs", values=["value", "sm_clock_mhz"]).round(0)
    table.columns = [f"{'TFLOPS' if what == 'value' else 'MHz'} {dist}" for what, dist in table.columns]
    nvml = inputs.nvml_sm_clock_mhz.dropna()
    return [("wgmma: inputs and the clock", [
        "The same instruction on different data: the whole-GPU rate (CUDA events) and the SM clock measured "
        "in the kernel (%clock64 against %globaltimer) for each input distribution, with NVML's SM clock. "
        + (f"NVML reported {nvml.min():.0f}-{nvml.max():.0f} MHz throughout; " if len(nvml) else
           "NVML reported no SM clock (no telemetry); ")
        + f"the in-kernel clock ranged "
        f"{inputs.sm_clock_mhz.min():.0f}-{inputs.sm_clock_mhz.max():.0f} MHz. {follows}"], path),
        ("wgmma: inputs and the clock, the numbers", [], table.reset_index())]


def _burst_sections(frame: pd.DataFrame) -> list:
    """Sustained against burst: the rate of back-to-back launches beside the same launch after idle."""
    burst = _burst_table(frame)
    if not len(burst):
        return []
    return [("wgmma: sustained against burst", [
        "Dense, N = 256, one warpgroup per SM on every SM: the whole-GPU rate of back-to-back launches of "
        "~9 ms (sustained: what a long GEMM sees under the power cap) and of the same launch after idle "
        "(burst: what one short kernel, or the paper's program launching once per process, sees), on the "
        "paper program's two fills. FLOP per cycle is the same; the clock is not. "
        f"Bursts ran {burst['burst / sustained'].min():.3f}-{burst['burst / sustained'].max():.3f} x the "
        "sustained rate here."], burst)]


def _fit_text(fits) -> list[str]:
    """The fitted model's paragraphs: its parameters' ranges, its prior, its residuals, how it is fitted."""
    params = fits.parameters
    prior = fits.prior
    intervals = fits.residuals[fits.residuals.metric == "issue_interval_cycles"]
    rates = fits.residuals[fits.residuals.metric == "sm_throughput"]
    worst = intervals.residual.abs().max()
    dense, sparse = params[params.floor_wide.isna()], params[params.floor_wide.notna()]
    floors = f"floor = {dense.floor.min():g}..{dense.floor.max():g} cycles dense" + (
        f", sparse {sparse.floor.min():g}..{sparse.floor.max():g} and, with a 32-bit accumulator from N = 16, "
        f"{sparse.floor_wide.min():g}..{sparse.floor_wide.max():g}" if len(sparse) else "")
    return [
        f"Fitted per type, dense and sparse apart: B_smem = {params.B_smem.min():g}..{params.B_smem.max():g} "
        f"B/cycle/SM, F_tc = {params.F_tc.min():g}..{params.F_tc.max():g} dense 16-bit FLOP/cycle per tensor "
        f"core (the dtype's rate, and twice it for sparse, applied on top), {floors} (starting from "
        f"{prior.b_smem:g}, {prior.f_tc:g}, {prior.l_min:g}: {prior.source}); the largest residual is "
        f"{worst:.3f} cycles over {len(intervals)} cases."
        + (f" Work per cycle per SM predicted as FLOPs / fitted interval, at 1 and 4 warpgroups: "
           f"{len(rates)} points, largest relative residual {rates.relative.abs().max():.2%}." if len(rates) else ""),
        "Least squares per panel (harness/families/wgmma/model.py fit): each case is assigned to the term "
        "that bounds it, each term is fitted on its cases, until the assignment is stable. Crossover N: where "
        "the instruction turns tensor-core bound (SS: arithmetic overtakes reading A and B; RS: overtakes "
        "the floor); inf where it never does (sparse: reading B and the arithmetic take the same cycles per N, so "
        "sparse SS is never tensor-core bound: at N = 256 it takes the 16 cycles of reading A's compressed 2 KiB "
        "over the 128 of the arithmetic)."]


def _against_n_sections(paths) -> list:
    return [("wgmma: issue interval against N", [
        "Cycles per wgmma in a chain of one warpgroup, default layout (K-major, no swizzle); dense above, "
        "sparse below; the model is fitted to each panel alone (harness/families/wgmma/model.py)."], paths[0]),
        ("wgmma: throughput against N", [
            "Work per cycle per SM with W warpgroups per SM on every SM, for the run's first input type, dense; "
            f"the peak is 4 tensor cores x {perfmodel.DENSE_FLOP_PER_SM_PER_CYCLE['f16'] / 4:g} FLOP per cycle for 16-bit "
            "inputs (the datasheet's; half for tf32, twice for fp8 and int8)."], paths[1])]
