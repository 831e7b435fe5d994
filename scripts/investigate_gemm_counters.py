# An investigation (issue 42), not a probe of the harness: what do the pipeline's own in-kernel counters cost? The
# consumer reads the clock around every full-slot wait (and the producer around every empty-slot wait): two
# `mov.u64 %clock64` with a memory clobber a k-block, which fix the order of what is around them. fp8's k-block
# (512 tensor-core cycles at 128x128) is the shortest the family runs, so it is where the reads would show.
# For each case: the family's source as it is, and the same source with the waits' clock reads taken out (the
# tile's and the kernel's own stay: the in-kernel clock is still measured), each compiled, SASS-checked,
# validated and measured by the harness's method against its library anchor in one process; the library fraction
# of each (round medians, p10 / p90), and the CS2R count of each kernel's SASS.
# Output: stdout (reports/investigation/gemm-counters-<gpu>.txt keeps it).
from __future__ import annotations

import dataclasses
import re

import numpy as np

from harness.build.compile import compile_probe
from harness.build.sass import disassemble
from harness.families.gemm.configs import BEST, BEST_FP8, pipeline
from harness.measure.device import open_device
from harness.orchestration.runner import RunSettings, measure_case
from harness.registry import probe_source

# the waits' clock reads in ptx/pipeline.cuh's walks (rendered into every pipeline's source)
UNCOUNTED = ((re.compile(r"(const )?long long w0 = clock_cycles\(\);"), r"\1long long w0 = 0;"),
             (re.compile(r"\bw0 = clock_cycles\(\);"), "w0 = 0;"),
             (re.compile(r"(full|empty)_wait \+= clock_cycles\(\) - w0;"), ";"),
             (re.compile(r"if \(counted\) ;"), ";"))


def uncounted(source):
    text, total = source.text, 0
    for pattern, replacement in UNCOUNTED:
        text, n = pattern.subn(replacement, text)
        total += n
    return dataclasses.replace(source, name=source.name + ".uncounted", text=text), total


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
        source = probe_source(case)
        plain = compile_probe(source)
        bare_source, replaced = uncounted(source)
        bare = compile_probe(bare_source)
        sass = {name: disassemble(build.cubin_path)["probe_gemm"] for name, build in (("plain", plain), ("bare", bare))}
        clocks = {name: sum(1 for ins in code if ins.startswith("CS2R") and "SR_CLOCK" in ins)
                  for name, code in sass.items()}
        print(f"{case.case_id}: {replaced} clock reads taken out of the source; SASS clock reads "
              f"{clocks['plain']} -> {clocks['bare']}, instructions {len(sass['plain'])} -> {len(sass['bare'])}",
              flush=True)
        for _ in range(2):  # twice each, alternating: the power cap's clock drifts over the minutes
            for name, build in (("as built", plain), ("uncounted", bare)):
                result = measure_case(case, build, device, RunSettings())
                print(f"  {name}: " + (fraction(result) if result.valid else f"INVALID {result.error}"), flush=True)


if __name__ == "__main__":
    main()
