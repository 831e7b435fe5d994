"""mma.sync (warp-level MMA, sm_90): the Family object (its fragment loaders, ldmatrix/stmatrix, are
the loaders family: harness/families/loaders/).

Cases and ids: cases.py. Register fragments: fragments.py. What each form compiles to on sm_90a,
native or emulated: sass.py. The probe (registers, chains, the template's parameters, the SASS expected): probe.py.
Inputs and validation: checks.py. What is measured: plan.py. Probe template: ptx/mma.cu.in.
"""

from __future__ import annotations

import harness.families.mma.cases as _cases
import harness.families.mma.checks as _checks
import harness.families.mma.fragments as fragments
import harness.families.mma.plan as _plan
import harness.families.mma.probe as _probe
import harness.families.mma.sass as sass
from harness import sparsity
from harness.families.base import Family, Reason, Suite, Work
from harness.families.mma.cases import MmaCase
from harness.families.mma.probe import _quad_pairs, shapes

# Dense tensor-core work per SM per cycle at the datasheet rate of the type (4 tensor cores):
# H100 SXM5 datasheet, 132 SMs: 989.4 TFLOPS f16/bf16 and 494.7 tf32 at 1830 MHz (4096, 2048),
# 1978.9 TOPS int8 and TFLOPS fp8 (8192), 66.9 TFLOPS f64 tensor core at 1980 MHz (256). Hopper
# datasheets give no int4 or binary tensor rate: those cases have no peak_fraction.
PEAK_PER_SM_PER_CYCLE = {"f16": 4096, "bf16": 4096, "tf32": 2048, "s8": 8192, "u8": 8192, "e4m3": 8192,
                         "e5m2": 8192, "f64": 256}


def _suites() -> dict[str, Suite]:
    def subset(*types):
        return lambda: [c for c in _cases.cases() if c.dtype_a in types]

    return {
        "mma": Suite("mma.sync, every shape and type sm_90 accepts (emulated forms marked): latency, issue "
                     "interval, warps x ILP throughput", _cases.cases, part_of=("tensor",)),
        "mma-f16": Suite("mma.sync with f16 and bf16 inputs", subset("f16", "bf16")),
        "mma-int": Suite("mma.sync with s8/u8, s4/u4 and b1 inputs", subset("s8", "u8", "s4", "u4", "b1")),
    }


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

    template_params = staticmethod(_probe.template_params)
    sass_expectation = staticmethod(_probe.sass_expectation)

    # -- correctness -----------------------------------------------------------------------------

    inputs = staticmethod(_checks.inputs)
    checks = staticmethod(_checks.checks)
    output_words = staticmethod(_checks.output_words)
    decode = staticmethod(_checks.decode)

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

    plan = staticmethod(_plan.plan)

    @staticmethod
    def within_sm(case) -> bool:
        """An mma chain runs on registers alone: a GPU with the same SM does the same per cycle (figure_gpus)."""
        return True

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


FAMILY = MmaFamily()
