"""The GEMM ladder below the wgmma pipeline (ptx/ladder.cu.in): the Family object.

The steps a GEMM takes from a naive CUDA-core kernel to the tensor cores (the seed GEMM chapter's walk, and the
HGEMM worklog's step 1): naive, shared-memory tiled, register-tiled (8 x 8 per thread), WMMA and mma.sync with
ldmatrix, and cuBLAS SGEMM beside them (cases.py; the library's rung is an anchor, cases.LadderLibraryCase: no
template, its call the probe's host kernel anchors.KERNEL). Each case is validated twice before it is timed:
    the check problem   small integer-valued A and B (exact in f16 and f32, so is C): C must equal NumPy's bit for bit
    the measured one    normal(0, 1) inputs at the case's size: C against the exact product (f64 on the GPU), within
                        the bound of the step's arithmetic (problem.bound)
then timed as the gemm family's cases are (methods.WholeKernel: rounds of back-to-back launches alternating with
cuBLAS on the same inputs, library_fraction round by round). The model (model.py) bounds each step.
"""

from __future__ import annotations

import numpy as np

from harness.anchors import KERNEL, VERIFY
from harness.families.base import Attachment, Check, Family, Inputs, KernelExpectation, SassExpectation, Suite, Work
import harness.families.ladder.cases as _cases
from harness.families.ladder.cases import LadderCase, LadderLibraryCase
from harness.families.ladder.problem import (CHECK_VALUES, POISON, PROBLEM, check_grid, check_problem, grid,
                                             to_bits)
from harness.families.pipeline import TENSOR_FLOPS_PER_CYCLE
from harness.measure.methods import WholeKernel

FFMA_PEAK = 256.0  # FLOP per cycle per SM: 128 FP32 lanes x 2
# What each step's kernel must hold once (its loops' bodies are not unrolled across iterations):
#   naive: a body of 8 k; smem-tiled: a k-block of 32; reg-tiled: 16 k x 8 x 8; wmma: 2 k16 x 8 wmma x 2 HMMA.16816;
#   mma-ldmatrix: 2 k16 x 16 mma; both, 2 k16 x (4 + 2) ldmatrix.x4 (wmma.load from shared memory compiles to them)
SASS = {
    "naive": (("FFMA", 8),),
    "smem-tiled": (("FFMA", 32),),
    "reg-tiled": (("FFMA", 1024),),
    "wmma": (("HMMA.16816.F32", 32), ("LDSM.16.M88.4", 12)),  # ptxas loads wmma's fragments from shared by ldmatrix
    "mma-ldmatrix": (("HMMA.16816.F32", 32), ("LDSM.16.M88.4", 12)),
}
# The seed GEMM chapter's names for our steps (its section 9.9.2 compares the two tensor-core APIs), and its figures
# that no case here measures, with why
PAPER_STEPS = {"mma.sync": "mma-ldmatrix"}
# The chapter's cuBLAS f16 (gemmEx, f16 in): the gemm family's library case of the same size (its id, not an import)
LIBRARY_F16 = "cublas.f16.{m}x{n}x{k}"
PAPER_UNEXPRESSED = {
    "cutlass-f16": "CUTLASS is not run by this project",
    "fp32 ceiling": "a ceiling stated for the A100's CUDA cores, not one kernel's figure: the model bounds each f32 "
                    "step (bench model --gpu)",
}


def _suites() -> dict[str, Suite]:
    return {
        "ladder": Suite("the GEMM ladder below the tensor-core pipeline at 4096^3: naive, shared-memory tiled, "
                        "register-tiled (f32, CUDA cores), WMMA and mma.sync with ldmatrix (f16, tensor cores), cuBLAS "
                        "SGEMM; each beside cuBLAS on the same inputs", _cases.everyday),
        "ladder-full": Suite("runs of record: every step at 1024^3, 2048^3 and 4096^3", _cases.cases),
        "ladder-quick": Suite("every step at 1024^3", _cases.quick),
    }


