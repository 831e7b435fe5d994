"""GEMM pipelines (sm_90a): the Family object. From instructions to kernels.

A pipeline case is a warp-specialized Hopper GEMM (ptx/gemm.cu.in): a producer warp streams TMA tiles
of A and B into a ring of shared-memory stages, one or two consumer warpgroups run wgmma over each
k-block, an epilogue writes C. A library case (cases.LibraryCase) is an anchor (harness/anchors): cuBLAS's
cublasGemmEx, or cuBLASLt's fp8 matmul, on the same problem, with no template. The case types: cases.py; ids:
ids.py; what cannot be built: refusals.py; named configurations: configs.py; the suites' cases: suite_cases.py; GPU
resources and the library's calls: gpu.py; the planner (the family's model): model.py. The report: figures.py (its
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

import numpy as np

from harness.anchors import KERNEL
from harness.families.base import Attachment, Check, Family, Inputs, KernelExpectation, SassExpectation, Suite, Work
import harness.families.gemm.cases as _cases
import harness.families.gemm.configs as _configs
import harness.families.gemm.ids as _ids
import harness.families.gemm.refusals as _refusals
import harness.families.gemm.suite_cases as _lists
from harness.families.gemm.cases import GemmCase, LibraryCase
from harness.families.gemm.problem import (CHECK_SCALES, CHECK_VALUES, CONSUMER_REGS, COUNTER_WORDS, COUNTERS,
                                           MEASURED_INPUTS, MEASURED_INTEGERS, POISON, PROBLEM,
                                           PRODUCER_REGS, TENSOR_FLOPS_PER_CYCLE, VERIFY_ATOL, VERIFY_RTOL, FP8_SUM_BITS,
                                           block_scaled_product, check_grid, check_problem, grid, scale_offsets,
                                           threads, to_bits)
from harness.families.pipeline import skeleton_params
from harness.measure.methods import WholeKernel

def _suites() -> dict[str, Suite]:
    return {
        "gemm": Suite("GEMM pipelines at 8192^3 f16: the seed worklog's ladder, a stage sweep for four tiles, the "
                      "mainloop alone (one tile per SM, long K), and cuBLAS beside them", _lists.everyday),
        "gemm-full": Suite("runs of record: the gemm suite, the ladder at 4096^3, the best pipeline and cuBLAS at "
                           "2048..16384 and skinny M, f16 and bf16, one change at a time from the best, and the best on "
                           "128 SMs (the worklog's)",
                           _lists.full),
        "gemm-quick": Suite("one pipeline and cuBLAS at 2048^3", _lists.quick),
        "gemm-fp8": Suite("fp8 (e4m3) at 2048^3..16384^3: the best configuration with its promotion after each "
                          "k-block and overlapped, cuBLASLt without and with fast accumulation beside it, and "
                          "128x128's stage sweep at 4096^3", _lists.fp8),
        "gemm-pingpong": Suite("the ping-pong schedule (consumer warpgroups alternating whole tiles) beside the best "
                               "cooperative configuration and cuBLAS at 4096^3 and 8192^3, f16 and fp8",
                               _lists.pingpong),
        "gemm-multicast": Suite("B multicast to a cluster of 4 against 2, f16 and fp8 at 4096^3 and 8192^3, on every SM "
                                "and on 128, with the library", _lists.multicast),
        "gemm-skinny": Suite("skinny and decode GEMMs (M = 16..256 at N = K = 8192, f16): 64- and 128-row tiles "
                             "with and without split-K, a partial last tile where M < 64, and cuBLAS", _lists.skinny),
        "gemm-protocol": Suite("the worklog's published figures by their protocol: the best f16 configuration and "
                               "cuBLAS at 4096^3, random, integer and zero inputs, each in sustained rounds and in a "
                               "burst of 8 launches after 5 s idle (docs/gemm.md)", _lists.protocol),
        "gemm-heuristics": Suite("the planner's top five beside nvMatmulHeuristics' (NVIDIA's predictor, mapped to "
                                 "our cases where it can be) at 4096^3, 8192^3 and three LLM projections, f16, with "
                                 "cuBLAS: `bench plan --against nvmh --run N` gives each one's regret",
                                 _heuristics),
    }


def _heuristics() -> list[GemmCase]:
    """`gemm-heuristics` (heuristics.py): the planner's first five and nvMatmulHeuristics' first five that map, at
    4096^3, 8192^3 and three LLM projections, f16, with cuBLAS."""
    from harness.families.gemm.heuristics import suite

    return suite()


def _measured_check(case: GemmCase) -> str:
    """What the measured problem's check compares, by its inputs (problem.measured_bound)."""
    if case.inputs == "zero":
        return "every element exactly zero (zero inputs; expected 0 beyond)"
    if case.inputs == "int":
        low, high = MEASURED_INTEGERS
        return (f"integers {low}..{high}: every element against the exact sum (f64), exact where the sum is an integer "
                f"of {case.out_dtype}, within its rounding beyond (expected 0 beyond)")
    return f"elements beyond {VERIFY_ATOL} + {VERIFY_RTOL:.4f} x |cuBLAS| (expected 0)"


