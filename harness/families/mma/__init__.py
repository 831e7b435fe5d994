"""mma.sync (warp-level MMA, sm_90): the Family object (its fragment loaders, ldmatrix/stmatrix, are
the loaders family: harness/families/loaders/).

Cases and ids: cases.py. Register fragments: fragments.py. What each form compiles to on sm_90a,
native or emulated: sass.py. Probe template: ptx/mma.cu.in.
"""

from __future__ import annotations

import numpy as np

from harness import dtypes
from harness.families.chains import ILPS, Chains
from harness.families.base import Check, Family, Inputs, KernelExpectation, Reason, SassExpectation, Suite, Work
import harness.families.mma.cases as _cases
from harness import sparsity
import harness.families.mma.fragments as fragments
import harness.families.mma.sass as sass
from harness.families.mma.cases import BITS, MmaCase
from harness.measure.methods import ChainSlope, OccupancySweep, SweepPoint
from harness.measure.validate import accumulation_tolerance

SWEEP_WARPS = (1, 2, 4, 8, 16, 32)  # warps per SM (one block per SM)
SWEEP_ILP = (1, 2, 4)  # independent accumulators per warp
# Dense tensor-core work per SM per cycle at the datasheet rate of the type (4 tensor cores):
# H100 SXM5 datasheet, 132 SMs: 989.4 TFLOPS f16/bf16 and 494.7 tf32 at 1830 MHz (4096, 2048),
# 1978.9 TOPS int8 and TFLOPS fp8 (8192), 66.9 TFLOPS f64 tensor core at 1980 MHz (256). Hopper
# datasheets give no int4 or binary tensor rate: those cases have no peak_fraction.
PEAK_PER_SM_PER_CYCLE = {"f16": 4096, "bf16": 4096, "tf32": 2048, "s8": 8192, "u8": 8192, "e4m3": 8192,
                         "e5m2": 8192, "f64": 256}
# The shapes whose power and energy efficiency both papers print (2402.13499 Table XI, 2501.12084
# Table 12: "the largest mma shape" of each type, sparse as printed, i.e. compressed K): their best
# whole-GPU point is also measured for energy (OccupancySweep.energy), (dtype_a, k, sparse).
ENERGY_SHAPES = {("f16", 16, False), ("tf32", 8, False), ("s8", 32, False),
                 ("f16", 32, True), ("tf32", 16, True), ("s8", 64, True)}
F64_INPUT_STEPS = 4  # f64 inputs are multiples of 1/4 in [-2, 2]: every product and sum is exact


def interval_metric(case: MmaCase) -> str:
    """An emulated form issues no instruction of its own: its independent-accumulator chain is a call
    interval (metric registry), not an issue interval."""
    return "call_interval_cycles" if sass.form(case).emulated else "issue_interval_cycles"


def _energy_case(case: MmaCase) -> bool:
    """A paper energy shape (ENERGY_SHAPES) in its plain form: m16n8, b signed as a, no satfinite."""
    return ((case.dtype_a, case.k, bool(case.sparse)) in ENERGY_SHAPES and case.m == 16
            and case.dtype_b == case.dtype_a and not case.satfinite and case.sparse in (None, "sp"))


def _suites() -> dict[str, Suite]:
    def subset(*types):
        return lambda: [c for c in _cases.cases() if c.dtype_a in types]

    return {
        "mma": Suite("mma.sync, every shape and type sm_90 accepts (emulated forms marked): latency, issue "
                     "interval, warps x ILP throughput", _cases.cases, part_of=("tensor",)),
        "mma-f16": Suite("mma.sync with f16 and bf16 inputs", subset("f16", "bf16")),
        "mma-int": Suite("mma.sync with s8/u8, s4/u4 and b1 inputs", subset("s8", "u8", "s4", "u4", "b1")),
    }


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


def reference(case: MmaCase, inputs: Inputs) -> np.ndarray:
    """D = A.B in float64 (sparse: the dense A, zeros included; m8n8k4: four products, one per quad
    pair); b1: popc(A and B) or popc(A xor B) summed over K."""
    a, b = inputs.values["a"], inputs.values["b"]
    if case.bit_op == "xor":
        return a @ (1 - b) + (1 - a) @ b
    return a @ b


