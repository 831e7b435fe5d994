"""The GEMM family's model object (Family.model): the planner of model.py, its prior for a GPU never
measured, and its fit to a run (fitting.py)."""

from __future__ import annotations

import pandas as pd

from harness.datasheets import gpu_specs, spec_name
from harness.families.base import FamilyModel
from harness.families.gemm.cases import GemmCase
from harness.families.gemm.configs import LADDER, pipeline
from harness.families.gemm.fitting import fit, transfer
from harness.families.gemm.model import predict_case
from harness.families.gemm.params import HBM_OF_DATASHEET, PRIOR, PRIOR_LAUNCH_CYCLES, Params


class GemmModel(FamilyModel):
    """The planner as the family's model: a prior for a GPU never measured, a fit to a run."""

    def prior(self, gpu: str) -> Params | None:
        specs = gpu_specs()
        name = spec_name(gpu, specs)
        spec = specs.get(name) if name else None
        if spec is None or not spec.sm_count:
            return None
        hbm = (spec.memory_bandwidth_gbps or 3000.0) * HBM_OF_DATASHEET
        return Params(name, spec.sm_count, spec.tensor_cores_per_sm * spec.flops_per_tc_per_clk_fp16, **PRIOR,
                      hbm_gbps=hbm, launch_cycles=PRIOR_LAUNCH_CYCLES, clock_mhz=spec.tc_boost_clock_mhz,
                      source=f"prior: an H100 fit, {name}'s datasheet")

    def predict(self, case, metric: str, params: Params | None) -> float | None:
        if params is None or not isinstance(case, GemmCase) or metric != "sm_throughput":  # the library: none
            return None
        return predict_case(case, params).flops_per_cycle_sm

    def fit(self, frame: pd.DataFrame, gpu: str, source: str):
        return fit(frame, gpu, source, self.prior(gpu))

    def transfer(self, fitted, frame: pd.DataFrame, gpu: str, source: str):
        """This run predicted with the fit to another (`bench model --run`'s default, out of sample); on another GPU
        model with this one's datasheet rates (the prior's)."""
        specs = gpu_specs()
        other = spec_name(gpu, specs) != spec_name(fitted.gpu, specs)
        return transfer(fitted, frame, gpu, source, self.prior(gpu) if other else None)

    def datasheet_table(self, gpu: str, clock_mhz: float | None = None) -> tuple[str, pd.DataFrame]:
        """`bench model --gpu`: the prior's parameters in a line, and what it predicts for the seed worklog's
        ladder at 8192^3 f16 (TFLOPS at `clock_mhz`, else the datasheet's boost clock)."""
        params = self.prior(gpu)
        if params is None:
            return f"{gpu}: no datasheet row, no GEMM prior", pd.DataFrame()
        clock = clock_mhz or params.clock_mhz or 1500.0
        line = (f"{params.gpu}: GEMM planner prior ({params.source}): "
                + ", ".join(f"{name} = {getattr(params, name):g}" for name in Params.fitted_names()))
        rows = []
        for step, config in LADDER.items():
            case = pipeline("f16", (8192, 8192, 8192), **config)
            predicted = predict_case(case, params)
            rows.append({"worklog step": step, "configuration": case.case_id.split(".", 3)[3],
                         "TFLOPS": round(predicted.tflops(params.sm_count, clock), 1), "at MHz": round(clock),
                         "bound": predicted.bound})
        return line, pd.DataFrame(rows)
