"""The planner against NVIDIA's own predictor (issue 44, item 4): nvMatmulHeuristics (the `nvmh` extra; an analytic
model in a shared library, run on the CPU) ranks GEMM kernel configurations. Its top ones are mapped onto our cases,
so that one run measures both predictors' picks; `bench plan --against nvmh --run N` gives each one's regret.

How it is asked (ASK): target CUTLASS3 (Hopper's TMA/wgmma kernels, with clusters), the flags and discovery set
CUTLASS's own callers use (PERF_MODEL_BASED_AUTO_TUNING, the package's internal discovery set loaded), the
predefined H100 SXM (or H200 SXM) hardware descriptor, not the device present, so no GPU is needed or consulted.
Layout NT_ROW_MAJOR: A row-major M x K, B row-major N x K read transposed, ours (cuBLAS calls it TN in column-major
terms; the package's TN_COL_MAJOR names the same memory but in 0.1.0.27 has no discovery set and gets the
uncalibrated model, whose estimates are 1.6 x faster and rank differently). Precision HSH (f16 in, f32 compute,
f16 out), TST (bf16), QQHSH (e4m3 in, f16 out). Its answer depends on the version (pinned), these settings and the
discovery sets loaded (0.1.0.27 has HSH's only: bf16 and fp8 get the uncalibrated model).

Its configuration: a CTA tile (M, N, K), a warp and an instruction tile (CUTLASS's, no meaning for our warpgroups),
split-K, load stages, a CTA swizzle and raster order, a cluster (M, N). The mapping (map_config) keeps the tile, the
stages, a cluster along M and split-K (the family's runs of k-blocks, with no cluster); the rest is the family's best
configuration (two consumer warpgroups with setmaxnreg
from 128 rows, one below; persistent, grouped order; the TMA store, or the register epilogue where its stages leave
no room for the output tile, since CUTLASS stages its epilogue through a sub-tile we lack; fp8 pipelined). It cannot
map: a split the family lacks, a k-tile other than the family's k-block, a tile the family lacks, a cluster along N, what
refusals.check refuses (shared memory, registers, a problem that is not a whole number of tiles): each says why.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from functools import lru_cache

from harness.errors import SpecError
import harness.families.gemm.cases as _cases
import harness.families.gemm.configs as _configs
import harness.families.gemm.refusals as _refusals
import harness.families.pipeline as _pipeline

VERSION = "0.1.0.27"  # pyproject.toml's `nvmh` extra pins it; SUITE_ANSWERS is its answer
PRECISION = {"f16": "HSH", "bf16": "TST", "e4m3": "QQHSH"}
GPUS = {"H100": "H100_SXM", "H200": "H200_SXM"}  # the run's or --gpu's name -> its predefined descriptor
ASK = dict(target="CUTLASS3", flags="PERF_MODEL_BASED_AUTO_TUNING", layout="NT_ROW_MAJOR", discovery=True)
ASKED = 24  # configurations asked for; its first ones do not depend on how many (tested)
TOP = 5


@dataclass(frozen=True)
class Config:
    """One of its configurations, by the fields that tell ours apart (its warp and instruction tiles do not)."""
    bm: int
    bn: int
    bk: int
    stages: int
    cluster_m: int = 1
    cluster_n: int = 1
    split_k: int = 1
    runtime_us: float | None = None  # its estimate

    @property
    def label(self) -> str:
        return (f"{self.bm}x{self.bn}x{self.bk} s{self.stages} cluster {self.cluster_m}x{self.cluster_n}"
                + (f" split-K {self.split_k}" if self.split_k != 1 else ""))

    def tflops(self, m: int, n: int, k: int) -> float | None:
        return None if not self.runtime_us else round(2.0 * m * n * k / (self.runtime_us * 1e-6) / 1e12, 1)


@dataclass(frozen=True)
class Mapped:
    config: Config
    case: _cases.GemmCase | None  # None: it cannot be mapped
    why: str = ""  # why not, or what of the case is not its (the register epilogue)


def gpu_of(name: str | None) -> str:
    for key, value in GPUS.items():
        if key in (name or "H100").upper():
            return value
    raise SpecError(f"nvMatmulHeuristics is compared here on {', '.join(GPUS)} only, not {name!r}")


def _interface(gpu: str):
    try:
        import nvMatmulHeuristics as h
    except ImportError:
        raise SpecError(f"nvMatmulHeuristics is not installed: pip install '.[nvmh]' (nvidia-matmul-heuristics=={VERSION}, CPU "
                        "only)") from None
    return h, h.NvMatmulHeuristicsInterfaceEx(backend=h.NvMatmulHeuristicsTarget[ASK["target"]],
                                              flags=h.NvMatmulHeuristicsFlags[ASK["flags"]],
                                              load_discovery_implicitly=ASK["discovery"],
                                              gpu=h.NvMatmulHeuristicsNvidiaGpu[gpu])


def ask(dtype: str, m: int, n: int, k: int, gpu: str = "H100_SXM", count: int = ASKED) -> list[Config]:
    """Its ranked configurations for C[m, n] = A[m, k] . B[n, k]^T, in its order, those that differ only in their
    warp or instruction tile collapsed into the first (distinct)."""
    if dtype not in PRECISION:
        raise SpecError(f"dtype {dtype!r}: nvMatmulHeuristics is asked for {', '.join(PRECISION)}")
    h, nv = _interface(gpu)
    problem = nv.makeNvMatmulHeuristicsProblem(m, n, k, h.NvMatmulHeuristicsMatmulLayout[ASK["layout"]])
    configs = []
    for answer in nv.get(problem, count, precision=PRECISION[dtype]):
        c = answer["kernel"]
        configs.append(Config(c.cta_tile_m, c.cta_tile_n, c.cta_tile_k, c.stages, c.cluster_m, c.cluster_n, c.split_k,
                              round(answer["runtime"] * 1e6, 1) if answer["runtime"] > 0 else None))
    return list(dict.fromkeys(configs))  # distinct, in its order (equal fields come with equal estimates)


def estimate_us(case: _cases.GemmCase, gpu: str = "H100_SXM") -> float | None:
    """Its runtime estimate for one of our cases (tile, stages, cluster along M, split-K), in microseconds."""
    h, nv = _interface(gpu)
    precision = PRECISION[case.dtype]
    layout = h.NvMatmulHeuristicsMatmulLayout[ASK["layout"]]
    nv._ensure_discovery_loaded(nv.target, precision, layout)
    problem = nv.makeNvMatmulHeuristicsProblem(case.m, case.n, case.k, layout)
    config = nv.nvmmhKernelConfiguration()
    config.cta[:], config.instr[:] = (case.bm, case.bn, case.bk), (64, 8, case.wgmma_k)
    config.warp[:] = (64, case.bm * case.bn // (256 * case.consumers), case.bk)  # 4 warps a consumer warpgroup
    config.splitK, config.loadStages, config.gridSwizzle, config.ctaOrder = case.splits, case.stages, 1, 0
    config.cluster[:] = (case.cluster, 1)
    # the wrapper's own estimateRuntime (0.1.0.27) calls a method its base class lacks: the library's, as get() does
    seconds = nv.nvMatmulHeuristicsEstimateRuntime(nv.handle, precision.encode("ascii"), ctypes.c_int(nv.target),
                                                   ctypes.byref(problem), ctypes.byref(config), nv.hardware_descriptor)
    return round(seconds * 1e6, 1) if seconds and seconds > 0 else None


def map_config(config: Config, dtype: str, m: int, n: int, k: int) -> Mapped:
    """The family's case for one of its configurations, or why there is none."""
    refuse = lambda why: Mapped(config, None, why)  # noqa: E731
    bk = _cases.bk_for(dtype)
    if config.split_k not in _pipeline.SPLITS:
        return refuse(f"split-K {config.split_k}: the family splits K in {', '.join(map(str, _pipeline.SPLITS))} runs")
    if config.bk != bk:
        return refuse(f"a k-tile of {config.bk}: the family's k-block of {dtype} is {bk}")
    if (config.bm, config.bn) not in _cases.TILES:
        return refuse(f"tile {config.bm}x{config.bn}: not one of the family's "
                      f"({', '.join(f'{a}x{b}' for a, b in _cases.TILES)})")
    if config.cluster_n != 1:
        return refuse(f"a cluster of {config.cluster_m}x{config.cluster_n} (along N, sharing A): the family's "
                      "clusters pair tiles along M (B multicast)")
    consumers = 2 if config.bm >= 128 else 1
    best = _configs.BEST_FP8 if _cases.IN_BYTES[dtype] == 1 else _configs.BEST
    fields = dict(best, bm=config.bm, bn=config.bn, stages=config.stages, consumers=consumers,
                  rebalance=consumers == 2, cluster=config.cluster_m, splits=config.split_k,
                  grid_sms=_configs.MULTICAST_SMS if config.cluster_m == 4 else 0,
                  tight_a=m < config.bm)  # A's box of M rows where M is below the tile (configs.configurations)
    case = _configs.pipeline(dtype, (m, n, k), **fields)
    note = ""
    if case.smem_bytes() > _pipeline.SMEM_LIMIT:  # its stages before our TMA store's whole output tile
        case = _configs.pipeline(dtype, (m, n, k), **dict(fields, epilogue="regs"))
        note = f"epilogue from registers: {config.stages} stages leave no room for the TMA store's tile"
    try:
        _refusals.check(case)
    except SpecError as error:
        return refuse(str(error).split(": ", 1)[-1])
    return Mapped(config, case, note)


