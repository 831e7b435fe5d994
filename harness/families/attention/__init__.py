"""Attention forward (sm_90a): the Family object. The second kernel on the pipeline layer (ptx/pipeline.cuh).

A case is O = softmax(Q K^T / sqrt(D)) V over a batch of heads (ptx/attention.cu.in): a TMA producer loads each
tile's Q once and each block's K and V into the ring; two consumer warpgroups of 64 query rows run S = Q K^T (wgmma
SS), the online softmax in registers (ex2, the running max and sum) and O += P V (wgmma RS, P from registers, V
read N-major). cuDNN's fused attention on the same inputs is the anchor (harness/anchors/cudnn.py): in each case's
rounds, and as a case of its own (cases.CudnnCase, `cudnn.sdpa.<problem>`: no template; its call is the probe's host
kernel anchors.KERNEL, validated against the same f64 reference and bound, and timed by the same method).

Every case is validated twice before it is timed:
    the check problem   one batch, two heads, a sequence of 2 x stages + 1 key blocks at least: O against the f64
                        softmax of the same inputs, within the arithmetic's bound element by element
                        (problem.py bound)
    the measured one    normal(0, 1) inputs at the case's size: 256 query rows of three heads against f64, within
                        the same bound (expected 0 elements beyond it)
then timed by methods.WholeKernel: rounds of back-to-back launches alternating with cuDNN on the same inputs, the
ratio taken round by round; in-kernel counters say where the time went.
"""

from __future__ import annotations

import numpy as np

import harness.families.attention.cases as _cases
import harness.families.attention.ids as _ids
import harness.families.attention.refusals as _refusals
import harness.families.attention.suite_cases as _suite_cases
from harness.anchors import KERNEL, VERIFY
from harness.dtypes import decode, encode
from harness.families.attention.cases import AttentionCase, CudnnCase, check_case
from harness.families.attention.problem import (COUNTER_WORDS, COUNTERS, PROBLEM, SAMPLED_ROWS, TENSOR_FLOPS_PER_CYCLE,
                                                c_float, check_grid, check_reference, grid, scale_log2,
                                                tensor_elements)
from harness.families.base import Attachment, Check, Family, Inputs, InFlight, KernelExpectation, SassExpectation, Suite, Work
from harness.families.pipeline import skeleton_params
from harness.measure.methods import WholeKernel


def _suites() -> dict[str, Suite]:
    return {
        "attention": Suite("attention forward in the FA3 paper's setting (16k tokens, 2048 wide): bf16 at head dims "
                           "64, 128, 256, sequences 1k..16k, causal and not, and f16 at 128; cuDNN beside each",
                           _suite_cases.everyday),
        "attention-turns": Suite("the attention suite's bf16 cases with the two consumer warpgroups taking turns at the "
                                 "tensor cores (FA3's ping-pong), cuDNN beside each", _suite_cases.turns),
        "attention-overlap": Suite("the attention suite's bf16 cases with each warpgroup's softmax overlapped with "
                                   "its P V of the block before (FA3's intra-warpgroup overlap), 3 stages at head "
                                   "dims 64 and 128; cuDNN beside each", _suite_cases.overlapped),
        "attention-tmastore": Suite("FA3's schedule at head dims 64 and 128, 4k-16k, causal and not, with turns and "
                                    "without, its epilogue through Q's buffer and a TMA store beside the same "
                                    "writing O from registers; cuDNN beside each", _suite_cases.tma_stored),
        "attention-fa3": Suite("FA3's whole schedule (the softmax overlapped inside each warpgroup, the two taking "
                               "turns at the tensor cores) at head dims 64 and 128, 4k..16k, with the overlapped and "
                               "the serial cases beside it; cuDNN beside each", _suite_cases.overlapped_turns),
        "attention-persistent": Suite("FA3's whole schedule at head dims 64 and 128, 4k..16k, causal and not, on a "
                                      "persistent grid beside one CTA per tile; cuDNN beside each",
                                      _suite_cases.persistent),
        "attention-quick": Suite("attention forward, bf16, head dim 128, sequence 4k, causal and not",
                                 _suite_cases.quick),
    }


