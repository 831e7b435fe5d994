"""The wgmma family's suites: the everyday dense f16/bf16 forms, their energy points, a quick one, the planted
faults' self-test, and every form by type, sparsity and layout (all_cases: every wgmma)."""

from __future__ import annotations

from dataclasses import replace

import harness.families.wgmma.cases as _cases
from harness.families.base import Suite
from harness.families.wgmma.cases import EVERYDAY, FP8, INT8, PAPER_N, WgmmaCase
from harness.families.wgmma.plan import DISTRIBUTION_N
from harness.spec import PLANTED_FAULTS


def _everyday() -> list[WgmmaCase]:
    """The main job: every dense f16/bf16 form, without the N = 256 energy points (`wgmma-energy`)."""
    return [replace(c, energy=False) for c in _cases.cases() if c.dtype_a in EVERYDAY]


def _energy() -> list[WgmmaCase]:
    """What `wgmma` leaves out: its N = 256 cases with the input-distribution, energy and burst points
    (WgmmaFamily.plan)."""
    return [c for c in _cases.cases() if c.dtype_a in EVERYDAY and c.n == DISTRIBUTION_N]


def all_cases() -> list[WgmmaCase]:
    """Every wgmma form: dense, sparse, then the dense forms in the other shared-memory layouts."""
    return _cases.cases() + _cases.sparse_cases() + _cases.layout_cases()


def _of(*types: str):
    return lambda: [c for c in all_cases() if c.dtype_a in types]


def _quick() -> list[WgmmaCase]:
    return [replace(c, energy=False) for c in _cases.cases()
            if c.n in PAPER_N and c.dtype_a == "f16" and c.dtype_acc == "f32"]


def _faults() -> list[WgmmaCase]:
    """wgmma-quick with a faulting copy of every fourth case planted after it: the run must store
    each fault against its case and measure every other case (crash isolation self-test)."""
    cases, faults = [], iter(PLANTED_FAULTS)
    for i, case in enumerate(_quick()):
        cases.append(case)
        if i % 4 == 1 and (fault := next(faults, None)):
            cases.append(replace(case, fault=fault))
    return cases


def suites() -> dict[str, Suite]:
    return {
        "wgmma": Suite("dense wgmma m64nNk16: f16 (f32 and f16 accumulate) and bf16, N = 8..256, SS and RS "
                       "(the N = 256 input, energy and burst points are `wgmma-energy`)", _everyday),
        "wgmma-energy": Suite("the `wgmma` suite's N = 256 cases with what it leaves out: throughput on every "
                              "input distribution, mean power and energy per operation over 2-s windows (f16 "
                              "types), bursts after idle; runs of record run it after `wgmma`", _energy),
        "wgmma-quick": Suite("f16 inputs, f32 accumulate, SS and RS, at the paper's N = 8, 16, 32, 64, 128, 256",
                             _quick),
        "faults": Suite("self-test: wgmma-quick with planted faulting probes (trap, out-of-bounds store, "
                        "endless loop); expect 3 faults and 12 valid cases", _faults),
        "wgmma-all": Suite("every wgmma: dense in f16, bf16, tf32, e4m3/e5m2 pairs, s8/u8 pairs (with and "
                           "without .satfinite) and b1, and sparse in every type but b1; every legal N; SS and RS; "
                           "and the wgmma-layouts cases",
                           all_cases, part_of=("tensor",)),
        "wgmma-dense": Suite("every dense wgmma (every type, every legal N, SS and RS)", _cases.cases),
        "wgmma-sparse": Suite("every sparse wgmma.mma_async.sp: every type but b1, every legal N, SS and RS",
                              _cases.sparse_cases),
        "wgmma-layouts": Suite("shared-memory layouts: K-major with 32, 64 and 128-byte swizzle for one form "
                               "per type, MN-major with and without swizzle for f16/bf16; N = 8, 64, 128, 256; "
                               "SS and RS", _cases.layout_cases),
        "wgmma-tf32": Suite("wgmma with tf32 inputs: dense m64nNk8 and sparse m64nNk16", _of("tf32")),
        "wgmma-fp8": Suite("wgmma with e4m3/e5m2 inputs, f32 and f16 accumulate: dense m64nNk32 and sparse "
                           "m64nNk64", _of(*FP8)),
        "wgmma-int8": Suite("wgmma with s8/u8 inputs, s32, with and without .satfinite: dense m64nNk32 and "
                            "sparse m64nNk64", _of(*INT8)),
        "wgmma-b1": Suite("dense wgmma m64nNk256 .and.popc with b1 inputs (there is no sparse b1)", _of("b1")),
    }
