"""The planner: what a warp-specialized TMA -> wgmma GEMM should do on a GPU, bound by bound (the GEMM
family's model; `bench plan`, `bench model --run N`, `bench compare --against model`).

Per SM, in cycles (so a prediction holds at any clock; throughput_tflops follows at the clock the kernel
ran, measured in it):

    t_tc     = 2 BM BN BK / (F_tc x e(BN))          the tensor cores: F_tc FLOP/cycle/SM (4 x 1024 for f16),
                                                      e the wgmma m64nBNk16 SS efficiency (the wgmma family's
                                                      issue interval against its ideal; 1 where unmeasured)
    t_feed   = loaded bytes per k-block / W           the feed: A and B tiles (B halved by a cluster's
                                                      multicast) at W bytes/cycle/SM from the L2
    t_lat    = L / (stages - 1)                       latency not hidden: a copy's round trip L (TMA latency
                                                      + barriers), with stages - 1 copies in flight (the
                                                      consumer holds one slot while its wgmma runs); with one
                                                      stage nothing overlaps: t = L + t_tc
    t_kblock = max(t_tc, t_feed, t_lat)
    T_tile   = kblocks x t_kblock + epilogue + (L unless persistent: the first load)
    epilogue = C bytes per tile / E (E: bytes/cycle of the register stores or of the shared-memory
               path and TMA store), exposed: the consumers do it while the tensor cores wait
    T_gemm   = waves x T_tile, waves = ceil(tiles / (SMs used)); FLOP/cycle/SM = 2MNK / (T_gemm x SMs)

The bound a configuration hits is the largest term. W, L and E are fitted to a run's pipeline cases
(least squares on log throughput); the prior (a GPU never measured) takes them from the datasheet's
L2 and the figures the tma family measures on Hopper.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil

import pandas as pd

from harness.datasheets import gpu_specs, spec_name
from harness.families.gemm.cases import GemmCase

ELEM = 2


@dataclass(frozen=True)
class Params:
    gpu: str
    sm_count: int
    flops_per_cycle: float  # dense f16/bf16 FLOP per cycle per SM
    feed_bytes_per_cycle: float  # W: L2 -> shared memory, per SM, with every SM loading
    latency_cycles: float  # L: a k-block's copy round trip, issue to full barrier to the consumer
    epilogue_regs: float  # E: bytes per cycle per SM, stores from registers
    epilogue_tma: float  # E: bytes per cycle per SM, through shared memory and a TMA store
    source: str = "prior"

    FITTED = ("feed_bytes_per_cycle", "latency_cycles", "epilogue_regs", "epilogue_tma")


# Hopper figures for a GPU never measured (tma family: an L2 tile copy's round trip is about 700-900 cycles
# with barriers on an H100; the L2 feeds about 40-50 B/cycle/SM with every SM loading).
PRIOR = dict(feed_bytes_per_cycle=48.0, latency_cycles=900.0, epilogue_regs=16.0, epilogue_tma=64.0)


@dataclass(frozen=True)
class Prediction:
    flops_per_cycle_sm: float
    bound: str  # the term that sets t_kblock, or "epilogue"/"waves" where those cost most
    t_kblock: float
    terms: dict


def predict_case(case: GemmCase, p: Params) -> Prediction:
    kblock_flops = 2.0 * case.bm * case.bn * case.bk
    t_tc = kblock_flops / p.flops_per_cycle
    loaded = (case.bm + case.bn / case.cluster) * case.bk * ELEM
    t_feed = loaded / p.feed_bytes_per_cycle
    if case.stages == 1:
        t_lat = p.latency_cycles + t_tc
    else:
        t_lat = p.latency_cycles / (case.stages - 1)
    terms = {"tensor cores": t_tc, "L2 feed": t_feed, "latency": t_lat}
    t_kblock = max(terms.values())
    c_bytes = case.bm * case.bn * ELEM
    epilogue = c_bytes / (p.epilogue_tma if case.epilogue == "tmastore" else p.epilogue_regs)
    prologue = 0.0 if case.persistent else p.latency_cycles
    t_tile = case.kblocks * t_kblock + epilogue + prologue
    sms = p.sm_count // case.cluster * case.cluster
    waves = ceil(case.tiles / sms)
    total = waves * t_tile + (p.latency_cycles if case.persistent else 0.0)
    rate = case.flops / (total * p.sm_count)
    costs = {"epilogue": case.kblocks and epilogue / t_tile, "waves": 1 - case.tiles / (waves * sms)}
    bound = max(terms, key=terms.get)
    if costs["epilogue"] > 0.25:
        bound = "epilogue"
    return Prediction(rate, bound, t_kblock, {**terms, "epilogue": epilogue, "waves": waves, "tile": t_tile})


class GemmModel:
    """The planner as the family's model: a prior from the datasheet, a fit to a run's pipeline cases."""

    def prior(self, gpu: str) -> Params | None:
        specs = gpu_specs()
        name = spec_name(gpu, specs)
        spec = specs.get(name) if name else None
        if spec is None or not spec.sm_count:
            return None
        return Params(name, spec.sm_count, spec.tensor_cores_per_sm * spec.flops_per_tc_per_clk_fp16, **PRIOR)

    def predict(self, case, metric: str, params: Params | None) -> float | None:
        if params is None or case.library or metric != "sm_throughput":
            return None
        return predict_case(case, params).flops_per_cycle_sm

    def fit(self, frame: pd.DataFrame, gpu: str, source: str):
        from harness.families.gemm.fitting import fit

        return fit(self, frame, gpu, source)

    def datasheet_table(self, gpu: str, clock_mhz: float | None) -> pd.DataFrame:
        params = self.prior(gpu)
        if params is None:
            return pd.DataFrame()
        return pd.DataFrame([{"gpu": params.gpu, "parameter": name, "value": getattr(params, name)}
                             for name in ("sm_count", "flops_per_cycle", *Params.FITTED)])

