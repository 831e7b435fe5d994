"""The DSMEM models, fitted to a run (`bench model --run`), each with its residuals:

    DSMEM hop       one constant: the mean of rank 0's pointer chases to the other CTAs over the cluster sizes
                    (ld.shared::cluster.u32.clusterC, C = 2..16: the median over placements of the chase to rank 1
                    in runs before 82, over placements and every partner from run 82), with its spread (the
                    largest minus the smallest). The hop does not grow with the cluster: a line a + b log2(C)
                    through the four chases of the runs of record has a slope under a cycle per doubling, inside
                    their spread, so a second parameter predicts nothing the constant does not. Fitted to one
                    run, it predicts another GPU's chases (`bench model --run B --fit-run A`).
    chase bandwidth the papers' ring and pair chases (every thread of one block per SM following `ilp` dependent
                    4-byte loads through another CTA) from requests in flight and the hop: a closed queue of one
                    SM solved by exact MVA (harness/queueing.py): threads x ilp requests, each a delay of
                    the hop less its service and a service of 4 bytes at the SM's share of the run's load stream
                    to the next CTA (ld.shared::cluster.u32.clusterC, the best of its launches): no parameter of
                    its own. Points where the queue is busy 95 % of the time or more and the measurement reaches
                    95 % of the stream too are that stream, an input: marked `predicts` = False, not counted
                    in the misses; a chase the model puts at the stream but measured below it counts. It counts a warp's 32 loads as 32
                    requests with the hop's latency each; the hop is one lane's load (docs/data-movement.md).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pandas as pd

from harness.families.base import FamilyModel
from harness.families.dsmem.cases import parse
from harness.queueing import exact_mva
from harness.stats import residual_frame

AT_ROOFLINE = 0.95  # the queue's utilisation from which a chase's bandwidth is the stream it was given
CHASE_BYTES = 4  # one ld.shared::cluster.u32 a step
CHASE_PATTERNS = ("ring", "pair")  # a CTA's threads chase through one other CTA (broadcast: all through rank 0)


@dataclass(frozen=True)
class FitReport:
    gpu: str
    hop: float  # cycles
    spread: float  # largest minus smallest chase
    points: int
    residual_rows: list[dict]
    hop_from: str = "fitted"

    @property
    def parameters(self) -> pd.DataFrame:
        return pd.DataFrame([{"gpu": self.gpu, "model": f"DSMEM hop: a constant ({self.hop_from})",
                              "hop_cycles": round(self.hop, 1), "spread_cycles": round(self.spread, 1),
                              "points": self.points}])

    @property
    def residuals(self) -> pd.DataFrame:
        return residual_frame(self.residual_rows)


class DsmemModel(FamilyModel):
    """Fitted only (no datasheet prior: the papers print no parameters of the SM-to-SM network)."""

    def fit(self, frame: pd.DataFrame, gpu: str, source: str, hop: float | None = None,
            hop_from: str = "fitted") -> FitReport | None:
        """The hop constant (or `hop`, fitted elsewhere) and the chases' bandwidth predicted with it; None
        with chases at fewer than two cluster sizes."""
        cases = {c: parse(c) for c in frame.case_id.unique()}
        # .astype(bool): a mask mapped over no rows is of dtype object, which pandas takes as columns
        chains = frame[(frame.metric == "latency_cycles")
                       & frame.case_id.map(lambda c: cases[c].op == "dsmem" and not cases[c].spread).astype(bool)]
        if chains.case_id.map(lambda c: cases[c].cluster).nunique() < 2:
            return None
        values = chains.value.to_numpy(dtype=float)
        own = float(values.mean())
        hop = own if hop is None else hop
        rows = [{"model": "DSMEM hop", "case_id": c, "launch": f"cluster={cases[c].cluster}", "measured": round(v, 1),
                 "fitted": round(hop, 1), "residual": v - hop, "predicts": True}
                for c, v in zip(chains.case_id, values)]
        rows += self._chases(frame, cases, hop)
        return FitReport(gpu, hop, float(values.max() - values.min()), len(values), rows, hop_from)

    def transfer(self, fitted: FitReport, frame: pd.DataFrame, gpu: str, source: str) -> FitReport | None:
        """This run's chases predicted with the hop fitted to another run (`fitted`, its report)."""
        return self.fit(frame, gpu, source, fitted.hop, f"from {source}" if source else "from another run")

    @staticmethod
    def _chases(frame: pd.DataFrame, cases: dict, hop: float) -> list[dict]:
        bandwidth = frame[frame.metric == "bandwidth_gbps"]
        streams = bandwidth[bandwidth.case_id.map(lambda c: cases[c].op == "dsmem" and not cases[c].spread).astype(bool)]
        roofline = streams.groupby(streams.case_id.map(lambda c: cases[c].cluster)).value.max().to_dict()
        out = []
        for case_id, value, launch, sms, clock in zip(bandwidth.case_id, bandwidth.value, bandwidth.launch,
                                                      bandwidth.sm_count, bandwidth.sm_clock_mhz):
            case = cases[case_id]
            if case.op != "dsmem-chase" or case.pattern not in CHASE_PATTERNS or case.cluster not in roofline:
                continue
            launch = json.loads(launch)
            per_sm = roofline[case.cluster] * 1e9 / (sms * clock * 1e6)  # bytes per cycle, the SM's share
            service = CHASE_BYTES / per_sm
            requests = launch["threads"] * launch["ilp"]
            throughput = exact_mva([service], max(hop - service, 0.0), requests)  # requests per cycle per SM
            fitted = throughput * CHASE_BYTES * sms * clock * 1e6 / 1e9
            # At the stream only where the model's queue is busy AND the measurement reaches the stream too: a chase
            # the model puts at the stream but measured below it is a miss, and counts.
            predicts = not (throughput * service >= AT_ROOFLINE and value >= AT_ROOFLINE * roofline[case.cluster])
            out.append({"model": "chase bandwidth" + ("" if predicts else " (at the stream)"), "case_id": case_id,
                        "launch": f"threads={launch['threads']},ilp={launch['ilp']}", "measured": round(value, 1),
                        "fitted": round(fitted, 1), "residual": round(value - fitted, 1), "predicts": predicts})
        return out
