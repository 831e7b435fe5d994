"""On a GPU: what sets the resolution of the TMA latency probe, and what holds 2-D boxes below the
read roofline (issue 21). Not part of a suite: it renders the `tma` family's own probes, changes one
thing at a time in the rendered source or in the source tensor's geometry, and prints what moved.

    python scripts/investigate_tma.py latency     # raw samples of each wait variant, by box size
    python scripts/investigate_tma.py bandwidth   # 64 x 64 b16 boxes: tensor shape x L2 promotion

Latency variants (the loop of ptx/tma.cu.in latency()):
    lane0-trywait   lane 0 alone runs the loop, the other 31 lanes wait at __syncthreads (before the fix)
    warp-trywait    the whole warp runs the loop, lane 0 arms and issues, every lane waits on try_wait
    lane0-test      lane 0 alone, spinning on mbarrier.test_wait (never suspends)
    warp-test       the whole warp, spinning on test_wait
"""

from __future__ import annotations

import sys
from dataclasses import replace

import numpy as np

from harness.build.compile import compile_probe
from harness.build.render import ProbeSource
from harness.registry import probe_source
from harness.registry import FAMILIES
from harness.families.tma import gpu, model
from harness.measure import methods
from harness.measure.device import open_device
from harness.measure.launch import LoadedProbe
from harness.orchestration.runner import validate
from harness.measure.telemetry import NullSampler
from harness.measure.timing import TimingPolicy
from harness.registry import parse_case_id

TMA = FAMILIES["tma"]
BOX = "cp.async.bulk.tensor.2d.shared::cluster.global.tile.b16.box64x{rows}.sw128"
LOOP_OWNER = "if (CLUSTER > 1 || lead) {\n    // Every CTA of the launch adds"
TRY_LOOP = "while (!mbarrier_try_wait_parity(bar, phase)) {"  # ptx/async.cuh mbarrier_wait_parity


def variant(text: str, name: str) -> str:
    if name.startswith("warp"):
        assert LOOP_OWNER in text, "the latency loop's owner changed: update LOOP_OWNER"
        text = text.replace(LOOP_OWNER, LOOP_OWNER.replace("CLUSTER > 1 || lead", "true"))
    if name.endswith("test"):
        assert TRY_LOOP in text
        text = text.replace(TRY_LOOP, "while (!mbarrier_test_wait_parity(bar, phase)) {")
    return text


def load(case, text: str | None = None):
    inputs = TMA.inputs(case, np.random.default_rng(1))
    source = probe_source(case) if text is None else ProbeSource(case.case_id + ".variant", text)
    probe = LoadedProbe(compile_probe(source), inputs.buffer, TMA.output_words(case))
    probe.attach(TMA.attach(case, probe, open_device(0)))
    check = validate(case, probe, inputs)
    assert check.ok, check.message
    return probe


def samples(probe, kernel: str, reps: int = 256) -> np.ndarray:
    probe.run(kernel, 1, 32, reps, reps * 32)
    return probe.run(kernel, 1, 32, reps, reps * 32).timing.reshape(reps, 32)[8:, 0].astype(np.int64)


def describe(values: np.ndarray) -> str:
    q1, med, q3 = np.percentile(values, [25, 50, 75])
    uniq = np.unique(values)
    steps = np.diff(uniq)
    return (f"median {med:7.1f}  IQR {q3 - q1:6.1f}  distinct {uniq.size:3d}  "
            f"min..max {values.min()}..{values.max()}  most common {np.bincount(values - values.min()).argmax() + values.min()}"
            f"  smallest gap {steps.min() if steps.size else 0}")


def latency() -> None:
    for name in ("lane0-trywait", "warp-trywait", "lane0-test", "warp-test"):
        print(f"== {name}")
        for rows in (1, 4, 16, 32, 64, 128, 256):
            case = parse_case_id(BOX.format(rows=rows))
            probe = load(case, variant(probe_source(case).text, name))
            empty = samples(probe, "probe_latency_empty")
            for kernel in ("probe_latency", "probe_latency_cold", "probe_latency_prefetched"):
                raw = samples(probe, kernel)
                print(f"  {128 * rows:6d} B {kernel[14:] or 'L2':11s} net {np.median(raw) - np.median(empty):7.1f}  "
                      f"raw {describe(raw)}")
            print(f"  {128 * rows:6d} B empty       raw {describe(empty)}")


def bandwidth() -> None:
    device = open_device(0)
    ctx_base = dict(sm_count=device.sm_count, policy=TimingPolicy(max_samples=12), sampler=NullSampler(), peak=None)
    read = parse_case_id("ld.global.v4.u32")
    probe = load(read)
    ctx = methods.Context(probe, work=TMA.work(read), **ctx_base)
    best = max(np.median(m.samples) for spec in TMA.plan(read) for m in methods.run(spec, ctx))
    print(f"read roofline {best:.0f} GB/s")
    original_options = gpu._options
    for inner in (2, 1, 8):
        for promotion in ("L2_256B", "NONE", "L2_128B"):
            model.INNER_TILES = inner

            def options(case, elem, promotion=promotion):
                from cuda.bindings import driver

                dtype, layout = original_options(case, elem)
                chosen = getattr(driver.CUtensorMapL2promotion, f"CU_TENSOR_MAP_L2_PROMOTION_{promotion}")
                return dtype, (layout[0], layout[1], chosen, layout[3])

            gpu._options = options
            case = parse_case_id(BOX.format(rows=64))
            probe = load(case)
            ctx = methods.Context(probe, work=TMA.work(case), **ctx_base)
            spec = [s for s in TMA.plan(case) if isinstance(s, methods.Bandwidth)][0]
            spec = replace(spec, points=tuple(p for p in spec.points if p.launch["stages"] in (2, 4, 8)))
            rates = {(m.launch["stages"], m.launch["blocks_per_sm"]): float(np.median(m.samples))
                     for m in methods.run(spec, ctx)}
            top = max(rates.values())
            print(f"inner tiles {inner} promotion {promotion:8s} best {top:6.0f} GB/s = {top / best:.3f} of the roofline  "
                  + "  ".join(f"{k}x{b}:{v:.0f}" for (k, b), v in sorted(rates.items())))
    gpu._options = original_options
    model.INNER_TILES = 2


if __name__ == "__main__":
    {"latency": latency, "bandwidth": bandwidth}[sys.argv[1] if len(sys.argv) > 1 else "latency"]()
