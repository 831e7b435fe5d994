"""The planner fitted to a run (`bench model --run N`): model.py's parameters from the run's own pipeline
cases, and every case's measured throughput beside the fitted prediction.

    E (per epilogue)         the median over cases of C bytes per tile / epilogue cycles per tile (counters)
    L0, a, L_q, R, d,        least squares on the relative error of t_kblock against the in-kernel cycles per
    c_1, c_2                 k-block of every pipeline case without a promotion, each at the clock it ran at (the
                             memory's queue depends on it); Nelder-Mead from the prior, restarted once
    w, P                     the same, on fp8's promoted cases, the others held: the drain where the run has
                             promoted cases, the additions where it has serial or pipelined ones
    h (ping-pong's turn)     the same, on a tile's mainloop as the ping-pong cases' counters imply it (pingpong.py),
                             the others held, where the run identifies it; ping-pong's counters fit nothing else
    the memory's bandwidth   not fitted: the prior's (the datasheet's rate x the H100's measured read roofline
                             over its pin rate), for the k-block's memory queue and the whole problem's bound
    a launch's fixed cost    least squares on log throughput
    the clock                the median in-kernel SM clock of the run's cases at 8192^3 and above: what the
                             GPU holds under a large GEMM at its power limit, for a plan's TFLOPS

Residuals are of throughput_tflops: the prediction per cycle at the clock that case measured in its kernel
(the clock is measured, the cycles are predicted), so the summary's median and worst miss say what the
bounds explain.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from harness.stats import residual_frame

from harness.families.gemm.cases import GemmCase
from harness.families.gemm.ids import parse
from harness.families.gemm.model import epilogue_cycles, kblock_cycles, predict_case
from harness.families.gemm.params import OUT_ELEM, Params
from harness.families.gemm.pingpong import counter_per_kblock, fit_turn
from harness.families.gemm.simplex import nelder_mead

KBLOCK_PARAMS = ("latency_cycles", "latency_per_kib", "memory_queue_cycles", "feed_bytes_per_cycle", "wgmma_queue", "consumer_overhead_1",
                 "consumer_overhead_2")
PROMOTION_PARAMS = ("drain_cycles", "promotion_cycles")  # fitted where the run has fp8 cases: w, and P where serial or pipelined
MIN_DEPTHS, MIN_TILES = 3, 2  # ring depths and tiles a run's plain cases need for their own k-block terms
SPLITK_CASES = 3
# The prior's hold on a fit (_least_squares): a term moved by its own size costs what a 14 % miss of one case does;
# a term whose prior is 0 (or small) moves against the floor named here instead (cycles, or wgmma for d)
PRIOR_WEIGHT = 0.02
SCALE_FLOOR = {"latency_per_kib": 10.0, "consumer_overhead_1": 50.0, "consumer_overhead_2": 50.0, "drain_cycles": 50.0,
               "promotion_cycles": 50.0, "wgmma_queue": 1.0}  # split-K cases a run needs for its own R_s
LARGE = 8192 ** 3  # problems at least this large run at the power limit (docs/gemm.md)


@dataclass(frozen=True)
class FitReport:
    gpu: str
    params: Params
    residual_rows: list[dict]

    @property
    def parameters(self) -> pd.DataFrame:
        p = self.params
        rows = [{"gpu": self.gpu, "parameter": name, "value": round(float(getattr(p, name)), 3)}
                for name in ("sm_count", "flops_per_cycle", *Params.fitted_names(), "clock_mhz")]
        miss = self.summary()
        rows += [{"gpu": self.gpu, "parameter": f"throughput miss, {what}", "value": value}
                 for what, value in miss.items()]
        return pd.DataFrame(rows)

    @property
    def residuals(self) -> pd.DataFrame:
        return residual_frame(self.residual_rows)

    def summary(self) -> dict[str, float]:
        """|measured / predicted - 1| of throughput over the pipeline cases: median and worst."""
        misses = [abs(r["measured"] / r["fitted"] - 1) for r in self.residual_rows if r["metric"] == "throughput_tflops"]
        return {"median": round(float(np.median(misses)), 4), "worst": round(float(np.max(misses)), 4)} if misses else {}


def pipeline_table(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per pipeline case of the run: its measured throughput, clock, SMs and counters, fp8's promoted
    cases included (model.py: the drain and the additions)."""
    rows = frame[frame.case_id.str.startswith("gemm.")]
    if rows.empty:
        return pd.DataFrame()
    table = rows.pivot_table(index="case_id", columns="metric", values="value", aggfunc="first")
    clocks = rows[rows.metric == "throughput_tflops"].groupby("case_id").sm_clock_mhz.first()
    table["clock_mhz"] = clocks
    table["sm_count"] = rows.groupby("case_id").sm_count.first()
    return table.dropna(subset=["throughput_tflops", "clock_mhz"])


