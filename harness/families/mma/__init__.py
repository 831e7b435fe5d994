"""mma.sync (warp-level MMA, sm_90): the Family object, and the fragment loaders' (loaders.py).

Cases and ids: cases.py. Register fragments: fragments.py. What each form compiles to on sm_90a,
native or emulated: sass.py. Probe template: ptx/mma.cu.in.
"""

from __future__ import annotations

import numpy as np

from harness import dtypes
from harness.families.base import Check, Inputs, KernelExpectation, SassExpectation, Suite, Work
from harness.families.mma import cases as _cases
from harness.families.mma import fragments, sass
from harness.families.mma.cases import BITS, MmaCase
from harness.measure.methods import ChainSlope, OccupancySweep, SweepPoint
from harness.measure.validate import accumulation_tolerance

UNROLL = 16  # rounds of ILP mma per unrolled loop body
ILPS = (1, 2, 4, 8)  # the kernels the template renders: probe_chain_ilp<ILP>
ISSUE_ILP = 8  # independent accumulators of the issue-interval chain (one warp)
SWEEP_WARPS = (1, 2, 4, 8, 16, 32)  # warps per SM (one block per SM)
SWEEP_ILP = (1, 2, 4)  # independent accumulators per warp
# Dense tensor-core work per SM per cycle at the datasheet rate of the type (4 tensor cores):
# H100 SXM5 datasheet, 132 SMs: 989.4 TFLOPS f16/bf16 and 494.7 tf32 at 1830 MHz (4096, 2048),
# 1978.9 TOPS int8 and TFLOPS fp8 (8192), 66.9 TFLOPS f64 tensor core at 1980 MHz (256). Hopper
# datasheets give no int4 or binary tensor rate: those cases have no peak_fraction.
PEAK_PER_SM_PER_CYCLE = {"f16": 4096, "bf16": 4096, "tf32": 2048, "s8": 8192, "u8": 8192, "e4m3": 8192,
                         "e5m2": 8192, "f64": 256}
F64_INPUT_STEPS = 4  # f64 inputs are multiples of 1/4 in [-2, 2]: every product and sum is exact


def _suites() -> dict[str, Suite]:
    def subset(*types):
        return lambda: [c for c in _cases.cases() if c.dtype_a in types]

    return {
        "mma": Suite("mma.sync, every shape and type sm_90 accepts (emulated forms marked): latency, issue "
                     "interval, warps x ILP throughput", _cases.cases),
        "mma-f16": Suite("mma.sync with f16 and bf16 inputs", subset("f16", "bf16")),
        "mma-int": Suite("mma.sync with s8/u8, s4/u4 and b1 inputs", subset("s8", "u8", "s4", "u4", "b1")),
    }


