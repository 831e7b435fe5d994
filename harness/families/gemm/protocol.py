"""The seed worklog's published figures by their protocol (suite `gemm-protocol`, docs/gemm.md).

The worklog's code times one batch of 8 launches after 5 s of idle, on normal(0, 1) inputs; ours times sustained
rounds under the board's power cap. The suite measures the best f16 configuration (the worklog's step 10 in ours) and
cuBLAS at its 4096^3 both ways (cases `.burst` or not) on three kinds of measured inputs (random, integers, zeros: fewer
bits toggled, less power, a higher clock). This module turns a run of them into MHz and watts:

    table     one row per contender, protocol and inputs: TFLOPS, the SM clock it ran at (in the kernel; the
              library's: NVML's), its power (a burst's: NVML's instantaneous readings during the batch, none where the
              batch is shorter than NVML's ~100 ms update; sustained: the energy counter over 2 s of it alone), its FLOP per cycle per SM, and the clock each published
              figure needs at that FLOP per cycle
    verdicts  per published figure (the worklog's step 10 and 11 against our best, its cuBLAS against ours), from
              harness/verdicts.py: agrees with our default (sustained, random) measurement; explained where its own
              protocol (a burst, random inputs) reaches it; clock not printed where the clock it needs is one the GPU
              has but neither protocol ran at; DISAGREES otherwise
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from harness.families.gemm.cases import INPUT_KINDS, PROTOCOLS, WORKLOG_BATCH
from harness.families.gemm.configs import BEST, WORKLOG_SHAPE, library, pipeline
from harness.families.gemm.ids import parse
from harness.verdicts import AGREES, CLOCK_NOT_PRINTED, DISAGREES, EXPLAINED

SOURCE = "hgemm-worklog-h100"  # the worklog's figures (harness/db/data/references/article_hgemm_worklog_h100.csv)
LIKE_FOR_LIKE = ("burst", "random")  # its protocol and its inputs (its code draws A and B from normal(0, 1))
DEFAULT = ("sustained", "random")  # ours, as `bench compare` maps its figures
# The worklog's steps compared with our best configuration: its own (10), and 11, which is 10 with a Hilbert-curve
# tile order (+1 % by its account; ours, configs.LADDER["11"], is measured by the gemm and gemm-full suites in
# sustained rounds: this suite times step 10's configuration by both protocols)
AGAINST_BEST = {"10": "step 10 (its configuration)", "11": "step 11 (step 10 with a Hilbert-curve tile order)"}


# NVML's power readings change about every 100 ms (its energy counter steps so: harness/measure/methods/energy.py):
# a burst's batch shorter than that is not resolved, and its instantaneous readings are the idle board's (run 152:
# 118-121 W through batches of about 1.5 ms)
POWER_RESOLUTION_MS = 100.0


COLUMNS = {"tflops": "TFLOPS", "clock_mhz": "SM MHz", "clock_from": "clock from", "watts": "W",
           "power_from": "power from", "per_cycle": "FLOP/cycle/SM"}  # the report's names of table()'s columns


@dataclass(frozen=True)
class Published:
    label: str
    value: float  # TFLOPS
    contender: str  # "ours" or "cuBLAS": which of our cases it is set beside


def contenders() -> dict[str, str]:
    """Our cases' ids at the worklog's size, without their inputs and protocol suffixes: contender name by id."""
    return {pipeline("f16", WORKLOG_SHAPE, **BEST).case_id: "ours", library("f16", WORKLOG_SHAPE).case_id: "cuBLAS"}


def table(measured: pd.DataFrame) -> pd.DataFrame:
    """One row per contender, protocol and inputs measured in `measured` (run_rows.measured's rows): tflops, clock_mhz
    and where it was read (clock_from), watts and how (power_from), per_cycle (FLOP per cycle per SM)."""
    bases = contenders()
    rows = []
    frame = measured[measured.family == "gemm"] if "family" in measured else measured
    for case_id, group in frame.groupby("case_id"):
        case = parse(case_id)
        base = replace(case, inputs="random", protocol="sustained").case_id
        timed = group[group.metric == "throughput_tflops"]
        if base not in bases or timed.empty:
            continue
        first = timed.iloc[0]
        kernel = first.sm_clock_mhz if pd.notna(first.sm_clock_mhz) else np.nan
        clock = kernel if kernel == kernel else first.nvml_sm_clock_mhz
        burst = case.protocol == "burst"
        watts = group[group.metric == ("power_burst_w" if burst else "power_mean_w")].value
        watts = float(watts.iloc[0]) if len(watts) else np.nan
        power_from = "energy counter, 2 s alone"
        if burst:  # the batch's length: 8 launches of the problem at the rate measured
            batch_ms = WORKLOG_BATCH * 2.0 * case.m * case.n * case.k / (float(first.value) * 1e12) * 1e3
            power_from = "NVML instantaneous, during the batches"
            if batch_ms < POWER_RESOLUTION_MS:
                power_from = (f"none: a {batch_ms:.1f} ms batch, shorter than NVML's ~{POWER_RESOLUTION_MS:.0f} ms "
                              f"update (it read {watts:.0f} W, the idle board's)")
                watts = np.nan
        rows.append({"contender": bases[base], "protocol": case.protocol, "inputs": case.inputs, "case_id": case_id,
                     "tflops": float(first.value), "clock_mhz": float(clock) if pd.notna(clock) else np.nan,
                     "clock_from": "in-kernel" if kernel == kernel else "NVML",
                     "watts": watts, "power_from": power_from,
                     "sms": float(first.sm_count) if "sm_count" in group and pd.notna(first.sm_count) else np.nan})
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    out["per_cycle"] = out.tflops * 1e12 / (out.sms * out.clock_mhz * 1e6)  # FLOP per cycle per SM
    order = {(c, p, i): n for n, (c, p, i) in enumerate((c, p, i) for c in ("ours", "cuBLAS") for p in PROTOCOLS
                                                          for i in INPUT_KINDS)}
    out["_order"] = [order[(r.contender, r.protocol, r.inputs)] for r in out.itertuples()]
    return out.sort_values("_order").drop(columns="_order").reset_index(drop=True)


def needed_mhz(figure: float, flop_per_cycle_sm: float, sms: float) -> float:
    """The SM clock at which `sms` SMs doing `flop_per_cycle_sm` make `figure` TFLOPS."""
    return figure * 1e12 / (flop_per_cycle_sm * sms) / 1e6


def published(refs: pd.DataFrame) -> list[Published]:
    """The worklog's figures at its size that this analysis explains, from reference_figures rows (source, case_id,
    m, metric, value, notes): its cuBLAS (mapped to our library case), and the steps of AGAINST_BEST (by the "step N:"
    their notes begin with; 11 set beside step 10's configuration, as this suite measures no other)."""
    bases = contenders()
    found = []
    for ref in refs.itertuples():
        if ref.source != SOURCE or ref.metric != "throughput_tflops" or ref.m != WORKLOG_SHAPE[0]:
            continue
        step = re.match(r"step (\w+):", ref.notes if isinstance(ref.notes, str) else "")
        if ref.case_id in bases and bases[ref.case_id] == "cuBLAS":
            found.append(Published("cuBLAS (as it ran it)", float(ref.value), "cuBLAS"))
        elif step and step.group(1) in AGAINST_BEST:
            found.append(Published(AGAINST_BEST[step.group(1)], float(ref.value), "ours"))
    return sorted(found, key=lambda f: (f.contender != "ours", f.label))


def verdict(figure: Published, rows: pd.DataFrame, max_clock_mhz: float | None,
            tolerance: float) -> tuple[str, str]:
    """A published figure against the contender's rows of `table` (module docstring): (verdict, why in MHz and W)."""
    mine = {(r.protocol, r.inputs): r for r in rows[rows.contender == figure.contender].itertuples()}
    default, like = mine.get(DEFAULT), mine.get(LIKE_FOR_LIKE)
    if default is None:
        return "", "our sustained rounds on random inputs were not measured"

    def said(r) -> str:
        power = f", {r.watts:.0f} W" if r.watts == r.watts else ""
        return f"{r.protocol} {r.inputs}: {r.tflops:.0f} TFLOPS at {r.clock_mhz:.0f} MHz{power}"

    need = needed_mhz(figure.value, default.per_cycle, default.sms)
    ratio = default.tflops / figure.value
    terms = f"at our {default.per_cycle:.0f} FLOP/cycle/SM it needs {need:.0f} MHz; ours {said(default)}"
    if like is not None:
        terms += f"; {said(like)}"
    if abs(ratio - 1) <= tolerance:
        return AGREES, f"ours {ratio:.3f} of it sustained; " + terms
    if ratio > 1:
        return DISAGREES, f"ours {ratio:.3f} x it sustained, above it; " + terms
    if like is not None and like.tflops >= figure.value * (1 - tolerance):
        return EXPLAINED, (f"its protocol: a burst after idle runs at {like.clock_mhz:.0f} MHz against "
                           f"{default.clock_mhz:.0f} sustained, {like.tflops / figure.value:.3f} of it; " + terms)
    if max_clock_mhz is None or need <= max_clock_mhz:
        return CLOCK_NOT_PRINTED, ("a clock this GPU has, not reached by either protocol here; " + terms)
    return DISAGREES, f"{need:.0f} MHz is above the GPU's {max_clock_mhz:.0f}: it did more per cycle; " + terms


def sections(measured: pd.DataFrame, refs: pd.DataFrame, max_clock_mhz: float | None, tolerance: float) -> list:
    """The report's section: the table and each published figure's verdict; [] where the run has no burst case."""
    found = table(measured)
    if found.empty or not (found.protocol == "burst").any():
        return []
    figures = published(refs)
    shown = found.drop(columns=["case_id", "sms"]).rename(columns=COLUMNS)
    for figure in figures:
        per = found[found.contender == figure.contender]
        shown.loc[per.index, f"MHz for {figure.value:.0f}"] = [needed_mhz(figure.value, r.per_cycle, r.sms)
                                                                 for r in per.itertuples()]
    judged = pd.DataFrame([{"published": f"the worklog's {f.label}", "TFLOPS": f.value, "set beside": f.contender,
                            "verdict": v, "why": why}
                           for f in figures for v, why in [verdict(f, found, max_clock_mhz, tolerance)]])
    text = ["The seed worklog's figures (H100 SXM, 4096^3) beside ours by protocol: its code times one batch of 8 "
            "launches after 5 s idle on normal(0, 1) inputs; ours, sustained rounds under the power cap. Each row is "
            "a case of the gemm-protocol suite: a burst's power is NVML's instantaneous reading during its batches, "
            "a sustained row's the energy counter over 2 s of it alone. 'MHz for X' is the clock at which that row's "
            "FLOP per cycle per SM gives the published X TFLOPS."]
    return [("From instructions to a GEMM: the worklog's figures by their protocol", text, shown.round(3)),
            ("From instructions to a GEMM: the worklog's figures, verdicts", [], judged)]


def figure(path, panels: dict[str, tuple[pd.DataFrame, list[Published]]]):
    """One panel a GPU: TFLOPS of ours and cuBLAS by protocol and inputs (bars from zero), the worklog's figures as
    lines across (ours' steps dashed, its cuBLAS dotted)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(panels), figsize=(7 * len(panels), 4.8), squeeze=False)
    for ax, (gpu, (found, figures)) in zip(axes[0], panels.items()):
        keys = [(p, i) for p in PROTOCOLS for i in INPUT_KINDS
                if ((found.protocol == p) & (found.inputs == i)).any()]
        x = np.arange(len(keys))
        for offset, (contender, colour) in zip((-0.2, 0.2), (("ours", "tab:blue"), ("cuBLAS", "tab:gray"))):
            mine = {(r.protocol, r.inputs): r.tflops for r in found[found.contender == contender].itertuples()}
            ax.bar(x + offset, [mine.get(k, np.nan) for k in keys], 0.4, color=colour, label=contender)
        for published_ in figures:
            ax.axhline(published_.value, color="tab:blue" if published_.contender == "ours" else "tab:gray",
                       ls="--" if published_.contender == "ours" else ":", lw=1,
                       label=f"the worklog's {published_.label.split(' (')[0]}: {published_.value:.0f}")
        ax.set_xticks(x, labels=[f"{p}\n{i}" for p, i in keys], fontsize=8)
        ax.set_ylim(0, None)
        ax.set_ylabel("TFLOPS (f16 in, f32 accumulate, 4096^3)")
        ax.set_title(f"{gpu}: the worklog's protocol (a burst after idle) and ours (sustained)", fontsize=9)
        ax.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