def fit(frame: pd.DataFrame, gpu: str, source: str, prior: Params | None) -> FitReport | None:
    table = pipeline_table(frame)
    if table.empty or "cycles_per_kblock" not in table:
        return None
    cases = {cid: parse(cid) for cid in table.index}
    sm_count = int(table.sm_count.iloc[0])
    # Without a prior (a GPU with no datasheet row), a start near the H100's fit; hbm_gbps is not fitted, so
    # such a GPU's memory is taken at 3000 GB/s (about the H100's 3352 x 0.92): the fit report shows it.
    start = prior or Params(gpu, sm_count, 4096.0, 710.0, 0.0, 600.0, 62.5, 2.6, 115.0, 43.0, 6.6, 45.0, 3000.0, 4000.0,
                            drain_cycles=198.0, promotion_cycles=195.0, turn_cycles=171.0)
    start = replace(start, gpu=gpu, sm_count=sm_count, source=source)
    # Block-scaled fp8 cases are scored, not fitted: the model has no term for their scales' loads and multiplies
    # (their misses say what those cost), and fitted they would bend the plain promotion's terms toward them
    fitted = table.loc[[c for c in table.index if not cases[c].block_scaled]]
    p = _fitted_params(start, fitted, cases)
    large = [c for c in table.index if cases[c].flops / 2 >= LARGE]
    clock = float(table.loc[large or list(table.index), "clock_mhz"].median())
    p = replace(p, clock_mhz=round(clock, 1))
    return FitReport(gpu, p, _scored(table, cases, p))


# The fits made in this process: a run's parameters take seconds of Nelder-Mead, and whoever fits one run again (the
# CLI's `plan` per shape, the planner's evaluation over pairs of runs, a test session) gets the same parameters from
# the same numbers. Keyed on every number the fit reads (the start's terms and the table's bytes, index and columns):
# a hit is the same input (repr: -0.0 and nan are told apart), so the same output; the labels (the GPU's name, the
# source) are the caller's.
_FITS: dict[tuple, Params] = {}
_FITS_KEPT = 64


def _fitted_params(start: Params, fitted: pd.DataFrame, cases: dict[str, GemmCase]) -> Params:
    key = (repr(replace(start, gpu="", source="")), tuple(fitted.index), tuple(fitted.columns),
           fitted.to_numpy(dtype=float).tobytes())
    if (found := _FITS.get(key)) is None:
        found = _fit_epilogue(start, fitted, cases)
        found = _fit_kblock(found, fitted, cases)
        found = fit_turn(found, fitted, cases, lambda c, q, mhz: kblock_cycles(c, q, mhz)[0], PRIOR_WEIGHT)
        found = _fit_splitk(found, fitted, cases)
        found = _fit_whole(found, fitted, cases)
        if len(_FITS) >= _FITS_KEPT:
            _FITS.pop(next(iter(_FITS)))
        _FITS[key] = found
    return replace(found, gpu=start.gpu, source=start.source)


def transfer(fitted: FitReport, frame: pd.DataFrame, gpu: str, source: str, datasheet: Params | None) -> FitReport | None:
    """This run's pipeline cases predicted with the parameters fitted to another run (`fitted`), each at the clock it
    ran at: nothing of this run enters them but its SM count and, on another GPU model, its datasheet's (`datasheet`,
    the prior: the tensor cores' rate and the memory's, never fitted). None: the run has no pipeline case."""
    table = pipeline_table(frame)
    if table.empty:
        return None
    cases = {cid: parse(cid) for cid in table.index}
    p = replace(fitted.params, gpu=gpu, sm_count=int(table.sm_count.iloc[0]), source=f"fitted to {source}")
    if datasheet is not None:
        p = replace(p, flops_per_cycle=datasheet.flops_per_cycle, hbm_gbps=datasheet.hbm_gbps)
    return FitReport(gpu, p, _scored(table, cases, p))


def _scored(table: pd.DataFrame, cases: dict[str, GemmCase], p: Params) -> list[dict]:
    """Every case's measured throughput (and cycles per k-block) beside the prediction with `p` at its clock."""
    rows = []
    for cid, row in table.iterrows():
        case = cases[cid]
        predicted = predict_case(case, p)
        rows.append({"case_id": cid, "metric": "throughput_tflops", "measured": round(float(row.throughput_tflops), 2),
                     "fitted": round(predict_case(case, p, float(row.clock_mhz)).tflops(int(row.sm_count),
                                                                                         float(row.clock_mhz)), 2),
                     "bound": predicted.bound})
        if not np.isnan(row.get("cycles_per_kblock", np.nan)):  # (ping-pong: what its counter reads, pingpong.py)
            kblock = predicted.t_kblock if not case.pingpong else counter_per_kblock(
                case, p.sm_count, case.kblocks * predicted.t_kblock + p.turn_cycles, predicted.epilogue)
            rows.append({"case_id": cid, "metric": "cycles_per_kblock", "measured": round(float(row.cycles_per_kblock), 1),
                         "fitted": round(kblock, 1), "bound": predicted.bound})
    return rows