class MmaFamily:
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

    @staticmethod
    def shapes(case: MmaCase) -> dict[str, int]:
        """32-bit registers per lane of A, B and D."""
        return {"a": fragments.registers(case.m * case.k // 32, BITS[case.dtype_a]),
                "b": fragments.registers(case.k * case.n // 32, BITS[case.dtype_b]),
                "d": fragments.registers(case.m * case.n // 32, BITS[case.dtype_d])}

    def template_params(self, case: MmaCase) -> dict[str, object]:
        self.check(case)
        regs = self.shapes(case)
        doubles = case.dtype_a == "f64"
        if doubles:  # f64 operands are .f64 registers, one per element
            regs = {key: value // 2 for key, value in regs.items()}
        constraint = "d" if doubles else "r"
        first = {"d": 0, "a": regs["d"], "b": regs["d"] + regs["a"]}

        def operands(key):
            return ", ".join(f"%{first[key] + i}" for i in range(regs[key]))

        return {
            "instruction": case.ptx,
            "reg_type": "double" if doubles else "u32",
            "a_regs": regs["a"], "b_regs": regs["b"], "d_regs": regs["d"],
            "unroll": UNROLL,
            "vary_operands": "true" if sass.form(case).emulated else "false",
            "d_operands": operands("d"), "a_operands": operands("a"), "b_operands": operands("b"),
            "d_constraints": ", ".join(f'"+{constraint}"(d[{i}])' for i in range(regs["d"])),
            "a_constraints": ", ".join(f'"{constraint}"(a[{i}])' for i in range(regs["a"])),
            "b_constraints": ", ".join(f'"{constraint}"(b[{i}])' for i in range(regs["b"])),
        }

    def sass_expectation(self, case: MmaCase) -> SassExpectation:
        """Every mma of each chain kernel, as the instruction(s) sm_90a really runs (sass.py), with no
        memory access, barrier or branch between the first and the last of them."""
        form = sass.form(case)
        forbidden = ("LD", "ST", "BAR", "MEMBAR", "BRA", "DEPBAR")
        kernels = []
        for ilp in ILPS:
            kernel = f"probe_chain_ilp{ilp}"
            if form.routine:  # a call per mma; the routine (in the kernel's code) holds the tensor instructions
                kernels += [(kernel, KernelExpectation(sass.CALL, UNROLL * ilp, forbidden)),
                            (kernel, KernelExpectation(form.mnemonic, form.count))]
            else:
                kernels.append((kernel, KernelExpectation(form.mnemonic, UNROLL * ilp * form.count, forbidden)))
        return SassExpectation(tuple(kernels), form.executes, form.emulated,
                               spill_kernels=tuple(f"probe_chain_ilp{ilp}" for ilp in ILPS))

    # -- correctness -----------------------------------------------------------------------------

    def inputs(self, case: MmaCase, rng: np.random.Generator) -> Inputs:
        a = self._values(case.dtype_a, (case.m, case.k), rng)
        b = self._values(case.dtype_b, (case.k, case.n), rng)
        a_rows, a_cols = fragments.a_coords(case.m, case.k, BITS[case.dtype_a])
        b_rows, b_cols = fragments.b_coords(case.k, case.n, BITS[case.dtype_b])
        a_words = fragments.pack(BITS[case.dtype_a], dtypes.encode(case.dtype_a, a)[a_rows, a_cols])
        b_words = fragments.pack(BITS[case.dtype_b], dtypes.encode(case.dtype_b, b)[b_rows, b_cols])
        mask = np.zeros(2, dtype=np.uint32)  # the zero word of ptx/mma.cu.in (two: f64 reads 8 bytes)
        buffer = np.concatenate([a_words.ravel(), b_words.ravel(), mask]).view(np.uint8)
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
            return f"uniform over the {case.dtype_a}/{case.dtype_b} values"
        if case.dtype_a == "f64":
            return f"multiples of 1/{F64_INPUT_STEPS} in [-2, 2] (exact f64 arithmetic)"
        return f"normal(0,1) rounded to {case.dtype_a}/{case.dtype_b}"

    @staticmethod
    def reference(case: MmaCase, inputs: Inputs) -> np.ndarray:
        """D = A.B in float64; b1: popc(A and B) or popc(A xor B) summed over K."""
        a, b = inputs.values["a"], inputs.values["b"]
        if case.bit_op == "xor":
            return a @ (1 - b) + (1 - a) @ b
        return a @ b

    def tolerance(self, case: MmaCase, inputs: Inputs, chain: int = 1) -> np.ndarray | float:
        """Integer, b1 and f64 (on exactly representable inputs and sums): exact. Floating accumulators:
        harness/measure/validate.py accumulation_tolerance (the products of f16, bf16, tf32 and fp8
        values are exact in f32)."""
        if case.dtype_d in ("s32", "f64"):
            return 0.0
        magnitude = np.abs(inputs.values["a"]) @ np.abs(inputs.values["b"])
        return accumulation_tolerance(dtypes.unit_roundoff(case.dtype_d), case.k, magnitude, chain)

    def checks(self, case: MmaCase, inputs: Inputs) -> list[Check]:
        """A dependent chain of UNROLL mma and the ISSUE_ILP kernel's first accumulator: UNROLL x A.B."""
        ref, tol = UNROLL * self.reference(case, inputs), self.tolerance(case, inputs, UNROLL)
        return [Check(f"probe_chain_ilp{ilp}", 32, UNROLL, 5, ref, tol, f"D (ILP {ilp}, chain of {UNROLL})")
                for ilp in (1, ISSUE_ILP)]

    def output_words(self, case: MmaCase) -> int:
        return max(ILPS) * 32 * self.shapes(case)["d"]

    def decode(self, case: MmaCase, words: np.ndarray) -> np.ndarray:
        """The first accumulator's registers of warp 0 -> the M x N matrix (float64)."""
        regs = self.shapes(case)["d"]
        codes = fragments.unpack(BITS[case.dtype_d], words[:32 * regs].reshape(32, regs))
        rows, cols = fragments.d_coords(case.m, case.n)
        out = np.zeros((case.m, case.n))
        out[rows, cols] = dtypes.decode(case.dtype_d, codes)
        return out

    # -- measurement -----------------------------------------------------------------------------

    def work(self, case: MmaCase) -> Work:
        unit = "FLOP" if case.dtype_d in ("f16", "f32", "f64") else "OP"
        return Work(2 * case.m * case.n * case.k, unit)

    def peak(self, case: MmaCase) -> float | None:
        return PEAK_PER_SM_PER_CYCLE.get(case.dtype_a)

    def plan(self, case: MmaCase, device=None) -> list:
        """One warp on one SM: a dependent chain (latency) and ISSUE_ILP independent chains (issue
        interval); then every SM with 1..32 warps x 1, 2, 4 independent accumulators each."""
        sweep = tuple(SweepPoint(f"probe_chain_ilp{ilp}", w, ilp, {"warps": w, "ilp": ilp})
                      for w in SWEEP_WARPS for ilp in SWEEP_ILP)
        return [ChainSlope("latency_cycles", "probe_chain_ilp1", 32, unroll=UNROLL, launch={"warps": 1, "ilp": 1},
                           notes="a dependent chain: each mma accumulates onto the result of the one before"),
                ChainSlope("issue_interval_cycles", f"probe_chain_ilp{ISSUE_ILP}", 32, per_iter=ISSUE_ILP,
                           unroll=UNROLL, launch={"warps": 1, "ilp": ISSUE_ILP},
                           notes=f"{ISSUE_ILP} independent accumulators in one warp"),
                OccupancySweep(sweep, 32, UNROLL, whole_gpu=True, stop_on="cycles")]

    def headline(self, metric: str) -> dict | None:
        return {"latency_cycles": {"warps": 1, "ilp": 1},
                "issue_interval_cycles": {"warps": 1, "ilp": ISSUE_ILP}}.get(metric)

    def describe(self, case: MmaCase) -> list[str]:
        form = sass.form(case)
        regs = self.shapes(case)
        return [f"registers per lane: A {regs['a']}, B {regs['b']}, C/D {regs['d']}",
                f"sm_90a runs: {form.executes}" + (" (emulated: no native instruction)" if form.emulated else "")]

    def figures(self, context) -> list:
        from harness.families.mma.figures import figures

        return figures(context)


FAMILY = MmaFamily()
LOADERS = None  # the ldmatrix/stmatrix family: loaders.py
