"""The planner: what a warp-specialized TMA -> wgmma GEMM (ptx/gemm.cu.in) should do on a GPU, bound by
bound. It is the GEMM family's model (`bench advise plan`, `bench model --run N`, `bench compare
--against model`).

Everything is per SM and in cycles, so a prediction holds at any clock; TFLOPS follow at the clock the
kernel ran at (measured in it) or, for a plan, the clock the GPU held under a large GEMM (measured).

    t_tc     = 2 BM BN BK / F + c_w                the tensor cores (F FLOP/cycle/SM: 4 x 1024 for f16/bf16, twice
                                                   that for e4m3, whose k-block of 128 lands the same bytes),
                                                   plus what a k-block costs a consumer beyond its wgmma
                                                   (c_1 with one consumer warpgroup, c_2 with two, which
                                                   hide each other's)
    Z        = L0 + a B + W + I                    a copy's round trip unloaded (B KiB one CTA's producer loads
                                                   per k-block, B halved by a cluster's multicast), plus W and I:
    W        = f L_q rho / (1 - rho)               the memory's queue: f, the share of a wave's k-block reads
                                                   that no earlier CTA of the wave read (the A rows and B columns
                                                   its tiles span, in the kernel's tile order, each once for
                                                   every side of the L2 that reads it), waits on the
                                                   memory at load rho = the bandwidth those misses take at this
                                                   period / hbm_gbps (the period where both agree: a fixed point)
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
    fp8, promoted: the consumer waits for a k-block's wgmma before it adds them into f32
      serial     t_kblock = max(c, s, (Z - I + s + c) / S), c = t_tc + w + P: it holds the slot through the
                                                   wgmma, their drain w and the additions P (a service the same every
                                                   k-block: the circuit of S slots, not an exponential queue)
      overlapped the same with c = t_tc + w        the additions under the next k-block's wgmma
      pipelined  t_kblock = max(t_tc + (w + P) / G, MVA(S - 1; Z, s)) a k-block in flight through the next slot's
                                                   wait (the plain walk), the tensor cores idle once a group
                                                   of G while its last k-block drains and is added
      carried    as pipelined (drained once a tile, its k-block measured no shorter: run 151; deferred: the
                                                   same k-block, its epilogue under the next tile's first priced whole)
    epilogue = E_0 + C bytes of a tile / E          E of the register stores or of the shared-memory path and
                                                   TMA store, E_0 its barriers; the consumers do it while the
                                                   tensor cores wait; split-K adds the last run's fix-up
    T_tile   = kblocks x t_kblock + epilogue (+ L(1), the first load, unless persistent)
    ping-pong  the warpgroups take a CTA's tiles in turn, each issuing all a tile's wgmma (n above: the tile's rows):
               a tile's mainloop is kblocks x t_kblock + h (the turn: the pipe drains once a tile), its epilogue under
               the other's mainloop, so a CTA of n tiles takes (n - 1) max(mainloop, epilogue) + mainloop + epilogue
    T        = max(waves x T_tile, HBM) + a launch's fixed cost, waves = ceil(work items / SMs used) (an item:
               a tile; split-K, a run of S of its k-blocks, whose epilogue adds its f32 sums' way out and in),
               HBM = (A + B + C bytes) / the memory's bandwidth (each read or written once: the L2 keeps what
               tiles share); FLOP/cycle/SM = 2 M N K / (T x SMs)
    stream-K   waves x T_tile over the whole waves, then a CTA's range of the split tiles' k-blocks (the longest,
               ceil(total / parts)) x t_kblock and, for each tile it touches (two where its range crosses one), a
               run's epilogue with the fix-up (split-K's, at the tile's runs; the mean over them)

The bound a configuration hits is the term that sets t_kblock ("tensor cores"; "promotion" where an fp8
consumer's wait for its wgmma and its additions do; "latency" where the round trip dominates the queue's
period, "L2 feed" where the feed does), or the
epilogue, or wave quantization, whichever costs most. The parameters are fitted to a run's pipeline
cases (fitting.py: t_kblock to the in-kernel cycles per k-block, E to the epilogue counters); the memory's
bandwidth is the datasheet's rate x the H100's measured read roofline over its pin rate, not fitted; a GPU
never measured gets PRIOR, an H100's fit rounded, labelled as such. "HBM" is the bound where the memory's
queue (W) adds more to the k-blocks than anything else costs, or the memory's own bound is the longest.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from math import ceil

from harness.families.gemm.cases import CARRIED, GROUPED_WALKS, GemmCase
from harness.families.pipeline import StreamK
from harness.families.gemm.params import KIB, OUT_ELEM, Params
from harness.families.gemm.problem import sms_used  # a persistent grid's SMs; a GPU of fewer refuses it
from harness.families.gemm.traffic import blocks_per_sm, hbm_cycles, miss_cycles, miss_fraction, resident_blocks
from harness.queueing import exact_mva

BOUNDS = ("tensor cores", "promotion", "latency", "L2 feed", "epilogue", "waves", "HBM")


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
    """KiB one CTA's producer loads per k-block (A's box rows: M for a tight box; its half of B under a cluster's multicast)."""
    return (case.a_box_rows + case.bn / case.cluster) * case.bk * case.in_bytes / KIB


