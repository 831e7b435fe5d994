"""What each mma.sync and mma.sp form compiles to on sm_90a, and whether that is emulation.

From ptxas 13 for sm_90a (checked by tests/test_conformance.py on every case, and recorded with
every measurement): f16, bf16, tf32, s8/u8, b1 .and and f64 have native HMMA, IMMA, BMMA and DMMA
instructions, and the sparse forms of f16, bf16, tf32 and s8/u8 native HMMA.SP and IMMA.SP. Hopper
has no native fp8, s4/u4 or b1 .xor mma (sm_89 and sm_80 do): ptxas unpacks fp8 to f16 (F2FP) and
issues two HMMA (HMMA.SP) of half the K, splits s4/u4 into s8/u8 halves for two IMMA (IMMA.SP), and
builds .xor from two BMMA .and and an add. fp8 is expanded inline; s4/u4 and .xor are a call per mma
to an internal routine of ptxas (`__cuda_sm_9x_mma_...`) that holds the two tensor instructions.
f16 m8n8k4 (Volta's quad-pair mma) has no tensor instruction at all on sm_90: each mma is a call to
ptxas's `__cuda_sm_8x_mma_<layouts>_<types>` routine of SHFL.IDX, HADD2.F32 and FFMA.
mma.sp and mma.sp::ordered_metadata compile to the same instructions.
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
    routine: bool = False  # calls per mma (`calls`) to a routine that holds `count` x mnemonic
    contains: str = ""  # text the instruction must hold besides its opcode (a call's target)


def _code(m: int, n: int, k: int) -> str:
    return f"{m}{n}{k}"


def form(case: MmaCase) -> Form:
    m, n, k, a, b = case.m, case.n, case.k, case.dtype_a, case.dtype_b
    if case.shape == "m8n8k4" and a == "f16":
        routine = f"mma_{case.layout_a}_{case.layout_b}_{case.dtype_d}_f16_f16_{case.dtype_c}"
        return Form(CALL, 1, f"a call to ptxas's {routine} routine (SHFL.IDX, HADD2.F32, FFMA; no tensor "
                    "instruction)", emulated=True, contains=routine)
    sp = ".SP" if case.sparse else ""
    if a == "f64":
        mnemonic = f"DMMA.{m}x{n}x{k}"
        return Form(mnemonic, 1, mnemonic)
    if a in ("f16", "bf16", "tf32"):
        suffix = {"f16": "", "bf16": ".BF16", "tf32": ".TF32"}[a]
        mnemonic = f"HMMA{sp}.{_code(m, n, k)}.{case.dtype_d.upper()}{suffix}"
        return Form(mnemonic, 1, mnemonic)
    if a in ("s8", "u8"):
        mnemonic = f"IMMA{sp}.{_code(m, n, k)}.{a.upper()}.{b.upper()}" + (".SAT" if case.satfinite else "")
        return Form(mnemonic, 1, mnemonic)
    if a == "b1":
        mnemonic = f"BMMA.{_code(m, n, k)}.AND.POPC"
        if case.bit_op == "and":
            return Form(mnemonic, 1, mnemonic)
        return Form(mnemonic, 2, f"a call to a routine of 2x {mnemonic} + IADD (xor from and)", emulated=True,
                    routine=True)
    if a in ("s4", "u4"):
        mnemonic = f"IMMA{sp}.{_code(m, n, k // 2)}.{WIDER[a]}.{WIDER[b]}"
        return Form(mnemonic, 2, f"a call to a routine that unpacks s4/u4 to s8/u8 + 2x {mnemonic}", emulated=True,
                    routine=True)
    mnemonic = f"HMMA{sp}.{_code(m, n, k // 2)}.{case.dtype_d.upper()}"
    return Form(mnemonic, 2, f"F2FP fp8->f16 unpack + 2x {mnemonic}", emulated=True)
