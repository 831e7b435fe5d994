"""Whose figures a run is compared with, and the terms of each figure's GPU (issue 45).

A run meets the papers' figures (their H800 PCIe: harness/paper.py) and the figures published for its own GPU
model (the seed architecture chapter's H100 SXM5; the HGEMM worklog's), matched through the datasheet names
(harness/datasheets.py spec_name). A time-based figure compares per cycle per SM: over its GPU's SMs and the
clock printed beside it, else the highest clock that GPU runs at. A bandwidth in wall time (GB/s of a figure's
own GPU, or a DSMEM ring copy whose clock is not printed) compares in wall time per SM, with the SM clock
measured during ours stated beside it. A range compares with its nearer end (harness/seed_chapter.py).

A GPU whose SM is another's on another board (gpu_specs.csv sm_of: the H200 SXM's is the H100 SXM5's) meets that
GPU's figures of the SM itself too, and only those (across_boards): a figure whose case stays inside the SM
(Family.within_sm: tensor cores, CUDA cores, MUFU, shared memory, L1) compared in cycles or per cycle per SM. A
figure of the memory beyond the SM (the L2, HBM, TMA, the whole-kernel GEMMs), or one compared in wall time, is
the board's: it is left out of such a run's comparison. Each row met across boards says so in its note."""

from __future__ import annotations

import numpy as np
import pandas as pd

from harness.datasheets import gpu_specs, same_sm, spec_name
from harness.errors import IllegalShapeError, SpecError
from harness.paper import PAPER_CLOCK_MHZ, PAPER_GPU, PAPER_SMS
from harness.seed_chapter import figure_range

# The highest SM clock each GPU runs at: the H800 PCIe's as the papers print it; the H100 SXM5's and the H200's
# as the devices of the runs of record report it (gpu_specs.csv notes: 1980 MHz), and in-kernel clocks reach it.
MAX_SM_CLOCK_MHZ = {PAPER_GPU: PAPER_CLOCK_MHZ, "H100 SXM5": 1980.0, "H200 SXM": 1980.0}
WALL_UNIT = "GB/s"  # a bandwidth_gbps figure in this unit compares in wall time (published.py converts to it)
WALL_BASIS = "wall time per SM"


def reference_gpus(run_gpu: str | None) -> tuple[str, ...]:
    """The GPUs whose figures a run on `run_gpu` is compared with: the papers', its own model's, and those of the
    GPUs with the same SM (datasheets.same_sm; across_boards keeps their figures of the SM only)."""
    own = spec_name(run_gpu or "", gpu_specs())
    return (PAPER_GPU,) if own in (None, PAPER_GPU) else (PAPER_GPU, own) + other_boards(run_gpu)


def other_boards(run_gpu: str | None) -> tuple[str, ...]:
    """The GPUs whose SM is the run's GPU's, on another board (gpu_specs.csv sm_of), the papers' excluded."""
    own = spec_name(run_gpu or "", gpu_specs())
    return () if own in (None, PAPER_GPU) else tuple(g for g in same_sm(own) if g != PAPER_GPU)


def in_wall_time(metric: str, unit: str | None) -> bool:
    """Is a figure compared in wall time: a bandwidth (GB/s; TB/s are converted to it), or cycles that are wall time
    x a clock (published.py: unit ns)?"""
    return metric == "bandwidth_gbps" or unit in (WALL_UNIT, "ns")


def of_the_sm(case_id: str, metric: str, unit: str | None) -> bool:
    """Is a figure one of the SM itself: its case stays inside the SM (its family's within_sm) and it compares in
    cycles or per cycle per SM, not in wall time? Such a figure holds for every GPU with the same SM."""
    from harness.registry import family_of, parse_case_id

    if in_wall_time(metric, unit):
        return False
    try:
        case = parse_case_id(case_id)
    except (SpecError, IllegalShapeError):  # an id this version no longer spells: not judged across boards
        return False
    return bool(family_of(case).within_sm(case))