def wgmma_per_kblock(case: GemmCase) -> int:
    """wgmma one consumer warpgroup issues per k-block: MI m64 blocks (of its rows: half the tile's when
    cooperative, all of them in ping-pong) x BK / 16 steps."""
    return case.wg_rows // 64 * (case.bk // case.wgmma_k)


def tensor_cycles(case: GemmCase, p: Params) -> float:
    overhead = p.consumer_overhead_1 if case.consumers == 1 else p.consumer_overhead_2
    return 2.0 * case.bm * case.bn * case.bk / (p.flops_per_cycle * case.mma_rate) + overhead


def issue_stall(case: GemmCase, p: Params) -> float:
    """I: cycles after a slot fills before its consumer can give the previous slot back: it stalls issuing
    the k-block's n wgmma while the tensor pipe holds d of them (each takes t_tc / n of the SM's tensor
    time: two consumers interleave)."""
    n = wgmma_per_kblock(case)
    t_tc = 2.0 * case.bm * case.bn * case.bk / (p.flops_per_cycle * case.mma_rate)
    return max(0.0, n - p.wgmma_queue) * t_tc / n


def feed_cycles(case: GemmCase, p: Params) -> float:
    """s: cycles the SM's feed takes to land a k-block (A and all of B, multicast or not) in shared memory."""
    return (case.a_box_rows + case.bn) * case.bk * case.in_bytes / p.feed_bytes_per_cycle


def round_trip(case: GemmCase, p: Params, stages: int | None = None, miss: float = 0.0) -> float:
    """Z + s: a k-block's copies from issue to the full barrier with nothing else in flight, plus the
    consumer's issue stall I where S > 1 (with one stage the consumer waits for its whole k-block anyway),
    plus `miss`, what the bytes that miss the L2 add (miss_cycles)."""
    stall = issue_stall(case, p) if (stages or case.stages) > 1 else 0.0
    return p.latency_cycles + p.latency_per_kib * kblock_kib(case) + miss + stall + feed_cycles(case, p)


def mean_value(customers: int, delay: float, services: tuple[float, ...]) -> float:
    """Cycles between completions of a closed queueing network: `customers` circulate through a pure delay
    and single-server queues of these service times (exact mean-value analysis, harness/queueing.py). One
    customer: delay plus the services; many: the longest service (the bottleneck); between: Little's law
    with the queues' waits."""
    return 1.0 / exact_mva(services, delay, customers)


def kblock_cycles(case: GemmCase, p: Params, clock_mhz: float | None = None) -> tuple[float, str]:
    """Cycles per k-block of one CTA, and the term that sets it (co-resident CTAs share the SM's feed and
    tensor cores: their copies queue together). The misses' queue depends on the period it sets: the
    period where the two agree, between the period without the queue and with the queue that period
    would see (a longer period loads the memory less; regula falsi, Illinois)."""
    clock = clock_mhz or p.clock_mhz or 1500.0
    if p.memory_queue_cycles <= 0.0 or miss_fraction(case, p.sm_count, p.l2_bytes) <= 0.0:
        return _kblock(case, p, 0.0)

    def gap(period: float) -> float:
        return _kblock(case, p, miss_cycles(case, p, period, clock))[0] - period

    low = _kblock(case, p, 0.0)[0]
    high = low + gap(low)
    g_low, g_high = high - low, gap(high)
    side = 0
    for _ in range(40):
        if high - low <= 0.01 or g_high == 0.0:
            break
        mid = (low * g_high - high * g_low) / (g_high - g_low)
        g_mid = gap(mid)
        if g_mid > 0.0:
            low, g_low = mid, g_mid
            g_high = g_high / 2 if side == 1 else g_high
            side = 1
        else:
            high, g_high = mid, g_mid
            g_low = g_low / 2 if side == -1 else g_low
            side = -1
    return _kblock(case, p, miss_cycles(case, p, high, clock))


