"""wgmma.mma_async (sm_90a): legal shapes and dtypes, template parameters, inputs and reference.

Implemented so far: dense m64nNk16 with 16-bit inputs, A and B K-major without swizzle,
operand modes SS and RS.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness import dtypes
from harness.descriptors import KMajorLayout
from harness.errors import IllegalShapeError, SpecError
from harness.fragments import (WARPGROUP_THREADS, a_fragment_words, accumulator_registers,
                               gather_accumulators)
from harness.spec import OPERAND_MODES, Case

M = 64
K_16BIT = 16
LEGAL_N = tuple(range(8, 257, 8))  # PTX ISA: N = 8..256 in steps of 8 for 16-bit inputs
# (A, B, accumulator) combinations the PTX ISA allows for k16, and those implemented here.
LEGAL_16BIT_DTYPES = (("f16", "f16", "f32"), ("f16", "f16", "f16"), ("bf16", "bf16", "f32"))
IMPLEMENTED_DTYPES = LEGAL_16BIT_DTYPES
# wgmma issued per unrolled loop body of the chain kernel. ptxas places one WARPGROUP.ARRIVE at
# the head of each body (see harness/sass.py); 16 amortises it while keeping compiles quick.
UNROLL = 16

# Dense tensor-core work per SM per cycle (4 tensor cores x 1024 FLOP for 16-bit inputs).
# Source: datasheet arithmetic, H100 SXM 989.4 TFLOPS / (528 tensor cores x 1830 MHz) = 1024.
DENSE_FLOP_PER_SM_PER_CYCLE = {"f16": 4096, "bf16": 4096}

template_name = "wgmma.cu.in"
LAYOUT = "K-major, no swizzle"  # shared-memory layout of A and B (harness/descriptors.py KMajorLayout)


def cases() -> list[Case]:
    return [Case("wgmma", M, n, K_16BIT, a, b, acc, ops)
            for a, b, acc in IMPLEMENTED_DTYPES for ops in OPERAND_MODES for n in LEGAL_N]


def check(case: Case) -> None:
    """Raise IllegalShapeError (PTX forbids it) or SpecError (not implemented) for `case`."""
    dtypes_ = (case.dtype_a, case.dtype_b, case.dtype_acc)
    if case.m != M:
        raise IllegalShapeError(f"{case}: wgmma has M = 64 only, got M = {case.m}")
    if case.sparse:
        raise SpecError(f"{case}: sparse wgmma is not implemented yet")
    if dtypes_ not in LEGAL_16BIT_DTYPES:
        legal = ", ".join(".".join((acc, a, b)) for a, b, acc in LEGAL_16BIT_DTYPES)
        raise SpecError(f"{case}: dtypes {case.dtype_acc}.{case.dtype_a}.{case.dtype_b} are not "
                        f"implemented; implemented: {legal}")
    if case.k != K_16BIT:
        raise IllegalShapeError(f"{case}: 16-bit wgmma has K = 16, got K = {case.k}")
    if case.n not in LEGAL_N:
        raise IllegalShapeError(f"{case}: N must be a multiple of 8 from 8 to 256, got N = {case.n}")
    if case.operands not in OPERAND_MODES:
        raise IllegalShapeError(f"{case}: operand mode must be one of {', '.join(OPERAND_MODES)}")


def layouts(case: Case) -> tuple[KMajorLayout | None, KMajorLayout]:
    """Shared-memory layouts of A (None in RS mode) and B (N x K, K-major)."""
    element_bytes = dtypes.size_bytes(case.dtype_a)
    a = KMajorLayout(M, case.k, element_bytes) if case.operands == "SS" else None
    return a, KMajorLayout(case.n, case.k, element_bytes)


def descriptors(case: Case):
    """(A descriptor or None, B descriptor), start addresses relative to the shared buffer."""
    a, b = layouts(case)
    a_bytes = a.size_bytes if a else 0
    return (a.descriptor(0) if a else None), b.descriptor(a_bytes)


def template_params(case: Case) -> dict[str, object]:
    check(case)
    acc_regs = accumulator_registers(case.n, case.dtype_acc)
    a_layout, b_layout = layouts(case)
    desc_a, desc_b = descriptors(case)
    d_constraints = ", ".join(f'"+r"(d[{i}])' for i in range(acc_regs))
    if case.operands == "SS":
        a_regs, a_operand, a_constraints = 0, f"%{acc_regs}", '"l"(desc_a)'
        immediates = "1, 1, 0, 0"  # imm-scale-a, imm-scale-b, imm-trans-a, imm-trans-b
    else:
        a_regs = 4
        a_operand = "{" + ", ".join(f"%{acc_regs + i}" for i in range(a_regs)) + "}"
        a_constraints = ", ".join(f'"r"(a[{i}])' for i in range(a_regs))
        immediates = "1, 1, 0"  # imm-scale-a, imm-scale-b, imm-trans-b
    return {
        "case_id": case.case_id,
        "instruction": f"wgmma.mma_async.sync.aligned.{case.shape}.{case.dtype_acc}.{case.dtype_a}.{case.dtype_b}",
        "acc_regs": acc_regs,
        "a_regs": a_regs,
        "smem_a_bytes": a_layout.size_bytes if a_layout else 0,
        "smem_b_bytes": b_layout.size_bytes,
        "unroll": UNROLL,
        "desc_a": f"0x{desc_a.encode():016x}" if desc_a else "0x0",
        "desc_b": f"0x{desc_b.encode():016x}",
        "d_operands": ", ".join(f"%{i}" for i in range(acc_regs)),
        "d_constraints": d_constraints,
        "a_operand": a_operand,
        "a_constraints": a_constraints,
        "b_operand_index": acc_regs + (1 if case.operands == "SS" else a_regs),
        "immediates": immediates,
        "planted_fault": {None: "FAULT_NONE", "trap": "FAULT_TRAP", "oob": "FAULT_OOB",
                          "hang": "FAULT_HANG"}[case.fault],
    }


@dataclass(frozen=True)
class ProbeInputs:
    buffer: np.ndarray  # uint8: the kernel's input buffer
    a: np.ndarray  # 64 x K values (float64, exactly the dtype's values)
    b: np.ndarray  # N x K values (B stored K-major, i.e. as B transposed)
    distribution: str


def make_inputs(case: Case, rng: np.random.Generator, pattern: str = "random") -> ProbeInputs:
    """Inputs laid out as the descriptors and fragments say.

    pattern="random": standard normal values rounded to the dtype (never zeros alone: their power
    and clock differ). pattern="index": small distinct values that make a layout bug readable.
    """
    if pattern == "random":
        a = dtypes.round_to(case.dtype_a, rng.standard_normal((M, case.k)))
        b = dtypes.round_to(case.dtype_b, rng.standard_normal((case.n, case.k)))
        distribution = f"normal(0,1) rounded to {case.dtype_a}"
    elif pattern == "index":
        a = np.fromfunction(lambda i, k: (i % 8) + k / 16, (M, case.k))
        b = np.fromfunction(lambda j, k: ((j + k) % 4) / 4, (case.n, case.k))
        distribution = "index pattern"
    else:
        raise SpecError(f"unknown input pattern {pattern!r}: expected random or index")
    a_bits, b_bits = dtypes.encode(case.dtype_a, a), dtypes.encode(case.dtype_b, b)
    a_layout, b_layout = layouts(case)
    parts = []
    if a_layout:
        parts.append(a_layout.image(a_bits))
    parts.append(b_layout.image(b_bits))
    if case.operands == "RS":
        parts.append(a_fragment_words(a_bits).view(np.uint8).ravel())
    return ProbeInputs(np.concatenate(parts), a, b, distribution)


def reference(case: Case, inputs: ProbeInputs) -> np.ndarray:
    """D = A @ B in float64 (B is stored N x K)."""
    return inputs.a @ inputs.b.T


def output_words(case: Case) -> int:
    """32-bit words the kernel writes: every thread's accumulator registers of one warpgroup."""
    return WARPGROUP_THREADS * accumulator_registers(case.n, case.dtype_acc)


