"""The gemm report's data: a run's gemm cases one row each (each metric a column, the configuration parsed
from the id), and what the report's tables, figures and findings read off those rows (stage sweeps, pairs, the best
pipeline per problem, the planner's prediction)."""

from __future__ import annotations

from dataclasses import fields, replace

import numpy as np
import pandas as pd

# the rounds' spread is shared with the attention table (harness/db/distributions.py); library_rounds is read from here
from harness.db.distributions import ROUND_HEADERS, library_rounds, round_percentiles  # noqa: F401
from harness.families.gemm.cases import GemmCase, LibraryCase
from harness.families.gemm.ids import parse
from harness.families.gemm.problem import TENSOR_FLOPS_PER_CYCLE
from harness.spec import Case


NEAR = 0.98  # "needs S stages": the fewest within 2 % of the tile's best TFLOPS


METRICS = ("throughput_tflops", "library_fraction", "peak_fraction", "cycles_per_kblock", "full_wait_cycles_per_tile",
           "empty_wait_cycles_per_tile", "epilogue_cycles_per_tile", "power_mean_w", "energy_efficiency")


CONFIG = tuple(f.name for f in fields(GemmCase)  # a pipeline's configuration: what is not the problem
               if f.name not in {g.name for g in fields(Case)} | {"dtype", "m", "n", "k", "scaling"})


ROUND_COLUMNS = dict(zip(("library_p10", "library_p90"), ROUND_HEADERS))  # the rounds' spread, under its headers


def case_frame(frame: pd.DataFrame, keys: tuple[str, ...] = ("case_id",),
               rounds: dict[int, np.ndarray] | None = None) -> pd.DataFrame:
    """One row per case (and GPU, where `keys` has it): each metric a column, the SM clock measured with
    its throughput, its SMs, and the case's configuration parsed from its id. `rounds` (library_rounds): the
    library_fraction's rounds, whose 10th and 90th percentiles become library_p10 and library_p90 (NaN without
    them)."""
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
    low, high = round_percentiles(frame[frame.metric == "library_fraction"], keys, rounds or {})
    wide["library_p10"], wide["library_p90"] = low, high
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
    wide["problem"] = [problem_name(cases[c]) for c in wide.case_id]
    wide["flops"] = [cases[c].flops for c in wide.case_id]
    return wide


def pipeline_rows(wide: pd.DataFrame) -> pd.DataFrame:
    """The pipeline cases' rows of `wide`, their configuration columns in their own types."""
    return wide[~wide.library].infer_objects()


def problem_name(case: GemmCase | LibraryCase) -> str:
    """A problem: its dtype and shape, and block-scaled fp8 as a problem of its own (its anchor is cuBLASLt's
    block-scaled matmul)."""
    return f"{case.dtype}{' block-scaled' if case.block_scaled else ''} {case.m}x{case.n}x{case.k}"


def tile_name(case: GemmCase) -> str:
    return f"{case.bm}x{case.bn}"


def config_label(case: GemmCase) -> str:
    """A configuration in a few words: tile, stages, consumers, rebalancing, cluster, schedule, epilogue."""
    return (f"{case.bm}x{case.bn} s{case.stages} wg{case.consumers}" + (" setmaxnreg" if case.rebalance else "")
            + f" cl{case.cluster} " + ("pers-" if case.persistent else "") + f"{case.order} {case.epilogue}"
            + (f" sms{case.grid_sms}" if case.grid_sms else ""))


def config_lines(case: GemmCase) -> str:
    """config_label over four short lines, for a tick under a bar."""
    return (f"{case.bm}x{case.bn} s{case.stages}\nwg{case.consumers}" + (" setmaxnreg" if case.rebalance else "")
            + f"\ncl{case.cluster} " + ("pers-" if case.persistent else "") + f"{case.order}\n{case.epilogue}"
            + (f" sms{case.grid_sms}" if case.grid_sms else ""))


def ideal_kblock(case: GemmCase) -> float:
    """Cycles of one k-block on the tensor cores alone: 2 BM BN BK FLOP at 4096 FLOP per cycle per SM (fp8:
    8192)."""
    return 2.0 * case.bm * case.bn * case.bk / (TENSOR_FLOPS_PER_CYCLE * case.mma_rate)


