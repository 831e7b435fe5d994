"""The GEMM sections of `bench report` ("from instructions to a GEMM") and the family's findings.

    the ladder              the seed worklog's kernels that cases.LADDER maps, measured, beside cuBLAS in
                            the same run (and its ratio to each, round by round), with the planner's
                            prediction at the clock each case measured, and the worklog's published
                            figures at their 4096^3 where the database holds them as references
    by their protocol       the worklog's figures against ours in a burst after idle and in sustained rounds,
                            on three kinds of inputs, in MHz and watts (protocol.py; suite gemm-protocol)
    stages                  TFLOPS against stages for each tile of the stage sweep (measured points,
                            the planner's line)
    where the time goes     cycles per k-block against the tensor cores' 2 BM BN 64 / 4096, and per
                            tile: the consumers' mainloop (waiting on a full slot, the rest), their
                            epilogue, and the producer's wait on an empty slot (in-kernel counters)
    against the library     the best pipeline's library_fraction at each problem size
Findings (from the newest measurements of each GPU, or one run's): how many stages each tile needs and
why, what the TMA-store epilogue and multicast buy, where cuBLAS still wins.
"""

from __future__ import annotations

import re
from dataclasses import fields, replace
from math import ceil

import numpy as np
import pandas as pd
from sqlalchemy.exc import SQLAlchemyError

from harness.errors import SpecError
from harness.families.gemm.cases import BEST, LADDER, SMEM_LIMIT, GemmCase, LibraryCase, parse, pipeline
from harness.families.gemm.problem import TENSOR_FLOPS_PER_CYCLE
from harness.paper import DEFAULT_TOLERANCE
from harness.spec import Case
from harness.verdicts import AGREES, CLOCK_NOT_PRINTED, DISAGREES

NEAR = 0.98  # "needs S stages": the fewest within 2 % of the tile's best TFLOPS
MIN_LADDER_STEPS = 3  # ladder steps a size needs to be drawn as a ladder
TENSOR_BOUND = 1.10  # a k-block within 10 % of the tensor cores' time is tensor-core bound
METRICS = ("throughput_tflops", "library_fraction", "peak_fraction", "cycles_per_kblock", "full_wait_cycles_per_tile",
           "empty_wait_cycles_per_tile", "epilogue_cycles_per_tile", "power_mean_w", "energy_efficiency")
CONFIG = tuple(f.name for f in fields(GemmCase)  # a pipeline's configuration: what is not the problem
               if f.name not in {g.name for g in fields(Case)} | {"dtype", "m", "n", "k", "scaling"})
COLORS = {"ours": "#1f77b4", "cublas": "#7f7f7f", "predicted": "#d62728", "worklog": "#2ca02c"}


# -- the run's cases, one row each -------------------------------------------------------------------

def _wide(frame: pd.DataFrame, keys: tuple[str, ...] = ("case_id",)) -> pd.DataFrame:
    """One row per case (and GPU, where `keys` has it): each metric a column, the SM clock measured with
    its throughput, its SMs, and the case's configuration parsed from its id."""
    frame = frame[frame.family == "gemm"] if "family" in frame else frame
    frame = frame[frame.metric.isin(METRICS) & frame.value.notna()]
    # the protocol suite's other inputs and bursts (protocol.py) are not configurations: their own section has them
    ordinary = {c: (lambda case: (case.inputs, case.protocol) == ("random", "sustained"))(parse(c))
                for c in set(frame.case_id)}
    frame = frame[frame.case_id.map(ordinary).astype(bool)] if len(frame) else frame
    if frame.empty:
        return pd.DataFrame()
    keys = list(keys)
    wide = frame.pivot_table(index=keys, columns="metric", values="value", aggfunc="median")
    timed = frame[frame.metric == "throughput_tflops"].groupby(keys)
    wide["clock_mhz"] = timed.sm_clock_mhz.median()
    wide["sms"] = timed.sm_count.max() if "sm_count" in frame else np.nan
    fractions = frame[frame.metric == "library_fraction"].groupby(keys)
    wide["library_spread"] = fractions.spread.median() if "spread" in frame else np.nan
    wide["power_capped"] = (pd.to_numeric(timed.power_capped.mean(), errors="coerce").astype(float)
                            if "power_capped" in frame else np.nan)
    wide = wide.reset_index()
    for metric in METRICS:
        if metric not in wide:
            wide[metric] = np.nan
    cases = {c: parse(c) for c in set(wide.case_id)}
    wide["case"] = [cases[c] for c in wide.case_id]
    # the library's rows (LibraryCase, an anchor: cublas.* and cublaslt.* ids, old rows' `library` param) have no
    # configuration of ours; fast accumulation is the cuBLASLt call's option
    wide["library"] = [isinstance(cases[c], LibraryCase) for c in wide.case_id]
    wide["fast_accum"] = [isinstance(cases[c], LibraryCase) and cases[c].fast_accum for c in wide.case_id]
    for name in ("dtype", "m", "n", "k", "scaling"):
        wide[name] = [getattr(cases[c], name) for c in wide.case_id]
    for name in CONFIG:
        wide[name] = pd.Series([None if library else getattr(cases[c], name) for c, library in
                                zip(wide.case_id, wide.library)], index=wide.index, dtype=object)
    wide["problem"] = [_problem(cases[c]) for c in wide.case_id]
    wide["flops"] = [cases[c].flops for c in wide.case_id]
    return wide


