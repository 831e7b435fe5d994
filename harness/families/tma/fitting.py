"""The data-movement models, fitted to a run (`bench model --run`), each with its residuals:

    copy latency    latency = base + bytes / rate, per source (L2, HBM, prefetched), least squares over
                    the single-CTA tile and bulk loads (not im2col or multicast, whose bytes are not one
                    box's): base is the fixed cost of a copy, rate the bytes per cycle one copy streams in.
    Little's law    bandwidth = min(roofline, bytes in flight / HBM latency of the box): in flight are
                    SMs x blocks per SM x copies per block x box bytes; the latency is the fitted HBM line
                    at that box, in seconds at the clock measured during the stream; the roofline is the
                    run's read baseline (ld.global.v4.u32). Where it misses, copies in flight are not the
                    only limit (a copy's issue cost, the box's row count).

The DSMEM hop is the dsmem family's model (harness/families/dsmem/fitting.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pandas as pd

from harness.families.tma.cases import FIXED_IDS, parse
from harness.stats import residual_frame

SOURCES = ("L2", "HBM", "prefetched")


@dataclass(frozen=True)
class Line:
    base: float
    rate: float  # bytes per cycle
    points: int

    def at(self, nbytes: float) -> float:
        return self.base + nbytes / self.rate


def fit_line(nbytes: np.ndarray, cycles: np.ndarray) -> Line | None:
    """cycles = base + bytes / rate by least squares; None with fewer than three distinct sizes."""
    if len(set(nbytes.tolist())) < 3:
        return None
    slope, base = np.polyfit(nbytes.astype(float), cycles.astype(float), 1)
    return Line(float(base), float(1 / slope) if slope > 0 else float("inf"), len(nbytes))


def little(sms: int, blocks: int, stages: int, box_bytes: int, latency_cycles: float, clock_mhz: float,
           roofline_gbps: float) -> float:
    """GB/s that `stages` copies in flight per block sustain at that latency, capped at the roofline."""
    in_flight = sms * blocks * stages * box_bytes
    return min(roofline_gbps, in_flight / (latency_cycles / (clock_mhz * 1e6)) / 1e9)


@dataclass(frozen=True)
class FitReport:
    gpu: str
    lines: dict[str, Line]
    residual_rows: list[dict]

    @property
    def parameters(self) -> pd.DataFrame:
        rows = [{"gpu": self.gpu, "model": f"copy latency from {source}", "base_cycles": round(line.base, 1),
                 "bytes_per_cycle": round(line.rate, 1), "points": line.points}
                for source, line in self.lines.items()]
        return pd.DataFrame(rows)

    @property
    def residuals(self) -> pd.DataFrame:
        return residual_frame(self.residual_rows)


class TmaModel:
    """Fitted only (no datasheet prior: the papers print no copy engine parameters)."""

    def prior(self, gpu: str):
        return None

    def predict(self, case, metric: str, params) -> float | None:
        return None

    def fit(self, frame: pd.DataFrame, gpu: str, source: str) -> FitReport | None:
        rows = frame.assign(_launch=[json.loads(x) if x else {} for x in frame.launch])
        cases = {c: parse(c) for c in rows.case_id.unique()}
        lines, residuals = self._latency(rows, cases)
        residuals += self._little(rows, cases, lines.get("HBM"))
        if not lines:
            return None
        return FitReport(gpu, lines, residuals)

    @staticmethod
    def _single_box(case) -> bool:
        return case.op in ("load", "bulk") and not case.im2col and case.cluster == 1 and not case.gmap

    def _latency(self, rows: pd.DataFrame, cases: dict) -> tuple[dict[str, Line], list[dict]]:
        lines, residuals = {}, []
        # .astype(bool): a mask mapped over no rows is of dtype object, which pandas takes as columns
        latency = rows[(rows.metric == "latency_cycles")
                       & rows.case_id.map(lambda c: self._single_box(cases[c])).astype(bool)]
        for source in SOURCES:
            part = latency[latency._launch.map(lambda launch: launch.get("source") == source).astype(bool)]
            nbytes = part.case_id.map(lambda c: cases[c].box_bytes).to_numpy()
            line = fit_line(nbytes, part.value.to_numpy())
            if line is None:
                continue
            lines[source] = line
            residuals += [{"model": f"copy latency ({source})", "case_id": c, "launch": f"source={source}",
                           "measured": round(v, 1), "fitted": round(line.at(b), 1), "residual": round(v - line.at(b), 1)}
                          for c, v, b in zip(part.case_id, part.value, nbytes)]
        return lines, residuals

    def _little(self, rows: pd.DataFrame, cases: dict, hbm: Line | None) -> list[dict]:
        readers = (FIXED_IDS["read"], FIXED_IDS["cp.async"], FIXED_IDS["ld+st"])  # the roofline: the best of them
        roofline = rows[rows.case_id.isin(readers) & (rows.metric == "bandwidth_gbps")].value
        if hbm is None or roofline.empty:
            return []
        top = float(roofline.max())
        streams = rows[(rows.metric == "bandwidth_gbps") & rows.case_id.map(lambda c: self._single_box(cases[c]))]
        out = []
        for case_id, value, launch, sms, clock in zip(streams.case_id, streams.value, streams._launch, streams.sm_count,
                                                       streams.sm_clock_mhz):
            box = cases[case_id].box_bytes
            fitted = little(int(sms), launch["blocks_per_sm"], launch["stages"], box, hbm.at(box), float(clock), top)
            out.append({"model": "Little's law", "case_id": case_id,
                        "launch": f"stages={launch['stages']},blocks_per_sm={launch['blocks_per_sm']}",
                        "measured": round(value, 1), "fitted": round(fitted, 1), "residual": round(value - fitted, 1)})
        return out
