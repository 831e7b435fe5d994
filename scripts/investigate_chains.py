"""On a GPU: is there a loop overhead per body in the chain measurements (issue 23)? Not part of a suite.

Six mma.sync shapes measure a dependent-chain latency of 16.875 cycles (= 16 + 14/16) where the paper
prints 16.0/16.1. A chain kernel runs `iters` instructions as loop bodies of UNROLL instructions, and
ChainSlope takes the slope between a short and a long launch: that removes the launch's fixed cost but
not a cost paid once per loop body (the taken branch back to the top, if the next instruction cannot
issue until it is fetched). If there is one, the slope per instruction is s(U) = L + O / U for a body
of U instructions, so the script renders each case's own probe with U = 2 ... 64, times every chain
kernel of the case's plan (ChainSlope's launches and arithmetic) and fits L and O.

The suite's body is validated against the NumPy reference as in a run; a body that divides it is
checked too (the check runs as many instructions) and the script says whether it held; longer bodies
hold the same instruction more times.

    python scripts/investigate_chains.py                 # mma shapes, controls, wgmma and ldmatrix
    python scripts/investigate_chains.py CASE_ID ...     # those cases
    python scripts/investigate_chains.py --stalls CASE_ID KERNEL   # no GPU: the loop's SASS with the
        stall count of each instruction (cycles before the next one issues, from its control bits)
"""

from __future__ import annotations

import re
import sys

import numpy as np

from harness.build.compile import compile_probe
from harness.build.render import ProbeSource
from harness.registry import probe_source
from harness.registry import family_of
from harness.measure.launch import LoadedProbe
from harness.measure.methods import ChainSlope
from harness.measure.timing import RECORD_WORDS, Records
from harness.orchestration.runner import validate
from harness.registry import parse_case_id

CASES = [
    "mma.sync.m16n8k8.row.col.f32.f16.f16.f32", "mma.sync.m16n8k16.row.col.s32.s8.s8.s32",
    "mma.sp.sync.m16n8k16.row.col.f32.f16.f16.f32",
    # controls: longer latencies
    "mma.sync.m16n8k16.row.col.f32.f16.f16.f32", "mma.sync.m16n8k8.row.col.f32.tf32.tf32.f32",
    # the other families' chains
    "wgmma.mma_async.m64n8k16.f32.f16.f16.SS", "wgmma.mma_async.m64n256k16.f32.f16.f16.SS",
    "ldmatrix.sync.m8n8.x1.shared.b16",
]
UNROLLS = (2, 4, 8, 16, 32, 64)
LINE = re.compile(r"constexpr int UNROLL = (\d+);")


def slope(probe: LoadedProbe, spec: ChainSlope, unroll: int, reps: int = 7) -> float:
    """ChainSlope's launches and arithmetic, for a body of `unroll` instructions."""
    short, long_ = spec.short_bodies * unroll, spec.long_bodies * unroll
    words = spec.units * RECORD_WORDS
    values = []
    for _ in range(reps):
        a = Records.from_words(probe.run(spec.kernel, spec.grid, spec.threads, short, words).timing)
        b = Records.from_words(probe.run(spec.kernel, spec.grid, spec.threads, long_, words).timing)
        values.append(float(b.cycles[0] - a.cycles[0]) / ((long_ - short) * spec.per_iter))
    return float(np.median(values))


def main(case_ids: list[str]) -> None:
    for case_id in case_ids:
        case = parse_case_id(case_id)
        family = family_of(case)
        text = probe_source(case).text
        own = int(LINE.search(text).group(1))
        specs = [s for s in family.plan(case) if isinstance(s, ChainSlope)]
        inputs = family.inputs(case, np.random.default_rng(1))
        rows: dict[int, dict[str, float]] = {}
        checked: list[str] = [f"U={own} validated"]
        for unroll in UNROLLS:
            source = ProbeSource(f"{case_id}.unroll{unroll}", LINE.sub(f"constexpr int UNROLL = {unroll};", text, 1))
            probe = LoadedProbe(compile_probe(source), inputs.buffer, family.output_words(case))
            if unroll == own:
                check = validate(case, probe, inputs)
                assert check.ok, f"U={unroll}: {check.message}"
            elif own % unroll == 0:  # the check runs as many instructions: it holds where the chain does not depend on U
                check = validate(case, probe, inputs)
                checked.append(f"U={unroll} {'validated' if check.ok else 'not validated (its check follows the body)'}")
            rows[unroll] = {spec.metric: slope(probe, spec, unroll) for spec in specs}
        print(f"== {case_id} (the suite's body: {own}; {', '.join(checked)})")
        for spec in specs:
            u = np.array(UNROLLS, dtype=float)
            s = np.array([rows[x][spec.metric] for x in UNROLLS])
            (limit, overhead), *_ = np.linalg.lstsq(np.stack([np.ones_like(u), 1 / u], axis=1), s, rcond=None)
            residual = float(np.max(np.abs(limit + overhead / u - s)))
            print(f"  {spec.metric} ({spec.kernel}): " + "  ".join(f"U={x}: {rows[x][spec.metric]:.4f}" for x in UNROLLS)
                  + f"   fit s(U) = {limit:.4f} + {overhead:.3f}/U  (max residual {residual:.4f})")


def stalls(case_id: str, kernel: str) -> None:
    """The SASS of `kernel` from its loop's start to its branch back, with each instruction's control
    bits (Volta and later: bits 105-108 stall cycles, 109 yield, 110-112 and 113-115 the write and read
    barriers, 116-121 the barriers waited on)."""
    import subprocess

    from harness.build import sass

    build = compile_probe(probe_source(parse_case_id(case_id)))
    lines = subprocess.run([sass.find_nvdisasm(), "-hex", str(build.cubin_path)], capture_output=True, text=True,
                           check=True).stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if f".text.{kernel}:" in line or line.strip() == f"{kernel}:")
    loop = False
    for i in range(start, len(lines) - 1):
        low = re.search(r"/\*([0-9a-f]{4})\*/\s+(.*?)\s*;\s*/\* (0x[0-9a-f]+) \*/", lines[i])
        high = re.search(r"/\* (0x[0-9a-f]+) \*/", lines[i + 1]) if low else None
        if not high:
            continue
        control = (int(high.group(1), 16) << 64 | int(low.group(3), 16)) >> 105
        text = low.group(2).strip()
        loop = loop or "HMMA" in text or "LDSM" in text or "HGMMA" in text
        if loop:
            print(f"{low.group(1)}  stall {control & 0xf:2d}  yield {control >> 4 & 1}  "
                  f"waits {control >> 11 & 0x3f:06b}  {text}")
        if loop and "BRA" in text:
            return


if __name__ == "__main__":
    if sys.argv[1:2] == ["--stalls"]:
        stalls(*sys.argv[2:4])
    else:
        main(sys.argv[1:] or CASES)