def _all_cases() -> list[GemmCase]:
    return list(dict.fromkeys(_lists.cases() + _heuristics()))


class GemmFamily(Family):
    name = "gemm"
    description = "GEMM pipelines: warp-specialized TMA -> wgmma mainloops, and cuBLAS on the same problems"
    id_prefixes = ("gemm.", "cublas.", "cublaslt.")
    example_id = "gemm.f16.8192x8192x8192.tile128x256x64.s3.wg2.setmaxnreg.cluster2.persistent-grouped.tmastore"
    template = "gemm.cu.in"

    cases = staticmethod(_all_cases)
    parse = staticmethod(_ids.parse)
    check = staticmethod(_refusals.check)
    suites = staticmethod(_suites)

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

    # -- the probe -----------------------------------------------------------------------------------

    def template_params(self, case: GemmCase) -> dict[str, object]:
        self.check(case)
        acc = case.bn // 2
        return {
            **skeleton_params(case), "problem": PROBLEM.render(),
            "dtype": case.dtype, "out_dtype": case.out_dtype, "in_bytes": case.in_bytes,
            "wgmma_k": case.wgmma_k, "bm": case.bm, "bn": case.bn, "bk": case.bk,
            "instruction": f"wgmma.mma_async.sync.aligned.m64n{case.bn}k{case.wgmma_k}.f32.{case.dtype}.{case.dtype}",
            # scale-a, scale-b, and for 16-bit inputs the transposes (K-major: none); fp8 takes no transpose
            "immediates": "1, 1" if case.in_bytes == 1 else "1, 1, 0, 0",
            "promote": str(case.promote).lower(),
            "overlap": str(case.promotion in ("overlap", "pipelined") + _cases.CARRIED).lower(),
            "pipelined": str(case.promotion == "pipelined").lower(),
            "carried": str(case.promotion in _cases.CARRIED).lower(),
            "deferred": str(case.promotion == "deferred").lower(),
            "staggered": str(case.promotion == "staggered").lower(), "pipeline_group": case.group,
            "blockscale": str(case.block_scaled).lower(),
            "d_operands": ", ".join(f"%{i}" for i in range(acc)),
            "d_constraints": ", ".join(f'"+f"(d[{i}])' for i in range(acc)),
            "desc_a_operand": acc, "desc_b_operand": acc + 1, "scale_operand": acc + 2,
        }

    def sass_expectation(self, case: GemmCase) -> SassExpectation:
        """The mainloop's k-block: BK / K x (rows per consumer / 64) HGMMA (QGMMA for fp8), once in the kernel
        (its loop is not unrolled); the TMA loads; no spills."""
        if case.dtype == "e4m3":
            mnemonic = f"QGMMA.64x{case.bn}x32.F32.E4M3.E4M3"
        else:
            mnemonic = f"HGMMA.64x{case.bn}x16.F32" + (".BF16" if case.dtype == "bf16" else "")
        per_kblock = (case.bk // case.wgmma_k) * (case.wg_rows // 64)
        # an overlapped promotion's k-block walk has three copies of the k-block's wgmma: a pair (one per accumulator
        # set, pipeline.cuh consume_kblock_pairs) and an odd count's last; a pipelined one's, a group's k-blocks and
        # the k-block walked alone (consume_kblock_groups); a carried one's, the tile's first k-block, the loop's
        # pair and an even count's last (consume_kblocks_carried)
        copies = {"overlap": 3, "pipelined": case.group + 1, "carried": 4, "deferred": 4}.get(case.promotion, 1)
        load, multicast = "UTMALDG.2D", "UTMALDG.2D.MULTICAST"
        kernels = [("probe_gemm", KernelExpectation(mnemonic, per_kblock * copies)),  # A, and B unless multicast
                   ("probe_gemm", KernelExpectation(load, 1 if case.cluster > 1 else 2, exclude=(multicast,)))]
        if case.cluster > 1:
            kernels.append(("probe_gemm", KernelExpectation(multicast, 1)))
        if case.epilogue == "tmastore":
            # a 64-column box each; a deferred epilogue's store is in two places (under the next tile's first k-block,
            # and the CTA's last tile after its walk)
            stores = 2 if case.promotion == "deferred" else 1
            kernels.append(("probe_gemm", KernelExpectation("UTMASTG.2D", stores * case.bn // 64)))
        if case.promotion == "staggered":  # a warpgroup's arrival after it issued a k-block (the other's turn)
            kernels.append(("probe_gemm", KernelExpectation("BAR.ARV", 1)))
        if case.splits > 1:  # split-K: a run's arrival at its tile's counter (acq_rel, the GPU's scope)
            kernels.append(("probe_gemm", KernelExpectation("ATOMG.E.ADD.S32.STRONG.GPU", 1)))
        return SassExpectation(tuple(kernels), executes=f"{per_kblock} x {mnemonic} per k-block",
                               invalidating_notes=("C7510", "C7511", "C7514", "C7515", "C7517", "C7518"),
                               spill_kernels=("probe_gemm",))

    # -- correctness ---------------------------------------------------------------------------------

    def inputs(self, case: GemmCase, rng: np.random.Generator) -> Inputs:
        """The check problem's A (M x K) and B (N x K): small integers, exact in f16, bf16 and e4m3; the
        measured problem's normal(0, 1) inputs are drawn on the GPU (gpu.py; e4m3: rounded to it there)."""
        m, n, k = check_problem(case)
        low, high = CHECK_VALUES
        a = rng.integers(low, high + 1, (m, k)).astype(np.float64)
        b = rng.integers(low, high + 1, (n, k)).astype(np.float64)
        buffer = np.concatenate([to_bits(a, case.dtype).ravel(), to_bits(b, case.dtype).ravel()]).view(np.uint8)
        values = {"A": a, "B": b}
        distribution = f"check: integers {low}..{high}; measured: {MEASURED_INPUTS[case.inputs]} {case.dtype}" + (
            "" if case.inputs == "zero" else ", seeded, drawn on the GPU")
        if case.block_scaled:  # scales of powers of two (C exact), after A and B at problem.scale_offsets
            blocks = k // _cases.SCALE_BLOCK
            values["scale_a"] = rng.choice(CHECK_SCALES, (blocks, m))
            values["scale_b"] = rng.choice(CHECK_SCALES, (n // _cases.SCALE_BLOCK, blocks))
            _, at, _ = scale_offsets(case)
            scales = np.concatenate([values["scale_a"].ravel(), values["scale_b"].ravel()]).astype(np.float32)
            buffer = np.concatenate([buffer, np.zeros(at - buffer.size, np.uint8), scales.view(np.uint8)])
            distribution += ("; block scales: check, powers of two 0.5..2; measured, uniform in [0.5, 2) f32 (A's per "
                             "row and 128 of K, B's per 128 x 128)")
        return Inputs(buffer, values, distribution)

    def output_words(self, case: GemmCase) -> int:
        m, n, _ = check_problem(case)
        return m * n // 2

    def decode(self, case: GemmCase, words: np.ndarray) -> np.ndarray:
        return np.asarray(words[:self.output_words(case)], dtype=np.uint32).astype(np.float64)

    def checks(self, case: GemmCase | LibraryCase, inputs: Inputs) -> list[Check]:
        """C of the check problem bit for bit (an exact f32 sum rounded once, as the kernel does); then the
        measured problem against cuBLAS, where a k-block dropped or a tile misplaced moves an element by
        several units (normal inputs: a k-block adds about 8 to it) and the tolerance is 0.05 + 1/128 of it.
        The library: the check problem bit for bit, its call at iters 0."""
        a, b = inputs.values["A"], inputs.values["B"]
        if case.block_scaled:  # integers times powers of two: exact in f64, and in the kernel's f32
            exact = block_scaled_product(np, a, b, inputs.values["scale_a"], inputs.values["scale_b"],
                                         _cases.SCALE_BLOCK)
        else:
            exact = a.astype(np.float32) @ b.astype(np.float32).T  # integers below 2^24: exact in f32
        words = to_bits(exact, case.out_dtype).ravel().view(np.uint32).astype(np.float64)
        m, n, k = check_problem(case)
        label = f"C of a {m}x{n}x{k} problem, bit for bit"
        if isinstance(case, LibraryCase):
            return [Check(KERNEL, 1, 0, 1, words, 0.0, f"{label} ({case.anchor.library})")]
        grid = check_grid(case)
        label += f" ({grid} blocks, {k // case.bk} k-blocks through {case.stages} stages)"
        checks = [Check("probe_gemm", threads(case), 0, grid * (5 + COUNTER_WORDS), words, 0.0, label, grid=grid)]
        expected = np.full(self.output_words(case), POISON, dtype=np.float64)
        expected[0] = 0
        checks.append(Check("probe_verify", 1, 1, 1, expected, 0.0,
                            f"the {case.m}x{case.n}x{case.k} problem against cuBLAS on the same inputs: "
                            + (f"elements beyond the exact product (f64) by more than the arithmetic's bound "
                               f"(problem.fp8_bound: {case.bk // case.wgmma_k} roundings of 2^-{FP8_SUM_BITS} per "
                               f"k-block, f32 across them, f16 out; expected 0)"
                               if case.promote else
                               _measured_check(case))))
        return checks

    # -- on the GPU ------------------------------------------------------------------------------------

    def attach(self, case: GemmCase | LibraryCase, probe, device) -> Attachment:
        import harness.families.gemm.gpu as gpu

        return (gpu.attach_library if isinstance(case, LibraryCase) else gpu.attach)(case, probe, device)

    # -- measurement ----------------------------------------------------------------------------------

    def work(self, case: GemmCase) -> Work:
        return Work(case.flops, "FLOP")

    def peak(self, case: GemmCase) -> float | None:
        return float(TENSOR_FLOPS_PER_CYCLE * case.mma_rate)

    def plan(self, case: GemmCase | LibraryCase, device=None) -> list:
        if case.protocol == "burst":
            return [self._burst(case, device)]
        if isinstance(case, LibraryCase):  # the call alone, timed as a kernel is (no clock of its own)
            return [WholeKernel(KERNEL, 1, 1, launch={"problem": "measured"}, records=False, energy=True,
                                notes=case.anchor.description)]
        sm_count = device.sm_count if device is not None else 132
        anchor = _configs.library(case.dtype, (case.m, case.n, case.k), scaling=case.scaling).anchor
        return [WholeKernel("probe_gemm", grid(case, sm_count), threads(case),
                            anchor=KERNEL if anchor.available() else None, counters=COUNTERS, energy=True,
                            words=COUNTER_WORDS, launch={"problem": "measured"},
                            notes=f"{case.tiles} tiles of {case.bm}x{case.bn}, "
                                  + (f"{case.splits} runs of {case.kblocks} k-blocks each (split-K)" if case.splits > 1
                                     else f"{case.kblocks} k-blocks each") + f"; {anchor.note()}")]

    @staticmethod
    def _burst(case: GemmCase | LibraryCase, device) -> WholeKernel:
        """The seed worklog's protocol: a batch of WORKLOG_BATCH launches after WORKLOG_IDLE_S of idle, the kernel or
        the library alone (methods/whole_kernel.py _measure_burst)."""
        burst = dict(launch={"problem": "measured", "protocol": "burst"}, idle_s=_cases.WORKLOG_IDLE_S,
                     burst_launches=_cases.WORKLOG_BATCH)
        if isinstance(case, LibraryCase):
            return WholeKernel(KERNEL, 1, 1, records=False, notes=case.anchor.description, **burst)
        sm_count = device.sm_count if device is not None else 132
        return WholeKernel("probe_gemm", grid(case, sm_count), threads(case), words=COUNTER_WORDS,
                           notes=f"{case.tiles} tiles of {case.bm}x{case.bn}, {case.kblocks} k-blocks each", **burst)

    def describe(self, case: GemmCase | LibraryCase) -> list[str]:
        shape = (f"C[{case.m}, {case.n}] = A[{case.m}, {case.k}] . B[{case.n}, {case.k}]^T, {case.dtype} in, f32 "
                 f"accumulate, {case.out_dtype} out")
        shape += "" if (case.inputs, case.protocol) == ("random", "sustained") else (
            f"; measured on {MEASURED_INPUTS[case.inputs]}, "
            + (f"timed in batches of {_cases.WORKLOG_BATCH} launches after {_cases.WORKLOG_IDLE_S:g} s idle"
               if case.protocol == "burst" else "timed in sustained rounds"))
        if isinstance(case, LibraryCase):
            return [shape, case.anchor.description + ", on CuPy's stream"]
        return [shape,
                f"tile {case.bm}x{case.bn}x{case.bk} ({case.tiles} tiles), {case.stages} stages of "
                f"{(case.bm + case.bn) * case.bk * case.in_bytes // 1024} KiB, {case.consumers} consumer warpgroup(s)"
                + (f", setmaxnreg {PRODUCER_REGS}/{CONSUMER_REGS}" if case.rebalance else ""),
                ("ping-pong: the consumer warpgroups take whole tiles in turn, one's epilogue under the other's "
                 "mainloop" if case.pingpong else "cooperative: each consumer warpgroup its rows of every tile"),
                (f"cluster of {case.cluster} on vertically adjacent tiles, B multicast" if case.cluster > 1 else "no cluster")
                + (f"; split-K: {case.splits} runs of {case.kblocks} k-blocks per tile, their f32 sums added by the "
                   "tile's last run" if case.splits > 1 else "")
                + (f"; M = {case.m} walked as {case.walk_m} (rows past M load as zeros, the TMA store clips them)"
                   if case.walk_m != case.m else "")
                + (f"; N = {case.n} walked as {case.walk_n} (B's rows past N load as zeros, the TMA store clips C's "
                   "columns)" if case.walk_n != case.n else "")
                + (f"; persistent, {case.order} order" if case.persistent else f"; one CTA per tile, {case.order} order"),
                "epilogue through shared memory and a TMA store" if case.epilogue == "tmastore"
                else "epilogue from registers"] + (
                    [("fp8 promotion pipelined: two k-block accumulator sets, k-block kb - 1 waited for and added into "
                      "f32 while k-block kb's wgmma run, kb left in flight through the next slot's wait"
                      if case.promotion == "pipelined" else
                      "fp8 promotion overlapped: two k-block accumulator sets, k-block kb - 1 added into f32 while "
                      "k-block kb's wgmma run" if case.promotion == "overlap" else
                      "fp8 promotion staggered: after each k-block (its wgmma waited for, then added into f32), the two "
                      "consumer warpgroups issuing their k-blocks in turn (named barriers)"
                      if case.promotion == "staggered" else
                      "fp8 promotion after each k-block: its wgmma waited for, then added into f32")]
                    if case.promote else []) + (
                    ["DeepSeek-V3 block scales: each k-block's sum times A's scale (its row, 1x128) and B's (128x128) as "
                     "it is added into f32; the scales loaded from global memory as the k-block is issued"]
                    if case.block_scaled else [])

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