def _pipelines(wide: pd.DataFrame) -> pd.DataFrame:
    """The pipeline cases' rows of `wide`, their configuration columns in their own types."""
    return wide[~wide.library].infer_objects()


def _problem(case: GemmCase | LibraryCase) -> str:
    """A problem: its dtype and shape, and block-scaled fp8 as a problem of its own (its anchor is cuBLASLt's
    block-scaled matmul)."""
    return f"{case.dtype}{' block-scaled' if case.block_scaled else ''} {case.m}x{case.n}x{case.k}"


def _tile(case: GemmCase) -> str:
    return f"{case.bm}x{case.bn}"


def _label(case: GemmCase) -> str:
    """A configuration in a few words: tile, stages, consumers, rebalancing, cluster, schedule, epilogue."""
    return (f"{case.bm}x{case.bn} s{case.stages} wg{case.consumers}" + (" setmaxnreg" if case.rebalance else "")
            + f" cl{case.cluster} " + ("pers-" if case.persistent else "") + f"{case.order} {case.epilogue}"
            + (f" sms{case.grid_sms}" if case.grid_sms else ""))


def _lines(case: GemmCase) -> str:
    """_label over four short lines, for a tick under a bar."""
    return (f"{case.bm}x{case.bn} s{case.stages}\nwg{case.consumers}" + (" setmaxnreg" if case.rebalance else "")
            + f"\ncl{case.cluster} " + ("pers-" if case.persistent else "") + f"{case.order}\n{case.epilogue}"
            + (f" sms{case.grid_sms}" if case.grid_sms else ""))


def _ideal_kblock(case: GemmCase) -> float:
    """Cycles of one k-block on the tensor cores alone: 2 BM BN BK FLOP at 4096 FLOP per cycle per SM (fp8:
    8192)."""
    return 2.0 * case.bm * case.bn * case.bk / (TENSOR_FLOPS_PER_CYCLE * case.mma_rate)


def _main_problem(pipes: pd.DataFrame) -> str | None:
    """The problem most of the run's pipeline cases solve (8192^3 f16 in the gemm suite)."""
    if pipes.empty:
        return None
    counts = pipes.groupby("problem").size()
    flops = pipes.groupby("problem").flops.max()
    return max(counts.index, key=lambda p: (counts[p], flops[p]))


def _planner(gpu: str, sms: int | None):
    """The planner's prior parameters for the GPU (None: it has none), on the run's SM count."""
    from harness.families.gemm.planner import GemmModel

    params = GemmModel().prior(gpu)  # None: no datasheet for this GPU, no prediction drawn
    return replace(params, sm_count=int(sms)) if params is not None and sms else params


def _predict(case: GemmCase, params, clock_mhz: float) -> tuple[float, str] | tuple[None, None]:
    """The planner's TFLOPS at the clock the case measured (FLOP/cycle/SM x SMs x MHz / 1e6), its bound."""
    if params is None or not clock_mhz or clock_mhz != clock_mhz:
        return None, None
    from harness.families.gemm.model import predict_case

    try:
        prediction = predict_case(case, params)
    except (ArithmeticError, ValueError):  # a configuration the planner cannot rate
        return None, None
    return prediction.flops_per_cycle_sm * params.sm_count * clock_mhz / 1e6, prediction.bound


