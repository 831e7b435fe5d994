"""wgmma.mma_async (sm_90a): the Family object (harness/families/base.py) for warpgroup MMA.

Cases, ids and legality: cases.py. Shared-memory descriptors: descriptors.py. Register fragments:
fragments.py. Where A and B live (layouts, descriptors, sparse metadata): placement.py. The template's parameters:
probe.py; the SASS expected: sass.py; inputs and checks: checks.py; what is measured: plan.py; the suites: suites.py.
The analytical model and its fit: model.py, fitting.py. Report sections: figures.py (plots.py draws them); its
finding: findings.py. Probe template: ptx/wgmma.cu.in. The published figures' mapping (paper_case, paper_row) stays
here: the references' digest hashes it.
"""

from __future__ import annotations

from harness import seed_chapter
from harness.families.base import Family, Work
import harness.families.wgmma.cases as _cases
import harness.families.wgmma.checks as _checks
import harness.families.wgmma.plan as _plan
import harness.families.wgmma.probe as _probe
import harness.families.wgmma.sass as _sass
import harness.families.wgmma.suites as _suites
from harness.families.wgmma.cases import WgmmaCase
from harness.families.wgmma.model import DENSE_FLOP_PER_SM_PER_CYCLE
from harness.families.wgmma.placement import descriptors


class WgmmaFamily(Family):
    name = "wgmma"
    description = "wgmma.mma_async: warpgroup MMA from shared memory (SS) or registers (RS)"
    id_prefixes = ("wgmma.",)
    example_id = "wgmma.mma_async.m64n128k16.f32.f16.f16.SS"
    template = "wgmma.cu.in"

    cases = staticmethod(_suites.all_cases)
    parse = staticmethod(_cases.parse)
    check = staticmethod(_cases.check)
    suites = staticmethod(_suites.suites)

    # -- the probe (probe.py), what its SASS must show (sass.py) ------------------------------------

    template_params = staticmethod(_probe.template_params)
    sass_expectation = staticmethod(_sass.expectation)

    # -- correctness (checks.py) -----------------------------------------------------------------

    inputs = staticmethod(_checks.inputs)
    checks = staticmethod(_checks.checks)
    output_words = staticmethod(_checks.output_words)
    decode = staticmethod(_checks.decode)

    # -- measurement -----------------------------------------------------------------------------

    def work(self, case: WgmmaCase) -> Work:
        return Work(2 * case.m * case.n * case.k, "OP" if case.dtype_acc == "s32" else "FLOP")

    def peak(self, case: WgmmaCase) -> float | None:
        """The type's dense rate; sparse: twice it. The work is dense-equivalent (2 M N K, K the logical
        K) for both, so peak_fraction is at most 1 either way (metric registry, "peak_fraction")."""
        dense = DENSE_FLOP_PER_SM_PER_CYCLE.get(case.dtype_a)
        return dense * 2 if dense and case.sparse else dense

    plan = staticmethod(_plan.plan)

    @staticmethod
    def within_sm(case) -> bool:
        """A wgmma reads its operands from the SM's shared memory and registers: a GPU with the same SM does the same
        per cycle (figure_gpus: the H200 SXM meets the H100 SXM5's tensor-core peaks)."""
        return True

    @staticmethod
    def paper_row(row: dict) -> str | None:
        """The seed architecture chapter's count of tensor cores: why it is no figure of ours (its peaks are)."""
        if row["paper"] == seed_chapter.SOURCE and row["metric"] == "tensor_cores_per_sm":
            return "a count of units: the tensor-core peaks it implies are mapped (wgmma throughput_tflops at the boost clock)"
        return None

    @staticmethod
    def paper_case(figure) -> tuple[str, str] | None:
        """A published wgmma figure's case and metric: the papers' wgmma "latency" is a back-to-back
        chain's issue interval (their loop issues the next wgmma without waiting on the previous).
        sm_clock_mhz is the clock a throughput figure was printed with (2501.12084 Table 13): not a
        metric of ours, it is what compare turns that figure into work per cycle per SM with."""
        metric = {"latency_cycles": "issue_interval_cycles", "throughput": "throughput_tflops",
                  "issue_interval_cycles": "issue_interval_cycles", "energy_efficiency": "energy_efficiency",
                  "power": "power_mean_w", "sm_clock": "sm_clock_mhz"}.get(figure.metric)
        if not figure.instruction.startswith("wgmma.mma_async") or metric is None:
            return None
        sp = ".sp" if figure.sparse else ""
        a, acc = figure.dtype_a, figure.dtype_acc
        return f"wgmma.mma_async{sp}.m{figure.m}n{figure.n}k{figure.k}.{acc}.{a}.{a}.{figure.operands}", metric

    def headline(self, metric: str) -> dict | None:
        """The launch whose value stands for the case where a metric has several (the paper's)."""
        return {"warpgroups": 1, "ilp": 1}

    def describe(self, case: WgmmaCase) -> list[str]:
        return [f"{name}: " + (d.describe() if d else "registers (RS mode)")
                for name, d in zip(("A", "B"), descriptors(case))]

    @property
    def model(self):
        from harness.families.wgmma.fitting import WgmmaModel

        return WgmmaModel()

    @property
    def advisors(self) -> tuple:
        from harness.families.wgmma.advice import SWAPAB

        return (SWAPAB,)

    def figures(self, context) -> list:
        from harness.families.wgmma.figures import figures

        return figures(context)

    def findings(self, context) -> list:
        from harness.families.wgmma.findings import findings

        return findings(context)


FAMILY = WgmmaFamily()
