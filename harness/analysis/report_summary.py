"""A report's summary and provenance: the run's facts (runs, devices, counts and NVML state from the database),
what its measurements say first (each family's findings), the verdicts by metric, the GPU's state."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pandas as pd

from harness.db.store import Store
from harness.paper import DEFAULT_TOLERANCE, PAPER_CLOCK_MHZ, PAPER_GPU, PAPER_POWER_LIMIT_W, PAPER_SMS
from harness.registry import FAMILIES
from harness.verdicts import AGREES, FOR_CONTEXT, PAPER_CLOCK_DOUBTFUL


def run_facts(store: Store, run_id: int) -> dict:
    run = store.query(f"""SELECT r.*, d.name AS gpu, d.sm_count, d.uuid, d.max_sm_clock_mhz, d.power_limit_w
                          FROM runs r LEFT JOIN devices d ON d.id = r.device_id WHERE r.id = {int(run_id)}""").iloc[0]
    stats = store.query(f"""SELECT COUNT(DISTINCT case_id) AS cases,
            COUNT(DISTINCT CASE WHEN status = 'invalid' THEN case_id END) AS invalid,
            COUNT(DISTINCT CASE WHEN status = 'fault' THEN case_id END) AS faults,
            MIN(sm_clock_mhz) AS clock_min, MAX(sm_clock_mhz) AS clock_max,
            MAX(power_w) AS power_max, MAX(temperature_c) AS temp_max,
            SUM(CASE WHEN flagged THEN 1 ELSE 0 END) AS flagged,
            SUM(CASE WHEN power_capped THEN 1 ELSE 0 END) AS power_capped, COUNT(*) AS measurements,
            SUM(CASE WHEN nvml_sm_clock_mhz IS NOT NULL THEN 1 ELSE 0 END) AS with_telemetry
            FROM results WHERE run_id = {int(run_id)}""").iloc[0]
    return {**run.to_dict(), **stats.to_dict()}


def portable_command(command: str | None) -> str:
    """A run's command line as a reader can type it anywhere: `bench` for the program, a file name for
    any absolute path (a report names no folder of the machine that made it)."""
    words = (command or "").split()
    if words and (words[0].endswith(("__main__.py", "/bench")) or words[0] == "bench"):
        words[0] = "bench"
    return " ".join(Path(w).name if w.startswith("/") else w for w in words)


def run_findings(store: Store, run_id: int) -> list[str]:
    """What the run's measurements say, first: each family's answer to its question (the same hook the
    results site asks, Family.findings), given this run's valid measurements alone."""
    from types import SimpleNamespace

    from harness.db.frames import results

    frame = results(store, run_id=run_id, valid=True)
    if frame.empty:
        return []
    found = []
    with tempfile.TemporaryDirectory() as scratch:
        context = SimpleNamespace(store=store, latest=frame, directory=Path(scratch))
        for family in FAMILIES.values():
            for heading, paragraphs, body in family.findings(context):
                if isinstance(body, Path):  # a question's answer (its tables repeat it in numbers)
                    found += [f"{heading} {text}" if i == 0 else text
                              for i, text in enumerate(paragraphs[:-1] or paragraphs)]
    return found


def summary_lines(store: Store, run_id: int, facts: dict, against: pd.DataFrame) -> list[str]:
    """The report's summary: the families' findings, the run's cases, the verdicts against the paper by metric,
    the energy figures shown for context, throughput per cycle, the emulated cases, the GPU's state."""
    summary = run_findings(store, run_id) + [
               f"{int(facts['cases'])} cases in {', '.join(sorted(set(against.family)) or ['no family'])}; "
               f"{int(facts['invalid'])} invalid, {int(facts['faults'])} faults."]
    judged = against[against.paper.notna() & (against.verdict != FOR_CONTEXT)]
    for metric, rows in judged.groupby("metric"):
        counts = ", ".join(f"{n} {verdict}" for verdict, n in rows.verdict.value_counts().items())
        summary.append(f"{metric}: of {len(rows)} published figures of the paper's {PAPER_GPU}, {counts} ({AGREES}: "
                       f"within the measurement's spread plus {DEFAULT_TOLERANCE * 100:g} %; the section below "
                       "gives each row's reason).")
    context = against[against.verdict == FOR_CONTEXT]
    if len(context):
        summary.append(f"Energy: {len(context)} published power and efficiency figures are shown beside ours for "
                       "context (a different GPU and power limit), in the energy section.")
    summary += _throughput_line(against)
    emulated = sorted(set(against[against.emulated].case_id))
    if emulated:
        summary.append(f"{len(emulated)} cases are emulated on this GPU (no native instruction: the SASS check found "
                       "other instructions doing the work); their rates are marked: they are what the replacement "
                       "instructions "
                       "deliver, not a native instruction's rate.")
    return summary + [_state_line(facts)]