def decode_output(case: Case, words: np.ndarray) -> np.ndarray:
    regs = accumulator_registers(case.n, case.dtype_acc)
    bits = gather_accumulators(words.reshape(WARPGROUP_THREADS, regs), case.n, case.dtype_acc)
    return dtypes.decode(case.dtype_acc, bits)


def tolerance(case: Case, inputs: ProbeInputs) -> np.ndarray:
    """Absolute tolerance per element: 2K roundings of the accumulator on sum |a||b|, plus one on |D|.

    Tensor cores need not round like IEEE adds, so allow each of the K accumulations a full ulp.
    Products of two 16-bit values are exact in f32.
    """
    u = dtypes.unit_roundoff(case.dtype_acc)
    magnitude = np.abs(inputs.a) @ np.abs(inputs.b).T
    return 2 * case.k * u * magnitude + u * np.abs(reference(case, inputs))


def flops(case: Case) -> int:
    return 2 * case.m * case.n * case.k


def peak_flop_per_sm_per_cycle(case: Case) -> int:
    return DENSE_FLOP_PER_SM_PER_CYCLE[case.dtype_a]


def expected_sass(case: Case) -> str:
    """The HGMMA mnemonic prefix ptxas emits for this case, e.g. HGMMA.64x128x16.F32.BF16."""
    acc = case.dtype_acc.upper()
    suffix = ".BF16" if case.dtype_a == "bf16" else ""
    return f"HGMMA.64x{case.n}x16.{acc}{suffix}"
