"""The data-movement models, fitted to a run (`bench model --run`), each with its residuals:

    copy latency    latency = base + bytes / rate, per source (L2, HBM, prefetched), least squares over
                    the single-CTA tile and bulk loads (not im2col or multicast, whose bytes are not one
                    box's): base is the fixed cost of a copy, rate the bytes per cycle one copy streams in.
    copies in flight  the TMA streams ({"stages": k, "blocks_per_sm": b}) as a closed queueing network of one
                    SM, solved by mean-value analysis (harness/queueing.py symmetric_mva): each of the
                    b blocks keeps k copies of B bytes in flight; a copy passes its block's issue loop (a queue
                    of the block's own, `issue` cycles a copy: the one fitted parameter), the SM's share of the
                    memory system (a queue shared by the SM's blocks, B / (roofline / SMs) cycles a copy, the
                    roofline the run's read baseline, ld.global.v4.u32) and a delay, the rest of the copy's
                    unloaded latency: the run's own HBM latency line at B, less the two services (at least 0).
                    Everything but `issue` is the run's own measurement, so `issue` fitted to one GPU's run
                    predicts another GPU's streams from that GPU's latency line and roofline
                    (`bench model --run B --fit-run A`).

Residuals of the streams count every point but those at the roofline on both sides: where the model's memory
queue is busy 95 % of the time or more (`AT_ROOFLINE`) its bandwidth is the roofline it was given, and where
the measurement also reaches 95 % of that roofline the row says only that the roofline is the roofline:
marked `predicts` = False. A point the model puts at the roofline but measured below it is counted.

`little` is Little's law capped at the roofline, the model this one replaces (docs/data-movement.md compares them).
The DSMEM hop is the dsmem family's model (harness/families/dsmem/fitting.py).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from harness.families.base import FamilyModel
from harness.families.tma.cases import FIXED_IDS
from harness.families.tma.ids import parse
from harness.queueing import symmetric_mva
from harness.stats import residual_frame

SOURCES = ("L2", "HBM", "prefetched")
GEMM_TILE = "GEMM tile"  # the latency line of the tiles of a matrix many boxes wide (cases.py, `.pitch`)
AT_ROOFLINE = 0.95  # the memory queue's utilisation from which a prediction is the roofline it was given
ISSUE_RANGE = (1.0, 4000.0)  # cycles a copy: where the fit of the issue loop looks
STREAM_MODEL = "copies in flight"


def load_latency_metric(frame: pd.DataFrame) -> str:
    """A TMA load's latency in this run: latency_cycles, timed from its issue (schema 12 on); in runs that did
    not time the issue, latency_added_cycles (the sequence less the same without the copy, which those runs
    stored as latency_cycles: migration 0012)."""
    loads = frame[frame.case_id.str.contains("shared::cluster.global", regex=False)
                  & frame.launch.str.contains('"source"', regex=False)]
    return "latency_cycles" if (loads.metric == "latency_cycles").any() else "latency_added_cycles"


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
    """GB/s that `stages` copies in flight per block sustain at that latency, capped at the roofline
    (Little's law: the model the queueing network replaced)."""
    in_flight = sms * blocks * stages * box_bytes
    return min(roofline_gbps, in_flight / (latency_cycles / (clock_mhz * 1e6)) / 1e9)


@dataclass(frozen=True)
class StreamPoint:
    case_id: str
    stages: int
    blocks: int
    box_bytes: int
    sms: int
    clock_mhz: float
    measured: float  # GB/s


def stream_bandwidth(point: StreamPoint, issue: float, latency: Line, roofline_gbps: float) -> tuple[float, float]:
    """(GB/s, the memory queue's utilisation) the queueing network predicts for one stream point."""
    per_sm = roofline_gbps * 1e9 / (point.sms * point.clock_mhz * 1e6)  # bytes per cycle, the SM's share
    memory = point.box_bytes / per_sm
    delay = max(latency.at(point.box_bytes) - issue - memory, 0.0)
    solution = symmetric_mva(point.blocks, point.stages, issue, memory, delay)
    copies = solution.throughput * point.blocks  # copies per cycle per SM
    return copies * point.box_bytes * point.sms * point.clock_mhz * 1e6 / 1e9, copies * memory


def fit_issue(points: list[StreamPoint], latency, roofline_gbps: float) -> float:
    """The issue cycles a copy that minimise the mean squared log ratio of measured to predicted bandwidth over
    the points: golden-section search over ISSUE_RANGE on a log scale. `latency`: one Line for every point, or
    a function of the point giving its own (a GEMM's tile and a contiguous box have lines of their own)."""
    line_of = latency if callable(latency) else (lambda point: latency)

    def loss(log_issue: float) -> float:
        issue = math.exp(log_issue)
        return float(np.mean([math.log(p.measured / stream_bandwidth(p, issue, line_of(p), roofline_gbps)[0]) ** 2
                              for p in points]))

    low, high = math.log(ISSUE_RANGE[0]), math.log(ISSUE_RANGE[1])
    ratio = (math.sqrt(5) - 1) / 2
    a, b = high - ratio * (high - low), low + ratio * (high - low)
    fa, fb = loss(a), loss(b)
    while high - low > 1e-4:
        if fa < fb:
            high, b, fb = b, a, fa
            a = high - ratio * (high - low)
            fa = loss(a)
        else:
            low, a, fa = a, b, fb
            b = low + ratio * (high - low)
            fb = loss(b)
    return math.exp((low + high) / 2)


@dataclass(frozen=True)
class FitReport:
    gpu: str
    lines: dict[str, Line]
    residual_rows: list[dict]
    issue: float | None = None  # cycles a copy in a block's issue loop
    issue_from: str = ""  # "fitted" or where it came from (another run)
    roofline_gbps: float | None = None
    stream_points: int = 0

    @property
    def parameters(self) -> pd.DataFrame:
        rows = [{"gpu": self.gpu, "model": f"copy latency from {source}", "base_cycles": round(line.base, 1),
                 "bytes_per_cycle": round(line.rate, 1), "points": line.points}
                for source, line in self.lines.items()]
        if self.issue is not None:
            rows.append({"gpu": self.gpu, "model": f"{STREAM_MODEL}: issue cycles a copy ({self.issue_from})",
                         "base_cycles": round(self.issue, 1), "bytes_per_cycle": None, "points": self.stream_points})
        return pd.DataFrame(rows)

    @property
    def residuals(self) -> pd.DataFrame:
        return residual_frame(self.residual_rows)


class TmaModel(FamilyModel):
    """Fitted only (no datasheet prior: the papers print no copy engine parameters)."""

    def fit(self, frame: pd.DataFrame, gpu: str, source: str, issue: float | None = None,
            issue_from: str = "fitted") -> FitReport | None:
        """The latency lines and the streams' queueing network fitted to the run; with `issue`, the streams
        are predicted with that issue cost (fitted elsewhere) instead of one fitted here."""
        rows = frame.assign(_launch=[json.loads(x) if x else {} for x in frame.launch])
        cases = {c: parse(c) for c in rows.case_id.unique()}
        lines, residuals = self._latency(rows, cases)
        if not lines:
            return None
        streams = self._streams(rows, cases, lines, issue, issue_from)
        if streams is None:
            return FitReport(gpu, lines, residuals)
        issue, roofline, stream_rows = streams
        return FitReport(gpu, lines, residuals + stream_rows, issue, issue_from, roofline, len(stream_rows))

    def transfer(self, fitted: FitReport, frame: pd.DataFrame, gpu: str, source: str) -> FitReport | None:
        """Predict this run's streams with the issue cost fitted to another run (`fitted`, its report). The latency
        lines are fitted to this run itself: their rows say so (`in_sample`)."""
        if fitted.issue is None:
            return None
        report = self.fit(frame, gpu, source, fitted.issue, f"from {source}" if source else "from another run")
        if report is None:
            return None
        rows = [{**row, "in_sample": row["model"].startswith("copy latency")} for row in report.residual_rows]
        return replace(report, residual_rows=rows)

    @staticmethod
    def _single_box(case) -> bool:
        # not the authors' 3-D boxes (`.pitch4096x4194304`): up to 1024 rows of 16 bytes a box, a geometry of its own
        return (case.op in ("load", "bulk") and not case.im2col and case.cluster == 1 and not case.gmap
                and not case.l2map and not case.plane)

    @staticmethod
    def _line_name(source: str, case) -> str:
        """A latency line per source, and per geometry: a GEMM's tile (rows a pitch apart) has its own."""
        return f"{source}, {GEMM_TILE}" if case.pitch else source

    def _latency(self, rows: pd.DataFrame, cases: dict) -> tuple[dict[str, Line], list[dict]]:
        lines, residuals = {}, []
        metric = load_latency_metric(rows)
        # .astype(bool): a mask mapped over no rows is of dtype object, which pandas takes as columns
        latency = rows[(rows.metric == metric)
                       & rows.case_id.map(lambda c: self._single_box(cases[c])).astype(bool)]
        names = latency.case_id.map(lambda c: cases[c]) if len(latency) else latency.case_id
        for source in SOURCES:
            at = latency._launch.map(lambda launch: launch.get("source") == source).astype(bool)
            for name in (source, f"{source}, {GEMM_TILE}"):
                part = latency[at & (names.map(lambda case: self._line_name(source, case)) == name).astype(bool)]
                nbytes = part.case_id.map(lambda c: cases[c].box_bytes).to_numpy()
                line = fit_line(nbytes, part.value.to_numpy())
                if line is None:
                    continue
                lines[name] = line
                residuals += [{"model": f"copy latency ({name})", "case_id": c, "launch": f"source={source}",
                               "measured": round(v, 1), "fitted": round(line.at(b), 1),
                               "residual": round(v - line.at(b), 1), "predicts": True}
                              for c, v, b in zip(part.case_id, part.value, nbytes)]
        return lines, residuals

    def _streams(self, rows: pd.DataFrame, cases: dict, lines: dict[str, Line], issue: float | None,
                 issue_from: str) -> tuple[float, float, list[dict]] | None:
        hbm = lines.get("HBM")

        def line_of(point: StreamPoint) -> Line:  # the HBM line of the point's geometry, where the run has one
            return lines.get(self._line_name("HBM", cases[point.case_id]), hbm)

        readers = (FIXED_IDS["read"], FIXED_IDS["cp.async"], FIXED_IDS["ld+st"])  # the roofline: the best of them
        roofline = rows[rows.case_id.isin(readers) & (rows.metric == "bandwidth_gbps")].value
        streams = rows[(rows.metric == "bandwidth_gbps")
                       & rows.case_id.map(lambda c: self._single_box(cases[c])).astype(bool)]
        if hbm is None or roofline.empty or streams.empty:
            return None
        top = float(roofline.max())
        points = [StreamPoint(c, launch["stages"], launch["blocks_per_sm"], cases[c].box_bytes, int(sms), float(clock),
                              float(value))
                  for c, value, launch, sms, clock in zip(streams.case_id, streams.value, streams._launch,
                                                          streams.sm_count, streams.sm_clock_mhz)]
        if issue is None:
            issue = fit_issue(points, line_of, top)
        out = []
        for p in points:
            fitted, busy = stream_bandwidth(p, issue, line_of(p), top)
            # At the roofline only where the model's queue is busy AND the measurement reaches the roofline too:
            # a point the model puts at the roofline but measured below it is a miss, and counts.
            predicts = not (busy >= AT_ROOFLINE and p.measured >= AT_ROOFLINE * top)
            out.append({"model": STREAM_MODEL + ("" if predicts else " (at the roofline)"), "case_id": p.case_id,
                        "launch": f"stages={p.stages},blocks_per_sm={p.blocks}", "measured": round(p.measured, 1),
                        "fitted": round(fitted, 1), "residual": round(p.measured - fitted, 1), "predicts": predicts,
                        "issue": issue_from})
        return issue, top, out
