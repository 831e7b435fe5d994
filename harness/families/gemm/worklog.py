"""The seed worklog beside the gemm family's measurements: its published figures per ladder step, a verdict on
each (its clock is not printed), and its three observations tested against our counters and pairs."""

from __future__ import annotations

import re
from dataclasses import replace
from math import ceil

import numpy as np
import pandas as pd
from sqlalchemy.exc import SQLAlchemyError

from harness.errors import SpecError
from harness.families.gemm.cases import GemmCase
from harness.families.gemm.configs import BEST, LADDER, pipeline
from harness.families.gemm.ids import parse
from harness.families.gemm.frame import CONFIG, config_label, ideal_kblock, pairs_differing
from harness.paper import DEFAULT_TOLERANCE
from harness.verdicts import AGREES, CLOCK_NOT_PRINTED, DISAGREES


# The seed worklog's observations (its step 3's profile, in that reference figure's notes; its text on tile
# scheduling and on large N): facts to test against our counters and pairs.
WORKLOG_STEP3 = LADDER["3"]


PROFILE = re.compile(r"profiled per tile: load (?P<load>\d+) cycles; tensor cores (?P<tensor>\d+); "
                     r"store (?P<store>\d+)")


SAME_POWER = 0.97  # two mean draws within 3 % are one power (runs 103-108 at the 700 W limit: 690-708 W)


def worklog_figures(ctx, ladder_configs: dict[str, dict]) -> pd.DataFrame:
    """The worklog's published TFLOPS of each ladder step where the database holds them as references (its size,
    4096^3: the seed's section 2.11): step, gpu, value, size. Empty where it holds none."""
    try:
        refs = ctx.store.query("""SELECT gpu_name, case_id, value FROM reference_values
                                  WHERE metric = 'throughput_tflops' AND case_id LIKE 'gemm.%'""")
    except SQLAlchemyError:
        return pd.DataFrame()
    rows = []
    for ref in refs.itertuples():
        try:
            case = parse(ref.case_id)
        except SpecError:  # a reference of another id form: not a ladder step
            continue
        if not isinstance(case, GemmCase):  # the library's: not a step either
            continue
        config = {name: getattr(case, name) for name in CONFIG}
        for step, wanted in ladder_configs.items():
            if config == wanted and case.m == case.n == case.k:
                rows.append({"step": step, "gpu": ref.gpu_name, "value": float(ref.value), "size": case.m})
    return pd.DataFrame(rows).drop_duplicates(["step", "size"])


def max_clock(ctx) -> float | None:
    """The maximum SM clock the run's GPU reported (the device row), None where it is not stored."""
    try:
        found = ctx.store.query(f"""SELECT d.max_sm_clock_mhz FROM runs r JOIN devices d ON r.device_id = d.id
                                    WHERE r.id = {int(ctx.run_id)}""")
    except SQLAlchemyError:
        return None
    return float(found.iloc[0, 0]) if len(found) and pd.notna(found.iloc[0, 0]) else None


def worklog_verdict(ours: float, theirs: float, clock_mhz: float, sms: int,
                    max_clock_mhz: float | None) -> tuple[str, str]:
    """Our TFLOPS for a worklog step against its published figure. The worklog prints no clock: where
    ours per cycle reaches its figure at a clock the GPU can run (up to the maximum it reports), the figure is
    possible and the difference is the clock; otherwise theirs did more per cycle, or ours did."""
    if not (ours > 0 and theirs > 0 and clock_mhz > 0):
        return "", ""
    ratio = ours / theirs
    implied = theirs * 1e6 / (ours * 1e6 / clock_mhz)  # MHz at which our FLOP/cycle gives their TFLOPS
    per_cycle = ours * 1e12 / (sms * clock_mhz * 1e6)
    if abs(ratio - 1) <= DEFAULT_TOLERANCE:
        return AGREES, f"ours {ratio:.3f} of it at {clock_mhz:.0f} MHz"
    if ratio < 1 and (max_clock_mhz is None or implied <= max_clock_mhz):
        return CLOCK_NOT_PRINTED, (f"ours {ratio:.3f} of it at {clock_mhz:.0f} MHz (measured, under the power cap); "
                                   f"at our {per_cycle:.0f} FLOP/cycle/SM its figure needs {implied:.0f} MHz")
    if ratio < 1:
        return DISAGREES, (f"ours {ratio:.3f} of it; at our {per_cycle:.0f} FLOP/cycle/SM its figure needs "
                           f"{implied:.0f} MHz, above the GPU's {max_clock_mhz:.0f}: it did more per cycle")
    return DISAGREES, f"ours {ratio:.3f} x its figure at {clock_mhz:.0f} MHz: ours does more per cycle or per second"


WORKLOG_SIZE_SENTENCE = (
    "The worklog's figures are of 4096^3 (the seed's section 2.11), set beside ours at that size only. Its code times "
    "one batch of 8 launches after 5 s idle and prints no clock; ours are sustained rounds under the power cap, their "
    "clock measured: a verdict says what clock its figure needs at our work per cycle (the gemm-protocol suite "
    "measures both protocols: the section on the worklog's figures by their protocol).")


