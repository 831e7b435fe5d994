"""The mma probe: each form's registers per lane, its chain kernels (chains), the template's parameters, and what
each chain kernel's SASS must hold."""

from __future__ import annotations

import harness.families.mma.cases as _cases
import harness.families.mma.fragments as fragments
import harness.families.mma.sass as sass
from harness import sparsity
from harness.families.base import KernelExpectation, SassExpectation
from harness.families.chains import Chains
from harness.families.mma.cases import BITS, MmaCase, check


def chains(case: MmaCase) -> Chains:
    """Sparse fp8 is emulated inline by about a hundred instructions per mma (F2FP, SHFL, SEL, two
    HMMA.SP and FADD), whose conversions ptxas schedules across rounds: with 16 rounds per body its
    kernels spill from ILP 2 on, with 4 from ILP 8 on. It gets 4 rounds and ILP 1, 2 and 4, which
    compile without spilling (the SASS check enforces that for every kernel)."""
    if case.sparse and case.dtype_a in _cases.FP8:
        return Chains(4, (1, 2, 4))
    return Chains()


def shapes(case: MmaCase) -> dict[str, int]:
    """32-bit registers per lane of A, B, C, D and the sparsity metadata E."""
    k_stored = case.k // 2 if case.sparse else case.k  # sparse A is held compressed
    per_warp = fragments.QUAD_PAIRS if _quad_pairs(case) else 1
    return {"a": fragments.registers(per_warp * case.m * k_stored // 32, BITS[case.dtype_a]),
            "b": fragments.registers(per_warp * case.k * case.n // 32, BITS[case.dtype_b]),
            "c": fragments.registers(per_warp * case.m * case.n // 32, BITS[case.dtype_c]),
            "d": fragments.registers(per_warp * case.m * case.n // 32, BITS[case.dtype_d]),
            "e": 1 if case.sparse else 0}


def _quad_pairs(case: MmaCase) -> bool:
    """f16 m8n8k4: four independent products per warp, fragments by quad pair."""
    return case.shape == "m8n8k4" and case.dtype_a == "f16"


def template_params(case: MmaCase) -> dict[str, object]:
    check(case)
    regs = shapes(case)
    doubles = case.dtype_a == "f64"
    if doubles:  # f64 operands are .f64 registers, one per element
        regs = {key: value // 2 for key, value in regs.items()}
    vary = sass.form(case).emulated
    accumulate = case.dtype_c == case.dtype_d  # else C is its own operand, chained to D through vary()
    assert accumulate or vary, f"{case}: a separate C needs VARY_OPERANDS to chain"
    constraint = "d" if doubles else "r"
    order = ["d", "a", "b"] + ([] if accumulate else ["c"]) + (["e"] if case.sparse else [])
    first, at = {}, 0
    for key in order:
        first[key], at = at, at + regs[key]

    def operands(key):
        return ", ".join(f"%{first[key] + i}" for i in range(regs[key]))

    def inputs(key, name):
        return "".join(f', "{constraint}"({name}[{i}])' for i in range(regs[key]))

    return {
        "instruction": case.ptx,
        "reg_type": "double" if doubles else "u32",
        "a_regs": regs["a"], "b_regs": regs["b"], "c_regs": regs["c"], "d_regs": regs["d"],
        "e_regs": regs["e"],
        "unroll": chains(case).unroll,
        "short_body": chains(case).short_unroll or chains(case).unroll,
        "chain_kernels": "\n".join([f"PROBE_CHAIN({ilp})" for ilp in chains(case).ilps]
                                   + ([f"PROBE_SHORT_CHAIN({ilp})" for ilp in chains(case).timed_ilps]
                                      if chains(case).short_unroll else [])),
        "vary_operands": "true" if vary else "false",
        "d_operands": operands("d"), "a_operands": operands("a"), "b_operands": operands("b"),
        "c_operands": operands("d" if accumulate else "c"),
        "metadata_operands": f", %{first['e']}, {sparsity.SELECTOR}" if case.sparse else "",
        "d_constraints": ", ".join(f'"{"+" if accumulate else "="}{constraint}"(d[{i}])' for i in range(regs["d"])),
        "input_constraints": (inputs("a", "a") + inputs("b", "b") + ("" if accumulate else inputs("c", "c"))
                              + (', "r"(e)' if case.sparse else ""))[2:],
    }


def sass_expectation(case: MmaCase) -> SassExpectation:
    """Every mma of each chain kernel, as the instruction(s) sm_90a really runs (sass.py), with no
    memory access, barrier or branch between the first and the last of them."""
    form = sass.form(case)
    # Memory loads of every kind but LDC: a constant-bank read of a kernel parameter (ptxas
    # rematerialises the loop bound there under register pressure) does not stall the chain.
    forbidden = ("LDG", "LDS", "LDL", "LD.", "ST", "BAR", "MEMBAR", "BRA", "DEPBAR")
    kernels, plan = [], chains(case)
    bodies = [(plan.kernel(ilp), plan.unroll * ilp) for ilp in plan.ilps]
    if plan.short_unroll:
        bodies += [(plan.short_kernel(ilp), plan.short_unroll * ilp) for ilp in plan.timed_ilps]
    for kernel, per_body in bodies:
        if form.routine:  # a call per mma; the routine (in the kernel's code) holds the instructions
            kernels += [(kernel, KernelExpectation(sass.CALL, per_body, forbidden)),
                        (kernel, KernelExpectation(form.mnemonic, form.count))]
        else:
            kernels.append((kernel, KernelExpectation(form.mnemonic, per_body * form.count, forbidden,
                                                      contains=form.contains)))
    return SassExpectation(tuple(kernels), form.executes, form.emulated,
                           spill_kernels=tuple(kernel for kernel, _ in bodies))