def across_boards(refs: pd.DataFrame, run_gpu: str | None) -> pd.DataFrame:
    """The figures a run on `run_gpu` meets (pairing.paper_figures' rows): every figure of the papers' GPU and of its
    own model; of a GPU with the same SM on another board, the figures of the SM only (of_the_sm)."""
    boards = other_boards(run_gpu)
    if not boards or refs.empty:
        return refs
    keep = [gpu not in boards or of_the_sm(case, metric, unit)
            for gpu, case, metric, unit in zip(refs.paper_gpu, refs.case_id, refs.metric, refs.paper_unit)]
    return refs[np.asarray(keep, dtype=bool)]


def same_sm_note(paper_gpu, run_gpu: str | None, basis: str) -> str:
    """Beside a figure met across boards: whose it is and why it holds here (the same SM), in which basis."""
    if not isinstance(paper_gpu, str) or paper_gpu not in other_boards(run_gpu):
        return ""
    own = spec_name(run_gpu or "", gpu_specs())
    how = "in SM cycles" if basis == "cycles" else basis
    return f"the {paper_gpu}'s figure; the {own} has the same SM (gpu_specs.csv sm_of): compared {how}"


def terms(gpus: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the SMs and the highest SM clock of the figure's GPU (NaN where a row has no figure)."""
    specs = gpu_specs()
    sms = [PAPER_SMS if g == PAPER_GPU else (specs[g].sm_count if g in specs and specs[g].sm_count else np.nan)
           for g in gpus]
    clock = [MAX_SM_CLOCK_MHZ.get(g, np.nan) if isinstance(g, str) else np.nan for g in gpus]
    return np.asarray(sms, dtype=float), np.asarray(clock, dtype=float)


def wall_time(frame: pd.DataFrame) -> np.ndarray:
    """Rows whose figure is a bandwidth in wall time: bandwidth_gbps against a figure in GB/s."""
    return ((frame.metric == "bandwidth_gbps") & (frame.paper_unit == WALL_UNIT)).to_numpy()


def nearer_end(comparable: pd.Series, paper: pd.Series, notes: pd.Series) -> np.ndarray:
    """Each figure as compared: a range's end nearer ours (ours itself inside it), else the figure."""
    out = paper.to_numpy(dtype=float).copy()
    for i, (ours, note) in enumerate(zip(comparable, notes)):
        bounds = figure_range(note) if isinstance(note, str) else None
        if bounds and ours == ours:
            out[i] = min(max(ours, bounds[0]), bounds[1])
    return out


def range_note(notes) -> str:
    """A range figure's note: the range it states."""
    bounds = figure_range(notes) if isinstance(notes, str) else None
    return f"the figure is a range, {bounds[0]:g}-{bounds[1]:g}: compared with its nearer end" if bounds else ""


def per_cycle(gbps: float, sms: float, mhz: float) -> float:
    """Bytes per cycle per SM of a bandwidth in GB/s over `sms` SMs at `mhz`."""
    return gbps * 1e3 / (sms * mhz)


def wall_note(row) -> str:
    """Beside a wall-time verdict: what was scaled, and the SM clock ours ran at (theirs is not printed); then both
    per cycle per SM, the figure's at its GPU's highest clock, so at least that (it ran at that clock or below)."""
    note = (f"wall time: ours {row.value:.4g} GB/s on {row.sm_count:.0f} SMs at {row.clock_mhz:.0f} MHz "
            f"({row.clock_source} SM clock), {row.comparable:.4g} GB/s on the figure's {row.paper_sms:.0f}")
    top = getattr(row, "paper_top_mhz", np.nan)
    if top == top and row.paper == row.paper and row.clock_mhz == row.clock_mhz:
        ours, theirs = per_cycle(row.value, row.sm_count, row.clock_mhz), per_cycle(row.paper, row.paper_sms, top)
        note += (f"; per cycle per SM: ours {ours:.2f} B, the figure's at least {theirs:.2f} (at its GPU's highest "
                 f"clock, {top:.0f} MHz): ours at most {ours / theirs:.3f} x")
    return note
