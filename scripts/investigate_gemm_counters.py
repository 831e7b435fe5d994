# An investigation (issue 42), not a probe of the harness: what do the pipeline's own in-kernel counters cost? The
# counting build of a pipeline kernel (`probe_gemm_counted`, ptx/pipeline.cuh WaitClock<true>) reads the clock around
# every full-slot wait (and the producer around every empty-slot wait): two `mov.u64 %clock64` with a memory clobber
# a k-block, which fix the order of what is around them. The timed build (`probe_gemm`) reads the clock only per tile
# and at the kernel's ends. fp8's k-block (512 tensor-core cycles at 128x128) is the shortest the family runs, so it is
# where the reads would show. For each case: one build (both kernels, SASS-checked), validated, and measured by the
# harness's method against its library anchor in one process with either kernel timed, alternating; the library
# fraction of each (round medians, p10 / p90), and the clock reads (CS2R) and instructions of each kernel's SASS.
# (Until the timed build existed, runs of record timed the counting one: this script then took the reads out of
# its source by pattern; the same comparison is now two kernels of one module.)
# Output: stdout (reports/investigation/gemm-counters-<gpu>.txt keeps it).
from __future__ import annotations

import dataclasses

import numpy as np

from harness.build.compile import compile_probe
from harness.build.sass import disassemble
from harness.families.gemm.configs import BEST, BEST_FP8, pipeline
from harness.families.pipeline import counted_kernel
from harness.measure.device import open_device
from harness.orchestration.runner import CasePlan, RunSettings, case_plan, measure_case
from harness.registry import FAMILIES, probe_source

KERNEL = "probe_gemm"


def timing(case, device, kernel: str) -> CasePlan:
    """The family's plan of the case with `kernel` timed in its rounds (the counters read as the plan reads them)."""
    plan = case_plan(case, FAMILIES["gemm"], device)
    return dataclasses.replace(plan, specs=tuple(dataclasses.replace(spec, kernel=kernel) for spec in plan.specs))


def fraction(result) -> str:
    by = {m.name: m for m in result.metrics}
    ours, lib = by["throughput_tflops"], by.get("library_fraction")
    p10, p50, p90 = np.percentile(lib.samples, (10, 50, 90))
    return (f"{ours.value:.0f} TFLOPS at {ours.sm_clock_mhz:.0f} MHz, of the library {p50:.3f} (p10 {p10:.3f}, "
            f"p90 {p90:.3f}, {len(lib.samples)} rounds)")


def main() -> None:
    device = open_device(0)
    print(device.name if hasattr(device, "name") else device, flush=True)
    # BEST_FP8, and the best fp8 case measured at 4096^3 (runs 133, 149-150: 5 stages, no cluster, row order)
    cases = ([pipeline("e4m3", (s, s, s), **BEST_FP8) for s in (4096, 8192)]
             + [pipeline("e4m3", (4096,) * 3, **dict(BEST_FP8, stages=5, cluster=1, order="row"))]
             + [pipeline("f16", (4096,) * 3, **BEST)])
    for case in cases:
        build = compile_probe(probe_source(case))
        sass = disassemble(build.cubin_path)
        clocks = {k: sum(1 for ins in sass[k] if ins.startswith("CS2R") and "SR_CLOCK" in ins)
                  for k in (counted_kernel(KERNEL), KERNEL)}
        print(f"{case.case_id}: SASS clock reads {clocks[counted_kernel(KERNEL)]} (counted) -> {clocks[KERNEL]} (timed), "
              f"instructions {len(sass[counted_kernel(KERNEL)])} -> {len(sass[KERNEL])}", flush=True)
        for _ in range(2):  # twice each, alternating: the power cap's clock drifts over the minutes
            for name, kernel in (("counted", counted_kernel(KERNEL)), ("timed", KERNEL)):
                result = measure_case(case, build, device, RunSettings(), planned=timing(case, device, kernel))
                print(f"  {name}: " + (fraction(result) if result.valid else f"INVALID {result.error}"), flush=True)


if __name__ == "__main__":
    main()