def _sweeps(pipes: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """The stage sweeps: cases of one problem whose configurations differ only in stages, three or more
    stage counts; labelled by their tile (and what else sets them apart when a tile has several)."""
    groups = []
    others = [c for c in CONFIG if c != "stages"]
    for _, group in pipes.groupby(["problem", *others], dropna=False):
        if group.stages.nunique() >= 3:
            groups.append(group.sort_values("stages"))
    by_tile: dict[tuple, int] = {}
    for group in groups:
        by_tile[(group.problem.iloc[0], _tile(group.case.iloc[0]))] = by_tile.get((group.problem.iloc[0], _tile(group.case.iloc[0])), 0) + 1
    out = []
    for group in groups:
        case = group.case.iloc[0]
        label = _tile(case)
        if by_tile[(group.problem.iloc[0], label)] > 1:
            label += f" (wg{case.consumers}, cl{case.cluster}, {case.epilogue})"
        out.append((label, group))
    return sorted(out, key=lambda item: (item[1].bm.iloc[0] * item[1].bn.iloc[0], item[0]))


def _stages_needed(group: pd.DataFrame) -> dict:
    """The fewest stages within 2 % of the sweep's best TFLOPS, and the counters on either side."""
    group = group[group.throughput_tflops.notna()].sort_values("stages")
    best = group.loc[group.throughput_tflops.idxmax()]
    needed = group[group.throughput_tflops >= NEAR * best.throughput_tflops].iloc[0]
    fewer = group[group.stages < needed.stages]
    return {"best": best, "needed": needed, "fewer": fewer.iloc[-1] if len(fewer) else None,
            "more": group[group.stages > needed.stages]}


def _flagged_left_out(ctx) -> list[str]:
    """The run's gemm cases whose measurements were flagged (throttling or another process) and so are
    not in the report's frame."""
    try:
        rows = ctx.store.query(f"""SELECT DISTINCT case_id FROM results WHERE run_id = {int(ctx.run_id)}
                                   AND family = 'gemm' AND valid AND flagged""")
    except SQLAlchemyError:
        return []
    return sorted(set(rows.case_id) - set(ctx.measured.case_id))


def _worklog(ctx, ladder_configs: dict[str, dict]) -> pd.DataFrame:
    """The worklog's published TFLOPS of each ladder step where the database holds them as references (its size,
    4096^3: the seed's section 2.11): step, gpu, value, size. Empty where it holds none."""
    try:
        refs = ctx.store.query("""SELECT gpu_name, case_id, value FROM reference_values
                                  WHERE metric = 'throughput_tflops' AND case_id LIKE 'gemm.%'""")
    except SQLAlchemyError:
        return pd.DataFrame()
    rows = []
    for ref in refs.itertuples():
        try:
            case = parse(ref.case_id)
        except SpecError:  # a reference of another id form: not a ladder step
            continue
        if not isinstance(case, GemmCase):  # the library's: not a step either
            continue
        config = {name: getattr(case, name) for name in CONFIG}
        for step, wanted in ladder_configs.items():
            if config == wanted and case.m == case.n == case.k:
                rows.append({"step": step, "gpu": ref.gpu_name, "value": float(ref.value), "size": case.m})
    return pd.DataFrame(rows).drop_duplicates(["step", "size"])


# -- figures -------------------------------------------------------------------------------------------

def _max_clock(ctx) -> float | None:
    """The maximum SM clock the run's GPU reported (the device row), None where it is not stored."""
    try:
        found = ctx.store.query(f"""SELECT d.max_sm_clock_mhz FROM runs r JOIN devices d ON r.device_id = d.id
                                    WHERE r.id = {int(ctx.run_id)}""")
    except SQLAlchemyError:
        return None
    return float(found.iloc[0, 0]) if len(found) and pd.notna(found.iloc[0, 0]) else None


def worklog_verdict(ours: float, theirs: float, clock_mhz: float, sms: int,
                    max_clock_mhz: float | None) -> tuple[str, str]:
    """Our TFLOPS for a worklog step against its published figure. The worklog prints no clock: where
    ours per cycle reaches its figure at a clock the GPU can run (up to the maximum it reports), the figure is
    possible and the difference is the clock; otherwise theirs did more per cycle, or ours did."""
    if not (ours > 0 and theirs > 0 and clock_mhz > 0):
        return "", ""
    ratio = ours / theirs
    implied = theirs * 1e6 / (ours * 1e6 / clock_mhz)  # MHz at which our FLOP/cycle gives their TFLOPS
    per_cycle = ours * 1e12 / (sms * clock_mhz * 1e6)
    if abs(ratio - 1) <= DEFAULT_TOLERANCE:
        return AGREES, f"ours {ratio:.3f} of it at {clock_mhz:.0f} MHz"
    if ratio < 1 and (max_clock_mhz is None or implied <= max_clock_mhz):
        return CLOCK_NOT_PRINTED, (f"ours {ratio:.3f} of it at {clock_mhz:.0f} MHz (measured, under the power cap); "
                                   f"at our {per_cycle:.0f} FLOP/cycle/SM its figure needs {implied:.0f} MHz")
    if ratio < 1:
        return DISAGREES, (f"ours {ratio:.3f} of it; at our {per_cycle:.0f} FLOP/cycle/SM its figure needs "
                           f"{implied:.0f} MHz, above the GPU's {max_clock_mhz:.0f}: it did more per cycle")
    return DISAGREES, f"ours {ratio:.3f} x its figure at {clock_mhz:.0f} MHz: ours does more per cycle or per second"


WORKLOG_SIZE_SENTENCE = (
    "The worklog's figures are of 4096^3 (the seed's section 2.11), set beside ours at that size only. Its code times "
    "one batch of 8 launches after 5 s idle and prints no clock; ours are sustained rounds under the power cap, their "
    "clock measured: a verdict says what clock its figure needs at our work per cycle (the gemm-protocol suite "
    "measures both protocols: the section on the worklog's figures by their protocol).")


def _figure_ladder(path, ladder: pd.DataFrame, cublas: dict[int, float], worklog: pd.DataFrame, title: str) -> None:
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
    ax.set_xticks(x, labels=[f"{s}\n{_lines(c)}" for s, c in
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


def _figure_stages(path, sweeps: list[tuple[str, pd.DataFrame]], params, title: str) -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8.5, 4.6))
    top = 0.0
    for label, group in sweeps:
        line = ax.plot(group.stages, group.throughput_tflops, "o-", ms=5, lw=1.2, label=f"{label} (measured)")[0]
        top = max(top, float(group.throughput_tflops.max()))
        if params is not None:
            case, clock = group.case.iloc[0], float(group.clock_mhz.median())
            points = [(s, _predict(replace(case, stages=s), params, clock)[0]) for s in range(1, 8)
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


def _figure_time(path, rows: pd.DataFrame, title: str) -> None:
    """Left: cycles per k-block against the tensor cores' time. Right: one tile's cycles, the consumers'
    (mainloop waiting on a full slot, the rest of the mainloop, the epilogue) stacked, the producer's wait
    on an empty slot beside them."""
    import matplotlib.pyplot as plt

    rows = rows.sort_values(["bm", "bn", "stages", "consumers", "rebalance", "cluster", "persistent", "order",
                             "epilogue"], key=lambda s: s.map(str) if s.dtype == object else s)
    labels = [_label(c) for c in rows.case]
    y = np.arange(len(rows))
    ideal = np.array([_ideal_kblock(c) for c in rows.case])
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


def _figure_sizes(path, best: pd.DataFrame, title: str) -> None:
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


def _best_by_problem(pipes: pd.DataFrame) -> pd.DataFrame:
    """Per problem: the pipeline case of the highest library_fraction (TFLOPS where it has none)."""
    rank = pipes.library_fraction.fillna(pipes.throughput_tflops / 1e6)
    best = pipes.assign(_rank=rank).sort_values("_rank", ascending=False).groupby("problem", as_index=False).first()
    best["shape_label"] = [f"{c.m}x{c.n}x{c.k}" for c in best.case]
    best["series"] = [c.dtype + (" block-scaled" if c.block_scaled else "") for c in best.case]
    return best.drop(columns="_rank")


def _against_library(ctx, pipes: pd.DataFrame, library: pd.DataFrame, gpu: str, run) -> list:
    """The GEMM sections' lead (issue 46, item 4): the best pipeline against the library for every problem of the
    run, as a figure and a table that names the configuration shown, the rounds' spread, the per-cycle peak fraction
    and the clock."""
    sections = []
    best = _best_by_problem(pipes[pipes.library_fraction.notna()]) if len(pipes) else pd.DataFrame()
    if len(best) >= 2:
        path = ctx.directory / "gemm_library_fraction.png"
        _figure_sizes(path, best, f"{gpu}, run {run}: the best pipeline against cuBLAS by problem size")
        theirs = library.set_index("problem")
        best = best.assign(cublas_w=best.problem.map(theirs.power_mean_w),
                           cublas_per_w=best.problem.map(theirs.energy_efficiency))
        table = best[["problem", "case_id", "throughput_tflops", "library_fraction", "library_spread", "peak_fraction",
                      "clock_mhz", "power_mean_w",
                      "energy_efficiency", "cublas_w", "cublas_per_w"]].rename(
            columns={"throughput_tflops": "TFLOPS", "library_spread": "spread of the ratio",
                     "peak_fraction": "of the peak per cycle", "clock_mhz": "SM MHz", "power_mean_w": "W (solo 2 s)",
                     "energy_efficiency": "TFLOPS/W (solo 2 s)", "cublas_w": "cuBLAS W (solo 2 s)",
                     "cublas_per_w": "cuBLAS TFLOPS/W (solo 2 s)"})
        if table["TFLOPS/W (solo 2 s)"].notna().any():
            table["of cuBLAS's TFLOPS/W"] = table["TFLOPS/W (solo 2 s)"] / table["cuBLAS TFLOPS/W (solo 2 s)"]
        sections += [("From instructions to a GEMM: against cuBLAS by size", [
            "For each problem of the run, the pipeline case with the highest library_fraction: its rate over "
            "the library's on the same inputs, round by round (\"cuBLAS\" here: cublasGemmEx, default algorithm, "
            "for f16 and bf16; cuBLASLt's fp8 matmul without fast accumulation for e4m3). Below 1.0 the library "
            "wins; its spread is the rounds' interquartile range over the median, 'of the peak per cycle' the "
            "tensor cores' dense peak at the clock measured in the kernel. TFLOPS and SM MHz are the alternating "
            "rounds'; the columns marked solo 2 s come from a window of "
            "their own: each side's launches alone, back to back, for 2 s after the rounds, its mean board power "
            "(NVML's energy counter) and the work it did there per joule (so TFLOPS / W of one row need not equal "
            "its TFLOPS/W)."], path),
            ("From instructions to a GEMM: against cuBLAS, in numbers", [], table.round(3).dropna(axis=1, how="all"))]
    return sections


def figures(ctx) -> list:
    """[(heading, paragraphs, Path | DataFrame | None)] for the report (harness/analysis/report.py)."""
    by_protocol = _by_protocol(ctx)
    wide = _wide(ctx.measured)
    if wide.empty:
        return by_protocol
    gpu, run = ctx.gpu, ctx.run_id
    pipes = _pipelines(wide).copy()
    # the library as the anchor: cuBLASLt's fp8 with fast accumulation is a row of its own, not the anchor
    library = wide[wide.library & ~wide.fast_accum]
    sms = int(wide.sms.dropna().max()) if wide.sms.notna().any() else None
    params = _planner(gpu, sms)
    pipes["predicted"], pipes["bound"] = zip(*[_predict(c, params, clock) for c, clock in
                                               zip(pipes.case, pipes.clock_mhz)]) if len(pipes) else ([], [])
    pipes["predicted"] = pd.to_numeric(pipes["predicted"])
    left_out = _flagged_left_out(ctx)
    flagged_note = (f" {len(left_out)} of the run's gemm cases were flagged (throttling or another process) and are "
                    f"left out here ({', '.join(c.split('.', 2)[2] if c.startswith('gemm.') else c for c in left_out[:6])}"
                    f"{', ...' if len(left_out) > 6 else ''}); `bench report --include-flagged` draws them."
                    if left_out else "")
    prior = (f"The planner's line is its prior ({params.source}), at the clock each case measured in its kernel: "
             f"FLOP/cycle/SM x {params.sm_count} SMs x MHz / 1e6." if params is not None else
             "The planner has no parameters for this GPU: no prediction is drawn.")
    sections = _against_library(ctx, pipes, library, gpu, run)  # the lead: ours against the library, by size

    # 1. the ladder
    ladder_configs = {step: {name: getattr(pipeline("f16", (1, 1, 1), **config), name) for name in CONFIG}
                      for step, config in LADDER.items()}
    steps = []
    for row in pipes[(pipes.dtype == "f16") & (pipes.m == pipes.n) & (pipes.n == pipes.k)].itertuples():
        config = {name: getattr(row.case, name) for name in CONFIG}
        for step, wanted in ladder_configs.items():
            if config == wanted:
                steps.append({"step": step, "size": row.m, "case": row.case, "case_id": row.case_id,
                              "throughput_tflops": row.throughput_tflops, "library_fraction": row.library_fraction,
                              "predicted": row.predicted, "bound": row.bound, "clock_mhz": row.clock_mhz,
                              "power_mean_w": row.power_mean_w, "energy_efficiency": row.energy_efficiency})
    steps = pd.DataFrame(steps)
    if len(steps):  # a size is a ladder where the run measured three steps or more at it, not a lone best case
        steps = steps[steps.groupby("size").step.transform("nunique") >= MIN_LADDER_STEPS]
    if len(steps):
        order = {step: i for i, step in enumerate(LADDER)}
        ladder = steps.sort_values(["size", "step"], key=lambda s: s.map(order) if s.name == "step" else -s)
        cublas = {int(r.m): float(r.throughput_tflops) for r in library.itertuples()
                  if r.dtype == "f16" and r.m == r.n == r.k and r.m in set(ladder["size"])}
        worklog = _worklog(ctx, ladder_configs)
        path = ctx.directory / "gemm_ladder.png"
        _figure_ladder(path, ladder, cublas, worklog,
                       f"{gpu}, run {run}: from instructions to a GEMM, the worklog's ladder (f16 -> f32)")
        missing = [s for s in LADDER if s not in set(ladder.step)]
        text = [f"Each step of the seed worklog that this family expresses (harness/families/gemm/cases.py LADDER), "
                f"as measured here; the number over each bar is its library_fraction, its rate over cuBLAS's in "
                f"rounds alternating with it (the same clock and power state). {prior}"
                + (" cuBLAS on the same problem, measured in this run: "
                   + ", ".join(f"{v:.0f} TFLOPS at {s}^3" for s, v in sorted(cublas.items())) + "." if cublas else
                   " cuBLAS's own measurement of the ladder's problem is not in this report (flagged or not run); "
                   "the ratios over the bars are round by round against it all the same.")
                + (f" The worklog's published figures ({worklog.gpu.iloc[0]}) are the hollow diamonds." if len(worklog)
                   else "")
                + (f" Steps not measured in this run: {', '.join(missing)}." if missing else "") + flagged_note]
        table = ladder.assign(**{"our configuration": [_label(c) for c in ladder.case]})
        table = table[["step", "size", "our configuration", "throughput_tflops", "library_fraction", "predicted",
                       "bound", "clock_mhz", "power_mean_w", "energy_efficiency"]].rename(
            columns={"throughput_tflops": "TFLOPS", "predicted": "planner TFLOPS", "bound": "planner's bound",
                     "clock_mhz": "SM MHz", "power_mean_w": "W (solo 2 s)", "energy_efficiency": "TFLOPS/W (solo 2 s)"})
        if cublas:
            table["of cuBLAS's TFLOPS"] = [t / cublas[s] if s in cublas else np.nan for t, s in zip(table.TFLOPS, table["size"])]
        if len(worklog):
            published = worklog.set_index(["step", "size"]).value
            table["worklog TFLOPS"] = [published.get((s, n), np.nan) for s, n in zip(table.step, table["size"])]
            top = _max_clock(ctx)
            judged = [worklog_verdict(r.TFLOPS, r["worklog TFLOPS"], r["SM MHz"], sms or 132, top)
                      for _, r in table.iterrows()]
            table["verdict"] = [v for v, _ in judged]
            table["why"] = [w for _, w in judged]
            text.append(WORKLOG_SIZE_SENTENCE)
        sections += [("From instructions to a GEMM: the worklog's ladder", text, path),
                     ("From instructions to a GEMM: the ladder in numbers", [], table.round(3).dropna(axis=1, how="all"))]

    # 2. stages
    sweeps = _sweeps(pipes)
    main = _main_problem(pipes)
    if sweeps:
        path = ctx.directory / "gemm_stages.png"
        problem = sweeps[0][1].problem.iloc[0]
        shown = [(label, g) for label, g in sweeps if g.problem.iloc[0] == problem]
        _figure_stages(path, shown, params, f"{gpu}, run {run}: TFLOPS against stages per tile, {problem}")
        rows = []
        for label, group in shown:
            found = _stages_needed(group)
            rows.append({"tile": label, "stages needed (within 2 % of the best)": int(found["needed"].stages),
                         "TFLOPS there": found["needed"].throughput_tflops, "best stages": int(found["best"].stages),
                         "best TFLOPS": found["best"].throughput_tflops,
                         "stages measured": ", ".join(str(int(s)) for s in group.stages)})
        sections += [("From instructions to a GEMM: TFLOPS against stages", [
            "Each tile's stage sweep: the same configuration but the depth of the ring (the epilogue from registers, "
            "whose shared memory would otherwise take a stage or two). Points are measured; dashed lines the planner's "
            f"prediction at the sweep's median clock. {prior}" + flagged_note], path),
            ("From instructions to a GEMM: stages each tile needs", [], pd.DataFrame(rows).round(1))]

    # 3. where the time goes
    counted = pipes[(pipes.problem == main) & pipes.cycles_per_kblock.notna()] if main else pipes.iloc[:0]
    if len(counted):
        path = ctx.directory / "gemm_time.png"
        _figure_time(path, counted, f"{gpu}, run {run}: where the time goes, {main}")
        sections.append(("From instructions to a GEMM: where the time goes", [
            "In-kernel counters (clock64), the median over blocks. Left: a k-block's cycles (the first consumer "
            "warpgroup's mainloop over its k-blocks) against the tensor cores alone, 2 x BM x BN x 64 FLOP at "
            f"{TENSOR_FLOPS_PER_CYCLE} FLOP per cycle per SM. Right: one tile, the consumers' mainloop split into "
            "its waits on a full slot (the data had not landed; a wait can overlap the previous k-block's wgmma, "
            "which is still in flight) and the rest, then their epilogue; below it the producer's waits on an empty "
            "slot (every slot was taken: loaded and not yet consumed, or still in flight). Large waits on both sides "
            "mean the slots are copies in flight: the copies, not the ring's depth, set the pace."], path))

    return sections + by_protocol


def _by_protocol(ctx) -> list:
    """The worklog's figures by their protocol (protocol.py), where the run has the gemm-protocol suite's bursts."""
    from harness.families.gemm import protocol

    try:
        refs = ctx.store.query(f"""SELECT source, case_id, m, metric, value, notes FROM reference_figures
                                   WHERE source = '{protocol.SOURCE}'""")
    except SQLAlchemyError:
        refs = pd.DataFrame(columns=["source", "case_id", "m", "metric", "value", "notes"])
    return protocol.sections(ctx.measured, refs, _max_clock(ctx), DEFAULT_TOLERANCE)


# -- findings ------------------------------------------------------------------------------------------

def _stage_sentence(label: str, group: pd.DataFrame) -> str:
    """How many stages a tile needs, and why, from the sweep's TFLOPS and in-kernel counters."""
    found = _stages_needed(group)
    needed, best, fewer, more = found["needed"], found["best"], found["fewer"], found["more"]
    ideal = _ideal_kblock(needed.case)
    s = int(needed.stages)
    text = (f"{label} needs {s} stage{'s' if s > 1 else ''}: {needed.throughput_tflops:.0f} TFLOPS "
            f"(best {best.throughput_tflops:.0f} at {int(best.stages)}).")
    if needed.cycles_per_kblock != needed.cycles_per_kblock:
        return text
    if fewer is not None:
        text += (f" With {int(fewer.stages)} a k-block took {fewer.cycles_per_kblock:.0f} cycles and the consumers "
                 f"waited {fewer.full_wait_cycles_per_tile / 1e3:.0f}k cycles per tile on full slots; with {s}, "
                 f"{needed.cycles_per_kblock:.0f} and {needed.full_wait_cycles_per_tile / 1e3:.0f}k.")
    ratio = needed.cycles_per_kblock / ideal
    if ratio <= TENSOR_BOUND:
        return text + (f" There a k-block is {ratio:.2f} x the tensor cores' {ideal:.0f} cycles and the producer waits "
                       f"{needed.empty_wait_cycles_per_tile / 1e3:.0f}k cycles per tile for an empty slot: the ring "
                       "runs ahead of the tensor cores, so more stages cannot help.")
    deeper = more[more.cycles_per_kblock.notna()]
    return text + (f" There a k-block is still {ratio:.2f} x the tensor cores' {ideal:.0f} cycles while both sides "
                   f"wait (full {needed.full_wait_cycles_per_tile / 1e3:.0f}k, empty "
                   f"{needed.empty_wait_cycles_per_tile / 1e3:.0f}k cycles per tile): every slot is a copy in flight"
                   + (f", and {', '.join(str(int(v)) for v in deeper.stages)} stages did no better than "
                      f"{deeper.cycles_per_kblock.min():.0f} cycles per k-block: the copies' throughput, not their "
                      "number, bounds this tile." if len(deeper) else "; no deeper ring was measured."))


def _pairs(pipes: pd.DataFrame, field: str, before, after) -> list[tuple[pd.Series, pd.Series]]:
    """Pairs of pipeline cases of one problem that differ only in `field` (before -> after)."""
    others = [c for c in CONFIG if c != field]
    out = []
    for _, group in pipes.groupby(["problem", *others], dropna=False):
        a, b = group[group[field] == before], group[group[field] == after]
        if len(a) and len(b):
            out.append((a.iloc[0], b.iloc[0]))
    return out


def _pair_sentence(what: str, pairs) -> list[str]:
    out = []
    for a, b in pairs:
        per_cycle = (b.throughput_tflops / b.clock_mhz) / (a.throughput_tflops / a.clock_mhz)
        text = (f"{what} on {_label(a.case)} at {a.problem}: {a.throughput_tflops:.0f} -> {b.throughput_tflops:.0f} "
                f"TFLOPS (x{b.throughput_tflops / a.throughput_tflops:.3f}; per cycle x{per_cycle:.3f})")
        if a.library_fraction == a.library_fraction and b.library_fraction == b.library_fraction:
            text += f", of cuBLAS {a.library_fraction:.3f} -> {b.library_fraction:.3f}"
        if what.startswith("The TMA-store") and a.epilogue_cycles_per_tile == a.epilogue_cycles_per_tile:
            text += (f"; the epilogue took {a.epilogue_cycles_per_tile:.0f} -> {b.epilogue_cycles_per_tile:.0f} "
                     "cycles per tile")
        elif a.cycles_per_kblock == a.cycles_per_kblock:
            text += (f"; a k-block {a.cycles_per_kblock:.0f} -> {b.cycles_per_kblock:.0f} cycles, the consumers' "
                     f"wait on a full slot {a.full_wait_cycles_per_tile:.0f} -> {b.full_wait_cycles_per_tile:.0f} "
                     "per tile")
        out.append(text + ".")
    return out


# The seed worklog's observations (its step 3's profile, in that reference figure's notes; its text on tile
# scheduling and on large N): facts to test against our counters and pairs.
WORKLOG_STEP3 = LADDER["3"]
PROFILE = re.compile(r"profiled per tile: load (?P<load>\d+) cycles; tensor cores (?P<tensor>\d+); store (?P<store>\d+)")
SAME_POWER = 0.97  # two mean draws within 3 % are one power (runs 103-108 at the 700 W limit: 690-708 W)


def worklog_profile(store) -> dict[str, float] | None:
    """The worklog's step 3 profile, cycles of a loaded tile, its wgmma and a stored tile, as the reference
    data holds it (harness/db/data/references/article_hgemm_worklog_h100.csv, the step's notes); None where
    the database holds no such note."""
    try:
        notes = store.query("SELECT notes FROM reference_figures WHERE notes LIKE '%profiled per tile%'").notes
    except (SQLAlchemyError, AttributeError):
        return None
    found = next((m for m in map(PROFILE.search, notes.dropna()) if m), None)
    return {k: float(v) for k, v in found.groupdict().items()} if found else None


def worklog_observations(pipes: pd.DataFrame, profile: dict[str, float] | None) -> list[str]:
    """The worklog's three observations, each tested where this GPU's cases hold what it takes: a tile's
    store against a loaded tile (its step 3 profile, worklog_profile), its grouped order faster on 128 SMs
    than on all 132, and its largest problems power-bound."""
    out = []
    step3 = pipes[[c == pipeline("f16", (c.m, c.n, c.k), **WORKLOG_STEP3) for c in pipes.case]]
    step3 = step3.dropna(subset=["cycles_per_kblock", "epilogue_cycles_per_tile"])
    step3 = step3[step3.cycles_per_kblock > [_ideal_kblock(c) for c in step3.case]]
    if len(step3) and profile:
        r = step3.sort_values("flops").iloc[-1]
        load = r.cycles_per_kblock - _ideal_kblock(r.case)
        theirs = profile["store"] / profile["load"]
        ours = r.epilogue_cycles_per_tile / load
        out.append(f"The worklog's step 3 profile (128x128, one stage): a loaded tile {profile['load']:.0f} "
                   f"cycles, its wgmma {profile['tensor']:.0f}, a stored tile {profile['store']:.0f} "
                   f"({theirs:.1f} loads). Ours ({_label(r.case)} at {r.problem}): a k-block {r.cycles_per_kblock:.0f} "
                   f"cycles, of which the wgmma at full rate take {_ideal_kblock(r.case):.0f}, leaving {load:.0f} for "
                   f"the load; the store from registers {r.epilogue_cycles_per_tile:.0f} cycles per tile ({ours:.1f} "
                   f"loads): {'it holds' if abs(ours / theirs - 1) <= 0.25 else 'it does not hold'} (within 25 %: "
                   f"x{ours / theirs:.2f}).")
    for a, b in _pairs(pipes, "grid_sms", 0, 128):
        # the verdict from the ratio to cuBLAS, taken round by round in the same clock and power state (these
        # boards run large GEMMs at their power limit, so TFLOPS minutes apart move with the clock); else per cycle
        ratio = b.throughput_tflops / a.throughput_tflops
        per_cycle = ratio * a.clock_mhz / b.clock_mhz
        library = b.library_fraction / a.library_fraction
        gain, basis = (library, "of cuBLAS") if library == library else (per_cycle, "per cycle")
        # a difference inside the rounds' own spread (either case's) is not a finding; without the rounds'
        # ratio to cuBLAS (figures minutes apart, at the clock and power of their moment) there is no verdict
        noise = max(a.library_spread, b.library_spread) if library == library else np.nan
        verdict = ("no rounds against cuBLAS to judge it by" if noise != noise else
                   "faster on 128: the worklog's finding holds" if gain > 1 + noise else
                   "slower on 128: the worklog's finding does not hold here" if gain < 1 - noise else
                   f"the same within the rounds' spread ({noise:.1%}): the worklog's gain is not shown here")
        out.append(f"{_label(a.case)} at {a.problem} on 128 SMs against all {int(a.sms)}: {a.throughput_tflops:.0f} -> "
                   f"{b.throughput_tflops:.0f} TFLOPS at {a.clock_mhz:.0f} -> {b.clock_mhz:.0f} MHz (x{ratio:.3f}; per "
                   f"cycle x{per_cycle:.3f}"
                   + (f"; of cuBLAS {a.library_fraction:.3f} -> {b.library_fraction:.3f}" if library == library else "")
                   + f"; {ceil(a.case.tiles / int(a.sms))} waves of tiles on {int(a.sms)} SMs, "
                   f"{ceil(b.case.tiles / 128)} on 128): {verdict} ({basis} x{gain:.3f}).")
    best = pipes[[c == replace(c, **BEST) and c.m == c.n == c.k and c.dtype == "f16" and not c.grid_sms
                  for c in pipes.case]].sort_values("flops")
    if len(best) >= 2 and best.clock_mhz.notna().all():
        small, large = best.iloc[0], best.iloc[-1]
        text = (f"Power: the best configuration's SM clock, measured in its kernel, is {small.clock_mhz:.0f} MHz at "
                f"{small.problem} and {large.clock_mhz:.0f} at {large.problem}")
        if pd.notna(small.power_mean_w) and pd.notna(large.power_mean_w):
            # power-bound: the board draws one power at both; a clock that falls while the power stays is
            # what that power buys at each size
            near = min(small.power_mean_w, large.power_mean_w) >= SAME_POWER * max(small.power_mean_w,
                                                                                  large.power_mean_w)
            text += (f"; the board draws {small.power_mean_w:.0f} and {large.power_mean_w:.0f} W (2 s of each alone)"
                     + (f": the same power at both, so both are power-bound and the clock is what that power buys "
                        "at each size (the worklog's finding holds, and not only at very large N)" if near else
                        ": the power differs, so the clock alone does not say which is power-bound") + ".")
        else:
            text += ": no power was measured for them here, and a clock alone does not say power-bound."
        out.append(text)
    return out


def _library_sentence(best: pd.DataFrame) -> str:
    parts = [f"{r.shape_label} {r.series}: {r.library_fraction:.3f}" for r in
             best.sort_values(["dtype", "flops", "m"]).itertuples()]
    losing = best[best.library_fraction < 1.0]
    verdict = ("cuBLAS wins at " + ", ".join(f"{r.shape_label} {r.series} ({1 / r.library_fraction - 1:.1%} faster; "
                                             f"our best there: {_label(r.case)})" for r in losing.itertuples())
               if len(losing) else "cuBLAS wins at none of them")
    return f"The best pipeline against cuBLAS, round by round: {'; '.join(parts)}. {verdict}."


def _findings_figure(path, per_gpu: dict[str, list[tuple[str, pd.DataFrame]]]) -> None:
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(per_gpu), figsize=(6.0 * len(per_gpu) + 1.5, 4.2), squeeze=False, sharey=True)
    for ax, (gpu, sweeps) in zip(axes.flat, per_gpu.items()):
        for label, group in sweeps:
            line = ax.plot(group.stages, group.throughput_tflops, "o-", ms=4, lw=1.2, label=label)[0]
            needed = _stages_needed(group)["needed"]
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


def findings(ctx) -> list:
    """The results site's question for GEMM (harness/analysis/site.py), and a report's first bullets: how
    many stages each tile needs on each GPU and why; what the TMA store and multicast buy; where cuBLAS
    still wins. From the newest measurements of every GPU model (or one run's)."""
    latest = ctx.latest[ctx.latest.family == "gemm"]
    if latest.empty:
        return []
    wide = _wide(latest, ("gpu_name", "case_id"))
    if wide.empty:
        return []
    text, per_gpu, rows = [], {}, []
    profile = worklog_profile(ctx.store)
    for gpu, part in wide.groupby("gpu_name"):
        pipes = _pipelines(part)
        # the headline first (issue 46, item 4): ours against the library, by problem
        best = _best_by_problem(pipes[pipes.library_fraction.notna()])
        if len(best):
            text.append(f"{gpu}: {_library_sentence(best)}")
        main = _main_problem(pipes)
        sweeps = [(label, g) for label, g in _sweeps(pipes) if g.problem.iloc[0] == main]
        if sweeps:
            per_gpu[gpu] = sweeps
            text += [f"{gpu}, {main}: " + _stage_sentence(label, g) for label, g in sweeps]
            for label, g in sweeps:
                found = _stages_needed(g)
                rows.append({"gpu": gpu, "problem": main, "tile": label, "stages needed": int(found["needed"].stages),
                             "TFLOPS there": found["needed"].throughput_tflops,
                             "best stages": int(found["best"].stages), "best TFLOPS": found["best"].throughput_tflops,
                             "cycles per k-block there": found["needed"].cycles_per_kblock,
                             "tensor cores alone": _ideal_kblock(found["needed"].case)})
        bought = (_pair_sentence("The TMA-store epilogue", _pairs(pipes, "epilogue", "regs", "tmastore"))
                  + _pair_sentence("Multicast (a cluster of 2 sharing B)", _pairs(pipes, "cluster", 1, 2)))
        if bought:
            text.append(f"{gpu}: " + " ".join(bought))
        text += [f"{gpu}: {line}" for line in worklog_observations(pipes, profile)]
    if not text:
        return []
    text.append("Stages: the smallest count within 2 % of the tile's best TFLOPS, its why from the in-kernel "
                "counters (cycles per k-block against the tensor cores' 2 BM BN 64 / 4096, the consumers' waits on "
                "full slots, the producer's on empty ones); pairs: cases that differ in that alone; library_fraction: "
                "ours over cuBLAS in alternating rounds.")
    path = ctx.directory / "gemm_stages_needed.png"
    if per_gpu:
        _findings_figure(path, per_gpu)
    else:  # no stage sweep (a quick run): the library figure answers
        best = pd.concat([_best_by_problem(_pipelines(p)[lambda f: f.library_fraction.notna()])
                          .assign(dtype=lambda f, g=gpu: g + " " + f.dtype) for gpu, p in wide.groupby("gpu_name")])
        if best.empty:
            return [("How many stages does a GEMM tile need, and where does cuBLAS still win?", text, None)]
        _figure_sizes(path, best, "GEMM pipelines: the best against cuBLAS (newest measurements)")
    return [("How many stages does a GEMM tile need, and where does cuBLAS still win?", text, path),
            ("GEMM: stages each tile needs, in numbers", [], pd.DataFrame(rows).round(2))]