def _throughput_line(against: pd.DataFrame) -> list[str]:
    """How throughput is compared, and how many figures agree at the printed clock or imply which clock."""
    tput = against[(against.metric == "throughput_tflops") & against.paper.notna()]
    if not len(tput):
        return []
    counts = tput.verdict.value_counts()
    printed = tput[tput.paper_clock_mhz.notna()]
    implied = tput[tput.paper_clock_mhz.isna()].paper_implied_mhz
    return [
        "Throughput is compared per cycle per SM: ours by the SM clock measured in the kernel, the paper's by "
        f"the clock it printed (2501.12084 Table 13) on its {PAPER_SMS} SMs. "
        + (f"At the printed clock, {counts.get(AGREES, 0)} of {len(printed)} figures agree; "
           f"{counts.get(PAPER_CLOCK_DOUBTFUL, 0)} are below what the tensor cores do per cycle at the clock "
           f"printed beside them ({PAPER_CLOCK_DOUBTFUL}: each row names the clock its figure implies). "
           if len(printed) else "")
        + (f"{len(implied)} figures were printed without a clock: at this GPU's work per cycle they imply "
           f"{implied.min():.0f}..{implied.max():.0f} MHz on the power-limited {PAPER_GPU} "
           f"({PAPER_POWER_LIMIT_W} W, {PAPER_CLOCK_MHZ:.0f} MHz maximum)." if len(implied) else "")]


def _state_line(facts: dict) -> str:
    """The GPU's state during the run (NVML telemetry with every measurement), or that it was not recorded."""
    if not facts.get("with_telemetry"):
        return "This run predates per-measurement NVML telemetry (schema 2): its GPU state was not recorded."

    def known(value) -> bool:  # a run of kernels without an in-kernel clock, or NVML without a sensor
        return value is not None and value == value

    state = [f"SM clock in the kernel {facts['clock_min']:.0f}..{facts['clock_max']:.0f} MHz"
             if known(facts["clock_min"]) else "no in-kernel SM clock",
             f"power up to {facts['power_max']:.0f} W" if known(facts["power_max"]) else "power not read",
             f"temperature up to {facts['temp_max']:.0f} C" if known(facts["temp_max"]) else "temperature not read"]
    return (f"GPU state (NVML, during every measurement): {', '.join(state)}; "
            f"{int(facts['flagged'] or 0)} of {int(facts['measurements'])} measurements "
            f"flagged (thermal/hardware throttling or another process), {int(facts['power_capped'] or 0)} saw the "
            "software power cap (recorded, not flagged: cycle metrics do not depend on the clock).")


def provenance_table(run_id: int, facts: dict) -> pd.DataFrame:
    """Where the run's numbers come from: the GPU, the run, its clocks and software, the commit and command."""
    return pd.DataFrame([
        ("GPU", f"{facts['gpu']} ({facts['sm_count']} SMs, {facts['uuid']})"),
        ("run", f"{run_id}: suite {facts['suite']}, {facts['status']}, {int(facts['cases'])} cases, "
                f"{int(facts['invalid'])} invalid, {int(facts['faults'])} faults"),
        ("started", str(facts["started_at"])[:19] + " UTC"),
        ("clocks", f"max SM {facts['max_sm_clock_mhz']} MHz (not locked); measured in kernels "
                   + (f"{facts['clock_min']:.0f}..{facts['clock_max']:.0f} MHz" if facts["clock_min"] is not None
                      and facts["clock_min"] == facts["clock_min"] else "by no measurement of this run")
                   + f"; power limit {facts['power_limit_w']} W"),
        ("software", f"driver {facts['driver_version']}, CUDA {facts['cuda_driver_version']}, NVRTC "
                     f"{facts['nvrtc_version']}, CuPy {facts['cupy_version']}, Python {facts['python_version']}, "
                     f"hopper-bench {facts['harness_version']}"),
        ("commit", f"{facts['git_commit']}{' (dirty)' if facts['git_dirty'] else ''}"),
        ("command", portable_command(facts["command_line"])),
    ], columns=["", "value"])
