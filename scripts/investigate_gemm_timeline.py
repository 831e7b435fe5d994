# An investigation (issue 33), not a probe of the harness: investigate_gemm_path.py found that a copy's path
# (a slot's release to its full barrier) steps up at the second copy in flight even with one CTA on the chip
# and A, B in the L2. Which part of the path grows? The family's kernel, patched here (never in ptx/), splits
# each k-block's path in three with the SM's clock, summed over the k-blocks after the ring's first fill:
#   wake   consumer 0 releases the slot -> the producer's empty wait returns   (replaces full_wait)
#   issue  the producer's empty wait returns -> its two TMA copies are issued  (replaces empty_wait)
#   land   the copies are issued -> consumer 0's full wait returns             (replaces epilogue)
# Output: reports/investigation/gemm-timeline-<gpu>.txt
import dataclasses

from harness.build.compile import compile_probe
from harness.measure.device import open_device
from harness.orchestration.runner import RunSettings, measure_case
from harness.registry import parse_case_id, probe_source

V = "*(volatile long long*)&"
PATCHES = [
    ("__shared__ __align__(8) u64 full[STAGES], empty[STAGES];",
     "__shared__ __align__(8) u64 full[STAGES], empty[STAGES];\n"
     "  __shared__ long long t_rel[STAGES], t_seen[STAGES], t_issued[STAGES];"),
    ("empty_wait += clock_cycles() - w0;", f"const long long seen = clock_cycles(); (void)w0; {V}t_seen[s] = seen;"),
    ("tma_load_2d(slot + A_BYTES, &P.b, kb * BK, tile.col, bar);\n        }\n",
     "tma_load_2d(slot + A_BYTES, &P.b, kb * BK, tile.col, bar);\n"
     f"          {{ const long long done = clock_cycles(); {V}t_issued[s] = done; empty_wait += done - seen; }}\n"
     "        }\n"),
    ("full_wait += clock_cycles() - w0;",
     "const long long fseen = clock_cycles(); full_wait += fseen - w0;\n"
     f"        if (c == 0 && t == 0 && it >= STAGES) {{ wake += {V}t_seen[s] - {V}t_rel[s]; "
     f"land += fseen - {V}t_issued[s]; }}"),
    ("release(smem_addr(&empty[released]), t);",
     f"{{ if (c == 0 && t == 0) {V}t_rel[released] = clock_cycles(); release(smem_addr(&empty[released]), t); }}"),
    ("long long full_wait = 0, epilogue = 0, mainloop = 0;",
     "long long full_wait = 0, epilogue = 0, mainloop = 0, wake = 0, land = 0;"),
    ("counters[0] = full_wait;", "counters[0] = wake; (void)full_wait;"),
    ("counters[2] = epilogue;", "counters[2] = land; (void)epilogue;"),
]
SHAPES = {"one-cta": {"128x128": "128x128x65536", "64x128": "64x128x65536"},
          "l2": {"128x128": "1024x2048x4096", "64x128": "1024x2048x4096"},
          "chip": {"128x128": "8192x8192x8192", "64x128": "8192x8192x8192"}}

device = open_device(0)
print(device.name if hasattr(device, "name") else device, flush=True)
for setting, shapes in SHAPES.items():
    for tile, wg in (("128x128", "wg2.setmaxnreg"), ("64x128", "wg1")):
        for stages in (2, 3, 4, 5):
            case_id = f"gemm.f16.{shapes[tile]}.tile{tile}x64.s{stages}.{wg}.cluster1.persistent-grouped.regs"
            case = parse_case_id(case_id)
            source = probe_source(case)
            text = source.text
            for old, new in PATCHES:
                assert text.count(old) >= 1, old
                text = text.replace(old, new)
            source = dataclasses.replace(source, name=source.name + ".timeline", text=text)
            result = measure_case(case, compile_probe(source), device, RunSettings())
            if not result.valid:
                print(setting, case_id, "INVALID", result.error, flush=True)
                continue
            v = {m.name: m.value for m in result.metrics}
            period = v["cycles_per_kblock"]
            per = (case.kblocks - stages) / case.kblocks  # the sums skip each CTA's first fill
            wake, issue, land = (v[k] / case.kblocks / per for k in
                                 ("full_wait_cycles_per_tile", "empty_wait_cycles_per_tile", "epilogue_cycles_per_tile"))
            print(f"{setting:8s} {tile:8s} s{stages}: kblock {period:7.1f}  wake {wake:7.1f}  issue {issue:7.1f}  "
                  f"land {land:7.1f}  path {wake + issue + land:7.1f}", flush=True)