def _kblock(case: GemmCase, p: Params, miss: float) -> tuple[float, str]:
    t_tc = tensor_cycles(case, p)
    blocks = resident_blocks(case, p.sm_count)
    s = feed_cycles(case, p)
    z = round_trip(case, p, miss=miss) - s
    if case.promote and case.promotion not in GROUPED_WALKS + CARRIED:
        return _promoted_kblock(case, p, t_tc, z - issue_stall(case, p) * (case.stages > 1), s, blocks)
    if case.promote:  # pipelined: as a plain k-block walk, the tensor cores idle once a group of G k-blocks; carried
        t_tc += pipelined_group_cycles(case, p) / case.group  # as pipelined: its k-block measured no shorter (run 151)
    if case.stages == 1:  # load, then compute: nothing overlaps within a CTA
        return mean_value(blocks, z, (s, t_tc)) * blocks, "latency"
    copies = (case.stages - 1) * blocks
    t_lat = mean_value(copies, z, (s,)) * blocks
    if t_tc * blocks >= t_lat:
        return t_tc * blocks, "tensor cores"
    # the feed binds where the copies in flight could keep it busy on their own (N s >= Z + s)
    return t_lat, ("L2 feed" if copies * s >= z + s else "latency")


def pipelined_group_cycles(case: GemmCase, p: Params) -> float:
    """What a group of the pipelined promotion (ptx/pipeline.cuh consume_group_step) leaves the tensor cores idle:
    nothing is in flight across a group's end, so the group waits for its last k-block's wgmma (the drain w) and adds
    it (P) before the next group's first wgmma is issued. Within the group each k-block's additions run under the
    next one's wgmma."""
    return p.drain_cycles + p.promotion_cycles


def _promoted_kblock(case: GemmCase, p: Params, t_tc: float, z: float, s: float, blocks: int) -> tuple[float, str]:
    """fp8 with its promotion waited for each k-block (serial, overlapped or staggered): the consumer holds a slot through
    its wgmma and their drain (serial: and the additions) and gives it back once they are done, so the S slots
    circulate through the copy's round trip (less the issue stall, which the consumer's service holds), the
    feed and the consumer in series. Bound: "promotion" where the consumer's service sets the period, the feed
    or the latency where the copies do. A staggered promotion costs what a serial one does (runs 149-150: the
    tensor cores do not run one warpgroup's k-block while the other adds). The consumer's service is the same every
    k-block (its wgmma, their drain, its additions), so the circuit does not approach its bottleneck gradually as an
    exponential queue's (mean_value) does: the period is the longest service or the circuit over the S slots,
    whichever is longer (run 111: 700-725 cycles overlapped and 902-910 serial from S = 4 on, 746-780 and 990-1031
    at S = 3)."""
    service = t_tc + p.drain_cycles + (p.promotion_cycles if case.promotion in ("serial", "staggered") else 0.0)
    period = max(service, s, (z + s + service) / case.stages) * blocks
    if service * blocks >= 0.9 * period:
        return period, "promotion"
    return period, ("L2 feed" if s >= service else "latency")


def epilogue_cycles(case: GemmCase, p: Params, mean: bool = False) -> float:
    """A work item's epilogue: E_0 (its barriers, fence and the wait for the previous store) plus C's tile at E
    bytes a cycle. Split-K: the tile's last run's, which sets when the tile is done (its fix-up, splitk_cycles, and C's
    store); `mean`: the mean over a tile's S runs, what the epilogue counters measure (C's store once in S runs)."""
    store = p.epilogue_fixed_cycles + case.bm * case.bn * OUT_ELEM / (
        p.epilogue_tma if case.epilogue == "tmastore" else p.epilogue_regs)
    if case.splits == 1:
        return store
    return (store / case.splits if mean else store) + splitk_cycles(case, p, mean)


def splitk_cycles(case: GemmCase, p: Params, mean: bool = False) -> float:
    """A split-K run's fix-up (ptx/gemm.cu.in reduce_runs): its f32 sums out to the L2 (coalesced float4 stores) and
    the release (the tile's counter, an acq_rel atomic after the stores: a round trip to the L2, L0); the tile's last
    run then reads every run's sums back (S x the bytes, one more round trip). Bytes at R_s (splitk_bytes_per_cycle;
    the feed's R, the L2's rate into an SM, where not fitted). The last run's, or (`mean`) the mean over the S runs:
    its reads count once in S."""
    rate = p.splitk_bytes_per_cycle or p.feed_bytes_per_cycle
    sums = case.bm * case.bn * 4
    reads = 1.0 if mean else float(case.splits)
    return (1.0 + reads) * sums / rate + p.latency_cycles * (1.0 + (1.0 / case.splits if mean else 1.0))


