# An investigation (issue 33), not a probe of the harness. investigate_gemm_stages.py showed that a copy's
# path (a slot's release to its full barrier) is about 1060 cycles with one copy in flight per SM and
# 1470-1500 with two or three (128x128, H100), which no closed queue reproduces. Where does the step come
# from? The same tiles at 2-5 stages, measured by the family's own method, in four settings:
#   chip     8192^3, every SM loading, the L2 missing about 15 % (the runs of record's setting)
#   one-cta  one tile, long K (one CTA on one SM; A and B, 32 MB, stay in the L2 between launches)
#   l2       1024 x 2048 x 4096, one wave on 128 SMs, A and B (25 MB) staying in the L2 between launches
#   poll     8192^3 with every mbarrier wait a test_wait poll instead of try_wait (which may suspend)
# For each: cycles a k-block, the consumers' full-slot wait and the producer's empty-slot wait a k-block,
# and the path (S - 1) x period - the consumer's time outside its full wait.
# Output: reports/investigation/gemm-path-<gpu>.txt
import dataclasses

from harness.build.compile import compile_probe
from harness.measure.device import open_device
from harness.orchestration.runner import RunSettings, measure_case
from harness.registry import parse_case_id, probe_source

TRY = "while (!mbarrier_try_wait_parity(bar, phase))"
POLL = "while (!mbarrier_test_wait_parity(bar, phase))"
SHAPES = {"chip": {"128x128": "8192x8192x8192", "64x128": "8192x8192x8192"},
          "one-cta": {"128x128": "128x128x65536", "64x128": "64x128x65536"},
          "l2": {"128x128": "1024x2048x4096", "64x128": "1024x2048x4096"},
          "poll": {"128x128": "8192x8192x8192", "64x128": "8192x8192x8192"}}

device = open_device(0)
print(device.name if hasattr(device, "name") else device, flush=True)
for setting, shapes in SHAPES.items():
    for tile, wg in (("128x128", "wg2.setmaxnreg"), ("64x128", "wg1")):
        for stages in (2, 3, 4, 5):
            case_id = f"gemm.f16.{shapes[tile]}.tile{tile}x64.s{stages}.{wg}.cluster1.persistent-grouped.regs"
            case = parse_case_id(case_id)
            source = probe_source(case)
            if setting == "poll":
                assert source.text.count(TRY) == 1
                source = dataclasses.replace(source, name=source.name + ".poll", text=source.text.replace(TRY, POLL))
            result = measure_case(case, compile_probe(source), device, RunSettings())
            if not result.valid:
                print(setting, case_id, "INVALID", result.error, flush=True)
                continue
            v = {m.name: m.value for m in result.metrics}
            period = v["cycles_per_kblock"]
            full = v["full_wait_cycles_per_tile"] / case.kblocks
            empty = v["empty_wait_cycles_per_tile"] / case.kblocks
            path = (stages - 1) * period - (period - full)
            print(f"{setting:8s} {tile:8s} s{stages}: kblock {period:7.1f}  full wait {full:7.1f}  "
                  f"empty wait {empty:7.1f}  path {path:7.1f}  tflops {v.get('throughput_tflops', float('nan')):6.1f}",
                  flush=True)