def _fit_epilogue(p: Params, table: pd.DataFrame, cases: dict[str, GemmCase]) -> Params:
    """E_0 and each epilogue's E from the epilogue counters of the cases without split-K: cycles per tile = E_0 +
    C bytes / E, least squares on the relative error (E_0 shared: the barriers and the fence are the same code).
    Where the run's tiles store one size of C only, the rates are not told from the fixed part: E stays the start's
    (the prior's) and E_0 is the median of the counters beyond it (run 136's 64x64 tiles alone had put the TMA store's
    E at 17 bytes a cycle, and a 128x128 tile's epilogue at 1942 cycles, against 793-944 measured in run 139)."""
    points = []  # (C bytes, tmastore?, cycles)
    for cid, row in table.iterrows():
        cycles = row.get("epilogue_cycles_per_tile", np.nan)
        case = cases[cid]  # (ping-pong's epilogue runs beside the other warpgroup's mainloop: not this one's)
        if not case.fixes_up and not case.pingpong and cycles and not np.isnan(cycles):
            points.append((case.bm * case.bn * OUT_ELEM, case.epilogue == "tmastore", float(cycles)))
    if not points:
        return p
    nbytes, tma, cycles = (np.array(v, dtype=float) for v in zip(*points))
    kinds = [k for k in (0.0, 1.0) if (tma == k).any()]
    if len(set(nbytes)) >= 2 and len(points) >= len(kinds) + 2:
        columns = [np.ones_like(nbytes)] + [nbytes * (tma == k) for k in kinds]
        design = np.stack(columns, axis=1) / cycles[:, None]
        solution = np.linalg.lstsq(design, np.ones_like(cycles), rcond=None)[0]
        if solution[0] >= 0 and (solution[1:] > 0).all():
            rates = dict(zip(kinds, 1.0 / solution[1:]))
            return replace(p, epilogue_fixed_cycles=float(solution[0]),
                           epilogue_regs=float(rates.get(0.0, p.epilogue_regs)),
                           epilogue_tma=float(rates.get(1.0, p.epilogue_tma)))
    # one size of C: the bytes' rate is not told from the fixed part; the rates stay the start's, E_0 is the median
    # of what the counters take beyond them
    rates = np.where(tma == 1.0, p.epilogue_tma, p.epilogue_regs)
    return replace(p, epilogue_fixed_cycles=float(max(0.0, np.median(cycles - nbytes / rates))))


def _fit_splitk(p: Params, table: pd.DataFrame, cases: dict[str, GemmCase]) -> Params:
    """R_s, the split-K sums' rate to the L2 and back, from the epilogue counters of the run's split-K cases (at
    least SPLITK_CASES; the counters give the mean over a tile's runs): the median over them of the sums' bytes (out,
    and one run's in on average) over what their epilogue takes beyond C's store and the round trips
    (model.splitk_cycles). Without them R_s stays unset: the feed's R."""
    rates = []
    for cid, row in table.iterrows():
        cycles, case = row.get("epilogue_cycles_per_tile", np.nan), cases[cid]
        if case.splits > 1 and cycles and not np.isnan(cycles):
            store = epilogue_cycles(replace(case, splits=1), p) / case.splits
            beyond = cycles - store - p.latency_cycles * (1 + 1 / case.splits)
            if beyond > 0:
                rates.append(2 * case.bm * case.bn * 4 / beyond)
    if len(rates) < SPLITK_CASES:
        return p
    return replace(p, splitk_bytes_per_cycle=float(np.median(rates)))


def _fit_whole(p: Params, table: pd.DataFrame, cases: dict[str, GemmCase]) -> Params:
    """A launch's fixed cost: least squares on log throughput, each case at the clock it measured (it matters
    where a problem is small). The memory's bandwidth stays the prior's: fitted here it took up what the
    k-block lacked (1717 GB/s on the H100 before the memory's queue, against about 3084 measured). Split-K cases are
    left out: their launches take time that no counter records (runs 134-136, 141: four runs of a tile take up to
    twice their k-blocks and epilogues), which the launch cost took up (14.8 k cycles fitted to run 136, 8-9 k to the
    plain runs)."""
    rows = [(cases[c], float(r.clock_mhz), float(r.throughput_tflops), int(r.sm_count)) for c, r in table.iterrows()
            if not cases[c].fixes_up]
    if not rows:
        return p

    def loss(x: np.ndarray) -> float:
        if (x <= 0).any():
            return 1e9
        q = replace(p, launch_cycles=float(x[0]))
        return float(sum(np.log(predict_case(c, q, mhz).tflops(sms, mhz) / tflops) ** 2 for c, mhz, tflops, sms in rows))

    best = nelder_mead(loss, np.array([p.launch_cycles]), np.array([2000.0]), iterations=100)
    return replace(p, launch_cycles=float(best[0]))