def top_mapped(configs: list[Config], dtype: str, m: int, n: int, k: int, top: int = TOP) -> list[Mapped]:
    return [map_config(c, dtype, m, n, k) for c in configs[:top]]


def planner_top(dtype: str, m: int, n: int, k: int, params, top: int = TOP) -> list[tuple[_cases.GemmCase, object]]:
    """The planner's first `top` configurations (bench plan's order: predicted throughput, ties in the order of
    configs.configurations) with their predictions."""
    from harness.families.gemm.model import predict_case

    ranked = sorted(((c, predict_case(c, params)) for c in _configs.configurations(dtype, m, n, k)),
                    key=lambda cp: -cp[1].flops_per_cycle_sm)
    return ranked[:top]


# Its answer (ASK, 0.1.0.27, H100 SXM, f16) for the suite's problems: its first TOP distinct configurations, (tile M,
# N, K, stages, cluster M, N, split-K, runtime in us as it estimates). The suite is made from these, so it needs no
# package; tests/test_gemm_heuristics.py asks the package and checks that it still answers this.
SUITE_ANSWERS: dict[tuple[int, int, int], tuple[tuple, ...]] = {
    (4096, 4096, 4096): ((128, 256, 64, 4, 2, 1, 1, 269.4), (256, 128, 64, 4, 1, 2, 1, 269.4),
                         (128, 256, 128, 2, 1, 2, 1, 269.4), (256, 128, 128, 2, 2, 1, 1, 269.4),
                         (128, 128, 128, 3, 1, 2, 1, 269.2)),
    (8192, 8192, 8192): ((128, 256, 64, 4, 2, 1, 1, 1887.2), (256, 128, 64, 4, 1, 2, 1, 1887.2),
                         (128, 192, 64, 5, 2, 1, 1, 1863.2), (128, 128, 64, 7, 1, 2, 1, 1888.9),
                         (64, 256, 64, 5, 2, 1, 1, 2228.4)),
    # Llama-3-8B's projections over 4096 or 8192 tokens: the FFN's up (or gate), its down, and Q/K/V fused
    (4096, 14336, 4096): ((128, 256, 64, 4, 2, 1, 1, 913.0), (256, 128, 64, 4, 1, 2, 1, 913.0),
                          (128, 256, 128, 2, 1, 2, 1, 913.0), (256, 128, 128, 2, 2, 1, 1, 913.0),
                          (128, 192, 128, 2, 2, 1, 1, 929.0)),
    (8192, 4096, 14336): ((128, 256, 64, 4, 2, 1, 1, 1584.2), (256, 128, 64, 4, 1, 2, 1, 1584.2),
                          (128, 256, 128, 2, 1, 2, 1, 1584.2), (256, 128, 128, 2, 2, 1, 1, 1584.2),
                          (128, 192, 128, 2, 2, 1, 1, 1632.5)),
    (4096, 6144, 4096): ((128, 256, 64, 4, 2, 1, 1, 399.1), (256, 128, 64, 4, 1, 2, 1, 399.1),
                         (128, 256, 128, 2, 1, 2, 1, 399.1), (256, 128, 128, 2, 2, 1, 1, 399.1),
                         (128, 192, 128, 2, 2, 1, 1, 398.3)),
}
SUITE_DTYPE, SUITE_GPU = "f16", "H100 SXM5"  # the planner's prior for it (planner.GemmModel.prior)


def suite() -> list[_cases.GemmCase]:
    return list(_suite())


@lru_cache(maxsize=1)
def _suite() -> tuple[_cases.GemmCase, ...]:
    """`gemm-heuristics`: for each of SUITE_ANSWERS' problems, the planner's first TOP (its prior for the H100 SXM,
    the ranking `bench plan` gives without --run) and nvMatmulHeuristics' first TOP that map, then cuBLAS."""
    from harness.families.gemm.planner import GemmModel

    params = GemmModel().prior(SUITE_GPU)
    cases = []
    for shape, answer in SUITE_ANSWERS.items():
        cases += [case for case, _ in planner_top(SUITE_DTYPE, *shape, params)]
        cases += [m.case for m in top_mapped([Config(*row) for row in answer], SUITE_DTYPE, *shape) if m.case]
        cases.append(_configs.library(SUITE_DTYPE, shape))
    return tuple(dict.fromkeys(cases))