def streamk_cycles(case: GemmCase, p: Params, sms: int, t_kblock: float, tile: float) -> tuple[int, float]:
    """Stream-K (ptx/pipeline.cuh TileScheduler): the waves counted (the whole ones, and the split one if any) and the
    cycles of the slowest CTA: its whole tiles, then its range of the split tiles' k-blocks and, for each tile the range
    touches, a run's epilogue with its fix-up (split-K's at the tile's runs, the mean over them: the runs a tile has
    share its last run's reads)."""
    grid = min(sms, case.tiles * case.streamk)
    split = StreamK(case.tiles, case.kblocks, grid, case.streamk)
    whole = split.whole // grid
    if not split.parts:
        return whole, whole * tile
    span = ceil(split.total / split.parts)  # the longest range's k-blocks
    runs = max(2, ceil(split.parts / (split.tiles - split.whole)))  # a split tile's runs, about
    touched = 1 + (span > 1 or runs > 1)  # tiles a range touches: two where it crosses a boundary
    run = epilogue_cycles(replace(case, streamk=0, splits=runs), p, mean=True)
    return whole + 1, whole * tile + span * t_kblock + touched * run


def pingpong_cycles(case: GemmCase, p: Params, waves: int, t_kblock: float, epilogue: float) -> tuple[float, float, float]:
    """Ping-pong (ptx/pipeline.cuh SCHEDULE_PINGPONG; persistent): a CTA's two consumer warpgroups take its tiles in turn,
    a named barrier passing the turn once a warpgroup's mainloop has drained its wgmma. A tile's mainloop is its
    k-blocks (one warpgroup issuing the whole tile's wgmma: wgmma_per_kblock) and the turn h (turn_cycles: the pipe
    empties once a tile); its epilogue runs under the other warpgroup's next mainloop, exposed only where it is the
    longer and at the CTA's last tile. (A tile's share of the CTA's cycles, the CTA's cycles, the epilogue exposed.)"""
    mainloop = case.kblocks * t_kblock + p.turn_cycles
    turn = max(mainloop, epilogue)
    compute = (waves - 1) * turn + mainloop + epilogue
    return compute / waves, compute, (waves - 1) * (turn - mainloop) + epilogue


def predict_case(case: GemmCase, p: Params, clock_mhz: float | None = None) -> Prediction:
    """At `clock_mhz` (the clock the case ran at; else the fit's large-GEMM clock): only the memory's
    bound depends on it, every other term is in cycles."""
    clock = clock_mhz or p.clock_mhz or 1500.0
    t_kblock, bound = kblock_cycles(case, p, clock)
    epilogue = epilogue_cycles(case, p)
    first_load = round_trip(case, p, 1, miss_cycles(case, p, t_kblock, clock) if p.memory_queue_cycles > 0 else 0.0)
    tile = case.kblocks * t_kblock + epilogue + (0.0 if case.persistent else first_load)
    sms = sms_used(case, p.sm_count)
    waves = ceil(case.items * case.cluster / (sms * blocks_per_sm(case)))
    compute = waves * tile
    if case.streamk:
        waves, compute = streamk_cycles(case, p, sms, t_kblock, tile)
    exposed = waves * epilogue
    if case.pingpong:
        tile, compute, exposed = pingpong_cycles(case, p, waves, t_kblock, epilogue)
    memory = hbm_cycles(case, p, clock)
    total = max(compute, memory) + p.launch_cycles
    rate = case.flops / (total * p.sm_count)
    # the bound: the memory's if it takes longest; else the k-block's, unless the epilogue or the last
    # wave's idle SMs cost more (the k-block's cost: what it takes beyond the tensor cores)
    # the memory's queue: what it adds to the k-block; the k-block without it has a bound of its own
    unqueued, bound = _kblock(case, p, 0.0) if p.memory_queue_cycles > 0 else (t_kblock, bound)
    queued = case.kblocks * waves * (t_kblock - unqueued)
    costs = {bound: case.kblocks * waves * (unqueued - tensor_cycles(case, p)) if bound != "tensor cores" else 0.0,
             "epilogue": exposed,
             "waves": 0.0 if case.streamk else (waves * sms - case.items * case.cluster) / sms * tile}
    if max(costs["epilogue"], costs["waves"]) > max(costs[bound], 0.02 * total):
        bound = max(("epilogue", "waves"), key=costs.get)
    if memory > compute or queued > max(max(costs.values()), 0.02 * total):
        bound = "HBM"
    return Prediction(rate, bound, t_kblock, epilogue, waves, tile)
