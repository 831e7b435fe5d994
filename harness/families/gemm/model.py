"""The planner: what a warp-specialized TMA -> wgmma GEMM (ptx/gemm.cu.in) should do on a GPU, bound by
bound. It is the GEMM family's model (`bench advise plan`, `bench model --run N`, `bench compare
--against model`).

Everything is per SM and in cycles, so a prediction holds at any clock; TFLOPS follow at the clock the
kernel ran at (measured in it) or, for a plan, the clock the GPU held under a large GEMM (measured).

    t_tc     = 2 BM BN BK / F + c_w                the tensor cores (F FLOP/cycle/SM: 4 x 1024 for f16/bf16),
                                                   plus what a k-block costs a consumer beyond its wgmma
                                                   (c_1 with one consumer warpgroup, c_2 with two, which
                                                   hide each other's)
    Z        = L0 + a B + I                         a copy's round trip unloaded (B KiB one CTA's producer loads
                                                   per k-block, B halved by a cluster's multicast), plus I:
    I        = max(0, n - d) t_tc / n               the consumer gives slot j back only after issuing k-block
                                                   j + 1's n wgmma (MI x BK/16 per warpgroup), and the issue
                                                   stalls until the tensor pipe holds no more than d of them
    s        = (BM + BN) BK 2 / R                   the SM's feed: the bytes a k-block lands in shared memory
                                                   (multicast counted in each CTA that receives it) at R
                                                   bytes per cycle, what the L2 delivers an SM while every SM
                                                   loads
    t_kblock = max(t_tc, MVA(S - 1; Z, s))          S - 1 copies in flight per SM (the consumer holds one slot)
                                                   circulate through the round trip Z and the feed s: the
                                                   exact mean-value analysis of that closed queue gives the
                                                   period, (Z + s) / (S - 1) with few copies (Little's law)
                                                   and s with many (the feed); S = 1: Z - I + s + t_tc, nothing
                                                   overlaps; k CTAs sharing an SM (a one-CTA-per-tile grid of
                                                   small tiles) put k x (S - 1) copies in the queue
    epilogue = C bytes of a tile / E                E of the register stores or of the shared-memory path and
                                                   TMA store; the consumers do it while the tensor cores wait
    T_tile   = kblocks x t_kblock + epilogue (+ L(1), the first load, unless persistent)
    T        = max(waves x T_tile, HBM) + a launch's fixed cost, waves = ceil(tiles / SMs used),
               HBM = (A + B + C bytes) / the memory's bandwidth (each read or written once: the L2 keeps what
               tiles share); FLOP/cycle/SM = 2 M N K / (T x SMs)

The bound a configuration hits is the term that sets t_kblock ("tensor cores"; "latency" where the round
trip dominates the queue's period, "L2 feed" where the feed does), or the
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
    feed_bytes_per_cycle: float  # R: bytes per cycle the L2 lands in an SM's shared memory, every SM loading
    wgmma_queue: float  # d: wgmma a consumer issues ahead of the tensor pipe without stalling
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
PRIOR = dict(latency_cycles=710.0, latency_per_kib=0.0, feed_bytes_per_cycle=62.5, wgmma_queue=2.6,
             consumer_overhead_1=115.0, consumer_overhead_2=43.0, epilogue_regs=6.6, epilogue_tma=45.0)
HBM_OF_DATASHEET = 0.92  # a GPU never measured: its datasheet bandwidth x the H100's measured read roofline / pin rate
PRIOR_LAUNCH_CYCLES = 4000.0
BOUNDS = ("tensor cores", "latency", "L2 feed", "epilogue", "waves", "HBM")


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


def wgmma_per_kblock(case: GemmCase) -> int:
    """wgmma one consumer warpgroup issues per k-block: MI m64 blocks x BK / 16 steps."""
    return case.bm // case.consumers // 64 * (case.bk // 16)


def tensor_cycles(case: GemmCase, p: Params) -> float:
    overhead = p.consumer_overhead_1 if case.consumers == 1 else p.consumer_overhead_2
    return 2.0 * case.bm * case.bn * case.bk / p.flops_per_cycle + overhead


def issue_stall(case: GemmCase, p: Params) -> float:
    """I: cycles after a slot fills before its consumer can give the previous slot back: it stalls issuing
    the k-block's n wgmma while the tensor pipe holds d of them (each takes t_tc / n of the SM's tensor
    time: two consumers interleave)."""
    n = wgmma_per_kblock(case)
    t_tc = 2.0 * case.bm * case.bn * case.bk / p.flops_per_cycle
    return max(0.0, n - p.wgmma_queue) * t_tc / n


def feed_cycles(case: GemmCase, p: Params) -> float:
    """s: cycles the SM's feed takes to land a k-block (A and all of B, multicast or not) in shared memory."""
    return (case.bm + case.bn) * case.bk * ELEM / p.feed_bytes_per_cycle


def round_trip(case: GemmCase, p: Params, stages: int | None = None) -> float:
    """Z + s: a k-block's copies from issue to the full barrier with nothing else in flight, plus the
    consumer's issue stall I where S > 1 (with one stage the consumer waits for its whole k-block anyway)."""
    stall = issue_stall(case, p) if (stages or case.stages) > 1 else 0.0
    return p.latency_cycles + p.latency_per_kib * kblock_kib(case) + stall + feed_cycles(case, p)


def mean_value(customers: int, delay: float, services: tuple[float, ...]) -> float:
    """Cycles between completions of a closed queueing network: `customers` circulate through a pure delay
    and single-server queues of these service times (exact mean-value analysis). One customer: delay plus
    the services; many: the longest service (the bottleneck); between: Little's law with the queues' waits."""
    queued = [0.0] * len(services)
    throughput = 0.0
    for n in range(1, customers + 1):
        residence = [s * (1.0 + q) for s, q in zip(services, queued)]
        throughput = n / (delay + sum(residence))
        queued = [throughput * r for r in residence]
    return 1.0 / throughput


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
    """Cycles per k-block of one CTA, and the term that sets it (co-resident CTAs share the SM's feed and
    tensor cores: their copies queue together)."""
    t_tc = tensor_cycles(case, p)
    blocks = blocks_per_sm(case)
    s = feed_cycles(case, p)
    z = round_trip(case, p) - s
    if case.stages == 1:  # load, then compute: nothing overlaps within a CTA
        return mean_value(blocks, z, (s, t_tc)) * blocks, "latency"
    copies = (case.stages - 1) * blocks
    t_lat = mean_value(copies, z, (s,)) * blocks
    if t_tc * blocks >= t_lat:
        return t_tc * blocks, "tensor cores"
    # the feed binds where the copies in flight could keep it busy on their own (N s >= Z + s)
    return t_lat, ("L2 feed" if copies * s >= z + s else "latency")


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
    costs = {bound: case.kblocks * waves * (t_kblock - tensor_cycles(case, p)) if bound != "tensor cores" else 0.0,
             "epilogue": waves * epilogue, "waves": (waves * sms - case.tiles) / sms * tile}
    if max(costs["epilogue"], costs["waves"]) > max(costs[bound], 0.02 * total):
        bound = max(("epilogue", "waves"), key=costs.get)
    if memory > compute:
        bound = "HBM"
    return Prediction(rate, bound, t_kblock, epilogue, waves, tile)