class AttentionFamily(Family):
    name = "attention"
    description = "attention forward: a TMA producer, wgmma QK^T, online softmax and PV on the pipeline layer"
    id_prefixes = ("attention.", _cases.ANCHOR_PREFIX)
    example_id = "attention.bf16.4x4096x16x128.tile128x128.s2.wg2.setmaxnreg"
    template = "attention.cu.in"

    cases = staticmethod(_suite_cases.cases)
    parse = staticmethod(_ids.parse)
    check = staticmethod(_refusals.check)
    suites = staticmethod(_suites)

    @property
    def model(self):
        """A block's cycles from the tensor-core and MUFU bounds, per schedule (model.py)."""
        from harness.families.attention.model import AttentionModel

        return AttentionModel()

    # -- the probe -----------------------------------------------------------------------------------

    def template_params(self, case: AttentionCase) -> dict[str, object]:
        self.check(case)
        s_acc, o_acc = case.bn // 2, case.head_dim // 2
        dt = case.dtype
        return {
            **skeleton_params(case),
            **(dict(zip(("producer_regs", "consumer_regs"), _cases.overlap_regs(case))) if case.overlap else {}),
            "problem": PROBLEM.render(), "dtype": dt, "head_dim": case.head_dim,
            "bm": case.bm, "bn": case.bn, "causal": str(case.causal).lower(), "turns": str(case.turns).lower(),
            "overlap": str(case.overlap).lower(), "paired": str(case.paired).lower(),
            "scale_log2": c_float(scale_log2(case)),
            "qk_instruction": f"wgmma.mma_async.sync.aligned.m64n{case.bn}k16.f32.{dt}.{dt}",
            "qk_operands": ", ".join(f"%{i}" for i in range(s_acc)),
            "qk_constraints": ", ".join(f'"+f"(s[{i}])' for i in range(s_acc)),
            "qk_desc_a_operand": s_acc, "qk_desc_b_operand": s_acc + 1, "qk_scale_operand": s_acc + 2,
            "pv_instruction": f"wgmma.mma_async.sync.aligned.m64n{case.head_dim}k16.f32.{dt}.{dt}",
            "pv_operands": ", ".join(f"%{i}" for i in range(o_acc)),
            "pv_constraints": ", ".join(f'"+f"(o[{i}])' for i in range(o_acc)),
            "pv_a0": o_acc, "pv_a1": o_acc + 1, "pv_a2": o_acc + 2, "pv_a3": o_acc + 3, "pv_desc_b_operand": o_acc + 4,
        }

    def sass_expectation(self, case: AttentionCase) -> SassExpectation:
        """A block of keys: D / 16 HGMMA of S (m64nBN, shared-memory A) and BN / 16 of P V (m64nD, A from registers);
        BN / 2 MUFU.EX2 of P per thread and 2 of the rescale; the TMA loads (K and V per panel, Q per panel; a cluster's
        K and V as multicasts, Q each CTA's own); no spills. In series the kernel holds each once. Overlapped
        (ptx/pipeline.cuh's consume_kblocks_lookahead): S five times (the first block's, the second's, the loop's two,
        the odd one after it), P V seven (the loop's two, the odd one, the last block's two parities' and their closing
        ones), the softmax six; a causal kernel walks a one-block tile in series besides (once more each). And the
        overlap itself: the exponentials of the loop's two blocks at least issued while a P V is in flight. The TMA
        store's epilogue (`.tmastore`): one UTMASTG.3D per panel."""
        bf = ".BF16" if case.dtype == "bf16" else ""
        qk = f"HGMMA.64x{case.bn}x16.F32{bf}"
        pv = f"HGMMA.64x{case.head_dim}x16.F32{bf}"
        copies_qk, copies_pv, copies_softmax = (5, 7, 6) if case.overlap else (2, 2, 2) if case.paired else (1, 1, 1)
        if case.overlap and case.causal:
            copies_qk, copies_pv, copies_softmax = copies_qk + 1, copies_pv + 1, copies_softmax + 1
        n_qk, n_pv = case.head_dim // 16 * copies_qk, case.bn // 16 * copies_pv
        panels = case.head_dim // _cases.PANEL
        if pv == qk:  # one opcode for both (bn = head dim): the count is their sum
            gemms = (("probe_attention", KernelExpectation(qk, n_qk + n_pv)),)
        else:
            gemms = (("probe_attention", KernelExpectation(qk, n_qk)), ("probe_attention", KernelExpectation(pv, n_pv)))
        per_block = case.bn // 2 + 2
        # the TMA loads: Q, K and V per panel; a cluster's K and V parts multicast (Q each CTA's own)
        load, multicast = "UTMALDG.3D", "UTMALDG.3D.MULTICAST"
        loads = ((("probe_attention", KernelExpectation(load, panels, exclude=(multicast,))),
                  ("probe_attention", KernelExpectation(multicast, 2 * panels))) if case.cluster > 1
                 else (("probe_attention", KernelExpectation(load, 3 * panels)),))
        # the TMA store's epilogue: one store per panel (a warpgroup's box; one thread issues them)
        stores = ((("probe_attention", KernelExpectation("UTMASTG.3D", panels)),) if case.epilogue == "tmastore"
                  else ())
        kernels = (gemms + (("probe_attention", KernelExpectation("MUFU.EX2", per_block * copies_softmax)),) + loads
                   + stores)
        in_flight = (("probe_attention", InFlight("MUFU.EX2", ".tnspB", 2 * per_block)),) if case.overlap else ()
        return SassExpectation(kernels, executes=f"{case.head_dim // 16} x {qk} and {case.bn // 16} x {pv} per block "
                               f"of {case.bn} keys; {per_block} MUFU.EX2 per thread",
                               invalidating_notes=("C7510", "C7511", "C7514", "C7515", "C7517", "C7518"),
                               spill_kernels=("probe_attention",), in_flight=in_flight)

    # -- correctness ---------------------------------------------------------------------------------

    def inputs(self, case: AttentionCase, rng: np.random.Generator) -> Inputs:
        """The check problem's Q, K, V ([1, seq, 2, D]): normal(0, 1) rounded to the case's type."""
        small = check_case(case)
        shape = (small.batch, small.seq, small.heads, small.head_dim)
        values, bits = {}, []
        for name in ("Q", "K", "V"):
            code = encode(case.dtype, rng.standard_normal(shape))
            values[name] = decode(case.dtype, code)
            bits.append(code.ravel())
        return Inputs(np.concatenate(bits).view(np.uint8), values,
                      f"normal(0, 1) Q, K, V rounded to {case.dtype}; check problem seeded here, measured one on the "
                      "GPU")

    def output_words(self, case: AttentionCase) -> int:
        return tensor_elements(check_case(case)) // 2

    def decode(self, case: AttentionCase, words: np.ndarray) -> np.ndarray:
        """O's elements (two per word, the lower first) as float64; a one-word host check's count as itself."""
        words = np.asarray(words, dtype=np.uint32)
        halves = np.stack([words & 0xFFFF, words >> 16], axis=-1).ravel()
        return decode(case.dtype, halves.astype(np.uint16))

    def checks(self, case: AttentionCase | CudnnCase, inputs: Inputs) -> list[Check]:
        """O of the check problem against the f64 softmax within the bound (problem.py), then the measured problem's
        sampled rows the same way; cuDNN's case: the same two, its call (KERNEL) at iters 0 on the check problem."""
        small = check_case(case)
        o, tolerance = check_reference(case, inputs.values)
        label = (f"O of a {small.batch}x{small.seq}x{small.heads}x{small.head_dim} problem against the f64 softmax, "
                 "within the arithmetic's bound")
        if isinstance(case, CudnnCase):
            checks = [Check(KERNEL, 1, 0, 1, o.ravel(), tolerance.ravel(), f"{label} ({case.anchor.library})")]
        else:
            blocks = check_grid(case)
            label += f" ({blocks} tiles, {small.seq // small.bn} key blocks through {case.stages} stages)"
            checks = [Check("probe_attention", case.threads, 0, blocks * (5 + COUNTER_WORDS), o.ravel(),
                            tolerance.ravel(), label, grid=blocks)]
        # the measured problem: its count of elements beyond the bound (as the case's type) in word 0, zeros after it
        checks.append(Check(VERIFY, 1, 1, 1, np.zeros(2 * self.output_words(case)), 0.0,
                            f"the {case.batch}x{case.seq}x{case.heads}x{case.head_dim} problem: {SAMPLED_ROWS} query rows "
                            "of three heads against f64, elements beyond the bound (expected 0)"))
        return checks

    # -- on the GPU ------------------------------------------------------------------------------------

    def attach(self, case: AttentionCase | CudnnCase, probe, device) -> Attachment:
        import harness.families.attention.gpu as gpu

        return (gpu.attach_anchor if isinstance(case, CudnnCase) else gpu.attach)(case, probe, device)

    # -- measurement ----------------------------------------------------------------------------------

    def work(self, case: AttentionCase) -> Work:
        return Work(case.flops, "FLOP")

    def peak(self, case: AttentionCase) -> float | None:
        return float(TENSOR_FLOPS_PER_CYCLE)

    def plan(self, case: AttentionCase | CudnnCase, device=None) -> list:
        from harness.anchors.cudnn import anchor

        library = anchor()
        if isinstance(case, CudnnCase):  # the call alone, timed as a kernel's rounds time it (no clock of its own)
            return [WholeKernel(KERNEL, 1, 1, launch={"problem": "measured"}, records=False, energy=True,
                                notes=library.description or library.missing)]
        sm_count = device.sm_count if device is not None else 132
        return [WholeKernel("probe_attention", grid(case, sm_count), case.threads, anchor=KERNEL if library.available() else None,
                            counters=COUNTERS, energy=True, words=COUNTER_WORDS, launch={"problem": "measured"},
                            notes=f"{case.tiles} tiles of {case.bm} query rows, {case.kblocks} key blocks of {case.bn}"
                                  f"{' (causal: up to the diagonal)' if case.causal else ''}; {library.note()}")]

    def describe(self, case: AttentionCase | CudnnCase) -> list[str]:
        problem = (f"O = softmax(Q K^T / sqrt({case.head_dim}){' + causal mask' if case.causal else ''}) V: batch "
                   f"{case.batch}, sequence {case.seq}, {case.heads} heads of {case.head_dim}, {case.dtype} in and "
                   "out, f32 scores and sums; [batch, seq, heads, D] tensors")
        if isinstance(case, CudnnCase):
            library = case.anchor
            return [problem, f"{library.description}, on CuPy's stream" if library.available() else library.missing,
                    f"{case.flops / 1e12:.3f} TFLOP per call" + (" (causal: half the full count)" if case.causal
                                                                else "")]
        return [problem,
                f"{case.tiles} tiles of {case.bm} query rows (one CTA each"
                + (f"; clusters of {case.cluster} on adjacent tiles of a head, each CTA loading 1/{case.cluster} of "
                   "every block's K and V and multicasting it" if case.cluster > 1 else "")
                + f"), blocks of {case.bn} keys through "
                f"{case.stages} stages of {2 * case.bn * case.head_dim * 2 // 1024} KiB (K and V), Q "
                f"{case.bm * case.head_dim * 2 // 1024} KiB",
                f"{case.consumers} consumer warpgroups of 64 rows: S = Q K^T (wgmma SS), online softmax (ex2), "
                "O += P V (wgmma RS, P from registers)"
                + (", a block's softmax under the block before's P V" if case.overlap
                   else ", a block's S and the block before's P V issued together, both waited for before the softmax"
                   if case.paired else ", in series")
                + ("; the two take turns at the tensor cores (a turn: P V of a block and QK^T of the next)"
                   if case.turns else "; the two run freely")
                + ("; setmaxnreg" if case.rebalance else ""),
                f"{case.flops / 1e12:.3f} TFLOP per launch" + (" (causal: half the full count)" if case.causal
                                                               else "")]

    def headline(self, metric: str) -> dict | None:
        return None

    def figures(self, context) -> list:
        from harness.families.attention.figures import figures

        return figures(context)

    def findings(self, context) -> list:
        from harness.families.attention.figures import findings

        return findings(context)


FAMILY = AttentionFamily()
