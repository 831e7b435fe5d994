"""The wgmma sections of `bench report`: issue interval against N with the fitted model and the
paper, throughput per SM against N, the fitted parameters and their residuals."""

from __future__ import annotations

import numpy as np
import pandas as pd

import harness.families.wgmma.model as perfmodel
from harness.families.wgmma.cases import DEFAULT_LAYOUT, K_OF, PAPER_N, WgmmaCase, parse
from harness.families.wgmma.fitting import SPARSE
from harness.paper import PAPER_GPU
from harness.plotting import mark_coinciding

DTYPE_ORDER = ("f16/f32", "f16/f16", "bf16/f32")
COLORS = {"SS": "#1f77b4", "RS": "#d62728"}
PANELS_PER_ROW = 6
LAYOUT_NOISE = 0.01  # a layout "changes" the interval when it moves it by more than this fraction


def _paper_points(store) -> pd.DataFrame:
    frame = store.query(f"""SELECT n, operands, dtype_a || '/' || dtype_acc AS types, sparse, value
                           FROM reference_values WHERE gpu_name = '{PAPER_GPU}' AND metric = 'issue_interval_cycles'
                           AND case_id LIKE 'wgmma.%'""").drop_duplicates()
    frame["key"] = frame.types + np.where(frame["sparse"].astype(bool), SPARSE, "")
    return frame


def _type_keys(frame: pd.DataFrame) -> list[str]:
    """The run's input/accumulator types: the paper's three first, then the others by name (same
    A and B types only: mixed fp8 and int8 pairs look like their square ones)."""
    present = set(frame[frame.dtype_a == frame.dtype_b].types)
    return [k for k in DTYPE_ORDER if k in present] + sorted(present - set(DTYPE_ORDER))


def _figure_intervals(path, intervals: pd.DataFrame, fits, paper: pd.DataFrame, title: str) -> None:
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


def _figure_throughput(path, frame: pd.DataFrame, title: str) -> None:
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


def _figure_residuals(path, fits, title: str) -> None:
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


