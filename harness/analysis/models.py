"""The families' analytical models fitted to a stored run (Family.model.fit), for `bench model --run`, and
the same models' predictions of one run from the parameters fitted to another (`bench model --run B
--fit-run A`: a model that can offers `transfer(report_fitted_to_A, rows_of_B, gpu_of_B, source)`)."""

from __future__ import annotations

from harness.analysis.compare import measured
from harness.db.store import Store
from harness.errors import SpecError
from harness.families.base import FamilyModel
from harness.registry import FAMILIES


def fit_run(store: Store, run_id: int, include_flagged: bool = False, fit_run_id: int | None = None) -> dict:
    """{family name: its fit report} for every family of the run that has a model and data for it; with
    `fit_run_id`, the report of each model that transfers, its parameters fitted to that run and the run's
    own measurements predicted with them."""
    frame = measured(store, run_id, include_flagged)
    gpu = store.run_info(run_id).gpu_name or "unknown GPU"
    if fit_run_id is not None:
        return _transfer(store, frame, gpu, run_id, fit_run_id, include_flagged)
    fits = {}
    for name, rows in frame.groupby("family"):
        family = FAMILIES.get(name)  # None: a family this version no longer has
        model = family.model if family is not None else None
        report = model.fit(rows, gpu, f"fitted to run {run_id}") if model else None
        if report is not None:
            fits[name] = report
    if not fits:
        raise SpecError(f"run {run_id} has no measurements that a family's model fits "
                        f"(models: {', '.join(n for n, f in FAMILIES.items() if f.model) or 'none'})")
    return fits


def _transfer(store: Store, frame, gpu: str, run_id: int, fit_run_id: int, include_flagged: bool) -> dict:
    fitted = measured(store, fit_run_id, include_flagged)
    fit_gpu = store.run_info(fit_run_id).gpu_name or "unknown GPU"
    fits = {}
    for name, rows in frame.groupby("family"):
        family = FAMILIES.get(name)
        model = family.model if family is not None else None
        if model is None:
            continue
        source = fitted[fitted.family == name]
        report = model.fit(source, fit_gpu, f"fitted to run {fit_run_id}") if len(source) else None
        predicted = model.transfer(report, rows, gpu, f"run {fit_run_id}") if report is not None else None
        if predicted is not None:
            fits[name] = predicted
    if not fits:
        movable = ", ".join(n for n, f in FAMILIES.items()
                            if f.model is not None and type(f.model).transfer is not FamilyModel.transfer)
        raise SpecError(f"no model fitted to run {fit_run_id} predicts run {run_id}: they share no family whose model "
                        f"carries its parameters to another run ({movable or 'none'}), or one of them lacks its data")
    return fits
