"""The planner's parameters (model.py): what it fits to a run's GEMM cases (Params.fitted_names), and the prior for a
GPU never measured."""

from __future__ import annotations

from dataclasses import dataclass, fields

OUT_ELEM = 2  # bytes of a C element (f16 or bf16, for fp8 inputs too); A and B: GemmCase.in_bytes
KIB = 1024.0


@dataclass(frozen=True)
class Params:
    gpu: str
    sm_count: int
    flops_per_cycle: float  # F: dense f16/bf16 FLOP per cycle per SM (fp8: F x GemmCase.mma_rate)
    latency_cycles: float  # L0
    latency_per_kib: float  # a
    memory_queue_cycles: float  # L_q: an L2 miss waits L_q rho / (1 - rho) in the memory's queue at load rho
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
    # fp8's promotion (ptx/gemm.cu.in PROMOTE): what waiting for a k-block's wgmma to finish costs beyond their
    # share of the tensor cores (w, the pipe's drain), and a k-block's additions into f32 left in the open (P)
    drain_cycles: float = 0.0
    promotion_cycles: float = 0.0
    # a work item's epilogue beyond its bytes: the consumers' named barriers, the shared-memory fence and the wait
    # for the previous tile's store to have read its buffer (E_0, cycles; fitted with E to the epilogue counters)
    epilogue_fixed_cycles: float = 0.0
    # split-K: the rate at which a run's f32 sums go out to the L2 and come back in (R_s, bytes per cycle; 0: the
    # feed's R, the L2's rate into an SM, where the fit run has no split-K case)
    splitk_bytes_per_cycle: float = 0.0
    # ping-pong (`.pingpong`): what a turn costs the tensor cores beyond a tile's k-blocks, cycles a tile (model.py
    # pingpong_cycles, fitted in pingpong.py): a warpgroup drains its wgmma before it hands the turn over
    turn_cycles: float = 0.0
    l2_bytes: float = 50 * 1024 * 1024  # the L2's capacity (GH100: 50 MiB, the H100's and the H200's), not fitted

    @classmethod
    def fitted_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls)
                     if f.name not in ("gpu", "sm_count", "flops_per_cycle", "clock_mhz", "source", "l2_bytes"))


# A GPU never measured: the fit to the H100 SXM's run of record 65, rounded (docs/gemm.md); L_q refitted to run 65
# once the misses counted each L2 side's fetch (_sides: 341 cycles, 620 before).
PRIOR = dict(latency_cycles=745.0, latency_per_kib=0.0, memory_queue_cycles=340.0, feed_bytes_per_cycle=62.3,
             wgmma_queue=3.2, consumer_overhead_1=0.0, consumer_overhead_2=42.0, epilogue_regs=6.6, epilogue_tma=45.0,
             # the fit to run 111 (H100, fp8 128x128 serial and overlapped on rings of 1-7), rounded, the prior its own
             # start (a fixed point of the fit): w 171 and P 212. (With the promoted circuit as an exponential queue w
             # fitted to 0 and P to 231: its gradual approach to the bottleneck took up the drain.)
             drain_cycles=171.0, promotion_cycles=212.0,
             # E_0: the fit to run 108 (H100; E_0 + C bytes / E per epilogue over its 64x128 to 256x128 tiles), rounded
             epilogue_fixed_cycles=50.0,
             # R_s: the fit to run 134 (H100, gemm-skinny: split-K 2 and 4 on 64x128 and 128x128 tiles), rounded; runs
             # 135, 136 and 141 fit 33, 23 and 36 bytes a cycle (the feed's R, 62, was twice what the counters show)
             splitk_bytes_per_cycle=30.0,
             # the ping-pong turn: the pipe's drain w (above), the physical cost of emptying the tensor pipe once a tile;
             # no stored run identifies it (their tiles walk 32-128 k-blocks: a turn is 0.2-0.5 % of one, below the
             # k-block's own misses; docs/gemm.md, "The planner")
             turn_cycles=171.0)
HBM_OF_DATASHEET = 0.92  # a GPU never measured: its datasheet bandwidth x the H100's measured read roofline / pin rate
PRIOR_LAUNCH_CYCLES = 4000.0