def _figure_inputs(path, inputs: pd.DataFrame, title: str) -> None:
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
    """[(heading, paragraphs, Path | DataFrame | None)] for the report (harness/analysis/report.py)."""
    import json

    frame = ctx.measured[ctx.measured.family == "wgmma"].copy()
    if frame.empty:
        return []
    frame["types"] = frame.dtype_a + "/" + frame.dtype_acc
    frame["warpgroups"] = [json.loads(launch).get("warpgroups") for launch in frame.launch]
    frame["layout_key"] = [parse(case_id).layout for case_id in frame.case_id]
    every_layout = frame[frame.metric == "issue_interval_cycles"]
    intervals = every_layout[every_layout.layout_key == DEFAULT_LAYOUT]
    if intervals.empty:
        return []
    from harness.families.wgmma.fitting import WgmmaModel

    fits = WgmmaModel().fit(frame, ctx.gpu, f"fitted to run {ctx.run_id}")
    if fits is not None and not fits.fits:
        fits = None  # only types without a model (b1)
    gpu, run = ctx.gpu, ctx.run_id
    paths = [ctx.directory / name for name in ("issue_interval_vs_n.png", "sm_throughput_vs_n.png", "residuals.png",
                                                "inputs_vs_clock.png")]
    sections = []
    curves = intervals.n.nunique() >= MIN_N_FOR_A_CURVE
    if not curves:  # e.g. a run at N = 256 alone: a table, no curve against N
        sections.append(("wgmma: issue intervals", [
            f"This run measured {intervals.n.nunique()} value(s) of N, too few to draw against N."],
            intervals[["case_id", "value"]].rename(columns={"value": "issue interval (cycles)"})
            .drop_duplicates("case_id").sort_values("case_id").round(3)))
    else:
        _figure_intervals(paths[0], intervals, fits, _paper_points(ctx.store),
                          f"{gpu}, run {run}: wgmma issue interval against N, every type (measured, fitted model, paper)")
        _figure_throughput(paths[1], frame, f"{gpu}, run {run}: tensor-core throughput per SM (clock-independent)")
        sections += _against_n_sections(paths)
    changes = _layout_changes(every_layout)
    if len(changes):
        layouts = _layout_table(changes)
        worst = changes["largest change (cycles)"].max()
        relative = changes["largest change / interval"].max()
        verdict = (f"No layout changes the issue interval: across every swizzle and major-ness, N and operand "
                   f"mode, the interval differs from the default layout's by at most {worst:.3g} cycles "
                   f"({relative:.2%}), within the chain's noise (under 1 %). MN-major layouts exist for 16-bit inputs only "
                   f"(the PTX ISA's transpose flags); the other types' cells are empty." if relative < LAYOUT_NOISE else
                   f"The layout changes the issue interval by up to {worst:.3g} cycles ({relative:.1%}): see "
                   f"the rows below.")
        sections.append(("wgmma: shared-memory layouts", [verdict], layouts))
    inputs = _inputs_frame(frame)
    inputs = inputs[~inputs.burst.astype(bool)]  # back-to-back launches only: the bursts have their own table
    if inputs.inputs.nunique() > 1:
        _figure_inputs(paths[3], inputs, f"{gpu}, run {run}: whole-GPU rate by input distribution, N = 256 SS")
        rate = inputs.value / inputs.groupby("types").value.transform("max")
        clock = inputs.sm_clock_mhz / inputs.groupby("types").sm_clock_mhz.transform("max")
        follows = (f"Across types and inputs the TFLOPS follow the in-kernel clock (correlation of the two, each "
                   f"relative to its type's best: {np.corrcoef(rate, clock)[0, 1]:.3f}); FLOP per cycle does not "
                   f"move." if rate.std() > 0 and clock.std() > 0 else
                   "The in-kernel clock and the rate did not move with the inputs in this run.")
        table = inputs.pivot_table(index="types", columns="inputs", values=["value", "sm_clock_mhz"]).round(0)
        table.columns = [f"{'TFLOPS' if what == 'value' else 'MHz'} {dist}" for what, dist in table.columns]
        nvml = inputs.nvml_sm_clock_mhz.dropna()
        sections.append(("wgmma: inputs and the clock", [
            "The same instruction on different data: the whole-GPU rate (CUDA events) and the SM clock measured "
            "in the kernel (%clock64 against %globaltimer) for each input distribution, with NVML's SM clock. "
            + (f"NVML reported {nvml.min():.0f}-{nvml.max():.0f} MHz throughout; " if len(nvml) else
               "NVML reported no SM clock (no telemetry); ")
            + f"the in-kernel clock ranged "
            f"{inputs.sm_clock_mhz.min():.0f}-{inputs.sm_clock_mhz.max():.0f} MHz. {follows}"], paths[3]))
        sections.append(("wgmma: inputs and the clock, the numbers", [], table.reset_index()))
    burst = _burst_table(frame)
    if len(burst):
        sections.append(("wgmma: sustained against burst", [
            "Dense, N = 256, one warpgroup per SM on every SM: the whole-GPU rate of back-to-back launches of "
            "~9 ms (sustained: what a long GEMM sees under the power cap) and of the same launch after idle "
            "(burst: what one short kernel, or the paper's program launching once per process, sees), on the "
            "paper program's two fills. FLOP per cycle is the same; the clock is not. "
            f"Bursts ran {burst['burst / sustained'].min():.3f}-{burst['burst / sustained'].max():.3f} x the "
            "sustained rate here."], burst))
    if fits is None or not curves:  # a fit to one N says nothing about the model
        return sections
    _figure_residuals(paths[2], fits, f"{gpu}, run {run}: residuals of the fitted model")
    params = fits.parameters
    prior = fits.prior
    intervals = fits.residuals[fits.residuals.metric == "issue_interval_cycles"]
    rates = fits.residuals[fits.residuals.metric == "sm_throughput"]
    worst = intervals.residual.abs().max()
    dense, sparse = params[params.floor_wide.isna()], params[params.floor_wide.notna()]
    floors = f"floor = {dense.floor.min():g}..{dense.floor.max():g} cycles dense" + (
        f", sparse {sparse.floor.min():g}..{sparse.floor.max():g} and, with a 32-bit accumulator from N = 16, "
        f"{sparse.floor_wide.min():g}..{sparse.floor_wide.max():g}" if len(sparse) else "")
    fit_text = [
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
    return sections + [
        ("wgmma: fitted model", fit_text, params.round(4)),
        ("wgmma: residuals", [], paths[2]),
    ]


MIN_N_FOR_A_CURVE = 2  # distinct N a run needs before its intervals are drawn against N (one N: a table)


def _against_n_sections(paths) -> list:
    return [("wgmma: issue interval against N", [
        "Cycles per wgmma in a chain of one warpgroup, default layout (K-major, no swizzle); dense above, "
        "sparse below; the model is fitted to each panel alone (harness/families/wgmma/model.py)."], paths[0]),
        ("wgmma: throughput against N", [
            "Work per cycle per SM with W warpgroups per SM on every SM, for the run's first input type, dense; "
            f"the peak is 4 tensor cores x {perfmodel.DENSE_FLOP_PER_SM_PER_CYCLE['f16'] / 4:g} FLOP per cycle for 16-bit "
            "inputs (the datasheet's; half for tf32, twice for fp8 and int8)."], paths[1])]


def findings(ctx) -> list:
    """The results site's question for wgmma (harness/analysis/site.py): where does it turn
    compute-bound? The f16 -> f32 dense issue intervals of every GPU model's newest measurements,
    against N, SS and RS, with the tensor cores' time per instruction and the model fitted to each GPU."""
    import matplotlib.pyplot as plt

    from harness.families.wgmma.fitting import WgmmaModel

    frame = ctx.latest[(ctx.latest.family == "wgmma") & (ctx.latest.metric == "issue_interval_cycles")]
    frame = frame[(frame.dtype_a == "f16") & (frame.dtype_acc == "f32") & ~frame.is_sparse.fillna(False)]
    frame = frame.loc[np.array([parse(c).layout == DEFAULT_LAYOUT for c in frame.case_id], dtype=bool)]
    if frame.empty:
        return []
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    rows, text = [], []
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
    if not rows:  # no GPU measured at enough N to see where the line bends
        plt.close(fig)
        return []
    table = pd.DataFrame(rows)

    def fitted(column: str) -> str:  # the fits' values of a parameter, as the text quotes them
        values = sorted({round(float(v), 1) for v in table[column].dropna()})
        if not values:
            return "?"
        return f"{values[0]:g}" if len(values) == 1 else f"{values[0]:g}..{values[-1]:g}"

    f_tc = float(table["F_tc (FLOP/cycle/TC, fitted)"].median())
    f_tc = f_tc if f_tc == f_tc else perfmodel.datasheet("H100 SXM5").f_tc  # no fit: the datasheet's
    per_n = perfmodel.flops(WgmmaCase(64, 1, 16, "f16", "f16", "f32", "SS")) / (perfmodel.TENSOR_CORES_PER_SM * f_tc)
    ns = np.arange(8, 257, 8)
    coinciding = []
    for ax, operands in zip(axes, ("SS", "RS")):
        # GPUs whose intervals coincide (an H200 on an H100's line): said, and both drawn visibly
        coinciding += [f"{operands}: {sentence}" for sentence in mark_coinciding(ax)]
        ax.plot(ns, ns * per_n, "k:", label=f"tensor cores alone: {per_n:.3g} N cycles ({f_tc:.4g} FLOP/cycle x {perfmodel.TENSOR_CORES_PER_SM})")
        ax.set_title(f"wgmma m64nNk16 f16 -> f32, {operands}", fontsize=10)
        ax.set_xlabel("N")
        ax.legend(fontsize=7)
    axes[0].set_ylabel("issue interval (cycles)")
    fig.tight_layout()
    path = ctx.directory / "wgmma_compute_bound.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
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
    text += coinciding
    return [("Where does wgmma turn compute-bound?", text + [
        "Newest measurements of each GPU model; the model (harness/families/wgmma/model.py) is fitted to each "
        "GPU's own intervals. Every other type scales the same way by its rate (bench compare --against model)."],
        path), ("wgmma: compute-bound from which N", [], table)]