def worklog_profile(store) -> dict[str, float] | None:
    """The worklog's step 3 profile, cycles of a loaded tile, its wgmma and a stored tile, as the reference
    data holds it (harness/db/data/references/article_hgemm_worklog_h100.csv, the step's notes); None where
    the database holds no such note."""
    try:
        notes = store.query("SELECT notes FROM reference_figures WHERE notes LIKE '%profiled per tile%'").notes
    except (SQLAlchemyError, AttributeError):
        return None
    found = next((m for m in map(PROFILE.search, notes.dropna()) if m), None)
    return {k: float(v) for k, v in found.groupdict().items()} if found else None


def worklog_observations(pipes: pd.DataFrame, profile: dict[str, float] | None) -> list[str]:
    """The worklog's three observations, each tested where this GPU's cases hold what it takes: a tile's
    store against a loaded tile (its step 3 profile, worklog_profile), its grouped order faster on 128 SMs
    than on all 132, and its largest problems power-bound."""
    out = []
    step3 = pipes[[c == pipeline("f16", (c.m, c.n, c.k), **WORKLOG_STEP3) for c in pipes.case]]
    step3 = step3.dropna(subset=["cycles_per_kblock", "epilogue_cycles_per_tile"])
    step3 = step3[step3.cycles_per_kblock > [ideal_kblock(c) for c in step3.case]]
    if len(step3) and profile:
        r = step3.sort_values("flops").iloc[-1]
        load = r.cycles_per_kblock - ideal_kblock(r.case)
        theirs = profile["store"] / profile["load"]
        ours = r.epilogue_cycles_per_tile / load
        out.append(f"The worklog's step 3 profile (128x128, one stage): a loaded tile {profile['load']:.0f} "
                   f"cycles, its wgmma {profile['tensor']:.0f}, a stored tile {profile['store']:.0f} "
                   f"({theirs:.1f} loads). Ours ({config_label(r.case)} at {r.problem}): "
                   f"a k-block {r.cycles_per_kblock:.0f} "
                   f"cycles, of which the wgmma at full rate take {ideal_kblock(r.case):.0f}, leaving {load:.0f} for "
                   f"the load; the store from registers {r.epilogue_cycles_per_tile:.0f} cycles per tile ({ours:.1f} "
                   f"loads): {'it holds' if abs(ours / theirs - 1) <= 0.25 else 'it does not hold'} (within 25 %: "
                   f"x{ours / theirs:.2f}).")
    for a, b in pairs_differing(pipes, "grid_sms", 0, 128):
        # the verdict from the ratio to cuBLAS, taken round by round in the same clock and power state (these
        # boards run large GEMMs at their power limit, so TFLOPS minutes apart move with the clock); else per cycle
        ratio = b.throughput_tflops / a.throughput_tflops
        per_cycle = ratio * a.clock_mhz / b.clock_mhz
        library = b.library_fraction / a.library_fraction
        gain, basis = (library, "of cuBLAS") if library == library else (per_cycle, "per cycle")
        # a difference inside the rounds' own spread (either case's) is not a finding; without the rounds'
        # ratio to cuBLAS (figures minutes apart, at the clock and power of their moment) there is no verdict
        noise = max(a.library_spread, b.library_spread) if library == library else np.nan
        verdict = ("no rounds against cuBLAS to judge it by" if noise != noise else
                   "faster on 128: the worklog's finding holds" if gain > 1 + noise else
                   "slower on 128: the worklog's finding does not hold here" if gain < 1 - noise else
                   f"the same within the rounds' spread ({noise:.1%}): the worklog's gain is not shown here")
        out.append(f"{config_label(a.case)} at {a.problem} on 128 SMs against all {int(a.sms)}: "
                   f"{a.throughput_tflops:.0f} -> "
                   f"{b.throughput_tflops:.0f} TFLOPS at {a.clock_mhz:.0f} -> {b.clock_mhz:.0f} MHz (x{ratio:.3f}; per "
                   f"cycle x{per_cycle:.3f}"
                   + (f"; of cuBLAS {a.library_fraction:.3f} -> {b.library_fraction:.3f}" if library == library else "")
                   + f"; {ceil(a.case.tiles / int(a.sms))} waves of tiles on {int(a.sms)} SMs, "
                   f"{ceil(b.case.tiles / 128)} on 128): {verdict} ({basis} x{gain:.3f}).")
    best = pipes[[c == replace(c, **BEST) and c.m == c.n == c.k and c.dtype == "f16" and not c.grid_sms
                  for c in pipes.case]].sort_values("flops")
    if len(best) >= 2 and best.clock_mhz.notna().all():
        small, large = best.iloc[0], best.iloc[-1]
        text = (f"Power: the best configuration's SM clock, measured in its kernel, is {small.clock_mhz:.0f} MHz at "
                f"{small.problem} and {large.clock_mhz:.0f} at {large.problem}")
        if pd.notna(small.power_mean_w) and pd.notna(large.power_mean_w):
            # power-bound: the board draws one power at both; a clock that falls while the power stays is
            # what that power buys at each size
            near = min(small.power_mean_w, large.power_mean_w) >= SAME_POWER * max(small.power_mean_w,
                                                                                  large.power_mean_w)
            text += (f"; the board draws {small.power_mean_w:.0f} and {large.power_mean_w:.0f} W (2 s of each alone)"
                     + (": the same power at both, so both are power-bound and the clock is what that power buys "
                        "at each size (the worklog's finding holds, and not only at very large N)" if near else
                        ": the power differs, so the clock alone does not say which is power-bound") + ".")
        else:
            text += ": no power was measured for them here, and a clock alone does not say power-bound."
        out.append(text)
    return out
