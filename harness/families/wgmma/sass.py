"""What a wgmma probe's SASS must show on sm_90a (ptxas 13): the tensor instruction of the case's shape and types,
UNROLL of them in the chain with no wait or fence between them, one in the latency kernel."""

from __future__ import annotations

from harness.families.base import KernelExpectation, SassExpectation
from harness.families.wgmma.cases import FP8, INT8, WgmmaCase
from harness.families.wgmma.probe import UNROLL


def sass_mnemonic(case: WgmmaCase) -> str:
    """What ptxas 13 emits for sm_90a (checked by tests/test_conformance.py on every case):
    HGMMA for 16-bit and tf32 inputs, QGMMA for fp8, IGMMA for s8/u8, BGMMA for b1."""
    shape = ("SP." if case.sparse else "") + f"64x{case.n}x{case.k}"
    a, b = case.dtype_a.upper(), case.dtype_b.upper()
    if case.dtype_a in ("f16", "bf16"):
        return f"HGMMA.{shape}.{case.dtype_acc.upper()}" + (".BF16" if case.dtype_a == "bf16" else "")
    if case.dtype_a == "tf32":
        return f"HGMMA.{shape}.F32.TF32"
    if case.dtype_a in FP8:
        return f"QGMMA.{shape}.{case.dtype_acc.upper()}.{a}.{b}"
    if case.dtype_a in INT8:
        return f"IGMMA.{shape}.{a}.{b}" + (".SAT" if case.satfinite else "")
    return f"BGMMA.{shape}.AND.POPC"


def expectation(case: WgmmaCase) -> SassExpectation:
    """HGMMA of the case's shape and types; in the chain, UNROLL of them with no WARPGROUP.DEPBAR
    (a wait) or WARPGROUP.ARRIVE (a fence) between them. wgmma.commit_group compiles to an HGMMA
    into RZ, which does not count. ptxas notes C7510/C7515 say it serialized the chain."""
    mnemonic = sass_mnemonic(case)
    rz = (f"{mnemonic} RZ,",)
    chain = KernelExpectation(mnemonic, UNROLL, ("WARPGROUP.DEPBAR", "WARPGROUP.ARRIVE"), rz)
    return SassExpectation((("probe_chain", chain), ("probe_latency", KernelExpectation(mnemonic, 1, (), rz))),
                           executes=mnemonic, invalidating_notes=("C7510", "C7515"),
                           spill_kernels=("probe_chain", "probe_latency"))
