"""The contract of a family's model (harness/families/base.py, the Family contract's `model` hook): FamilyModel,
and residual_frame, the frame a fit report's rows become."""

from __future__ import annotations

from abc import ABC, abstractmethod


def residual_frame(rows: list[dict]):
    """A fit report's rows (each with `measured` and `fitted`) as a frame with their residual and relative miss: what
    a model's `residuals` returns where its report keeps rows."""
    import pandas as pd

    frame = pd.DataFrame(rows)
    if not frame.empty:
        frame["residual"] = frame.measured - frame.fitted
        frame["relative"] = frame.measured / frame.fitted - 1
    return frame


class FamilyModel(ABC):
    """A family's model (`Family.model`): fitted to a run's measurements, it predicts them (`bench model
    --run`, `bench compare`). `fit` is required; the optional members return None where a model has no such
    thing (no datasheet prior, no prediction of a metric, no transfer, no datasheet table)."""

    def prior(self, gpu: str):
        """The model's parameters for a GPU from its datasheet (a GPU's name as NVML or gpu_specs.csv spells it),
        before any run is fitted: what `predict` takes. Callers: compare's `model_predictions` (each row's
        prediction beside its measurement) and the simulated GPU (`synthetic_interval`, with "H100 SXM5"). None
        (the default): no prior, or none for this GPU."""
        return None

    def predict(self, case, metric: str, params) -> float | None:
        """What the model predicts for `case`'s `metric` (in the metric's own unit, a headline value) with
        `params` (a prior's, or a fit's; None: there are none, and a model may fall back on its own). None (the
        default): no prediction for this case or metric (compare shows NaN; the simulated GPU then takes the
        work at the family's peak rate)."""
        return None

    @abstractmethod
    def fit(self, frame, gpu: str, source: str):
        """The model fitted to a run's rows of this family (None where they hold nothing it fits): a report
        whose `residuals` frame `bench model` prints."""

    def transfer(self, fitted, frame, gpu: str, source: str):
        """This run's rows predicted with the parameters of `fitted` (the report of a fit to another run):
        `bench model --run B` (out of sample, analysis/models.py::score_run) and `--fit-run A`. A residual row
        whose parameters the report fits to this run itself says so (`in_sample`: True); `bench model` labels
        it in sample. None: the model carries no parameters to another run."""
        return None

    def datasheet_table(self, gpu: str, clock_mhz: float | None = None):
        """(a line, a table): the model's prediction from a GPU's datasheet (`bench model --gpu`), or None."""
        return None
