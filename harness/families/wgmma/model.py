"""The analytical model of wgmma issue intervals (docs/architecture.md, "The wgmma model"), and its fit to a run.

A wgmma takes the longer of reading its shared-memory operands and doing its arithmetic, and no
less than a floor:

    issue_interval = max( (bytes_A_smem + bytes_B_smem) / B_smem,  FLOPs / (4 * F_tc * rate),  floor )

    floor = L_min (dense), L_sp (sparse), L_sp_wide (sparse with a 32-bit accumulator at N >= 16)

Measured on both GPUs (runs 20 and 23): sparse RS at small N issues every 16 cycles with a 16-bit
accumulator and with any accumulator at N = 8, but every 18 with f32 or s32 from N = 16 until the
arithmetic takes longer (N = 40: 20). The papers' sparse RS column shows the same (16 at N = 8, 18 at
N = 16 and 32, f32 accumulate), which gives the priors.

One warpgroup already issues at this interval (1 and 4 warpgroups per SM measured the same, to 0.04 %),
so work per cycle per SM is FLOPs / issue_interval for 1 to 4 warpgroups, and the whole GPU's rate at a
clock f is that times SMs times f (sm_throughput, and throughput_tflops at the clock measured).

B_smem: shared-memory bytes per cycle per SM; F_tc: dense 16-bit FLOPs per tensor core per cycle
(datasheet arithmetic: peak / (tensor cores x boost clock)); rate: the dtype's speed relative to
16-bit (tf32 1/2, 8-bit 2); 4 tensor cores per SM; L_min: the floor RS mode shows. In RS mode A
is in registers (0 shared-memory bytes); sparse A is half size and its K is twice the dense K,
and sparse arithmetic runs at twice the dense rate.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from harness.errors import SpecError
from harness.datasheets import GPU_ALIASES, gpu_specs
from harness.datasheets import spec_name as _row
from harness.families.wgmma.cases import WgmmaCase as Case

if TYPE_CHECKING:
    import pandas as pd

TENSOR_CORES_PER_SM = 4
# Dense tensor-core work per SM per cycle (4 tensor cores x 1024 FLOP for 16-bit inputs).
# Source: datasheet arithmetic, H100 SXM 989.4 TFLOPS / (528 tensor cores x 1830 MHz) = 1024; tf32
# 494.7 TFLOPS (half), fp8 and int8 1978.9 TFLOPS or TOPS (twice). Hopper datasheets give no binary
# rate: b1 has no peak_fraction.
DENSE_FLOP_PER_SM_PER_CYCLE = {"f16": 4096, "bf16": 4096, "tf32": 2048, "e4m3": 8192, "e5m2": 8192,
                               "s8": 8192, "u8": 8192}
B_SMEM_HOPPER = 128.0  # bytes/cycle/SM
L_MIN_HOPPER = 13.0  # cycles: the RS floor the article reads off the H800 table
# Sparse RS floors on the H800 (2402.13499 Table IX and 2501.12084 Table 11, f32 accumulate: 16 at N = 8,
# 18 at N = 16 and 32): priors only; a fit takes them from the run.
L_SPARSE_HOPPER = 16.0
L_SPARSE_WIDE_HOPPER = 18.0
WIDE_ACCUMULATORS = ("f32", "s32")
DTYPE_RATE = {"f16": 1.0, "bf16": 1.0, "tf32": 0.5, "e4m3": 2.0, "e5m2": 2.0, "s8": 2.0, "u8": 2.0}
@dataclass(frozen=True)
class Params:
    gpu: str
    b_smem: float  # bytes/cycle/SM
    f_tc: float  # dense 16-bit FLOP/cycle per tensor core
    l_min: float  # cycles
    source: str  # "datasheet" or "fitted to run N"
    l_sparse: float = L_SPARSE_HOPPER  # the sparse floor (cycles)
    l_sparse_wide: float = L_SPARSE_WIDE_HOPPER  # the sparse floor with a 32-bit accumulator at N >= 16


@dataclass(frozen=True)
class Prediction:
    cycles: float
    bound: str  # "shared memory", "tensor cores" or "floor"
    smem_cycles: float
    compute_cycles: float


def datasheet(gpu: str) -> Params:
    """Parameters from the shipped gpu_specs.csv (B_smem and L_min: Hopper's, per the article)."""
    specs = gpu_specs()
    name = _row(gpu, specs)
    if name not in specs:
        raise SpecError(f"no datasheet figures for GPU {gpu!r}: expected one of {', '.join(specs)} "
                        f"(or {', '.join(sorted(GPU_ALIASES))})")
    return Params(name, B_SMEM_HOPPER, specs[name].flops_per_tc_per_clk_fp16, L_MIN_HOPPER, "datasheet")


ELEMENT_BYTES = {"f16": 2, "bf16": 2, "tf32": 4, "e4m3": 1, "e5m2": 1, "s8": 1, "u8": 1}


def smem_bytes(case: Case) -> float:
    size = ELEMENT_BYTES[case.dtype_a]
    a = 0.0 if case.operands == "RS" else case.m * case.k * size * (0.5 if case.sparse else 1.0)
    return a + case.n * case.k * size


def flops(case: Case) -> float:
    return 2.0 * case.m * case.n * case.k


def floor_of(case: Case) -> str:
    """Which floor parameter bounds the case: l_min, l_sparse or l_sparse_wide."""
    if not case.sparse:
        return "l_min"
    return "l_sparse_wide" if case.dtype_acc in WIDE_ACCUMULATORS and case.n >= 16 else "l_sparse"


def predict(case: Case, params: Params) -> Prediction:
    rate = DTYPE_RATE[case.dtype_a] * (2.0 if case.sparse else 1.0)
    smem = smem_bytes(case) / params.b_smem
    compute = flops(case) / (TENSOR_CORES_PER_SM * params.f_tc * rate)
    floor = getattr(params, floor_of(case))
    if max(smem, compute) < floor:
        bound = "floor"
    else:
        bound = "tensor cores" if compute >= smem else "shared memory"
    return Prediction(max(smem, compute, floor), bound, smem, compute)


def sm_throughput(case: Case, params: Params) -> float:
    """FLOP (or OP) per cycle per SM with 1 to 4 warpgroups: one instruction per issue interval."""
    return flops(case) / predict(case, params).cycles


def tflops(case: Case, params: Params, sms: int, clock_mhz: float) -> float:
    """The whole GPU's rate at `clock_mhz` on `sms` SMs."""
    return sm_throughput(case, params) * sms * clock_mhz * 1e6 / 1e12


def crossover_n(dtype_a: str, operands: str, params: Params, sparse: bool = False, k: int = 16) -> float:
    """The N above which the instruction is tensor-core bound (continuous). Both terms are linear in
    N, so two predictions give them: solve compute(N) = max(smem(N), L_min)."""
    def at(n: int) -> Prediction:
        return predict(Case(64, n, k, dtype_a, dtype_a, "f32", operands, sparse), params)

    smem_fixed = at(0).smem_cycles
    smem_per_n, compute_per_n = at(1).smem_cycles - smem_fixed, at(1).compute_cycles
    floor = getattr(params, floor_of(Case(64, 256, k, dtype_a, dtype_a, "f32", operands, sparse)))
    # Equal slopes (sparse: B's reads and the arithmetic take the same cycles per N), up to the fit's
    # rounding: arithmetic never overtakes reading shared memory.
    if compute_per_n <= smem_per_n * (1 + 1e-3):
        return float("inf")
    return max(floor / compute_per_n, smem_fixed / (compute_per_n - smem_per_n))


@dataclass(frozen=True)
class Fit:
    params: Params
    residuals: list[tuple[Case, float, float, str]]  # case, measured, fitted, bound
    iterations: int

    @property
    def rms(self) -> float:
        return float(np.sqrt(np.mean([(m - f) ** 2 for _, m, f, _ in self.residuals]))) if self.residuals else 0.0


def fit(points: list[tuple[Case, float]], start: Params, source: str) -> Fit:
    """Least squares for B_smem, F_tc and L_min: assign each point to the term that bounds it under the
    current parameters, fit each term on its points (linear in 1/B_smem, 1/F_tc, and L_min), repeat
    until the assignment stops changing."""
    params = start
    assignment: list[str] | None = None
    for iteration in range(1, 50):
        bounds = [predict(c, params).bound for c, _ in points]
        if bounds == assignment:
            break
        assignment = bounds
        updates = {}
        smem = [(smem_bytes(c), y) for (c, y), b in zip(points, bounds) if b == "shared memory"]
        if smem:
            x, y = np.array(smem).T
            updates["b_smem"] = float(x @ x / (x @ y))  # y = x / B  ->  1/B = x.y / x.x
        comp = [(flops(c) / (TENSOR_CORES_PER_SM * DTYPE_RATE[c.dtype_a] * (2 if c.sparse else 1)), y)
                for (c, y), b in zip(points, bounds) if b == "tensor cores"]
        if comp:
            x, y = np.array(comp).T
            updates["f_tc"] = float(x @ x / (x @ y))
        for name in ("l_min", "l_sparse", "l_sparse_wide"):
            floor = [y for (c, y), b in zip(points, bounds) if b == "floor" and floor_of(c) == name]
            if floor:
                updates[name] = float(np.mean(floor))
        params = replace(params, source=source, **updates)
    residuals = [(c, y, predict(c, params).cycles, predict(c, params).bound) for c, y in points]
    return Fit(params, residuals, iteration)


@dataclass(frozen=True)
class Choice:
    name: str  # "direct" or "swapped"
    instruction: str  # the wgmma shape used
    count: int  # instructions per output tile (k steps x M tiles x N chunks)
    cycles: float
    bound: str


@dataclass(frozen=True)
class SwapAdvice:
    direct: Choice
    swapped: Choice
    params: Params

    @property
    def speedup(self) -> float:
        return self.direct.cycles / self.swapped.cycles

    @property
    def recommendation(self) -> str:
        if abs(self.speedup - 1) <= 0.05:
            return "either: the two cost the same within 5 %"
        return "swap A and B" if self.speedup > 1 else "keep A and B as they are"


def _choice(name: str, rows: int, cols: int, k: int, dtype: str, operands: str, params: Params) -> Choice:
    """C (rows x cols) += A (rows x k) . B^T (cols x k) with m64nNk16 wgmma: M = 64 per instruction
    (rows padded up), N = cols rounded up to a multiple of 8, in chunks of at most 256."""
    m_tiles = -(-rows // 64)
    k_steps = -(-k // 16)
    n_total = max(8, -(-cols // 8) * 8)
    full, rest = divmod(n_total, 256)
    parts = [(256, full)] * bool(full) + [(rest, 1)] * bool(rest)  # (N, instructions of it per row of tiles)
    predictions = [(predict(Case(64, n, 16, dtype, dtype, "f32", operands), params), count) for n, count in parts]
    cycles = m_tiles * k_steps * sum(p.cycles * count for p, count in predictions)
    shape = " and ".join(f"m64n{n}k16" for n, _ in parts)
    return Choice(name, shape, m_tiles * k_steps * (full + bool(rest)), cycles, predictions[0][0].bound)


def swapab(m: int, n: int, k: int, params: Params, dtype: str = "f16", operands: str = "SS") -> SwapAdvice:
    """C = A . B^T with A m x k and B n x k: issue it directly (M = m) or as C^T = B . A^T (M = n)."""
    for name, value in (("m", m), ("n", n), ("k", k)):
        if value < 1:
            raise SpecError(f"--{name} must be a positive size, got {value}")
    return SwapAdvice(_choice("direct", m, n, k, dtype, operands, params),
                      _choice("swapped", n, m, k, dtype, operands, params), params)


def table(params: Params, n_values=(8, 16, 32, 64, 128, 256), dtype: str = "f16",
          clock_mhz: float | None = None) -> "pd.DataFrame":
    """Predicted issue intervals against N, SS and RS (the article's table for F_tc = params.f_tc), and the
    whole GPU's TFLOPS at `clock_mhz` (default: the datasheet's boost clock) where the datasheet gives SMs."""
    import pandas as pd

    spec = gpu_specs().get(params.gpu)
    clock = clock_mhz or (spec.tc_boost_clock_mhz if spec else None)
    rows = []
    for n in n_values:
        row = {"N": n}
        for ops in ("SS", "RS"):
            case = Case(64, n, 16, dtype, dtype, "f32", ops)
            p = predict(case, params)
            row[ops] = p.cycles
            row[f"{ops} bound"] = p.bound
            if spec and spec.sm_count and clock:
                row[f"{ops} TFLOPS at {clock:g} MHz"] = round(tflops(case, params, spec.sm_count, clock), 1)
        rows.append(row)
    return pd.DataFrame(rows)
