"""The overlap model (issue 43, section 2): what each side of a `simt-overlap` case keeps, predicted from the two
sides alone (the SIMT instruction's interval alone, S0, and the wgmma's, W0 = N/2) and seven parameters shared by
every case. `bench model --run N` fits them to a run and prints every case beside its fit; `bench model --run B
--fit-run A` predicts run B (another GPU) with run A's parameters, each row labelled `in-sample` or
`out-of-sample`. docs/simt.md, "The overlap model".

Per scheduler (each side has one warp on each), with W the wgmma's interval:

    f(W) = f_inf (1 - g / W)          the share of the register file's port cycles the tensor core's accumulator
                                      traffic holds: f_inf while it accumulates, none for g cycles a wgmma
    SIMT beside wgmma, by the unit its instruction runs on (its first SASS opcode, ops.py):
      FFMA, FMUL, FADD    S = S0 / (1 - phi f(W))              shares the port with the tensor core
      MUFU                S = S0 + f / (1 - f)                 waits for a free port cycle (a geometric wait,
                                                               mean f / (1 - f)) after the unit's own interval
      any other           S = max(S0, k / (1 - f))             k port passes a warp instruction (SHFL: 4, one
                                                               of 8 lanes a cycle; every other: 1), free cycles
                                                               only: the tensor core has the port first
    wgmma beside FFMA:    W = max(W0, h + rho W0)              (A in registers, RS: h_RS, rho_RS) the FFMA stream
                                                               holds the port; a fixed h a wgmma and rho of its time
    wgmma beside any other: W = W0

Cases with TMA loads in flight (suite simt-overlap-tma) are predicted by the same equations from their own alone
sides (each alone with the loads in flight), and never fitted: what the loads do to each side alone is an input,
what they do to the pair beyond that is the model's miss.

The parameters are fitted by least squares on the log of measured over predicted (a grid narrowed around its best
point: no solver dependency): f_inf and g on the MUFU and port rows' SIMT side, phi on FFMA's, h and rho on the
wgmma beside FFMA with A in shared memory (f16 and e4m3), h_RS and rho_RS with A in registers (SS's where the run
has no RS case). A parameter no row constrains stays 0. The `alone` rows are
the inputs, not predictions. tests/test_simt_model.py checks the equations by hand and that a fit recovers the
parameters a synthetic run was made with.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from harness.families.base import FamilyModel
from harness.stats import residual_frame

PORT_PASSES = {"shuffle": 4}  # port passes a warp instruction takes on the shared path (others: 1)
PARAMETERS = ("f_inf", "g", "phi", "h", "rho", "h_rs", "rho_rs")
BOUNDS = {"f_inf": (0.0, 0.98), "g": (0.0, 24.0), "phi": (0.0, 1.0), "h": (0.0, 64.0), "rho": (0.0, 1.5),
          "h_rs": (0.0, 64.0), "rho_rs": (0.0, 1.5)}


@dataclass(frozen=True)
class Params:
    f_inf: float
    g: float
    phi: float
    h: float
    rho: float
    h_rs: float
    rho_rs: float


@dataclass(frozen=True)
class Pair:
    """One overlap case's two sides: the inputs (each alone) and, where measured, each beside the other."""
    case_id: str
    op: str
    unit: str  # ffma, mufu, shuffle, or other
    form: str  # f16.SS, f16.RS, e4m3.SS
    w0: float  # wgmma's interval alone (cycles)
    s0: float  # the instruction's interval alone (cycles per warp instruction)
    w: float | None = None  # measured wgmma interval beside the instruction
    s: float | None = None  # measured instruction interval beside wgmma
    tma: bool = False  # TMA loads in flight beside both (inputs: the .tma cases' alone sides; never fitted)


def unit(op: str) -> str:
    """The unit an overlap instruction runs on, from its first SASS opcode."""
    import harness.families.simt.ops as ops

    first = ops.OPS[op].sass[0][0].split(".")[0]
    return {"FFMA": "ffma", "FMUL": "ffma", "FADD": "ffma", "MUFU": "mufu", "SHFL": "shuffle"}.get(first, "other")


def port_share(p: Params, w: float) -> float:
    return p.f_inf * max(0.0, 1.0 - p.g / w)


def predict_wgmma(p: Params, unit_: str, form: str, w0: float) -> float:
    if unit_ != "ffma":
        return w0
    h, rho = (p.h_rs, p.rho_rs) if form.endswith("RS") else (p.h, p.rho)
    return max(w0, h + rho * w0)


def predict_simt(p: Params, unit_: str, form: str, w0: float, s0: float) -> float:
    if unit_ == "ffma":
        return s0 / (1.0 - p.phi * port_share(p, predict_wgmma(p, unit_, form, w0)))
    f = port_share(p, w0)
    if unit_ == "mufu":
        return s0 + f / (1.0 - f)
    return max(s0, PORT_PASSES.get(unit_, 1) / (1.0 - f))


# -- the rows of a run ----------------------------------------------------------------------------------------

