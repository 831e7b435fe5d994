"""The wgmma probe (ptx/wgmma.cu.in): the chain's unroll and the parameters the template is filled with (the
instruction, its operands and constraints, the descriptors, the shared memory of A and B)."""

from __future__ import annotations

from harness.families.wgmma.cases import INT8, LAYOUTS, TRANSPOSABLE, WgmmaCase, check
from harness.families.wgmma.fragments import accumulator_registers
from harness.families.wgmma.placement import b_offset, descriptors, latency_selector, layouts

# wgmma issued per unrolled loop body of the chain kernel. ptxas places one WARPGROUP.ARRIVE at
# the head of each body (reported by the SASS check); 16 amortises it while keeping compiles quick.
UNROLL = 16


def template_params(case: WgmmaCase) -> dict[str, object]:
    check(case)
    acc_regs = accumulator_registers(case.n, case.dtype_acc)
    a_layout, b_layout = layouts(case)
    desc_a, desc_b = descriptors(case)
    d_constraints = ", ".join(f'"+r"(d[{i}])' for i in range(acc_regs))
    b_index = acc_regs + (1 if case.operands == "SS" else 4)
    # PTX: 16-bit types take imm-scale-a, imm-scale-b and the transposes (imm-trans-a in SS only);
    # tf32 and fp8 the two scales; integer and b1 types nothing after scale-d.
    scales = case.dtype_a not in INT8 + ("b1",)
    trans = case.dtype_a in TRANSPOSABLE
    trans_b = int(LAYOUTS[case.layout][0] == "MN")  # imm-trans: 1 reads the operand MN-major
    trans_a = trans_b if case.operands == "SS" else 0
    if case.operands == "SS":
        a_regs, a_operand, a_constraints = 0, f"%{acc_regs}", '"l"(desc_a)'
        immediates = (", 1, 1" if scales else "") + (f", {trans_a}, {trans_b}" if trans else "")
    else:
        a_regs = 4
        a_operand = "{" + ", ".join(f"%{acc_regs + i}" for i in range(a_regs)) + "}"
        a_constraints = ", ".join(f'"r"(a[{i}])' for i in range(a_regs))
        immediates = (", 1, 1" if scales else "") + (f", {trans_b}" if trans else "")
    return {
        "instruction": f"{case.instruction}.sync.aligned.{case.shape}{case.types}",
        "acc_regs": acc_regs,
        "a_regs": a_regs,
        "smem_a_bytes": b_offset(case),
        "smem_b_bytes": b_layout.size_bytes,
        "unroll": UNROLL,
        "desc_a": f"0x{desc_a.encode():016x}" if desc_a else "0x0",
        "desc_b": f"0x{desc_b.encode():016x}",
        "d_operands": ", ".join(f"%{i}" for i in range(acc_regs)),
        "d_constraints": d_constraints,
        "a_operand": a_operand,
        "a_constraints": a_constraints,
        "b_operand_index": b_index,
        "immediates": immediates,
        "meta_words": 2 if case.sparse else 0,
        "latency_selector": latency_selector(case),
        # sparse: sp-meta (a register) and sp-sel (an immediate) come after b-desc
        "sparse_operands": f"%{b_index + 1}, %{b_index + 2}, " if case.sparse else "",
        "sparse_constraints": ', "r"(e), "n"(SEL)' if case.sparse else "",
    }
