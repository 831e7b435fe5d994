"""The ladder's model (Family.model): each step's bound in FLOP per cycle per SM, the least of three:

    issue     the execution unit's peak times the share of a warp's issued instructions it gets in the inner loop:
              FFMA 128 lanes x 2 FLOP = 256 a cycle (4 schedulers x 32 lanes); a step that issues loads beside its
              FFMA shares the schedulers' slots with them. HMMA (mma.sync m16n8k16, f16 in, f32 accumulate): 494.4
              TFLOPS on the H800 PCIe's 114 SMs at 1755 MHz (2402.13499 Table VII): 2471 FLOP a cycle
    on-chip   the L1/shared-memory data path moves one wavefront (128 bytes, or one bank-conflict-free access of a
              warp) a cycle per SM: 127.9 bytes a cycle on the H800 PCIe (2402.13499 Table V). Each step's
              wavefronts per unit of work are counted from its tiles (WAVEFRONTS below)
    L2        bytes a block loads per FLOP from its tile, (BM + BN) x element / (2 x BM x BN), at the rate the L2
              lands data in an SM: 62.3 bytes a cycle (the GEMM planner's feed, fitted to the H100 SXM's run of
              record 65: docs/gemm.md)

The naive step's loads are L1 hits: a warp's 16 distinct rows of B are 16 wavefronts per k.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from harness.datasheets import gpu_specs, spec_name
from harness.families.base import FamilyModel

FFMA_FLOPS_PER_CYCLE = 256.0  # per SM: 128 FP32 lanes, 2 FLOP per FFMA
HMMA_FLOPS_PER_CYCLE = 494.4e12 / (114 * 1755e6)  # per SM: mma.sync m16n8k16 f16->f32, 2402.13499 Table VII, H800 PCIe
WAVEFRONT_BYTES = 128.0
ONCHIP_BYTES_PER_CYCLE = 127.9  # per SM, 2402.13499 Table V (H800 PCIe shared-memory loads)
L2_BYTES_PER_CYCLE = 62.3  # per SM, every SM loading: the GEMM planner's feed R (docs/gemm.md)

# Per step: (FLOP, L1/shared wavefronts, FFMA share of issue) of one unit of work, from ptx/ladder.cu.in's tiles:
#   naive        a warp, one k: 32 FFMA (64 FLOP); A: 2 rows (2 wavefronts), B: 16 rows (16); 3 instructions a FFMA
#   smem-tiled   a warp, one k: 32 FFMA; As broadcast (1) and Bs 32 banks (1); per 32 k, 2 LDG and 2 STS (4 / 32);
#                2 LDS a FFMA
#   reg-tiled    a warp, one k: 32 x 64 FFMA (4096 FLOP); 2 LDS.128 of A (2 threads' rows: 1 each), 2 of B (256
#                bytes: 2 each); per k-block of 16, 4 LDG.128 (4 each) and 16 STS of the transpose (2-way: 2 each),
#                48 / 16; 4 LDS.128 per 64 FFMA
#   wmma,        a block, one k-block of 32: 8 warps x 2 k16 x 16 m16n8k16 (1,048,576 FLOP); per warp and k16, 6
#   mma-ldmatrix fragment loads of 512 bytes (4 each: 24); the tiles, 16 KiB loaded (128) and stored (128)
WAVEFRONTS: dict[str, tuple[float, float, float]] = {
    "naive": (64.0, 18.0, 1.0 / 3.0),
    "smem-tiled": (64.0, 2.0 + 4.0 / 32.0, 1.0 / 3.0),
    "reg-tiled": (4096.0, 6.0 + 48.0 / 16.0, 64.0 / 68.0),
    "wmma": (8 * 2 * 16 * 4096.0, 8 * 2 * 24 + 128.0 + 128.0, 1.0),
    "mma-ldmatrix": (8 * 2 * 16 * 4096.0, 8 * 2 * 24 + 128.0 + 128.0, 1.0),
}


@dataclass(frozen=True)
class Params:
    gpu: str
    sm_count: int | None
    clock_mhz: float | None
    ffma: float = FFMA_FLOPS_PER_CYCLE
    hmma: float = HMMA_FLOPS_PER_CYCLE
    onchip_bytes: float = ONCHIP_BYTES_PER_CYCLE
    l2_bytes: float = L2_BYTES_PER_CYCLE


def bounds(case, params: Params) -> dict[str, float]:
    """Each of the three bounds of `case`'s step (FLOP per cycle per SM); {} for the library case."""
    if case.step not in WAVEFRONTS:
        return {}
    flops, wavefronts, share = WAVEFRONTS[case.step]
    spec = case.spec
    unit = params.hmma if spec.unit == "HMMA" else params.ffma
    return {"issue": unit * share,
            "on-chip": flops / wavefronts * params.onchip_bytes / WAVEFRONT_BYTES,
            "L2": params.l2_bytes * 2.0 * spec.bm * spec.bn / ((spec.bm + spec.bn) * case.in_bytes)}


def bound(case, params: Params) -> tuple[float, str] | None:
    """The step's bound and which of the three it is, or None (the library)."""
    found = bounds(case, params)
    if not found:
        return None
    name = min(found, key=found.get)
    return found[name], name


class LadderModel(FamilyModel):
    """The steps' bounds (module docstring): a prior from the datasheet's SMs and clock; nothing is fitted."""

    def prior(self, gpu: str) -> Params:
        specs = gpu_specs()
        name = spec_name(gpu, specs)
        spec = specs.get(name) if name else None
        return Params(name or gpu, spec.sm_count if spec else None, spec.tc_boost_clock_mhz if spec else None)

    def predict(self, case, metric: str, params: Params | None) -> float | None:
        found = bound(case, params or self.prior(""))
        if found is None:
            return None
        if metric == "sm_throughput":
            return found[0]
        if metric == "peak_fraction":
            from harness.families.pipeline import TENSOR_FLOPS_PER_CYCLE

            return found[0] / (TENSOR_FLOPS_PER_CYCLE if case.spec.unit == "HMMA" else FFMA_FLOPS_PER_CYCLE)
        return None

    def fit(self, frame: pd.DataFrame, gpu: str, source: str):
        return None  # a bound, not a fit: compare sets it beside each measurement

    def datasheet_table(self, gpu: str, clock_mhz: float | None = None):
        from harness.families.ladder.cases import ORDER, case

        params = self.prior(gpu)
        clock = clock_mhz or params.clock_mhz
        rows = []
        for step in ORDER:
            found = bounds(case(step, 4096), params)
            if not found:
                continue
            which = min(found, key=found.get)
            row = {"step": step, **{f"{k} FLOP/cycle/SM": round(v, 1) for k, v in found.items()}, "binds": which}
            if params.sm_count and clock:
                row["TFLOPS"] = round(found[which] * params.sm_count * clock / 1e6, 1)
            rows.append(row)
        line = (f"{params.gpu}: the GEMM ladder's bounds per step (FFMA {params.ffma:g}, HMMA {params.hmma:.0f} FLOP a "
                f"cycle per SM; on-chip {params.onchip_bytes:g}, L2 {params.l2_bytes:g} bytes a cycle per SM)"
                + (f", TFLOPS at {clock:g} MHz on {params.sm_count} SMs" if params.sm_count and clock else ""))
        return line, pd.DataFrame(rows)