class LadderFamily(Family):
    name = "ladder"
    description = "the GEMM ladder below wgmma: naive, shared-tiled, register-tiled, WMMA, mma.sync + ldmatrix"
    id_prefixes = ("ladder.",)
    example_id = "ladder.reg-tiled.f32.4096x4096x4096"
    template = "ladder.cu.in"

    cases = staticmethod(_cases.cases)
    parse = staticmethod(_cases.parse)
    check = staticmethod(_cases.check)
    suites = staticmethod(_suites)

    @property
    def model(self):
        from harness.families.ladder.model import LadderModel

        return LadderModel()

    # -- the probe -----------------------------------------------------------------------------------

    def template_params(self, case: LadderCase) -> dict[str, object]:
        self.check(case)
        spec = case.spec
        return {"step": spec.index, "bm": spec.bm, "bn": spec.bn, "bk": spec.bk, "threads": spec.threads,
                "problem": PROBLEM.render()}

    def sass_expectation(self, case: LadderCase) -> SassExpectation:
        wanted = SASS[case.step]
        return SassExpectation(tuple(("probe_ladder", KernelExpectation(m, n)) for m, n in wanted),
                               executes=" + ".join(f"{n} x {m}" for m, n in wanted) + " per loop body",
                               spill_kernels=("probe_ladder",))

    # -- correctness ---------------------------------------------------------------------------------

    def inputs(self, case: LadderCase, rng: np.random.Generator) -> Inputs:
        """The check problem's A (M x K) and B (N x K): small integers, exact in f32 and f16; the measured problem's
        normal(0, 1) inputs are drawn on the GPU (gpu.py)."""
        m, n, k = check_problem(case)
        low, high = CHECK_VALUES
        a = rng.integers(low, high + 1, (m, k)).astype(np.float64)
        b = rng.integers(low, high + 1, (n, k)).astype(np.float64)
        buffer = np.concatenate([to_bits(a, case.dtype).ravel(), to_bits(b, case.dtype).ravel()]).view(np.uint8)
        return Inputs(buffer, {"A": a, "B": b},
                      f"check: integers {low}..{high}; measured: normal(0, 1) {case.dtype}, seeded, drawn on the GPU")

    def output_words(self, case: LadderCase) -> int:
        m, n, _ = check_problem(case)
        return m * n

    def decode(self, case: LadderCase, words: np.ndarray) -> np.ndarray:
        return np.asarray(words[:self.output_words(case)], dtype=np.uint32).astype(np.float64)

    def checks(self, case: LadderCase | LadderLibraryCase, inputs: Inputs) -> list[Check]:
        """C of the check problem bit for bit (integers: every order of the sum is exact in f32); then the measured
        problem against the exact product, within the bound of the step's arithmetic (problem.bound). The library's
        case: the same two, its call (KERNEL) at iters 0 on the check problem, cuBLAS SGEMM held to FFMA's bound."""
        exact = inputs.values["A"] @ inputs.values["B"].T
        words = to_bits(exact, "f32").ravel().astype(np.float64)
        m, n, k = check_problem(case)
        expected = np.full(self.output_words(case), POISON, dtype=np.float64)
        expected[0] = 0
        library = isinstance(case, LadderLibraryCase)
        unit = "HMMA" if not library and case.spec.unit == "HMMA" else "FFMA"
        if library:
            first = Check(KERNEL, 1, 0, 1, words, 0.0,
                          f"C of a {m}x{n}x{k} problem, bit for bit ({case.anchor.library})")
        else:
            blocks = check_grid(case)
            first = Check("probe_ladder", case.spec.threads, 0, blocks * 5, words, 0.0,
                          f"C of a {m}x{n}x{k} problem, bit for bit ({blocks} blocks)", grid=blocks)
        return [first,
                Check(VERIFY, 1, 1, 1, expected, 0.0,
                      f"the {case.m}x{case.n}x{case.k} problem against the exact product (f64): elements beyond the "
                      f"{unit} bound K x {'2^-22' if unit == 'HMMA' else '2^-23'} x sum |a b| (expected 0)")]

    def attach(self, case: LadderCase | LadderLibraryCase, probe, device) -> Attachment:
        import harness.families.ladder.gpu as gpu

        return gpu.attach(case, probe, device)

    # -- measurement ----------------------------------------------------------------------------------

    def work(self, case: LadderCase) -> Work:
        return Work(case.flops, "FLOP")

    def peak(self, case: LadderCase | LadderLibraryCase) -> float | None:
        return float(TENSOR_FLOPS_PER_CYCLE) if isinstance(case, LadderCase) and case.spec.unit == "HMMA" else FFMA_PEAK

    def plan(self, case: LadderCase | LadderLibraryCase, device=None) -> list:
        if isinstance(case, LadderLibraryCase):  # the call alone, timed as a kernel is (no clock of its own)
            return [WholeKernel(KERNEL, 1, 1, launch={"problem": "measured"}, records=False,
                                notes=case.anchor.description)]
        return [WholeKernel("probe_ladder", grid(case), case.spec.threads, anchor=KERNEL,
                            launch={"problem": "measured"},
                            notes=f"{case.tiles} tiles of {case.spec.bm}x{case.spec.bn}; the anchor: "
                                  + ("cuBLAS SGEMM" if case.dtype == "f32" else "cuBLAS f16 (cublasGemmEx, f32 out)"))]

    def describe(self, case: LadderCase | LadderLibraryCase) -> list[str]:
        shape = (f"C[{case.m}, {case.n}] = A[{case.m}, {case.k}] . B[{case.n}, {case.k}]^T, {case.dtype} in, f32 "
                 "accumulate, f32 out")
        if isinstance(case, LadderLibraryCase):
            return [shape, f"{case.step}: {case.anchor.description}"]
        return [shape, f"{case.step}: {case.spec.what} ({case.spec.threads} threads a block, {case.tiles} blocks)"]

    def headline(self, metric: str) -> dict | None:
        return None

    def figures(self, context) -> list:
        from harness.families.ladder.figures import figures

        return figures(context)

    def findings(self, context) -> list:
        """The GEMM ladder of each GPU model's newest runs, from the naive kernel to the best wgmma pipeline."""
        from harness.families.ladder.figures import findings

        return findings(context)

    @staticmethod
    def paper_case(figure) -> tuple[str, str] | str | None:
        """The seed GEMM chapter's steps (harness/db/data/references/article_gemm_chapter_a100.csv: an A100 at
        1024^3) and the HGEMM worklog's step 1 (a CUDA-core kernel, 4096^3: its stated size): our step at the
        figure's size, or why a figure has none; None for any other figure."""
        step = figure.instruction.removeprefix("gemm chapter ").removeprefix("step ").removeprefix("api ")
        if figure.instruction.startswith("hgemm worklog step "):
            if figure.instruction != "hgemm worklog step 1" or figure.metric != "throughput_tflops":
                return None
            if (figure.m, figure.n, figure.k) != (4096, 4096, 4096):
                return "the worklog's size is 4096^3 (the seed's section 2.11): step 1 is mapped there only"
            return _cases.case("reg-tiled", 4096).case_id, "throughput_tflops"
        if not figure.instruction.startswith("gemm chapter "):
            return None
        step = PAPER_STEPS.get(step, step)
        if step == "cublas-f16" and figure.metric == "throughput_tflops":
            return LIBRARY_F16.format(m=figure.m, n=figure.n, k=figure.k), figure.metric
        if step in PAPER_UNEXPRESSED:
            return PAPER_UNEXPRESSED[step]
        if step not in _cases.ORDER or figure.metric not in ("throughput_tflops", "peak_fraction"):
            return None
        if step == _cases.LIBRARY_STEP and figure.metric == "peak_fraction":
            return "a library call writes no clock here, so no peak fraction: its TFLOPS figure is mapped"
        return _cases.case(step, (figure.m, figure.n, figure.k)).case_id, figure.metric


FAMILY = LadderFamily()
