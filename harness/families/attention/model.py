"""The attention family's model (`bench model --run`, `--fit-run`): a block of keys' cycles from the two bounds every
block has, per schedule.

    cycles a block = T + a x M + b / n

T = 4 x BM x BN x D / 4096, the block's QK^T and P V at the tensor cores' dense peak; M = BM x BN / 16, its
exponentials at MUFU's 16 a cycle per SM; n the tile's blocks (a causal tile's mean: (seq + BM) / 2 / BN), so b is
the tile's start and end paid once. a says how much of MUFU's time shows: 1 in series (the two add), 0 if it
hides entirely. Without a fit (`prior`: a = 1, b = 0) the model is the sum of the two bounds; a fit takes a and b
per schedule (least squares over the run's cases), and `--fit-run` predicts one run (another GPU) with the
parameters of another: the residuals out of sample.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from harness.anchors import has_probe
from harness.families.attention.cases import AttentionCase, parse
from harness.families.attention.problem import MUFU_PER_CYCLE, TENSOR_FLOPS_PER_CYCLE
from harness.families.base import FamilyModel, residual_frame
METRIC = "cycles_per_kblock"


def schedule(case: AttentionCase) -> str:
    inside = "overlap" if case.overlap else "paired" if case.paired else ""
    return " + ".join(part for part in ("turns" if case.turns else "", inside) if part) or "in series"


def terms(case: AttentionCase) -> tuple[float, float, float]:
    """(T, M, 1 / n) of the module docstring."""
    tensor = 4 * case.bm * case.bn * case.head_dim / TENSOR_FLOPS_PER_CYCLE
    mufu = case.bm * case.bn / MUFU_PER_CYCLE
    blocks = (case.seq + case.bm) / 2 / case.bn if case.causal else case.seq / case.bn
    return tensor, mufu, 1.0 / blocks


@dataclass(frozen=True)
class AttentionFitReport:
    gpu: str
    source: str
    fits: dict  # schedule -> (a, b)
    rows: list

    @property
    def parameters(self) -> pd.DataFrame:
        return pd.DataFrame([{"gpu": self.gpu, "source": self.source, "schedule": name, "a (MUFU shown)": round(a, 3),
                              "b (cycles a tile)": round(b)} for name, (a, b) in sorted(self.fits.items())])

    @property
    def residuals(self) -> pd.DataFrame:
        return residual_frame(self.rows)


def _cases(frame: pd.DataFrame) -> list[tuple[AttentionCase, float]]:
    rows = frame[frame.metric == METRIC]
    return [(parse(case_id), float(value)) for case_id, value in zip(rows.case_id, rows.value)]


class AttentionModel(FamilyModel):
    """A block of keys' cycles: T + a x M + b / n per schedule (module docstring)."""

    def prior(self, gpu: str) -> dict:
        return {}  # every schedule at a = 1, b = 0: the two bounds added

    def predict(self, case, metric: str, params: dict | None) -> float | None:
        if metric != METRIC or not has_probe(case):  # cuDNN's case (an anchor) has no blocks of ours
            return None
        a, b = (params or {}).get(schedule(case), (1.0, 0.0))
        tensor, mufu, per_block = terms(case)
        return tensor + a * mufu + b * per_block

    def fit(self, frame: pd.DataFrame, gpu: str, source: str) -> AttentionFitReport | None:
        points = _cases(frame)
        if not points:
            return None
        fits = {}
        for name in sorted({schedule(case) for case, _ in points}):
            mine = [(terms(case), value) for case, value in points if schedule(case) == name]
            x = np.array([[m, n] for (_, m, n), _ in mine])
            y = np.array([value - t for (t, _, _), value in mine])
            if len(mine) >= 2 and np.linalg.matrix_rank(x) == 2:
                (a, b), *_ = np.linalg.lstsq(x, y, rcond=None)
            else:  # too few cases to part the two: the bounds added
                a, b = 1.0, 0.0
            fits[name] = (float(a), float(b))
        return self._report(points, fits, gpu, source)

    def transfer(self, fitted: AttentionFitReport, frame: pd.DataFrame, gpu: str, source: str):
        points = [(case, value) for case, value in _cases(frame) if schedule(case) in fitted.fits]
        if not points:
            return None
        return self._report(points, fitted.fits, gpu, f"predicted with the fit to {source} ({fitted.gpu})")

    def _report(self, points, fits: dict, gpu: str, source: str) -> AttentionFitReport:
        rows = [{"case_id": case.case_id, "metric": METRIC, "schedule": schedule(case), "measured": value,
                 "fitted": self.predict(case, METRIC, fits)} for case, value in points]
        return AttentionFitReport(gpu, source, fits, rows)
