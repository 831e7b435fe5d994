"""The ping-pong schedule's counters, read for the planner (fitting.py; model.pingpong_cycles prices the schedule).

In ping-pong (ptx/pipeline.cuh SCHEDULE_PINGPONG) the kernel's counters are consumer warpgroup 0's: its mainloop cycles
over its own k-blocks (`cycles_per_kblock`) and its epilogue cycles over its own tiles. The two warpgroups' mainloops run
one after the other (a named barrier passes the turn, and the ring delivers a tile's k-blocks only after the tile
before's), yet runs 109 and 112 (H100) count 992-1848 cycles a k-block for tiles whose kernels take 583-964 a k-block
of the CTA's time: the mainloop counter spans warpgroup 0's wait for its turn, the other warpgroup's mainloop less its
own epilogue. Read so, a CTA of n tiles, warpgroup 0 taking n0 = ceil(n / 2) of them (its first without a wait), counts

    counter x kblocks x n0 = T + (n0 - 1) (2 T - E)      T: a tile's mainloop (k-blocks and turn), E: the epilogue counter

and n T + E comes within -0.5 % to +5.4 % of the timed kernel's cycles in each of the 33 ping-pong cases (the rest is
the launch's fixed cost; tests/test_gemm_pingpong.py), where the counter read as one tile's mainloop gives 1.61-1.93
times them. Fitted as a plain k-block (before this module), the counter pulled the k-block's and the epilogue's terms
far off: the fit to run 112 (18 ping-pong cases of 22) missed the other runs' cases by 10-52 % at the median.
"""

from __future__ import annotations

from dataclasses import replace
from math import ceil

import numpy as np
import pandas as pd

from harness.families.gemm.cases import GemmCase
from harness.families.gemm.params import Params
from harness.families.gemm.problem import sms_used

# The turn is fitted only from a run whose ping-pong cases could show it: at least PINGPONG_CASES of them whose turn
# (the prior's) is at least TURN_SHARE of their tile's mainloop. Beyond that a tile's k-blocks' own misses (the planner's
# k-block misses ping-pong's by -18 % to +18 % in runs 109 and 112) would be fitted into it: every stored ping-pong tile
# walks 32-128 k-blocks, where a turn of 171 cycles is 0.2-0.5 % of the tile.
PINGPONG_CASES = 3
TURN_SHARE = 0.02


def tiles_per_cta(case: GemmCase, sm_count: int) -> int:
    """Tiles of the busiest CTA of a persistent grid."""
    return ceil(case.items * case.cluster / sms_used(case, sm_count))


def mainloop_per_tile(case: GemmCase, counter: float, epilogue: float, sm_count: int) -> float:
    """T, a tile's mainloop (its k-blocks and the turn) that warpgroup 0's counters imply (module docstring): `counter`
    its cycles per k-block, `epilogue` its cycles per tile."""
    n0 = ceil(tiles_per_cta(case, sm_count) / 2)
    return (counter * case.kblocks * n0 + (n0 - 1) * epilogue) / (2 * n0 - 1)


def counter_per_kblock(case: GemmCase, sm_count: int, mainloop: float, epilogue: float) -> float:
    """What warpgroup 0's k-block counter reads for a tile's mainloop and epilogue (mainloop_per_tile's inverse)."""
    n0 = ceil(tiles_per_cta(case, sm_count) / 2)
    return ((2 * n0 - 1) * mainloop - (n0 - 1) * epilogue) / (n0 * case.kblocks)


def identifies_turn(chosen: list[GemmCase], p: Params, t_kblocks: list[float]) -> bool:
    """Whether a run's ping-pong cases can show the turn apart from their k-blocks (PINGPONG_CASES, TURN_SHARE)."""
    short = [c for c, t in zip(chosen, t_kblocks) if p.turn_cycles >= TURN_SHARE * c.kblocks * t]
    return len(short) >= PINGPONG_CASES


def fit_turn(p: Params, table: pd.DataFrame, cases: dict[str, GemmCase], kblock, weight: float) -> Params:
    """The turn h from the run's ping-pong cases, every other term held: least squares on the relative error of a tile's
    mainloop (kblocks x t_kblock + h) against the one the counters imply, h held near the start (the prior) by `weight`
    x its relative move squared (as fitting._least_squares holds the k-block's terms). `kblock(case, p, mhz)`: the
    planner's cycles per k-block. Where the run does not identify it (identifies_turn), the start's h."""
    rows = [(cases[c], r) for c, r in table.iterrows() if cases[c].pingpong
            and not np.isnan(r.get("cycles_per_kblock", np.nan)) and not np.isnan(r.get("epilogue_cycles_per_tile", np.nan))]
    if not rows:
        return p
    chosen = [c for c, _ in rows]
    t_kblocks = np.array([kblock(c, p, float(r.clock_mhz)) for c, r in rows])
    if not identifies_turn(chosen, p, list(t_kblocks)):
        return p
    kblocks = np.array([c.kblocks for c in chosen], dtype=float)
    target = np.array([mainloop_per_tile(c, float(r.cycles_per_kblock), float(r.epilogue_cycles_per_tile),
                                         int(r.sm_count)) for c, r in rows])
    scale = max(p.turn_cycles, 50.0)
    grid = np.linspace(0.0, max(4 * scale, float(np.max(target - kblocks * t_kblocks))), 4001)
    loss = [np.sum(((kblocks * t_kblocks + h) / target - 1) ** 2) + weight * ((h - p.turn_cycles) / scale) ** 2
            for h in grid]
    return replace(p, turn_cycles=float(grid[int(np.argmin(loss))]))
