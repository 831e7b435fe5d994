# An investigation (issue 33), not a probe of the harness: the planner's two worst misses are 128x128 and
# 64x128 at 3 stages (14-15 % slower than predicted on both GPUs), whose copy round trip is longer with two
# copies in flight than with three. Each slot of a 2-CTA cluster is released by the consumers of both CTAs
# (B is multicast): is it the cluster? The same configurations at 2, 3 and 4 stages, with clusters of 1 and 2,
# measured by the family's own method; prints cycles a k-block, the consumers' full-slot and the producer's
# empty-slot waits a tile, and TFLOPS. Output: reports/investigation/gemm-stages-<gpu>.txt
from harness.build.compile import compile_probe
from harness.measure.device import open_device
from harness.orchestration.runner import RunSettings, measure_case
from harness.registry import parse_case_id, probe_source

device = open_device(0)
print(device.name if hasattr(device, "name") else device)
SHOW = ("cycles_per_kblock", "full_wait_cycles_per_tile", "empty_wait_cycles_per_tile", "throughput_tflops")
for tile, wg in (("128x128", "wg2.setmaxnreg"), ("64x128", "wg1")):
    for cluster in (1, 2):
        for stages in (2, 3, 4):
            case_id = f"gemm.f16.8192x8192x8192.tile{tile}x64.s{stages}.{wg}.cluster{cluster}.persistent-grouped.regs"
            case = parse_case_id(case_id)
            result = measure_case(case, compile_probe(probe_source(case)), device, RunSettings())
            if not result.valid:
                print(case_id, "INVALID", result.error, flush=True)
                continue
            values = {m.name: m.value for m in result.metrics if m.name in SHOW}
            print(f"{tile} cluster {cluster} stages {stages}: " +
                  "  ".join(f"{k} {values.get(k, float('nan')):.1f}" for k in SHOW), flush=True)
