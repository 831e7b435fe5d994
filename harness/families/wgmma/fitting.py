"""The wgmma model as the Family's `model` (harness/families/base.py): datasheet prior, prediction,
and the least-squares fit to a run (per input/accumulator dtype)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import pandas as pd

import harness.families.wgmma.model as perfmodel
from harness.errors import SpecError
from harness.families.base import FamilyModel
from harness.families.wgmma.cases import DEFAULT_LAYOUT, parse

SPARSE = " sparse"  # the suffix of a fit key of the sparse instruction


@dataclass(frozen=True)
class FitReport:
    gpu: str
    fits: dict[str, perfmodel.Fit]  # by "dtype_a/dtype_acc", plus " sparse" for the sparse instruction
    prior: perfmodel.Params
    throughput: list = ()  # (case, launch, measured work per cycle per SM), fitted by the issue interval's fit

    @property
    def parameters(self) -> pd.DataFrame:
        rows = []
        for key, fit in self.fits.items():
            p = fit.params
            dtype, sparse = key.split("/")[0], key.endswith(SPARSE)
            k = fit.residuals[0][0].k if fit.residuals else 16
            floor = round(p.l_sparse, 3) if sparse else round(p.l_min, 3)
            rows.append({"gpu": self.gpu, "types": key, "B_smem": round(p.b_smem, 3), "F_tc": round(p.f_tc, 2),
                         "floor": floor, "floor_wide": round(p.l_sparse_wide, 3) if sparse else None,
                         "points": len(fit.residuals), "rms_cycles": round(fit.rms, 4),
                         "crossover_N_SS": perfmodel.crossover_n(dtype, "SS", p, sparse, k),
                         "crossover_N_RS": perfmodel.crossover_n(dtype, "RS", p, sparse, k)})
        return pd.DataFrame(rows)

    @property
    def residuals(self) -> pd.DataFrame:
        """Issue intervals (cycles), then work per cycle per SM at 1 and 4 warpgroups predicted from the
        fitted interval (FLOP/cycle/SM); `relative` is residual / fitted."""
        rows = [{"case_id": c.case_id, "metric": "issue_interval_cycles", "types": key, "n": c.n,
                 "operands": c.operands, "launch": "", "measured": measured, "fitted": fitted,
                 "residual": measured - fitted, "bound": bound}
                for key, fit in self.fits.items() for c, measured, fitted, bound in fit.residuals]
        for case, launch, measured in self.throughput:
            key = _key(case)
            if key in self.fits:
                prediction = perfmodel.predict(case, self.fits[key].params)
                fitted = perfmodel.flops(case) / prediction.cycles
                rows.append({"case_id": case.case_id, "metric": "sm_throughput", "types": key, "n": case.n,
                             "operands": case.operands, "launch": launch, "measured": measured, "fitted": fitted,
                             "residual": measured - fitted, "bound": prediction.bound})
        frame = pd.DataFrame(rows)
        if not frame.empty:
            frame["relative"] = frame.residual / frame.fitted
        return frame

    def params_for(self, dtype_a: str) -> perfmodel.Params:
        """The dense fit of `dtype_a` (its first accumulator type)."""
        for key, fit in self.fits.items():
            if key.startswith(dtype_a + "/") and not key.endswith(SPARSE):
                return fit.params
        raise SpecError(f"no {dtype_a} issue intervals were fitted")


def _key(case) -> str:
    return f"{case.dtype_a}/{case.dtype_acc}{SPARSE if case.sparse else ''}"


class WgmmaModel(FamilyModel):
    """issue_interval = max(smem bytes / B_smem, FLOPs / (4 F_tc rate), floor), and work per cycle per SM
    = FLOPs / issue_interval for 1 to 4 warpgroups: harness/families/wgmma/model.py."""

    metric = "issue_interval_cycles"
    metrics = ("issue_interval_cycles", "sm_throughput")  # throughput_tflops: sm_throughput x SMs x clock

    def prior(self, gpu: str) -> perfmodel.Params | None:
        """Datasheet parameters of `gpu`, or None where gpu_specs.csv has no row for it."""
        try:
            return perfmodel.datasheet(gpu)
        except SpecError:
            return None

    def datasheet_table(self, gpu: str, clock_mhz: float | None = None) -> tuple[str, pd.DataFrame]:
        """`bench model --gpu`: the parameters of `gpu`'s datasheet in a line, and the issue intervals
        and TFLOPS (f16, m64nNk16) they predict."""
        params = perfmodel.datasheet(gpu)
        line = (f"{params.gpu}: B_smem = {params.b_smem:g} B/cycle/SM, F_tc = {params.f_tc:g} FLOP/cycle per "
                f"tensor core, floor = {params.l_min:g} cycles ({params.source})")
        return line, perfmodel.table(params, clock_mhz=clock_mhz)

    def predict(self, case, metric: str, params: perfmodel.Params | None) -> float | None:
        if metric not in self.metrics or params is None or case.dtype_a not in perfmodel.DTYPE_RATE:
            return None  # b1: no published rate to model it with
        if metric == "sm_throughput":
            return perfmodel.sm_throughput(case, params)
        return perfmodel.predict(case, params).cycles

    def fit(self, frame: pd.DataFrame, gpu: str, source: str) -> FitReport | None:
        """Fit to `frame` (case_id, metric, dtype_a, dtype_acc, value); None if it has no issue intervals."""
        rates = frame[frame.metric == "sm_throughput"]
        frame = frame[frame.metric == self.metric]
        if frame.empty:
            return None
        prior = self.prior(gpu)
        if prior is None:  # no datasheet row: start from the H100 SXM5's, and say so
            start = perfmodel.datasheet("H100 SXM5")
            prior = replace(start, source=f"no gpu_specs.csv row for {gpu}: started from the H100 SXM5's")
        prior = replace(prior, gpu=gpu)
        cases = [parse(c) for c in frame.case_id]
        # One fit per instruction and types: dense and sparse apart (sparse has its own floor: 16 cycles
        # in RS at N = 8 where dense has 13), each over the default layout (the layout cases repeat
        # some N in other layouts: the interval is the same, and they would weigh those N twice).
        points: dict[str, list] = {}
        for case, value in zip(cases, frame.value):
            if case.dtype_a in perfmodel.DTYPE_RATE and case.layout == DEFAULT_LAYOUT:
                key = _key(case)
                points.setdefault(key, []).append((case, float(value)))
        fits = {key: perfmodel.fit(group, prior, source) for key, group in sorted(points.items())}
        throughput = [(case, launch, float(value)) for case, launch, value in
                      zip(map(parse, rates.case_id), rates.get("launch", rates.case_id), rates.value)
                      if case.dtype_a in perfmodel.DTYPE_RATE and case.layout == DEFAULT_LAYOUT and "inputs" not in launch]
        return FitReport(gpu, fits, prior, throughput)
