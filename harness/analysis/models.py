"""The families' analytical models fitted to a stored run (Family.model.fit), and the same models' predictions
of one run from the parameters fitted to another (a model that can offers `transfer(report_fitted_to_A,
rows_of_B, gpu_of_B, source)`).

`bench model --run N` scores each model out of sample by default (score_run): fitted to another run, the
nearest of the same GPU model that holds the family's cases (the newest before N, else the oldest after it),
else the nearest of another GPU model, and its predictions of N's measurements set beside them. In sample (fitted
to N and scored on N) only where asked (`--in-sample`), or where no other run or no transfer exists, and then
said so. `--fit-run A` names the run to fit."""

from __future__ import annotations

from dataclasses import dataclass

from harness.analysis.run_rows import measured
from harness.db.store import Store
from harness.errors import SpecError
from harness.families.base import FamilyModel
from harness.registry import FAMILIES

TRIES = 3  # other runs score_run fits before it scores a family in sample


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


@dataclass(frozen=True)
class Scored:
    """A family's model scored on a run: its report (the family's own: parameters, residuals), the run it was fitted
    to, and the basis `bench model` prints beside every figure of it."""

    report: object
    fit_run: int
    run: int
    in_sample: bool
    basis: str

    @property
    def label(self) -> str:
        return "in sample" if self.in_sample else "out of sample"


def score_run(store: Store, run_id: int, fit_run_id: int | None = None, in_sample: bool = False,
              include_flagged: bool = False) -> dict[str, Scored]:
    """{family name: Scored} for every family of run `run_id` whose model fits its rows: out of sample (fitted to
    `fit_run_id`, else to the first of fit_runs_for whose fit predicts it) unless `in_sample`, or where none does.
    A `fit_run_id` that is `run_id` itself is in sample, and said so."""
    if fit_run_id == run_id:
        return {name: Scored(report, run_id, run_id, True, f"in sample: --fit-run {run_id} is the run scored")
                for name, report in fit_run(store, run_id, include_flagged).items()}
    if fit_run_id is not None:
        return {name: Scored(report, fit_run_id, run_id, False, _basis(store, fit_run_id, run_id, "--fit-run"))
                for name, report in fit_run(store, run_id, include_flagged, fit_run_id).items()}
    if in_sample:
        return {name: Scored(report, run_id, run_id, True, f"in sample: fitted to run {run_id} and scored on it "
                                                           "(--in-sample)")
                for name, report in fit_run(store, run_id, include_flagged).items()}
    frame = measured(store, run_id, include_flagged)
    gpu = store.run_info(run_id).gpu_name or "unknown GPU"
    scored = {}
    for name, rows in frame.groupby("family"):
        family = FAMILIES.get(name)  # None: a family this version no longer has
        model = family.model if family is not None else None
        if model is None:
            continue
        carries = type(model).transfer is not FamilyModel.transfer
        others = fit_runs_for(store, run_id, name)[:TRIES] if carries else []
        if not carries:
            why = f"the {name} model carries no parameters to another run"
        elif not others:
            why = f"no other run holds {name} cases"
        else:
            predicted = None
            for other in others:  # the nearest whose fit predicts this run
                source = measured(store, other, include_flagged)
                fitted = model.fit(source[source.family == name], store.run_info(other).gpu_name or "unknown GPU",
                                   f"fitted to run {other}")
                predicted = model.transfer(fitted, rows, gpu, f"run {other}") if fitted is not None else None
                if predicted is not None:
                    break
            if predicted is not None:
                scored[name] = Scored(predicted, other, run_id, False, _basis(store, other, run_id, "the nearest"))
                continue
            why = (f"no fit to the {len(others)} nearest other runs ({', '.join(map(str, others))}) predicts its "
                   f"{name} cases")
        report = model.fit(rows, gpu, f"fitted to run {run_id}")
        if report is not None:
            scored[name] = Scored(report, run_id, run_id, True, f"in sample: fitted to run {run_id} and scored on "
                                                                f"it, as {why}")
    if not scored:
        raise SpecError(f"run {run_id} has no measurements that a family's model fits "
                        f"(models: {', '.join(n for n, f in FAMILIES.items() if f.model) or 'none'})")
    return scored


def fit_runs_for(store: Store, run_id: int, family: str) -> list[int]:
    """The runs a model may be fitted to for scoring run `run_id` out of sample, the first choice first: the other
    runs holding `family`'s measurements, those of the same GPU model first; in each group the runs before `run_id`
    first, newest first, then those after it, oldest first. score_run takes the first whose fit predicts the run."""
    rows = store.query(
        "SELECT DISTINCT m.run_id AS run, d.name AS gpu FROM measurements m JOIN cases c ON c.id = m.case_pk "
        "JOIN runs r ON r.id = m.run_id LEFT JOIN devices d ON d.id = r.device_id "
        f"WHERE c.family = '{family.replace(chr(39), '')}' AND m.run_id != {int(run_id)}")
    gpu = store.run_info(run_id).gpu_name
    return sorted({int(r) for r in rows.run}, key=lambda r: (rows.gpu[rows.run == r].iloc[0] != gpu, r > run_id,
                                                            abs(r - run_id)))


def _basis(store: Store, fitted: int, scored: int, chosen: str) -> str:
    gpu_fit, gpu = store.run_info(fitted).gpu_name, store.run_info(scored).gpu_name
    where = "the same GPU model" if gpu_fit == gpu else f"another GPU model, {gpu_fit}"
    how = "named by --fit-run" if chosen == "--fit-run" else "the nearest other run holding its cases"
    return f"out of sample: fitted to run {fitted} ({how}; {where}), scored on run {scored}"
