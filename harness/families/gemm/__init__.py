"""GEMM pipelines (sm_90a): the Family object. From instructions to kernels.

A pipeline case is a warp-specialized Hopper GEMM (ptx/gemm.cu.in): a producer warp streams TMA tiles
of A and B into a ring of shared-memory stages, one or two consumer warpgroups run wgmma over each
k-block, an epilogue writes C. A library case (cases.LibraryCase) is an anchor (harness/anchors): cuBLAS's
cublasGemmEx, or cuBLASLt's fp8 matmul, on the same problem, with no template. The case types: cases.py; ids:
ids.py; what cannot be built: refusals.py; named configurations: configs.py; the suites: suites.py, their cases:
suite_cases.py; the template's parameters: template.py; the SASS expected: sass.py; inputs and checks: checks.py; a
case in words: describe.py; GPU resources and the library's calls: gpu.py; the planner (the family's model): model.py. The report: figures.py (its
sections), frame.py (the rows they read), plots.py (the figures), worklog.py (the seed worklog's figures), findings.py.

Every case is validated twice before it is timed:
    the check problem   small integer-valued A and B (exact in f32), several tiles per CTA, every stage
                        of the ring reused: C must equal NumPy's bit for bit
    the measured one    normal(0, 1) inputs at the case's size: C against cuBLAS on the same inputs,
                        within a tolerance a dropped k-block or a misplaced tile cannot meet (a case's
                        integer or zero inputs: against the exact product, problem.measured_bound)
then timed by methods.WholeKernel: rounds of back-to-back launches alternating with cuBLAS on the same
inputs, the ratio taken round by round; in-kernel counters say where the time went. A `.burst` case is timed
as the seed worklog's code times it instead: batches of 8 launches after 5 s idle (protocol.py).
"""

from __future__ import annotations

from harness.anchors import KERNEL
from harness.families.base import Attachment, Family, Work
import harness.families.gemm.cases as _cases
import harness.families.gemm.checks as _checks
import harness.families.gemm.configs as _configs
import harness.families.gemm.describe as _describe
import harness.families.gemm.ids as _ids
import harness.families.gemm.refusals as _refusals
import harness.families.gemm.sass as _sass
import harness.families.gemm.suites as _suites
import harness.families.gemm.template as _template
from harness.families.gemm.cases import GemmCase, LibraryCase
from harness.families.pipeline import counted_kernel
from harness.families.gemm.problem import COUNTER_WORDS, COUNTERS, TENSOR_FLOPS_PER_CYCLE, grid, placement_copies, threads
from harness.measure.methods import WholeKernel


