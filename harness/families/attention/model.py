"""The attention family's model (`bench model --run`, `--fit-run`): a block of keys' cycles from the tensor cores'
time and the softmax's exponentials, per schedule.

    cycles a block = T + a x X + b / n

- T = 4 x BM x BN x D / 4096: the block's QK^T and P V at the tensor cores' dense peak (the simt-overlap suite's
  `none` cases: a wgmma m64nNk16 every N / 2 cycles, 1024 FLOP a cycle per scheduler).
- X: the exponentials of one scheduler's two consumer warps (one of each warpgroup), 2 x (BN / 2 + 2) MUFU.EX2
  a warp a block (the SASS of the loop: BN / 2 of S's fragment and two of the running maximum's correction; the
  family's SASS check asserts the count), each at ex2's measured interval: alone (8.07 cycles a warp
  instruction, `simt.overlap.ex2.approx.ftz.f32.alone`) where the softmax runs between the wgmma (in series,
  `.turns`), beside wgmma (10.75, `simt.overlap.ex2.approx.ftz.f32.m64n128k16`: MUFU keeps three quarters of its
  rate) where it runs under P V (`.overlap`, `.turns.overlap`; `.paired` takes them after both wgmma, alone). Both figures are runs 117 (H100) and 144 (H200).
- n: the tile's blocks (a causal tile's mean, (seq + BM) / 2 / BN), so b is a tile's start and end paid once.

a says how much of the exponentials' time shows beyond the tensor cores': 1 where they add, 0 where they hide.
Without a fit (`prior`: a = 1, b = 0) the model is the two times added. A fit takes a and b per schedule (least
squares over the run's cases), and `--fit-run` predicts one run with another's parameters: the misses out of
sample. The other SIMT work of a block (the max, the sums, the rescale of O, the packing of P: about 5 FP32-pipe
instructions and a convert per exponential, a warp issuing each in 1.1 and 2.1 cycles) runs on other pipes beside
MUFU and is not a term: with it (the larger of MUFU's time and theirs) the fits miss no less (docs/attention.md,
"The model"). Nor is the consumer's wait for a full slot: it overlaps the other warpgroup's work, and adding it
made the fits worse.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from harness.anchors import has_probe
from harness.errors import IllegalShapeError, SpecError
from harness.families.attention.cases import AttentionCase, parse
from harness.families.attention.problem import TENSOR_FLOPS_PER_CYCLE
from harness.families.base import FamilyModel, residual_frame

METRIC = "cycles_per_kblock"
SCHEDULERS = 4  # per SM: one warp of each consumer warpgroup on each
# ex2.approx.ftz.f32's interval, cycles a warp instruction per scheduler (runs 117 H100 and 144 H200 agree to the
# hundredth; tests/test_readme_findings.py reads them back): alone, and beside wgmma m64n128k16.
EX2_ALONE = 8.07
EX2_BESIDE_WGMMA = 10.75
SCHEDULES = ("in series", "turns", "overlap", "turns + overlap", "paired", "turns + paired", "overlap + cluster2",
             "turns + overlap + cluster2")


def schedule(case: AttentionCase) -> str:
    """The fit's groups: the consumers' schedule, and a cluster's multicast feed apart (its waits are not the same)."""
    inside = "overlap" if case.overlap else "paired" if case.paired else ""
    cluster = f"cluster{case.cluster}" if case.cluster > 1 else ""
    return " + ".join(part for part in ("turns" if case.turns else "", inside, cluster) if part) or "in series"


def exponentials(case: AttentionCase) -> int:
    """MUFU.EX2 a consumer thread (a warp) issues a block: S's fragment (BM x BN over the warpgroup's 128 threads
    for its 64 rows: BN / 2) and two for the running maximum's correction (one a row, a thread holding two rows)."""
    return case.bn // 2 + 2


def terms(case: AttentionCase) -> tuple[float, float, float]:
    """(T, X, 1 / n) of the module docstring."""
    tensor = 4 * case.bm * case.bn * case.head_dim / TENSOR_FLOPS_PER_CYCLE
    interval = EX2_BESIDE_WGMMA if case.overlap else EX2_ALONE
    mufu = case.consumers * exponentials(case) * interval
    blocks = (case.seq + case.bm) / 2 / case.bn if case.causal else case.seq / case.bn
    return tensor, mufu, 1.0 / blocks


def bound(case: AttentionCase, params: tuple[float, float]) -> str:
    """The largest of the block's three terms with the schedule's parameters: what to shorten first."""
    a, b = params
    tensor, mufu, per_block = terms(case)
    named = {"tensor cores": tensor, "MUFU (exponentials shown)": a * mufu, "tile start": b * per_block}
    return max(named, key=named.get)


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
    points = []
    for case_id, value in zip(rows.case_id, rows.value):
        try:
            case = parse(case_id)
        except (SpecError, IllegalShapeError):  # an id this version refuses (run 121's two-stage overlap)
            continue
        if has_probe(case):
            points.append((case, float(value)))
    return points


def fit_schedules(points: list[tuple[AttentionCase, float]]) -> dict:
    """{schedule: (a, b)}: least squares of cycles - T on X and 1 / n over each schedule's cases."""
    fits = {}
    for name in sorted({schedule(case) for case, _ in points}):
        mine = [(terms(case), value) for case, value in points if schedule(case) == name]
        x = np.array([[m, n] for (_, m, n), _ in mine])
        y = np.array([value - t for (t, _, _), value in mine])
        if len(mine) >= 2 and np.linalg.matrix_rank(x) == 2:
            (a, b), *_ = np.linalg.lstsq(x, y, rcond=None)
        else:  # too few cases to part the two: the times added
            a, b = 1.0, 0.0
        fits[name] = (float(a), float(b))
    return fits


class AttentionModel(FamilyModel):
    """A block of keys' cycles: T + a x X + b / n per schedule (module docstring)."""

    def prior(self, gpu: str) -> dict:
        return {}  # every schedule at a = 1, b = 0: the two times added

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
        return self._report(points, fit_schedules(points), gpu, source)

    def transfer(self, fitted: AttentionFitReport, frame: pd.DataFrame, gpu: str, source: str):
        points = [(case, value) for case, value in _cases(frame) if schedule(case) in fitted.fits]
        if not points:
            return None
        return self._report(points, fitted.fits, gpu, f"predicted with the fit to {source} ({fitted.gpu})")

    def _report(self, points, fits: dict, gpu: str, source: str) -> AttentionFitReport:
        rows = [{"case_id": case.case_id, "metric": METRIC, "schedule": schedule(case), "measured": value,
                 "fitted": self.predict(case, METRIC, fits),
                 "bound": bound(case, fits.get(schedule(case), (1.0, 0.0)))} for case, value in points]
        return AttentionFitReport(gpu, source, fits, rows)