def tolerance(case: MmaCase, inputs: Inputs, chain: int = 1) -> np.ndarray | float:
    """Integer, b1 and f64 (on exactly representable inputs and sums): exact. Floating accumulators:
    harness/measure/validate.py accumulation_tolerance (the products of f16, bf16, tf32 and fp8
    values are exact in f32)."""
    if case.dtype_d in ("s32", "f64"):
        return 0.0
    magnitude = np.abs(inputs.values["a"]) @ np.abs(inputs.values["b"])
    return accumulation_tolerance(dtypes.unit_roundoff(case.dtype_d), case.k, magnitude, chain)


class MmaFamily(Family):
    name = "mma"
    description = "mma.sync: warp-level MMA from registers"
    id_prefixes = ("mma.",)
    example_id = "mma.sync.m16n8k16.row.col.f32.f16.f16.f32"
    template = "mma.cu.in"

    cases = staticmethod(_cases.cases)
    parse = staticmethod(_cases.parse)
    check = staticmethod(_cases.check)
    suites = staticmethod(_suites)

    # -- the probe -------------------------------------------------------------------------------

    def template_params(self, case: MmaCase) -> dict[str, object]:
        self.check(case)
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

    def sass_expectation(self, case: MmaCase) -> SassExpectation:
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

    # -- correctness -----------------------------------------------------------------------------

    def inputs(self, case: MmaCase, rng: np.random.Generator) -> Inputs:
        """A and B drawn exactly representable in their types (sparse A: zero outside a drawn 2:4
        pattern), packed into each lane's fragment registers; then the metadata words and the zero mask."""
        batch = (fragments.QUAD_PAIRS,) if _quad_pairs(case) else ()
        a = self._values(case.dtype_a, batch + (case.m, case.k), rng)
        b = self._values(case.dtype_b, batch + (case.k, case.n), rng)
        stored, metadata = a, np.zeros(0, dtype=np.uint32)
        if case.sparse:
            pattern = sparsity.draw(case.dtype_a, case.m, case.k, rng)
            keep = sparsity.kept(case.dtype_a, pattern, case.k)
            a = np.where(keep, a, 0.0)
            stored = sparsity.compress(a, keep)
            metadata = sparsity.metadata(case.dtype_a, pattern)
        a_words = fragments.pack(BITS[case.dtype_a], dtypes.encode(case.dtype_a, stored)[_a_coords(case)])
        b_words = fragments.pack(BITS[case.dtype_b], dtypes.encode(case.dtype_b, b)[_b_coords(case)])
        mask = np.zeros(2, dtype=np.uint32)  # the zero word of ptx/mma.cu.in (two: f64 reads 8 bytes)
        buffer = np.concatenate([a_words.ravel(), b_words.ravel(), metadata, mask]).view(np.uint8)
        return Inputs(buffer, {"a": a, "b": b}, self._distribution(case))

    @staticmethod
    def _values(dtype: str, shape, rng: np.random.Generator) -> np.ndarray:
        if dtype in dtypes.INTEGER_RANGE:
            low, high = dtypes.INTEGER_RANGE[dtype]
            return rng.integers(low, high + 1, shape).astype(np.float64)
        if dtype == "f64":
            return rng.integers(-2 * F64_INPUT_STEPS, 2 * F64_INPUT_STEPS + 1, shape) / F64_INPUT_STEPS
        return dtypes.round_to(dtype, rng.standard_normal(shape))

    @staticmethod
    def _distribution(case: MmaCase) -> str:
        if case.dtype_a in dtypes.INTEGER_RANGE:
            text = f"uniform over the {case.dtype_a}/{case.dtype_b} values"
        elif case.dtype_a == "f64":
            text = f"multiples of 1/{F64_INPUT_STEPS} in [-2, 2] (exact f64 arithmetic)"
        else:
            text = f"normal(0,1) rounded to {case.dtype_a}/{case.dtype_b}"
        return text + ("; A zero outside a random structured-sparse pattern per chunk" if case.sparse else "")

    def checks(self, case: MmaCase, inputs: Inputs) -> list[Check]:
        """A dependent chain of one loop body and the issue-interval kernel's first accumulator: `unroll`
        x A.B (A.B where C is a separate zero operand: each mma then computes A.B + 0)."""
        plan = chains(case)
        chain = plan.unroll if case.dtype_c == case.dtype_d else 1
        ref, tol = chain * reference(case, inputs), tolerance(case, inputs, chain)
        kernels = [plan.kernel(ilp) for ilp in plan.timed_ilps]
        if plan.short_unroll:  # the same chain of `unroll` rounds, in bodies of short_unroll
            kernels += [plan.short_kernel(ilp) for ilp in plan.timed_ilps]
        return [Check(kernel, 32, plan.unroll, 5, ref, tol, f"D ({kernel}, chain of {plan.unroll})")
                for kernel in kernels]

    def output_words(self, case: MmaCase) -> int:
        return max(ILPS) * 32 * shapes(case)["d"]

    def decode(self, case: MmaCase, words: np.ndarray) -> np.ndarray:
        """The first accumulator's registers of warp 0 -> the M x N matrix (m8n8k4: 4 of them), float64."""
        regs = shapes(case)["d"]
        codes = fragments.unpack(BITS[case.dtype_d], words[:32 * regs].reshape(32, regs))
        out = np.zeros(((fragments.QUAD_PAIRS,) if _quad_pairs(case) else ()) + (case.m, case.n))
        out[_d_coords(case)] = dtypes.decode(case.dtype_d, codes)
        return out

    # -- measurement -----------------------------------------------------------------------------

    def work(self, case: MmaCase) -> Work:
        """2 M N K per warp instruction (f16 m8n8k4: four such products). Sparse: the dense-equivalent
        2 M N K, the convention of NVIDIA's "with sparsity" datasheet rates (half of it is multiplied
        by zeros the hardware skips)."""
        unit = "FLOP" if case.dtype_d in ("f16", "f32", "f64") else "OP"
        products = fragments.QUAD_PAIRS if _quad_pairs(case) else 1
        return Work(2 * case.m * case.n * case.k * products, unit)

    def peak(self, case: MmaCase) -> float | None:
        """The type's dense tensor rate; sparse: twice it (dense-equivalent work, as the datasheet)."""
        dense = PEAK_PER_SM_PER_CYCLE.get(case.dtype_a)
        return dense * 2 if dense and case.sparse else dense

    def plan(self, case: MmaCase, device=None) -> list:
        """One warp on one SM: a dependent chain (latency) and the most independent chains the case
        renders (issue interval); then every SM with 1..32 warps x 1, 2, 4 independent accumulators, by
        clock64, and the best of those 18 points again as a whole GPU (CUDA events, long launches)."""
        plan = chains(case)
        sweep = tuple(SweepPoint(plan.kernel(ilp), w, ilp, {"warps": w, "ilp": ilp})
                      for w in SWEEP_WARPS for ilp in SWEEP_ILP)
        dependent = ("a dependent chain: each mma accumulates onto the result of the one before"
                     if case.dtype_c == case.dtype_d else
                     "a dependent chain: each mma's C operand is derived from the previous D (x ^ (d & 0))")
        bodies = (f"; loop bodies of {plan.unroll} and {plan.short_unroll} rounds, so a body's own cost cancels"
                  if plan.short_unroll else f"; loop bodies of {plan.unroll} rounds")
        return [ChainSlope("latency_cycles", plan.kernel(1), 32, unroll=plan.unroll, launch={"warps": 1, "ilp": 1},
                           notes=dependent + bodies, short_body=plan.short_body(1)),
                ChainSlope(interval_metric(case), plan.kernel(plan.issue_ilp), 32, per_iter=plan.issue_ilp,
                           unroll=plan.unroll, launch={"warps": 1, "ilp": plan.issue_ilp},
                           notes=f"{plan.issue_ilp} independent accumulators in one warp" + bodies,
                           short_body=plan.short_body(plan.issue_ilp)),
                OccupancySweep(sweep, 32, plan.unroll, whole_gpu="best", energy=_energy_case(case))]

    @staticmethod
    def paper_case(figure) -> tuple[str, str] | None:
        """A published mma.sync figure's case and metric: the papers' mma "latency" is one warp's
        dependent loop, our latency_cycles. They print mma.sp's compressed shape: its k is twice the
        printed one (the notes of those rows say so; their sparse TFLOPS, 1.46x dense at most, count
        the dense-equivalent work, as ours do)."""
        metric = {"latency_cycles": "latency_cycles", "throughput": "throughput_tflops", "power": "power_mean_w",
                  "energy_efficiency": "energy_efficiency", "sm_clock": "sm_clock_mhz"}.get(figure.metric)
        if figure.instruction not in ("mma", "mma.sp") or metric is None:
            return None
        kind, k = (".sp", 2 * figure.k) if figure.sparse else ("", figure.k)
        a, acc = figure.dtype_a, figure.dtype_acc
        return f"mma{kind}.sync.m{figure.m}n{figure.n}k{k}.row.col.{acc}.{a}.{a}.{acc}", metric

    @staticmethod
    def explain(case_id: str, metric: str, value: float, paper: float, launch: dict | None = None) -> Reason | None:
        """Why a measurement differs from its published figure, where the difference is understood.
        The 16-cycle dependent chains (docs/chains.md): ptxas spaces a dependent HMMA by stall counts,
        11 + 5 = 16 issue cycles; the hardware runs that pair 17 cycles apart in straight-line code and
        15 across the taken branch of a loop, so a loop's average lies between and the paper's 16.0/16.1
        is the compiler's spacing. Ours (two body lengths, so the branch cancels) is the 17."""
        if metric != "latency_cycles" or not 15.0 <= paper < 17.0:
            return None
        if abs(value - 17.0) < 0.05:
            return Reason("a dependent HMMA pair is 17 cycles apart in straight-line code and 15 across a loop's "
                          "branch (ptxas spaces it 11 + 5 = 16 issue cycles; docs/chains.md): the paper's loop "
                          "averages the two, ours cancels the branch")
        if abs(value - (17.0 - 2.0 / 16)) < 0.05:  # runs before 49: one body length of 16
            return Reason("timed with one loop body of 16 (runs before 49): the branch pair's 15 cycles are spread "
                          "over the body, 17 - 2/16 = 16.875; runs from 49 time two body lengths and read 17 "
                          "(docs/chains.md)")
        return None

    def headline(self, metric: str) -> dict | None:
        """None: latency and issue interval have one launch per case; throughput is the best of the sweep."""
        return None

    def describe(self, case: MmaCase) -> list[str]:
        form = sass.form(case)
        regs = shapes(case)
        lines = [f"registers per lane: A {regs['a']}, B {regs['b']}, C {regs['c']}, D {regs['d']}"
                 + (", metadata 1" if case.sparse else ""),
                 f"sm_90a runs: {form.executes}" + (" (emulated: no native instruction)" if form.emulated else "")]
        if case.sparse:
            lines.append(f"A structured-sparse, held compressed (M x K/2); metadata in "
                         f"{sparsity.metadata_lanes(case.dtype_a, case.k)} lane(s) of each group of 4, selector "
                         f"{sparsity.SELECTOR}; work counted dense-equivalent (2 M N K)")
        if _quad_pairs(case):
            lines.append("four independent 8x8x4 products per warp, one per quad pair (lanes 0-3 with 16-19, ...)")
        return lines

    @property
    def model(self):
        from harness.families.mma.model import MmaModel

        return MmaModel()

    def figures(self, context) -> list:
        from harness.families.mma.figures import figures

        return figures(context)


def _quad_pairs(case: MmaCase) -> bool:
    """f16 m8n8k4: four independent products per warp, fragments by quad pair."""
    return case.shape == "m8n8k4" and case.dtype_a == "f16"


def _a_coords(case: MmaCase):
    if _quad_pairs(case):
        return fragments.m884_a_coords(case.layout_a)
    return fragments.a_coords(case.m, case.k // 2 if case.sparse else case.k, BITS[case.dtype_a])


def _b_coords(case: MmaCase):
    if _quad_pairs(case):
        return fragments.m884_b_coords(case.layout_b)
    return fragments.b_coords(case.k, case.n, BITS[case.dtype_b])


def _d_coords(case: MmaCase):
    return fragments.m884_d_coords(case.dtype_d) if _quad_pairs(case) else fragments.d_coords(case.m, case.n)


FAMILY = MmaFamily()
