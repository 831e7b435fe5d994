"""SIMT instructions beside the tensor cores: the CUDA cores' f32 and packed-half arithmetic, the special-function
unit (MUFU: ex2, rcp, rsqrt, sqrt, lg2, sin, cos, tanh), shuffles, and the converts and permutes kernels pack
operands with. The Family object.

Each case is one instruction timed by chains of it (harness/families/chains.py): one dependent chain in one warp
(latency), eight independent chains in one warp (issue interval), and every SM with 1-32 warps x 1, 2, 4 chains
(results per cycle per SM, the unit of the CUDA C++ Programming Guide's throughput table). What each chain's
step is, what SASS it must compile to and how its result is known: ops.py. Cases and ids: cases.py. Probe
template: ptx/simt.cu.in. The published rates it is compared with: reference.py.

Beside this wiring: the chains' bodies and the template's parameters, kernels.py; the SASS expected, sass.py;
inputs and checks, checks.py; what is measured, plan.py; the suites, suites.py; wgmma (and TMA loads) beside a SIMT
instruction, overlap.py.
"""

from __future__ import annotations

from harness import seed_chapter
from harness.families.base import NOTHING_ATTACHED, Attachment, Family, Work
import harness.families.simt.chapter as _chapter
import harness.families.simt.checks as _checks
import harness.families.simt.kernels as _kernels
import harness.families.simt.overlap as _overlap
import harness.families.simt.plan as _plan
import harness.families.simt.sass as _sass
import harness.families.simt.suites as _suites
from harness.families.simt import ops as _ops
from harness.families.simt.cases import SimtCase, _all_cases, _check, _parse, _unit
from harness.families.simt.checks import expected_chain  # noqa: F401 (the family's names, as before the split)
from harness.families.simt.kernels import CHAINS, MAX_ILP  # noqa: F401
from harness.families.simt.overlap import OverlapCase
from harness.families.simt.plan import SWEEP_ILP, SWEEP_WARPS, interval_metric  # noqa: F401
from harness.families.simt.reference import PEAK_RESULTS_PER_SM


class SimtFamily(Family):
    name = "simt"
    description = "SIMT instructions beside the tensor cores: f32/f16x2 arithmetic, MUFU, shuffles, converts"
    id_prefixes = ("simt.",)
    example_id = "simt.ex2.approx.ftz.f32"
    template = "simt.cu.in"

    cases = staticmethod(_all_cases)
    parse = staticmethod(_parse)
    check = staticmethod(_check)
    suites = staticmethod(_suites.suites)

    @property
    def model(self):
        """The overlap model: what each side of a simt-overlap case keeps, from the two sides alone (model.py)."""
        from harness.families.simt.model import OverlapModel

        return OverlapModel()

    # -- the probe (kernels.py), what its SASS must show (sass.py) -------------------------------------

    template_params = staticmethod(_kernels.template_params)

    def attach(self, case, probe, device) -> Attachment:
        """The .tma overlap cases' source and tensor map (overlap.attach); nothing for the others."""
        return _overlap.attach(case, probe) if isinstance(case, OverlapCase) else NOTHING_ATTACHED

    sass_expectation = staticmethod(_sass.expectation)

    # -- correctness (checks.py) -------------------------------------------------------------------

    inputs = staticmethod(_checks.inputs)
    checks = staticmethod(_checks.checks)
    output_words = staticmethod(_checks.output_words)
    decode = staticmethod(_checks.decode)


    # -- measurement -----------------------------------------------------------------------------

    def work(self, case) -> Work:
        if isinstance(case, OverlapCase):  # what one timed instruction does (its metrics are cycles only)
            if case.n:
                return Work(2 * 64 * case.n * case.k, "FLOP")
            return Work(_ops.LANES * _ops.OPS[case.op].results, "result") if case.op else Work(_overlap.TMA_TILE_BYTES, "B")
        return self._chain_work(case)

    def _chain_work(self, case: SimtCase) -> Work:
        """Results per warp instruction (32 lanes x the instruction's results), as the Programming Guide counts:
        an f16x2 FMA is two results, an f32 FMA one. The unit is "result" (result/cycle/SM, Tresult/s): not FLOP
        (an FMA would be two) and not the tensor cores' OP, so no report adds them to tensor-core rates."""
        return Work(_ops.LANES * case.op.results, "result")

    def peak(self, case) -> float | None:
        if isinstance(case, OverlapCase):
            return None
        """The Programming Guide's results per cycle per SM for compute capability 9.0, where its row was found
        (reference.py); None otherwise."""
        return PEAK_RESULTS_PER_SM.get(case.op.throughput)

    plan = staticmethod(_plan.plan)

    def headline(self, metric: str) -> dict | None:
        return None

    @staticmethod
    def within_sm(case) -> bool:
        """CUDA cores, MUFU, shuffles and converts on registers: a GPU with the same SM does the same per cycle
        (figure_gpus: the H200 SXM meets the H100 SXM5's FP32 and SFU figures)."""
        return True

    @staticmethod
    def paper_row(row: dict) -> dict | str | None:
        """The seed architecture chapter's CUDA-core figures (simt/chapter.py); no other source's rows are ours."""
        return _chapter.chapter_row(row) if row["paper"] == seed_chapter.SOURCE else None

    def describe(self, case) -> list[str]:
        if isinstance(case, OverlapCase):
            return [f"warpgroup 0: {f'wgmma m64n{case.n}k{case.k} {case.form} -> f32, back to back' if case.n else 'idle'}",
                    f"warpgroup 1: {case.op + ', 8 chains a warp, 4 warps' if case.op else 'idle'}",
                    *([f"warp 8: TMA loads of {_overlap.TMA_TILE_BYTES} B boxes into a ring of {_overlap.TMA_STAGES} "
                       "slots, each completed on its mbarrier"] if case.tma else []),
                    "timed: " + " and ".join(f"{role} (while the other side runs)" for role in case.roles)]
        op = case.op
        lines = [f"one step: {op.body}", f"sm_90a runs: {op.executes}" + (" (emulated: a sequence)" if op.emulated else ""),
                 f"results per lane per step: {op.results}; unit: {_unit(case)}"]
        if op.chain:
            lines.append(f"chain: {op.chain}")
        peak = self.peak(case)
        lines.append(f"Programming Guide rate (CC 9.0): {peak:g} results/cycle/SM" if peak else
                     "Programming Guide rate (CC 9.0): no row found for it (docs/simt.md)")
        return lines

    def figures(self, context) -> list:
        from harness.families.simt.figures import figures

        return figures(context)

    def findings(self, context) -> list:
        from harness.families.simt.figures import findings

        return findings(context)


FAMILY = SimtFamily()
