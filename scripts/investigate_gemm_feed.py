# An investigation (issue 42), not a probe of the harness. The overlapped fp8 GEMM (128x128x128, a cluster of 2)
# takes about 708 cycles a k-block where its tensor cores need 512, and its consumers wait about 180 of them for a
# full slot; sharing B among 4 CTAs instead of 2 (gemm-multicast) left both unchanged. Is the k-block the feed's
# own rate? The same kernels with their wgmma removed from the rendered source (the consumer waits for each slot,
# does its promotion's additions on whatever its registers hold, and releases the slot): what is left is the ring
# fed as fast as the producer, the L2 and the SM's ingress allow. Not validated (there is no product) and not
# SASS-checked (there is no wgmma): the harness's validation and SASS check are bypassed for these variants only,
# and nothing is stored. Timed by the family's own method (WholeKernel: rounds, counters, clock).
# Output: stdout.
import dataclasses

import harness.orchestration.runner as runner
from harness.build.compile import compile_probe
from harness.measure.device import open_device
from harness.measure.validate import Validation
from harness.registry import parse_case_id, probe_source

WGMMA = "wgmma_step(set[i], operand_descriptor("
FEED_ONLY = "if (false) wgmma_step(set[i], operand_descriptor("
E4M3 = "gemm.e4m3.4096x4096x4096.tile128x128x128.s{s}.wg2.setmaxnreg.cluster{c}.persistent-grouped.{e}{sms}.overlap"
F16 = "gemm.f16.4096x4096x4096.tile128x256x64.s{s}.wg2.setmaxnreg.cluster{c}.persistent-grouped.{e}{sms}"
VARIANTS = [(E4M3, 4, 2, "tmastore"), (E4M3, 4, 1, "tmastore"), (E4M3, 4, 4, "tmastore"), (E4M3, 2, 2, "regs"),
            (E4M3, 3, 2, "regs"), (E4M3, 6, 2, "regs"), (E4M3, 7, 2, "regs"), (F16, 3, 2, "tmastore"),
            (F16, 3, 1, "tmastore"), (F16, 4, 2, "regs")]


class Passed:
    ok = True
    note = "bypassed: an investigation's variant"


def run(template, stages, cluster, epilogue, feed_only, device):
    sms = ".sms120" if cluster == 4 else ""  # 30 clusters of 4 run at once on the H100 (132 SMs)
    case = parse_case_id(template.format(s=stages, c=cluster, e=epilogue, sms=sms))
    source = probe_source(case)
    if feed_only:
        assert source.text.count(WGMMA) == 1
        source = dataclasses.replace(source, name=source.name + ".feed", text=source.text.replace(WGMMA, FEED_ONLY))
    saved = runner.sass_check, runner.validate
    if feed_only:
        runner.sass_check = lambda case, build, family=None: Passed()
        runner.validate = lambda case, probe, inputs, family=None: Validation(True, 0.0, None)
    try:
        result = runner.measure_case(case, compile_probe(source), device, runner.RunSettings())
    finally:
        runner.sass_check, runner.validate = saved
    if not result.valid:
        print(f"{case.case_id} {'feed' if feed_only else 'full'}: INVALID {result.error}", flush=True)
        return
    v = {m.name: m.value for m in result.metrics}
    full = v["full_wait_cycles_per_tile"] / case.kblocks
    empty = v["empty_wait_cycles_per_tile"] / case.kblocks
    ingress = (case.bm + case.bn) * case.bk * case.in_bytes / v["cycles_per_kblock"]
    l2 = (case.bm + case.bn / case.cluster) * case.bk * case.in_bytes / v["cycles_per_kblock"]
    clock = next((m.sm_clock_mhz for m in result.metrics if getattr(m, "sm_clock_mhz", None)), float("nan"))
    print(f"{'feed' if feed_only else 'full'} {case.dtype:5s} {case.bm}x{case.bn} s{stages} cluster{cluster} {epilogue:8s}: "
          f"k-block {v['cycles_per_kblock']:7.1f} cycles, full wait {full:6.1f}, empty wait {empty:6.1f}, "
          f"SM ingress {ingress:5.1f} B/cycle, L2 reads {l2:5.1f} B/cycle/SM, "
          f"{v.get('throughput_tflops', float('nan')):7.1f} 'TFLOPS', clock {clock:.0f} MHz", flush=True)


if __name__ == "__main__":
    device = open_device(0)
    for template, stages, cluster, epilogue in VARIANTS:
        for feed_only in (True, False):
            run(template, stages, cluster, epilogue, feed_only, device)
