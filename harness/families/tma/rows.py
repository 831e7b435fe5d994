"""The tma report's rows: a run's tma measurements with each case's geometry and launch as columns, the 2-D box
loads its box-size curves read, the read roofline's cases, and the words for a latency metric."""

from __future__ import annotations

import json

import pandas as pd

from harness.families.tma.cases import DEFAULT_PROMOTION, GEMM_PITCH
from harness.families.tma.ids import parse


ROOFLINE_CASES = ("ld.global.v4.u32", "cp.async.cg.shared.global.16", "ld.global.v4.u32.then.st.shared.v4.u32")


NEAR = 0.95  # "within 5 % of the best"


def tma_frame(measured: pd.DataFrame) -> pd.DataFrame:
    """The tma family's rows of `measured`, each with its case's operation, box bytes, cluster, im2col and pitch
    and its launch's stages, blocks per SM and source as columns."""
    frame = measured[measured.family == "tma"].copy()
    if frame.empty:
        return frame
    cases = {c: parse(c) for c in set(frame.case_id)}
    frame["op"] = [cases[c].op for c in frame.case_id]
    frame["box_bytes"] = [cases[c].box_bytes for c in frame.case_id]
    frame["cluster"] = [cases[c].cluster for c in frame.case_id]
    frame["im2col"] = [cases[c].im2col for c in frame.case_id]
    frame["pitch"] = [cases[c].pitch for c in frame.case_id]
    launches = [json.loads(launch) for launch in frame.launch]
    frame["stages"] = [k.get("stages") for k in launches]
    frame["blocks_per_sm"] = [k.get("blocks_per_sm") for k in launches]
    frame["source"] = [k.get("source") for k in launches]
    return frame


def latency_words(metric: str) -> str:
    return ("from a clock read just before its issue to its mbarrier's completion seen, net of two clock reads "
            "timed in the same launch" if metric == "latency_cycles" else
            "net of the same arrive.expect_tx / try_wait sequence without the copy, timed in another launch (what "
            "the copy adds to that sequence: this run did not time the copy from its issue)")


def box_size_cases(frame: pd.DataFrame, pitch: int | None = None) -> pd.DataFrame:
    """The 2-D b16 loads of 128-byte rows, 128-byte swizzle, map by value, the default L2 promotion: only the
    box's rows vary; in one geometry, `pitch` (None: the run's default, a GEMM's tile where it has those)."""
    chosen = {c: p.pitch for c in set(frame.case_id) if (p := parse(c)).op == "load" and p.rank == 2 and p.elem == 2
              and p.box[0] == 64 and p.swizzle == 128 and not p.gmap and p.cluster == 1
              and p.promotion == DEFAULT_PROMOTION}
    if pitch is None:
        pitch = GEMM_PITCH if GEMM_PITCH in chosen.values() else 0
    return frame[frame.case_id.isin([c for c, p in chosen.items() if p == pitch])]