def main_problem(pipes: pd.DataFrame) -> str | None:
    """The problem most of the run's pipeline cases solve (8192^3 f16 in the gemm suite)."""
    if pipes.empty:
        return None
    counts = pipes.groupby("problem").size()
    flops = pipes.groupby("problem").flops.max()
    return max(counts.index, key=lambda p: (counts[p], flops[p]))


def planner_params(gpu: str, sms: int | None):
    """The planner's prior parameters for the GPU (None: it has none), on the run's SM count."""
    from harness.families.gemm.planner import GemmModel

    params = GemmModel().prior(gpu)  # None: no datasheet for this GPU, no prediction drawn
    return replace(params, sm_count=int(sms)) if params is not None and sms else params


def predict_tflops(case: GemmCase, params, clock_mhz: float) -> tuple[float, str] | tuple[None, None]:
    """The planner's TFLOPS at the clock the case measured (FLOP/cycle/SM x SMs x MHz / 1e6), its bound."""
    if params is None or not clock_mhz or clock_mhz != clock_mhz:
        return None, None
    from harness.families.gemm.model import predict_case

    try:
        prediction = predict_case(case, params)
    except (ArithmeticError, ValueError):  # a configuration the planner cannot rate
        return None, None
    return prediction.flops_per_cycle_sm * params.sm_count * clock_mhz / 1e6, prediction.bound


def stage_sweeps(pipes: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """The stage sweeps: cases of one problem whose configurations differ only in stages, three or more
    stage counts; labelled by their tile (and what else sets them apart when a tile has several)."""
    groups = []
    others = [c for c in CONFIG if c != "stages"]
    for _, group in pipes.groupby(["problem", *others], dropna=False):
        if group.stages.nunique() >= 3:
            groups.append(group.sort_values("stages"))
    by_tile: dict[tuple, int] = {}
    for group in groups:
        key = (group.problem.iloc[0], tile_name(group.case.iloc[0]))
        by_tile[key] = by_tile.get(key, 0) + 1
    out = []
    for group in groups:
        case = group.case.iloc[0]
        label = tile_name(case)
        if by_tile[(group.problem.iloc[0], label)] > 1:
            label += f" (wg{case.consumers}, cl{case.cluster}, {case.epilogue})"
        out.append((label, group))
    return sorted(out, key=lambda item: (item[1].bm.iloc[0] * item[1].bn.iloc[0], item[0]))


def stages_needed(group: pd.DataFrame) -> dict:
    """The fewest stages within 2 % of the sweep's best TFLOPS, and the counters on either side."""
    group = group[group.throughput_tflops.notna()].sort_values("stages")
    best = group.loc[group.throughput_tflops.idxmax()]
    needed = group[group.throughput_tflops >= NEAR * best.throughput_tflops].iloc[0]
    fewer = group[group.stages < needed.stages]
    return {"best": best, "needed": needed, "fewer": fewer.iloc[-1] if len(fewer) else None,
            "more": group[group.stages > needed.stages]}


def pairs_differing(pipes: pd.DataFrame, field: str, before, after) -> list[tuple[pd.Series, pd.Series]]:
    """Pairs of pipeline cases of one problem that differ only in `field` (before -> after)."""
    others = [c for c in CONFIG if c != field]
    out = []
    for _, group in pipes.groupby(["problem", *others], dropna=False):
        a, b = group[group[field] == before], group[group[field] == after]
        if len(a) and len(b):
            out.append((a.iloc[0], b.iloc[0]))
    return out


def best_by_problem(pipes: pd.DataFrame) -> pd.DataFrame:
    """Per problem: the pipeline case of the highest library_fraction (TFLOPS where it has none)."""
    rank = pipes.library_fraction.fillna(pipes.throughput_tflops / 1e6)
    best = pipes.assign(_rank=rank).sort_values("_rank", ascending=False).groupby("problem", as_index=False).first()
    best["shape_label"] = [f"{c.m}x{c.n}x{c.k}" for c in best.case]
    best["series"] = [c.dtype + (" block-scaled" if c.block_scaled else "") for c in best.case]
    return best.drop(columns="_rank")
