"""The planner: what a warp-specialized TMA -> wgmma GEMM (ptx/gemm.cu.in) should do on a GPU, bound by
bound. It is the GEMM family's model (`bench advise plan`, `bench model --run N`, `bench compare
--against model`).

Everything is per SM and in cycles, so a prediction holds at any clock; TFLOPS follow at the clock the
kernel ran at (measured in it) or, for a plan, the clock the GPU held under a large GEMM (measured).

    t_tc     = 2 BM BN BK / F + c_w                the tensor cores (F FLOP/cycle/SM: 4 x 1024 for f16/bf16),
                                                   plus what a k-block costs a consumer beyond its wgmma
                                                   (c_1 with one consumer warpgroup, c_2 with two, which
                                                   hide each other's)
    L(S)     = L0 + a B + (S - 1)(q0 + q B)         a copy's round trip when S - 1 copies of B KiB each (A and
                                                   B tiles, B halved by a cluster's multicast) are in flight
                                                   per SM: the TMA latency, its barriers, and the queueing
                                                   every SM's copies add at the L2
    t_kblock = max(t_tc, L(S) / (S - 1))            S stages hide S - 1 round trips (the consumer holds one slot
                                                   while its wgmma runs); S = 1: L(1) + t_tc, nothing overlaps;
                                                   k CTAs sharing an SM (a one-CTA-per-tile grid of small
                                                   tiles) overlap their round trips k ways
    epilogue = C bytes of a tile / E                E of the register stores or of the shared-memory path and
                                                   TMA store; the consumers do it while the tensor cores wait
    T_tile   = kblocks x t_kblock + epilogue (+ L(1), the first load, unless persistent)
    T        = max(waves x T_tile, HBM) + a launch's fixed cost, waves = ceil(tiles / SMs used),
               HBM = (A + B + C bytes) / the memory's bandwidth (each read or written once: the L2 keeps what
               tiles share); FLOP/cycle/SM = 2 M N K / (T x SMs)

The bound a configuration hits is the term that sets t_kblock ("tensor cores", "latency"), or the
epilogue, or wave quantization, whichever costs most. The parameters are fitted to a run's pipeline
cases (fitting.py: t_kblock to the in-kernel cycles per k-block, E to the epilogue counters); a GPU never
measured gets PRIOR, an H100's fit rounded, labelled as such.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from math import ceil


from harness.families.gemm.cases import GemmCase

ELEM = 2
KIB = 1024.0


@dataclass(frozen=True)
class Params:
    gpu: str
    sm_count: int
    flops_per_cycle: float  # F: dense f16/bf16 FLOP per cycle per SM
    latency_cycles: float  # L0
    latency_per_kib: float  # a
    queue_per_kib: float  # q: per KiB in flight per SM beyond the first copy
    queue_per_copy: float  # q0: per copy in flight per SM beyond the first
    consumer_overhead_1: float  # c_1
    consumer_overhead_2: float  # c_2
    epilogue_regs: float  # E, bytes per cycle: stores from registers
    epilogue_tma: float  # E, bytes per cycle: through shared memory and a TMA store
    hbm_gbps: float  # what the GPU's memory delivers to a GEMM (A, B read and C written once), 1e9 B/s
    launch_cycles: float  # a launch's fixed cost: its start, the first loads' fill, the last tile's drain
    clock_mhz: float | None = None  # the SM clock under a large GEMM (measured), for TFLOPS
    source: str = "prior"

    @classmethod
    def fitted_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls)
                     if f.name not in ("gpu", "sm_count", "flops_per_cycle", "clock_mhz", "source"))


# A GPU never measured: the fit to the H100 SXM's run of record 59, rounded (docs/gemm.md).
PRIOR = dict(latency_cycles=960.0, latency_per_kib=8.6, queue_per_kib=9.2, queue_per_copy=0.0, consumer_overhead_1=140.0,
             consumer_overhead_2=57.0, epilogue_regs=6.6, epilogue_tma=45.0)
HBM_OF_DATASHEET = 0.92  # a GPU never measured: its datasheet bandwidth x the H100's measured read roofline / pin rate
PRIOR_LAUNCH_CYCLES = 4000.0
BOUNDS = ("tensor cores", "latency", "epilogue", "waves", "HBM")


@dataclass(frozen=True)
class Prediction:
    flops_per_cycle_sm: float
    bound: str  # one of BOUNDS
    t_kblock: float
    epilogue: float
    waves: int
    tile_cycles: float

    def tflops(self, sm_count: int, clock_mhz: float) -> float:
        return self.flops_per_cycle_sm * sm_count * clock_mhz / 1e6


def kblock_kib(case: GemmCase) -> float:
    """KiB one CTA's producer loads per k-block (its half of B under a cluster's multicast)."""
    return (case.bm + case.bn / case.cluster) * case.bk * ELEM / KIB


def round_trip(case: GemmCase, p: Params, stages: int | None = None) -> float:
    kib = kblock_kib(case)
    in_flight = max((stages or case.stages) - 1, 0)
    return p.latency_cycles + p.latency_per_kib * kib + in_flight * (p.queue_per_copy + p.queue_per_kib * kib)


def tensor_cycles(case: GemmCase, p: Params) -> float:
    overhead = p.consumer_overhead_1 if case.consumers == 1 else p.consumer_overhead_2
    return 2.0 * case.bm * case.bn * case.bk / p.flops_per_cycle + overhead


REGISTERS = 65536  # per SM
SMEM_PER_SM = 228 * 1024


def blocks_per_sm(case: GemmCase) -> int:
    """CTAs of a one-CTA-per-tile grid that share an SM (a persistent grid has one per SM): by shared
    memory and by registers (two consumer warpgroups take 168 per thread, the launch bound of 384 threads;
    one takes its accumulators and about 64 more, as ptxas allocates them)."""
    if case.persistent:
        return 1
    threads = 128 * (1 + case.consumers)
    registers = 168 if case.consumers == 2 else min(255, case.accumulators + 64)
    return max(1, min(SMEM_PER_SM // case.smem_bytes(), REGISTERS // (registers * threads), 2048 // threads))


def kblock_cycles(case: GemmCase, p: Params) -> tuple[float, str]:
    """Cycles per k-block of one CTA, and the term that sets it; co-resident CTAs overlap their round trips."""
    t_tc = tensor_cycles(case, p)
    blocks = blocks_per_sm(case)
    t_lat = round_trip(case, p) + t_tc if case.stages == 1 else round_trip(case, p) / (case.stages - 1)
    t_lat /= blocks
    return (t_tc * blocks, "tensor cores") if t_tc >= t_lat else (t_lat * blocks, "latency")


def epilogue_cycles(case: GemmCase, p: Params) -> float:
    return case.bm * case.bn * ELEM / (p.epilogue_tma if case.epilogue == "tmastore" else p.epilogue_regs)


def hbm_cycles(case: GemmCase, p: Params, clock_mhz: float) -> float:
    """Cycles the memory needs to read A and B and write C once at hbm_gbps, at this SM clock."""
    nbytes = (case.m * case.k + case.n * case.k + case.m * case.n) * ELEM
    return nbytes / (p.hbm_gbps * 1e9 / (clock_mhz * 1e6))


def predict_case(case: GemmCase, p: Params, clock_mhz: float | None = None) -> Prediction:
    """At `clock_mhz` (the clock the case ran at; else the fit's large-GEMM clock): only the memory's
    bound depends on it, every other term is in cycles."""
    clock = clock_mhz or p.clock_mhz or 1500.0
    t_kblock, bound = kblock_cycles(case, p)
    epilogue = epilogue_cycles(case, p)
    first_load = round_trip(case, p, 1)
    tile = case.kblocks * t_kblock + epilogue + (0.0 if case.persistent else first_load)
    sms = p.sm_count // case.cluster * case.cluster
    waves = ceil(case.tiles / (sms * blocks_per_sm(case)))
    compute = waves * tile
    memory = hbm_cycles(case, p, clock)
    total = max(compute, memory) + p.launch_cycles
    rate = case.flops / (total * p.sm_count)
    # the bound: the memory's if it takes longest; else the k-block's, unless the epilogue or the last
    # wave's idle SMs cost more
    costs = {bound: case.kblocks * waves * (t_kblock - tensor_cycles(case, p)) if bound == "latency" else 0.0,
             "epilogue": waves * epilogue, "waves": (waves * sms - case.tiles) / sms * tile}
    if max(costs["epilogue"], costs["waves"]) > max(costs[bound], 0.02 * total):
        bound = max(("epilogue", "waves"), key=costs.get)
    if memory > compute:
        bound = "HBM"
    return Prediction(rate, bound, t_kblock, epilogue, waves, tile)