def _fit_kblock(p: Params, table: pd.DataFrame, cases: dict[str, GemmCase]) -> Params:
    """The k-block's parameters from the cases without a promotion; then fp8's drain w (and its additions P,
    where the run has serial or pipelined ones) from the promoted cases, the rest held (a run of fp8 cases alone keeps the
    start's, the prior's: fitted on fp8 alone, the feed and the drain trade against each other)."""
    measured = table.cycles_per_kblock.dropna()
    measured = measured[[not cases[c].pingpong for c in measured.index]]  # their counters: fit_turn's alone
    plain = [c for c in measured.index if not cases[c].promote]
    promoted = [c for c in measured.index if cases[c].promote]
    if len(plain) >= len(KBLOCK_PARAMS) and _identifies_kblock([cases[c] for c in plain]):
        p = _least_squares(p, KBLOCK_PARAMS, [cases[c] for c in plain], table.loc[plain, "clock_mhz"],
                           measured[plain])
    names = tuple(n for n in PROMOTION_PARAMS
                  if n == "drain_cycles" or any(cases[c].promotion in ("serial", "staggered", "pipelined", "offset")
                                                for c in promoted))
    if len(promoted) >= len(names) + 1:
        p = _least_squares(p, names, [cases[c] for c in promoted], table.loc[promoted, "clock_mhz"],
                           measured[promoted])
    return p


def _identifies_kblock(chosen: list[GemmCase]) -> bool:
    """Whether a run's plain cases tell the k-block's terms apart: the round trip from the feed only through rings
    of different depths (a ring of S - 1 copies in flight divides the round trip by S - 1 and leaves the feed), the
    issue stall and the consumers' overheads only through tiles of different wgmma counts. A run of one or two
    depths (a shape run: its planner's picks) keeps the start's (the prior's) terms, where least squares would
    trade them against each other (run 134 alone: L0 2457 cycles and R 692 bytes a cycle)."""
    return (len({c.stages for c in chosen}) >= MIN_DEPTHS
            and len({(c.bm, c.bn, c.consumers) for c in chosen}) >= MIN_TILES)


def _least_squares(p: Params, names: tuple[str, ...], chosen: list[GemmCase], clocks: pd.Series,
                   measured: pd.Series) -> Params:
    """`names` fitted to the cases' cycles per k-block (relative error), the other parameters held, each held near
    the start (the prior) by PRIOR_WEIGHT x its relative move squared: a run moves a term only as far as its cases
    pay for it (run 128's k-blocks, all near the tensor cores, otherwise traded the round trip L0 against the
    memory's queue L_q: 3 and 15293 cycles)."""
    clocks, target = clocks.to_numpy(dtype=float), measured.to_numpy(dtype=float)
    x0 = np.array([getattr(p, n) for n in names], dtype=float)
    scale = np.array([max(abs(getattr(p, n)), SCALE_FLOOR.get(n, 1.0)) for n in names])
    feed = names.index("feed_bytes_per_cycle") if "feed_bytes_per_cycle" in names else None

    def loss(x: np.ndarray) -> float:
        if (x < 0).any() or (feed is not None and x[feed] <= 0):  # a feed of 0 bytes a cycle divides by zero
            return 1e9
        q = replace(p, **dict(zip(names, x)))
        predicted = np.array([kblock_cycles(c, q, mhz)[0] for c, mhz in zip(chosen, clocks)])
        return float(np.sum((predicted / target - 1) ** 2) + PRIOR_WEIGHT * np.sum(((x - x0) / scale) ** 2))

    best = nelder_mead(loss, x0, np.maximum(np.abs(x0) * 0.3, 1.0), iterations=1500)
    best = nelder_mead(loss, best, np.maximum(np.abs(best) * 0.1, 0.5), iterations=1500)
    return replace(p, **dict(zip(names, (float(v) for v in best))))


def measured_throughputs(fit) -> dict[str, float]:
    """The run's own throughput of each pipeline case the fit was made from."""
    if fit is None:
        return {}
    return {r["case_id"]: r["measured"] for r in fit.residual_rows if r["metric"] == "throughput_tflops"}