class GemmFamily(Family):
    name = "gemm"
    description = "GEMM pipelines: warp-specialized TMA -> wgmma mainloops, and cuBLAS on the same problems"
    id_prefixes = ("gemm.", "cublas.", "cublaslt.")
    example_id = "gemm.f16.8192x8192x8192.tile128x256x64.s3.wg2.setmaxnreg.cluster2.persistent-grouped.tmastore"
    template = "gemm.cu.in"

    cases = staticmethod(_suites.all_cases)
    parse = staticmethod(_ids.parse)
    check = staticmethod(_refusals.check)
    suites = staticmethod(_suites.suites)
    # the probe: its template's parameters (template.py) and the SASS it must show (sass.py); correctness (checks.py)
    template_params = staticmethod(_template.template_params)
    sass_expectation = staticmethod(_sass.expectation)
    inputs = staticmethod(_checks.inputs)
    output_words = staticmethod(_checks.output_words)
    decode = staticmethod(_checks.decode)
    checks = staticmethod(_checks.checks)
    describe = staticmethod(_describe.describe)

    @property
    def advisors(self):
        """`bench advise plan`: configurations ranked by the planner (advice.py)."""
        from harness.families.gemm.advice import PLAN

        return (PLAN,)

    @property
    def measurers(self):
        """`bench gemm`: any shape, the planner's first configurations measured beside the library (command.py)."""
        from harness.families.gemm.command import SHAPES

        return (SHAPES,)

    @property
    def model(self):
        """The planner: the pipeline's bounds from measured instruction figures (model.py)."""
        from harness.families.gemm.planner import GemmModel

        return GemmModel()

    # -- on the GPU ------------------------------------------------------------------------------------

    def attach(self, case: GemmCase | LibraryCase, probe, device) -> Attachment:
        import harness.families.gemm.gpu as gpu

        return (gpu.attach_library if isinstance(case, LibraryCase) else gpu.attach)(case, probe, device)

    # -- measurement ----------------------------------------------------------------------------------

    def work(self, case: GemmCase) -> Work:
        return Work(case.flops, "FLOP")

    def peak(self, case: GemmCase) -> float | None:
        return float(TENSOR_FLOPS_PER_CYCLE * case.mma_rate)

    @staticmethod
    def _launch(case: GemmCase | LibraryCase, device, **more) -> dict:
        """The measured problem's launch parameters: a cold placement's copies taken in turn (on this GPU's L2)."""
        launch = {"problem": "measured", **more}
        if case.placement == "cold" and device is not None:
            launch["copies"] = placement_copies(case, device.l2_bytes)
        return launch

    def plan(self, case: GemmCase | LibraryCase, device=None) -> list:
        if case.protocol == "burst":
            return [self._burst(case, device)]
        if isinstance(case, LibraryCase):  # the call alone, timed as a kernel is (no clock of its own)
            return [WholeKernel(KERNEL, 1, 1, launch=self._launch(case, device), records=False, energy=True,
                                notes=case.anchor.description)]
        sm_count = device.sm_count if device is not None else 132
        anchor = _configs.library(case.dtype, (case.m, case.n, case.k), scaling=case.scaling).anchor
        return [WholeKernel("probe_gemm", grid(case, sm_count), threads(case),
                            anchor=KERNEL if anchor.available() else None, counters=COUNTERS,
                            counted_kernel=counted_kernel("probe_gemm"), energy=True,
                            words=COUNTER_WORDS, launch=self._launch(case, device),
                            notes=f"{case.tiles} tiles of {case.bm}x{case.bn}, "
                                  + (f"{case.splits} runs of {case.kblocks} k-blocks each (split-K)" if case.splits > 1
                                     else f"{case.kblocks} k-blocks each") + f"; {anchor.note()}")]

    @staticmethod
    def _burst(case: GemmCase | LibraryCase, device) -> WholeKernel:
        """The seed worklog's protocol: a batch of WORKLOG_BATCH launches after WORKLOG_IDLE_S of idle, the kernel or
        the library alone (methods/whole_kernel.py _measure_burst)."""
        burst = dict(launch=GemmFamily._launch(case, device, protocol="burst"), idle_s=_cases.WORKLOG_IDLE_S,
                     burst_launches=_cases.WORKLOG_BATCH)
        if isinstance(case, LibraryCase):
            return WholeKernel(KERNEL, 1, 1, records=False, notes=case.anchor.description, **burst)
        sm_count = device.sm_count if device is not None else 132
        return WholeKernel("probe_gemm", grid(case, sm_count), threads(case), words=COUNTER_WORDS,
                           notes=f"{case.tiles} tiles of {case.bm}x{case.bn}, {case.kblocks} k-blocks each", **burst)

    def headline(self, metric: str) -> dict | None:
        return None

    @staticmethod
    def paper_case(figure) -> tuple[str, str] | str | None:
        """A figure of the seed HGEMM worklog (harness/db/data/references/article_hgemm_worklog_h100.csv): a step's,
        the pipeline case of its configuration (configs.WORKLOG_STEPS), or why a step has none
        (configs.WORKLOG_UNEXPRESSED); its cuBLAS figure, the library case; at the worklog's size, 4096^3, only (its
        section 2.11), and as measured by our default protocol (docs/gemm.md, "Published figures by their protocol":
        its own, a burst after idle, is the gemm-protocol suite's and the report's). None for any other figure."""
        prefix = "hgemm worklog "
        if not figure.instruction.startswith(prefix) or figure.metric != "throughput_tflops":
            return None
        shape = (figure.m, figure.n, figure.k)
        if shape != _configs.WORKLOG_SHAPE:
            return "the worklog's size is 4096^3 (the seed's section 2.11): its figures are mapped there only"
        if figure.instruction == prefix + "cublas":
            return _configs.library(figure.dtype_a, shape).case_id, "throughput_tflops"
        step = figure.instruction.removeprefix(prefix + "step ")
        if step in _configs.WORKLOG_UNEXPRESSED:
            return _configs.WORKLOG_UNEXPRESSED[step]
        config = _configs.WORKLOG_STEPS.get(step)
        if config is None:
            return None
        return _configs.pipeline(figure.dtype_a, shape, **config).case_id, "throughput_tflops"

    def figures(self, context) -> list:
        from harness.families.gemm.figures import figures

        return figures(context)

    def findings(self, context) -> list:
        from harness.families.gemm.findings import findings

        return findings(context)


FAMILY = GemmFamily()