def pairs(frame: pd.DataFrame) -> list[Pair]:
    """Every overlap case of the frame with both sides' inputs measured. A case with TMA loads in flight takes its
    inputs from the cases alone with TMA loads in flight too (simt.overlap.<op>.alone.tma, none.m64n<N>...tma)."""
    from harness.families.simt.overlap import parse

    rows = frame[(frame.metric == "issue_interval_cycles") & frame.case_id.str.startswith("simt.overlap.")]
    alone_simt, alone_wgmma, beside = {}, {}, {}
    for case_id, launch, value in zip(rows.case_id, rows.launch, rows.value):
        case = parse(case_id)
        role = json.loads(launch)["role"] if isinstance(launch, str) else launch["role"]
        if role == "tma" or (case.n is None and case.op is None):
            continue
        if case.n is None:
            alone_simt[(case.op, case.tma)] = float(value)
        elif case.op is None:
            alone_wgmma[(case.n, case.form, case.tma)] = float(value)
        else:
            beside.setdefault(case_id, {"case": case})[role] = float(value)
    out = []
    for case_id, sides in beside.items():
        case = sides["case"]
        if (case.op, case.tma) in alone_simt and (case.n, case.form, case.tma) in alone_wgmma:
            out.append(Pair(case_id, case.op, unit(case.op), case.form, alone_wgmma[(case.n, case.form, case.tma)],
                            alone_simt[(case.op, case.tma)], sides.get("wgmma"), sides.get("simt"), case.tma))
    return sorted(out, key=lambda q: q.case_id)


# -- fitting --------------------------------------------------------------------------------------------------

def _zoom(loss, names: tuple[str, ...], fixed: dict, steps: int = 33, rounds: int = 8) -> dict:
    """The parameters `names` (within BOUNDS) that minimise loss(params): a grid, narrowed around its best point."""
    box = {n: BOUNDS[n] for n in names}
    best = None
    for _ in range(rounds):
        axes = [np.linspace(lo, hi, steps) for lo, hi in box.values()]
        for point in np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, len(names)):
            value = loss({**fixed, **dict(zip(names, point))})
            if best is None or value < best[0]:
                best = (value, dict(zip(names, map(float, point))))
        box = {n: (max(BOUNDS[n][0], best[1][n] - (hi - lo) / 8), min(BOUNDS[n][1], best[1][n] + (hi - lo) / 8))
               for n, (lo, hi) in box.items()}
    return best[1]


def _log_loss(predicted_measured) -> float:
    terms = [np.log(m / p) ** 2 for p, m in predicted_measured if m is not None and p > 0]
    return float(np.sum(terms)) if terms else 0.0


def fit_params(data: list[Pair]) -> Params:
    """The seven parameters fitted to a run's pairs without TMA; a parameter no row constrains stays at 0 (its
    bound's low end)."""
    data = [q for q in data if not q.tma]
    start = dict.fromkeys(PARAMETERS, 0.0)

    def simt_loss(units):
        return lambda values: _log_loss(
            (predict_simt(Params(**values), q.unit, q.form, q.w0, q.s0), q.s) for q in data if q.unit in units)

    start.update(_zoom(simt_loss(("mufu", "shuffle", "other")), ("f_inf", "g"), start))
    ffma = [q for q in data if q.unit == "ffma"]
    for h, rho, rs in (("h", "rho", False), ("h_rs", "rho_rs", True)):
        rows = [q for q in ffma if q.form.endswith("RS") == rs]
        if rows:
            start.update(_zoom(lambda v, rows=rows: _log_loss(
                (predict_wgmma(Params(**v), q.unit, q.form, q.w0), q.w) for q in rows), (h, rho), start))
    if not any(q.form.endswith("RS") for q in ffma):  # no RS case: RS as SS (a miss where RS differs, reported)
        start.update(h_rs=start["h"], rho_rs=start["rho"])
    if ffma:
        start.update(_zoom(simt_loss(("ffma",)), ("phi",), start))
    return Params(**start)


def residual_rows(p: Params, data: list[Pair], sample: str) -> list[dict]:
    rows = []
    for q in data:
        for role, measured, predicted in (("wgmma", q.w, predict_wgmma(p, q.unit, q.form, q.w0)),
                                          ("simt", q.s, predict_simt(p, q.unit, q.form, q.w0, q.s0))):
            if measured is None:
                continue
            rows.append({"model": f"overlap ({q.unit} beside {q.form}{', TMA' if q.tma else ''})", "case_id": q.case_id,
                         "metric": "issue_interval_cycles", "launch": f"role={role}",
                         "sample": "out-of-sample (TMA: never fitted)" if q.tma and sample == "in-sample" else sample,
                         "measured": round(measured, 3), "fitted": round(predicted, 3),
                         "residual": round(measured - predicted, 3), "predicts": True})
    return rows


@dataclass(frozen=True)
class FitReport:
    gpu: str
    params: Params
    source: str  # "fitted to run N" or "parameters of run A"
    sample: str  # in-sample, or out-of-sample (fitted to another run)
    residual_rows: list[dict] = field(default_factory=list)

    @property
    def parameters(self) -> pd.DataFrame:
        values = {k: round(v, 4) for k, v in vars(self.params).items()}
        frame = residual_frame(self.residual_rows)
        worst = float(frame.relative.abs().max()) if len(frame) else float("nan")
        return pd.DataFrame([{"gpu": self.gpu, "model": f"overlap ({self.source}, {self.sample})", **values,
                              "points": len(frame), "worst_relative": round(worst, 4)}])

    @property
    def residuals(self) -> pd.DataFrame:
        return residual_frame(self.residual_rows)


class OverlapModel(FamilyModel):
    """Fitted only: the datasheets say nothing of the register file's ports."""

    def fit(self, frame: pd.DataFrame, gpu: str, source: str) -> FitReport | None:
        data = pairs(frame)
        if not any(not q.tma for q in data):
            return None
        params = fit_params(data)
        return FitReport(gpu, params, source, "in-sample", residual_rows(params, data, "in-sample"))

    def transfer(self, fitted: FitReport, frame: pd.DataFrame, gpu: str, source: str) -> FitReport | None:
        data = pairs(frame)
        if not data:
            return None
        sample = f"out-of-sample ({fitted.gpu}, {source})"
        return replace(fitted, gpu=gpu, source=f"parameters of {source}", sample=sample,
                       residual_rows=residual_rows(fitted.params, data, sample))

