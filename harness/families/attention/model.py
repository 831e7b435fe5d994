"""The attention family's model (`bench model --run`, `--fit-run`): a block of keys' cycles from the tensor cores'
time, MUFU's time and the SIMT work that neither covers, per schedule.

    cycles a block = max(T, X) + K + b / n

- T = 4 x BM x BN x D / 4096: the block's QK^T and P V at the tensor cores' dense peak (the simt-overlap suite's
  `none` cases: a wgmma m64nNk16 every N / 2 cycles, 1024 FLOP a cycle per scheduler).
- X: the exponentials of one scheduler's two consumer warps (one of each warpgroup), 2 x (BN / 2 + 2) MUFU.EX2
  a warp a block (the SASS of the loop: BN / 2 of S's fragment and two of the running maximum's correction; the
  family's SASS check asserts the count), each at ex2's measured interval beside wgmma (10.75 cycles a warp
  instruction, `simt.overlap.ex2.approx.ftz.f32.m64n128k16`, runs 117 H100 and 144 H200: MUFU keeps three
  quarters of its rate). Two consumer warpgroups run at once in every schedule, so a warpgroup's exponentials run
  beside wgmma: its own P V (`.overlap`) or the other's (in series, `.paired`, `.turns`).
- max(T, X): the tensor cores and MUFU are two units working at once; the longer one sets the block. At head dim
  64 (T 1024 cycles, X 1419) MUFU does, at 128 (T 2048) the tensor cores.
- K: the cycles a block that neither covers, one per schedule: the row max and its shuffles before the
  exponentials, the sums, O's rescale and P's packing after them, the waits for wgmma and for full slots. Its
  prior K0 is the FP32 pipe's share of that work counted in the loop's SASS, 2 warps x (3 BN / 2 + 10 + D / 2)
  FMNMX/FFMA/FADD/FMUL at FFMA's interval (1.10 cycles) and BN / 4 F2FP at cvt's (2.09) (runs 117, 144): 649
  cycles at head dim 64, 719 at 128.
- n: the tile's blocks (a causal tile's mean, (seq + BM) / 2 / BN), so b is a tile's start and end paid once.

Without a fit (`prior`: K = K0, b = 0) the model is the three times. A fit takes K and b per schedule (least
squares over the run's cases), and `--fit-run` predicts one run with another's parameters: the misses out of
sample. An earlier form, T + a x X + b / n, held one share a of the exponentials per schedule: the misses split by
head dim (X is the same at both, T doubles), which the max holds (docs/attention.md, "The model").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from harness.anchors import has_probe
from harness.errors import IllegalShapeError, SpecError
from harness.families.attention.cases import AttentionCase
from harness.families.attention.ids import parse
from harness.families.attention.problem import TENSOR_FLOPS_PER_CYCLE
from harness.families.base import FamilyModel, residual_frame

METRIC = "cycles_per_kblock"
SCHEDULERS = 4  # per SM: one warp of each consumer warpgroup on each
# Intervals, cycles a warp instruction per scheduler (runs 117 H100 and 144 H200 agree to the hundredth;
# tests/test_readme_findings.py reads them back): ex2.approx.ftz.f32 alone and beside wgmma m64n128k16; fma.rn.f32
# and cvt.rn.bf16x2.f32 (F2FP) alone.
EX2_ALONE = 8.07
EX2_BESIDE_WGMMA = 10.75
FFMA_ALONE = 1.10
CVT_ALONE = 2.09
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


def simt_prior(case: AttentionCase) -> float:
    """K0: the FP32 pipe's work of a block per scheduler, counted in the loop's SASS (a warp: BN / 2 + 6 FMNMX,
    BN / 2 + 2 FFMA, BN / 2 FADD, D / 2 + 2 FMUL, BN / 4 F2FP; tests/test_attention_model.py counts them), at
    FFMA's and cvt's intervals alone."""
    fp32 = 3 * case.bn // 2 + 10 + case.head_dim // 2
    return case.consumers * (fp32 * FFMA_ALONE + case.bn // 4 * CVT_ALONE)


def terms(case: AttentionCase) -> tuple[float, float, float]:
    """(T, X, 1 / n) of the module docstring."""
    tensor = 4 * case.bm * case.bn * case.head_dim / TENSOR_FLOPS_PER_CYCLE
    mufu = case.consumers * exponentials(case) * EX2_BESIDE_WGMMA
    blocks = (case.seq + case.bm) / 2 / case.bn if case.causal else case.seq / case.bn
    return tensor, mufu, 1.0 / blocks


def bound(case: AttentionCase, params: tuple[float, float]) -> str:
    """The largest of the block's terms with the schedule's parameters: what to shorten first."""
    k, b = params
    tensor, mufu, per_block = terms(case)
    named = {"tensor cores": tensor, "MUFU": mufu, "SIMT beside neither": k, "tile start": b * per_block}
    return max(named, key=named.get)


@dataclass(frozen=True)
class AttentionFitReport:
    gpu: str
    source: str
    fits: dict  # schedule -> (K, b)
    rows: list

    @property
    def parameters(self) -> pd.DataFrame:
        return pd.DataFrame([{"gpu": self.gpu, "source": self.source, "schedule": name, "K (a block)": round(k),
                              "b (a tile)": round(b)} for name, (k, b) in sorted(self.fits.items())])

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
    """{schedule: (K, b)}: least squares of cycles - max(T, X) on 1 and 1 / n over each schedule's cases."""
    fits = {}
    for name in sorted({schedule(case) for case, _ in points}):
        mine = [(case, terms(case), value) for case, value in points if schedule(case) == name]
        x = np.array([[1.0, n] for _, (_, _, n), _ in mine])
        y = np.array([value - max(t, m) for _, (t, m, _), value in mine])
        if len(mine) >= 2 and np.linalg.matrix_rank(x) == 2:
            (k, b), *_ = np.linalg.lstsq(x, y, rcond=None)
        else:  # too few cases to part the two: the prior
            k, b = float(np.mean([simt_prior(case) for case, _, _ in mine])), 0.0
        fits[name] = (float(k), float(b))
    return fits


def predict_block(case: AttentionCase, params: tuple[float, float] | None) -> float:
    """max(T, X) + K + b / n; the prior (K = K0, b = 0) where the schedule has no fit."""
    tensor, mufu, per_block = terms(case)
    k, b = params if params is not None else (simt_prior(case), 0.0)
    return max(tensor, mufu) + k + b * per_block


class AttentionModel(FamilyModel):
    """A block of keys' cycles: max(T, X) + K + b / n per schedule (module docstring)."""

    def prior(self, gpu: str) -> dict:
        return {}  # every schedule at K = K0, b = 0: the three times

    def predict(self, case, metric: str, params: dict | None) -> float | None:
        if metric != METRIC or not has_probe(case):  # cuDNN's case (an anchor) has no blocks of ours
            return None
        return predict_block(case, (params or {}).get(schedule(case)))

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
                 "bound": bound(case, fits.get(schedule(case), (simt_prior(case), 0.0)))} for case, value in points]
        return AttentionFitReport(gpu, source, fits, rows)
