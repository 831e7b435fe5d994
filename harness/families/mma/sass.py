"""What each mma.sync form compiles to on sm_90a, and whether that is emulation.

From ptxas 13 for sm_90a (checked by tests/test_conformance.py on every case, and recorded with
every measurement): f16, bf16, tf32, s8/u8, b1 .and and f64 have native HMMA, IMMA, BMMA and DMMA
instructions. Hopper has no native fp8, s4/u4 or b1 .xor mma.sync (sm_89 and sm_80 do): ptxas
unpacks fp8 to f16 (F2FP) and issues two HMMA of half the K, splits s4/u4 into s8/u8 halves for two
IMMA, and builds .xor from two BMMA .and and an add. fp8 is expanded inline; s4/u4 and .xor are a
call per mma to an internal routine of ptxas (`__cuda_sm_9x_mma_...`) that holds the two tensor
instructions.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.families.mma.cases import MmaCase

# SASS shape codes: m16n8k16 -> 16816, m8n8k4 -> 884; DMMA spells them 16x8x16.
CALL = "CALL.REL.NOINC"  # how the emulated forms that ptxas keeps out of line are called
WIDER = {"s4": "S8", "u4": "U8"}  # the s8/u8 IMMA that s4/u4 runs as


@dataclass(frozen=True)
class Form:
    mnemonic: str  # the tensor instruction that really runs
    count: int  # how many of it per PTX mma
    executes: str
    emulated: bool = False
    routine: bool = False  # a call per mma to a routine that holds `count` x mnemonic


def _code(m: int, n: int, k: int) -> str:
    return f"{m}{n}{k}"


def form(case: MmaCase) -> Form:
    m, n, k, a, b = case.m, case.n, case.k, case.dtype_a, case.dtype_b
    if a == "f64":
        mnemonic = f"DMMA.{m}x{n}x{k}"
        return Form(mnemonic, 1, mnemonic)
    if a in ("f16", "bf16", "tf32"):
        suffix = {"f16": "", "bf16": ".BF16", "tf32": ".TF32"}[a]
        mnemonic = f"HMMA.{_code(m, n, k)}.{case.dtype_d.upper()}{suffix}"
        return Form(mnemonic, 1, mnemonic)
    if a in ("s8", "u8"):
        mnemonic = f"IMMA.{_code(m, n, k)}.{a.upper()}.{b.upper()}" + (".SAT" if case.satfinite else "")
        return Form(mnemonic, 1, mnemonic)
    if a == "b1":
        mnemonic = f"BMMA.{_code(m, n, k)}.AND.POPC"
        if case.bit_op == "and":
            return Form(mnemonic, 1, mnemonic)
        return Form(mnemonic, 2, f"a call to a routine of 2x {mnemonic} + IADD (xor from and)", emulated=True,
                    routine=True)
    if a in ("s4", "u4"):
        mnemonic = f"IMMA.{_code(m, n, k // 2)}.{WIDER[a]}.{WIDER[b]}"
        return Form(mnemonic, 2, f"a call to a routine that unpacks s4/u4 to s8/u8 + 2x {mnemonic}", emulated=True,
                    routine=True)
    mnemonic = f"HMMA.{_code(m, n, k // 2)}.{case.dtype_d.upper()}"
    return Form(mnemonic, 2, f"F2FP fp8->f16 unpack + 2x {mnemonic}", emulated=True)
