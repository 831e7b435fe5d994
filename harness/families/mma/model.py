"""The analytical model of mma.sync, as the family's `model` (harness/families/base.py: prior,
predict, fit), for `bench model` and `bench compare`. The loaders' model: harness/families/loaders/model.py.

mma.sync, native forms (one HMMA/IMMA per PTX mma; not f64, not the emulated fp8, s4/u4, xor and
m8n8k4 forms, and not b1, which has no published rate): each instruction holds its SM sub-partition's
tensor core for

    t = c + work / (F_tc * rate)          c = c_dense, or c_sparse for mma.sp

cycles (work: 2 M N K, dense-equivalent; F_tc the dense 16-bit FLOP per cycle of one tensor core, from
the datasheet; rate 1 for f16/bf16, 1/2 for tf32, 2 for s8/u8, twice that for sparse). Then

    issue interval   = max(t, floor)                       one warp, independent accumulators
    sm_throughput    = 4 sub-partitions * work / interval  the whole SM busy
    latency          = a + b * work / (F_tc * rate)        one warp, a dependent chain

On the H100 (run 49) c_dense = 2, c_sparse = 4, floor = 4, latency = 10 + 3.5 per cycle of arithmetic:
mma.sync reaches 2/3 of wgmma's rate at m16n8k16 (6 cycles for 4 of arithmetic) and 1/2 at m16n8k8.
Those constants are Hopper SM properties measured on our GPUs: the prior for an unmeasured Hopper
(H800, H20) combines them with its datasheet F_tc.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from harness.datasheets import gpu_specs, spec_name
from harness.families.base import FamilyModel

SUB_PARTITIONS = 4
RATE = {"f16": 1.0, "bf16": 1.0, "tf32": 0.5, "s8": 2.0, "u8": 2.0}
# Hopper SM constants, fitted to runs 49 (H100) and 50 (H200), which agree to 0.001 cycle.
C_DENSE, C_SPARSE, FLOOR, LATENCY_BASE, LATENCY_PER_CYCLE = 2.0, 4.0, 4.0, 10.0, 3.5


@dataclass(frozen=True)
class MmaParams:
    gpu: str
    f_tc: float  # dense 16-bit FLOP per cycle per tensor core
    c_dense: float
    c_sparse: float
    floor: float
    latency_base: float
    latency_per_cycle: float
    source: str


def native(case) -> bool:
    import harness.families.mma.sass as sass

    return case.dtype_a in RATE and case.dtype_b in RATE and not sass.form(case).emulated


def arithmetic(case, params: MmaParams) -> float:
    """Cycles of tensor-core arithmetic in one instruction (work / (F_tc x rate))."""
    work = 2.0 * case.m * case.n * case.k
    return work / (params.f_tc * RATE[case.dtype_a] * (2.0 if case.sparse else 1.0))


def occupancy(case, params: MmaParams) -> float:
    return (params.c_sparse if case.sparse else params.c_dense) + arithmetic(case, params)


def predict_mma(case, metric: str, params: MmaParams) -> float | None:
    if not native(case):
        return None
    interval = max(occupancy(case, params), params.floor)
    if metric == "issue_interval_cycles":
        return interval
    if metric == "sm_throughput":
        return SUB_PARTITIONS * 2.0 * case.m * case.n * case.k / interval
    if metric == "latency_cycles":
        return params.latency_base + params.latency_per_cycle * arithmetic(case, params)
    return None


def _residual_rows(points, params: MmaParams) -> list[dict]:
    rows = []
    for case, metric, launch, measured in points:
        fitted = predict_mma(case, metric, params)
        rows.append({"case_id": case.case_id, "metric": metric, "launch": launch, "measured": measured,
                     "fitted": fitted, "residual": measured - fitted, "relative": measured / fitted - 1})
    return rows


@dataclass(frozen=True)
class MmaFitReport:
    gpu: str
    params: MmaParams
    points: list

    @property
    def parameters(self) -> pd.DataFrame:
        p = self.params
        intervals = [r for r in _residual_rows(self.points, p) if r["metric"] == "issue_interval_cycles"]
        rms = float(np.sqrt(np.mean([r["residual"] ** 2 for r in intervals]))) if intervals else None
        return pd.DataFrame([{"gpu": self.gpu, "F_tc": round(p.f_tc, 1), "c_dense": round(p.c_dense, 3),
                              "c_sparse": round(p.c_sparse, 3), "floor": round(p.floor, 3),
                              "latency": f"{p.latency_base:.2f} + {p.latency_per_cycle:.3f}/cycle",
                              "cases": len({c.case_id for c, *_ in self.points}), "rms_interval": rms}])

    @property
    def residuals(self) -> pd.DataFrame:
        return pd.DataFrame(_residual_rows(self.points, self.params))


class MmaModel(FamilyModel):
    """Native mma.sync: issue interval, work per cycle per SM and latency from the tensor core's
    occupancy per instruction (module docstring)."""

    metrics = ("issue_interval_cycles", "sm_throughput", "latency_cycles")

    def prior(self, gpu: str) -> MmaParams | None:
        specs = gpu_specs()
        name = spec_name(gpu, specs)
        if name not in specs:
            return None
        return MmaParams(name, specs[name].flops_per_tc_per_clk_fp16, C_DENSE, C_SPARSE, FLOOR, LATENCY_BASE,
                         LATENCY_PER_CYCLE, "datasheet F_tc; Hopper SM constants of runs 49 and 50")

    def predict(self, case, metric: str, params: MmaParams | None) -> float | None:
        return None if params is None else predict_mma(case, metric, params)

    def fit(self, frame: pd.DataFrame, gpu: str, source: str) -> MmaFitReport | None:
        """Least squares on the native cases of `frame`: F_tc, c_dense and c_sparse on the intervals above
        the floor, the floor on those below it (re-assigned until stable), a and b on the latencies."""
        from harness.families.mma.cases import parse

        frame = frame[frame.metric.isin(self.metrics)]
        best = (frame[frame.metric == "sm_throughput"].sort_values("value")
                .groupby("case_id", as_index=False).last())  # the sweep's best point per case
        frame = pd.concat([frame[frame.metric != "sm_throughput"], best])
        points = [(c, m, launch, float(v)) for c, m, launch, v in
                  zip(map(parse, frame.case_id), frame.metric, frame.launch, frame.value)]
        points = [p for p in points if native(p[0])]
        intervals = [(c, v) for c, m, _, v in points if m == "issue_interval_cycles"]
        if not intervals:
            return None
        params = self.prior(gpu) or replace(self.prior("H100 SXM5"), gpu=gpu)
        params = replace(params, gpu=gpu, source=source)
        floored = None
        for _ in range(20):
            now = [occupancy(c, params) < params.floor for c, _ in intervals]
            if now == floored:
                break
            floored = now
            above = [(c, v) for (c, v), low in zip(intervals, now) if not low]
            if len({bool(c.sparse) for c, _ in above}) == 2:  # both constants and 1/F_tc
                x = np.array([[0.0 if c.sparse else 1.0, 1.0 if c.sparse else 0.0,
                               2.0 * c.m * c.n * c.k / (RATE[c.dtype_a] * (2.0 if c.sparse else 1.0))]
                              for c, _ in above])
                (c_dense, c_sparse, inverse), *_ = np.linalg.lstsq(x, np.array([v for _, v in above]), rcond=None)
                params = replace(params, c_dense=float(c_dense), c_sparse=float(c_sparse), f_tc=float(1 / inverse))
            below = [v for (c, v), low in zip(intervals, now) if low]
            if below:
                params = replace(params, floor=float(np.mean(below)))
        latencies = [(arithmetic(c, params), v) for c, m, _, v in points if m == "latency_cycles"]
        if len({x for x, _ in latencies}) >= 2:
            slope, base = np.polyfit(*np.array(latencies).T, 1)
            params = replace(params, latency_base=float(base), latency_per_cycle=float(slope))
        return MmaFitReport(gpu, params, points)
