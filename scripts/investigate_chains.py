"""On a GPU: is there a loop overhead per body in the chain measurements (issue 23)? Not part of a suite.

Six mma.sync shapes measure a dependent-chain latency of 16.875 cycles (= 16 + 14/16) where the paper
prints 16.0/16.1. A chain kernel runs `iters` instructions as loop bodies of UNROLL instructions, and
ChainSlope takes the slope between a short and a long launch: that removes the launch's fixed cost but
not a cost paid once per loop body (the taken branch back to the top, if the next instruction cannot
issue until it is fetched). If there is one, the slope per instruction is s(U) = L + O / U for a body
of U instructions, so the script renders each case's own probe with U = 4, 8, 16, 32 and 64, times the
chain kernels (the same launches as ChainSlope) and fits L and O.

Only the U = 16 probe (the suite's) is validated against the NumPy reference: the chain's check
expects 16 rounds per body; the other bodies hold the same instruction more or fewer times.

    python scripts/investigate_chains.py            # the six mma shapes, controls, ILP 1 and 8
"""

from __future__ import annotations

import sys

import numpy as np

from harness.build.compile import compile_probe
from harness.build.render import ProbeSource, render
from harness.families import family_of
from harness.measure.launch import LoadedProbe
from harness.measure.timing import RECORD_WORDS, Records
from harness.measure.runner import validate
from harness.spec import parse_case_id

CASES = [
    "mma.sync.m16n8k8.row.col.f32.f16.f16.f32", "mma.sync.m16n8k8.row.col.f16.f16.f16.f16",
    "mma.sync.m16n8k16.row.col.s32.s8.s8.s32", "mma.sync.m16n8k32.row.col.s32.s8.s8.s32",
    "mma.sp.sync.m16n8k16.row.col.f32.f16.f16.f32", "mma.sp.sync.m16n8k16.row.col.f16.f16.f16.f16",
    # controls: longer latencies
    "mma.sync.m16n8k16.row.col.f32.f16.f16.f32", "mma.sync.m16n8k8.row.col.f32.tf32.tf32.f32",
]
UNROLLS = (4, 8, 16, 32, 64)
SHORT_BODIES, LONG_BODIES = 16, 272  # ChainSlope's
LINE = "constexpr int UNROLL = 16;"


def slope(probe: LoadedProbe, kernel: str, unroll: int, per_iter: int, reps: int = 9) -> float:
    short, long_ = SHORT_BODIES * unroll, LONG_BODIES * unroll
    values = []
    for _ in range(reps):
        a = Records.from_words(probe.run(kernel, 1, 32, short, RECORD_WORDS).timing)
        b = Records.from_words(probe.run(kernel, 1, 32, long_, RECORD_WORDS).timing)
        values.append(float(b.cycles[0] - a.cycles[0]) / ((long_ - short) * per_iter))
    return float(np.median(values))


def main(case_ids: list[str]) -> None:
    for case_id in case_ids:
        case = parse_case_id(case_id)
        family = family_of(case)
        text = render(case).text
        assert LINE in text, "the mma template's UNROLL line changed: update LINE"
        rng = np.random.default_rng(1)
        inputs = family.inputs(case, rng)
        rows = {}
        for unroll in UNROLLS:
            source = ProbeSource(f"{case_id}.unroll{unroll}", text.replace(LINE, f"constexpr int UNROLL = {unroll};"))
            probe = LoadedProbe(compile_probe(source), inputs.buffer, family.output_words(case))
            if unroll == 16:
                check = validate(case, probe, inputs)
                assert check.ok, check.message
            rows[unroll] = {ilp: slope(probe, f"probe_chain_ilp{ilp}", unroll, ilp) for ilp in (1, 8)}
        print(f"== {case_id}")
        for ilp in (1, 8):
            u = np.array(UNROLLS, dtype=float)
            s = np.array([rows[x][ilp] for x in UNROLLS])
            (latency, overhead), *_ = np.linalg.lstsq(np.stack([np.ones_like(u), 1 / u], axis=1), s, rcond=None)
            residual = float(np.max(np.abs(latency + overhead / u - s)))
            print(f"  ILP {ilp}: " + "  ".join(f"U={x}: {rows[x][ilp]:.4f}" for x in UNROLLS)
                  + f"   fit s(U) = {latency:.4f} + {overhead:.3f}/U  (max residual {residual:.4f})")


if __name__ == "__main__":
    main(sys.argv[1:] or CASES)
