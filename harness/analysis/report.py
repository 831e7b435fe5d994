"""`bench report`: a run against the paper and the models, as Markdown and self-contained HTML
with PNG figures, under reports/<gpu>-<date>-run<N>/.

The shared sections (summary, the paper, rates by family, disagreements, provenance) read the
metric registry; each family of the run adds its own sections (Family.figures).
"""

from __future__ import annotations

import base64
import html
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from harness import output
from harness.analysis import run_rows
from harness.analysis.pages import CSS, html_table, slug
from harness.analysis.paper_verdicts import against_paper
from harness.db.store import Store
from harness.errors import StoreError, redact
from harness.paper import DEFAULT_TOLERANCE, PAPER_CLOCK_MHZ, PAPER_GPU, PAPER_POWER_LIMIT_W, PAPER_SMS
from harness.registry import FAMILIES
from harness.verdicts import AGREES, DISAGREES, FOR_CONTEXT, PAPER_CLOCK_DOUBTFUL

TENSOR_UNITS = ("FLOP/cycle/SM", "OP/cycle/SM")


@dataclass(frozen=True)
class Report:
    directory: Path
    markdown: Path
    html: Path
    figures: list[Path]


@dataclass(frozen=True)
class ReportContext:
    """What a family's figures(context) may read: the run's measurements (every launch) and where to write."""

    store: Store
    run_id: int
    gpu: str
    directory: Path
    measured: pd.DataFrame
    against: pd.DataFrame


def _run_facts(store: Store, run_id: int) -> dict:
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


def _paper_table(against: pd.DataFrame) -> pd.DataFrame:
    """Every measurement with a published figure, energy apart (_energy_table): a throughput as ours at the
    paper's clock on its 114 SMs (per cycle per SM, bench compare), beside the paper's, with the clock
    the paper printed or the one its figure implies, and the verdict with its reason."""
    rows = against[against.paper.notna() & (against.verdict != FOR_CONTEXT)].copy()
    timed = rows.metric == "throughput_tflops"
    rows["measured"] = rows.value.round(2)
    rows["at the paper's clock"] = np.where(timed, rows.comparable.round(1), np.nan)
    rows["ratio"] = rows.paper_ratio.round(3)
    rows["paper clock MHz"] = rows.paper_clock_mhz
    rows["implied MHz"] = rows.paper_implied_mhz.round(0)
    rows["inputs"] = rows.paper_inputs.fillna("")
    rows["table"] = rows.paper_table.str.split(" ").str[:2].str.join(" ")
    rows["emulated"] = np.where(rows.emulated, "emulated", "")
    return rows[["case_id", "metric", "inputs", "table", "measured", "at the paper's clock", "paper", "paper clock MHz",
                 "ratio", "implied MHz", "verdict", "note", "emulated"]].dropna(axis=1, how="all")


def _energy_table(store: Store, run_id: int, against: pd.DataFrame) -> pd.DataFrame:
    """Power, TFLOPS per watt and energy per operation of every energy point of the run, by input
    distribution, beside the papers' power and efficiency figures for the same case and inputs."""
    frame = store.query(f"""SELECT case_id, launch, metric, value, unit FROM results WHERE run_id = {int(run_id)}
                            AND valid AND metric IN ('power_mean_w', 'energy_efficiency', 'energy_pj_per_op',
                            'throughput_tflops', 'sm_clock_mhz')""")
    energy = frame[frame.metric == "power_mean_w"][["case_id", "launch"]]
    if energy.empty:
        return pd.DataFrame()
    wide = frame.pivot_table(index=["case_id", "launch"], columns="metric", values="value", aggfunc="first")
    wide = energy.merge(wide.reset_index(), on=["case_id", "launch"])
    clocks = store.query(f"""SELECT case_id, launch, sm_clock_mhz FROM results WHERE run_id = {int(run_id)}
                             AND metric = 'power_mean_w'""")
    wide = wide.merge(clocks, on=["case_id", "launch"], how="left")
    wide["inputs"] = [json.loads(launch).get("inputs", "random") for launch in wide.launch]
    paper = against[against.verdict == FOR_CONTEXT]
    figures = {(r.case_id, r.metric, r.launch): r.paper for r in paper.itertuples()}
    wide["paper TFLOPS/W"] = [figures.get((c, "energy_efficiency", launch), np.nan)
                              for c, launch in zip(wide.case_id, wide.launch)]
    wide["paper W"] = [figures.get((c, "power_mean_w", launch), np.nan) for c, launch in zip(wide.case_id, wide.launch)]
    out = pd.DataFrame({"case_id": wide.case_id, "inputs": wide.inputs, "SM MHz": wide.sm_clock_mhz.round(0),
                        "TFLOPS": wide.get("throughput_tflops", np.nan).round(1),
                        "W": wide.power_mean_w.round(1), "TFLOPS/W": wide.energy_efficiency.round(3),
                        "pJ/op": wide.energy_pj_per_op.round(3), "paper TFLOPS/W": wide["paper TFLOPS/W"],
                        "paper W": wide["paper W"]})
    return out.sort_values(["case_id", "inputs"]).dropna(axis=1, how="all").reset_index(drop=True)


def rates_by_family(store: Store, gpu: str, include_flagged: bool = False) -> pd.DataFrame:
    """Per input type, dense and sparse apart, the best tensor work per cycle per SM of each family on this
    GPU, anywhere in the database (any run): how much of the tensor core each instruction family reaches."""
    flagged = "" if include_flagged else "AND NOT flagged"
    frame = store.query(f"""SELECT family, dtype_a, sparse, case_id, value, unit, emulated FROM results
                           WHERE gpu_name = '{gpu.replace("'", "''")}' AND metric = 'sm_throughput' AND valid {flagged}
                           AND value IS NOT NULL AND unit IN {TENSOR_UNITS}""")
    if frame.empty:
        return frame
    frame["sparse"] = frame["sparse"].fillna(False).astype(bool)
    keys = ["dtype_a", "sparse", "family"]
    best = frame.sort_values("value", ascending=False, kind="stable").groupby(keys, as_index=False).first()
    best["of the best family"] = (best.value / best.groupby(["dtype_a", "sparse"]).value.transform("max")).round(3)
    best["emulated"] = best.emulated.fillna(False).astype(bool)
    best["value"] = best.value.round(1)
    return best.rename(columns={"value": "best per SM per cycle"})[
        ["dtype_a", "sparse", "family", "best per SM per cycle", "unit", "of the best family", "emulated", "case_id"]]


def portable_command(command: str | None) -> str:
    """A run's command line as a reader can type it anywhere: `bench` for the program, a file name for
    any absolute path (a report names no folder of the machine that made it)."""
    words = (command or "").split()
    if words and (words[0].endswith(("__main__.py", "/bench")) or words[0] == "bench"):
        words[0] = "bench"
    return " ".join(Path(w).name if w.startswith("/") else w for w in words)


def portable_database(url: str) -> str:
    """The database a report was made from: a file's name, or a URL (already without its password)."""
    return Path(url).name if url.startswith("/") else url


def build(store: Store, run_id: int | None = None, root: Path = Path("reports"),
          include_flagged: bool = False) -> Report:
    import matplotlib

    matplotlib.use("Agg")
    run_id = run_rows.default_run(store) if run_id is None else run_id
    store.run_info(run_id)  # StoreError naming the runs there are
    if not store.measured_case_ids(run_id):
        raise StoreError(f"run {run_id} has no measurements to report (see `bench runs`)")
    facts = _run_facts(store, run_id)
    date = str(facts["started_at"])[:10]
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"{slug(facts['gpu'] or 'unknown-gpu')}-{date}-run{run_id}"
    # Everything is written into a new folder of our own, then moved into place whole: no write
    # follows a link someone left in the output folder, and an interrupted report leaves nothing.
    staging = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=root))
    try:
        markdown, page, figures = _write(store, run_id, facts, staging, include_flagged)
        os.chmod(staging, 0o755)
        _publish(staging, final)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return Report(final, final / markdown.name, final / page.name, [final / f.name for f in figures])


def _write(store: Store, run_id: int, facts: dict, directory: Path, include_flagged: bool):
    against = against_paper(store, run_id, include_flagged)
    measured = run_rows.measured(store, run_id, include_flagged)
    ctx = ReportContext(store, run_id, facts["gpu"] or "", directory, measured, against)
    family_sections = []
    for name in sorted(set(measured.family)):
        family = FAMILIES.get(name)
        if family is not None:
            family_sections += family.figures(ctx)
    tensor_run = bool(measured.unit.isin(TENSOR_UNITS).any()) if len(measured) else False
    sections = _sections(store, run_id, facts, against, family_sections, include_flagged, tensor_run)
    figures = [body for _, _, body in sections if isinstance(body, Path)]
    markdown = directory / "report.md"
    url = portable_database(redact(store.url))  # no password, no folder of this machine
    markdown.write_text(_markdown(sections, facts, run_id, url))
    page = directory / "report.html"
    page.write_text(_html(sections, facts, run_id, url))
    return markdown, page, figures


def _publish(staging: Path, final: Path) -> None:
    """Move the finished report folder to `final`, replacing an earlier report there. A link at
    `final` is replaced itself (its target is left alone); anything else that is not a folder of
    ours is refused."""
    if final.is_symlink():
        final.unlink()
    elif final.exists():
        if not final.is_dir():
            raise StoreError(f"cannot write the report: {final} exists and is not a folder")
        old = Path(tempfile.mkdtemp(prefix=f".{final.name}.old.", dir=final.parent))
        os.replace(final, old / final.name)
        os.replace(staging, final)
        shutil.rmtree(old, ignore_errors=True)
        return
    os.replace(staging, final)


def _findings(store: Store, run_id: int) -> list[str]:
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


def _sections(store: Store, run_id: int, facts: dict, against: pd.DataFrame, family_sections: list,
              include_flagged: bool, tensor_run: bool = True) -> list:
    """[(heading, text paragraphs, Path | DataFrame | None)] shared by the Markdown and the HTML."""
    disagree = against[(against.verdict == DISAGREES) | (against.model_verdict == DISAGREES)]
    summary = _findings(store, run_id) + [
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
    tput = against[(against.metric == "throughput_tflops") & against.paper.notna()]
    if len(tput):
        counts = tput.verdict.value_counts()
        printed = tput[tput.paper_clock_mhz.notna()]
        implied = tput[tput.paper_clock_mhz.isna()].paper_implied_mhz
        summary.append(
            "Throughput is compared per cycle per SM: ours by the SM clock measured in the kernel, the paper's by "
            f"the clock it printed (2501.12084 Table 13) on its {PAPER_SMS} SMs. "
            + (f"At the printed clock, {counts.get(AGREES, 0)} of {len(printed)} figures agree; "
               f"{counts.get(PAPER_CLOCK_DOUBTFUL, 0)} are below what the tensor cores do per cycle at the clock "
               f"printed beside them ({PAPER_CLOCK_DOUBTFUL}: each row names the clock its figure implies). "
               if len(printed) else "")
            + (f"{len(implied)} figures were printed without a clock: at this GPU's work per cycle they imply "
               f"{implied.min():.0f}..{implied.max():.0f} MHz on the power-limited {PAPER_GPU} "
               f"({PAPER_POWER_LIMIT_W} W, {PAPER_CLOCK_MHZ:.0f} MHz maximum)." if len(implied) else ""))
    emulated = sorted(set(against[against.emulated].case_id))
    if emulated:
        summary.append(f"{len(emulated)} cases are emulated on this GPU (no native instruction: the SASS check found "
                       "other instructions doing the work); their rates are marked: they are what the replacement instructions "
                       "deliver, not a native instruction's rate.")
    if facts.get("with_telemetry"):
        def known(value) -> bool:  # a run of kernels without an in-kernel clock, or NVML without a sensor
            return value is not None and value == value

        state = [f"SM clock in the kernel {facts['clock_min']:.0f}..{facts['clock_max']:.0f} MHz"
                 if known(facts["clock_min"]) else "no in-kernel SM clock",
                 f"power up to {facts['power_max']:.0f} W" if known(facts["power_max"]) else "power not read",
                 f"temperature up to {facts['temp_max']:.0f} C" if known(facts["temp_max"]) else "temperature not read"]
        summary.append(
            f"GPU state (NVML, during every measurement): {', '.join(state)}; "
            f"{int(facts['flagged'] or 0)} of {int(facts['measurements'])} measurements "
            f"flagged (thermal/hardware throttling or another process), {int(facts['power_capped'] or 0)} saw the "
            "software power cap (recorded, not flagged: cycle metrics do not depend on the clock).")
    else:
        summary.append("This run predates per-measurement NVML telemetry (schema 2): its GPU state was not recorded.")
    provenance = pd.DataFrame([
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
    disagree_table = disagree[["case_id", "metric", "value", "comparable", "paper", "paper_ratio", "model",
                               "model_ratio", "verdict", "model_verdict"]].round(3).dropna(axis=1, how="all")
    rates = rates_by_family(store, facts["gpu"] or "", include_flagged) if tensor_run else pd.DataFrame()
    rates_text = ["The best work per cycle per SM of each instruction family for each input type, dense and sparse "
                  "apart (sparse counts the dense-equivalent work, as NVIDIA's datasheets do), over every run of "
                  "this GPU in the database. An emulated instruction's rate is what its replacement instructions "
                  "deliver, not a tensor-core rate."]
    paper = _paper_table(against)
    energy = _energy_table(store, run_id, against)
    energy_text = [
        "Mean board power over about 2 s of back-to-back whole-GPU launches, from NVML's energy counter (it steps "
        "every 100 ms; the mean is taken between its first and last step in the window), and from it TFLOPS per "
        "watt and picojoules per operation (dense-equivalent). The input distribution changes the power, and "
        "through the power cap the clock: zeros draw far less than random data. The papers' figures (2402.13499 "
        f"Table XI, 2501.12084 Tables 12 and 13) are of an {PAPER_GPU} with a {PAPER_POWER_LIMIT_W} W "
        "limit; this GPU's limit is "
        f"{facts['power_limit_w']} W, so they are shown for context, not judged."]
    fleet = _fleet_section(store, facts)
    spread = _spread_section(store, run_id)
    return [
        ("Summary", summary, None),
        *family_sections,
        *([(f"Against the paper ({PAPER_GPU}, arXiv 2402.13499 and 2501.12084)", [], paper)] if len(paper) else []),
        *([("Energy against the papers' tables", energy_text, energy)] if len(energy) else []),
        *([("Tensor-core rates by family", rates_text, rates)] if len(rates) else []),
        *fleet,
        *spread,
        ("Disagreements", ["Rows where the measurement and the paper or the datasheet model differ by more than "
                           f"the measurement's spread plus {DEFAULT_TOLERANCE * 100:g} %." if len(disagree)
                           else "None."],
         disagree_table if len(disagree) else None),
        ("Provenance", [], provenance),
    ]


SPREAD_LIMIT = 0.01  # repeated cycle measurements that spread more than this are listed


def _spread_section(store: Store, run_id: int) -> list:
    """The cycle measurements of the run (metrics counted by clock64) whose samples spread by more than
    SPREAD_LIMIT (interquartile range over the median): where a number is less settled than the rest."""
    from harness import metrics

    cycle_metrics = ", ".join(f"'{name}'" for name in metrics.names("cycles"))
    rows = store.query(f"""SELECT case_id, metric, launch, value, spread, n_samples FROM results
                          WHERE run_id = {int(run_id)} AND valid AND metric IN ({cycle_metrics})
                          AND spread > {SPREAD_LIMIT} ORDER BY spread DESC""")
    total = store.query(f"""SELECT COUNT(*) AS n FROM results WHERE run_id = {int(run_id)} AND valid
                           AND metric IN ({cycle_metrics}) AND spread IS NOT NULL""").n[0]
    text = [f"{len(rows)} of {int(total)} cycle measurements (clock64, independent of the clock) spread by more "
            f"than {SPREAD_LIMIT:.0%} (interquartile range over the median of their samples)"
            + (": the rows below, widest first. Their medians are what the tables use." if len(rows) else ".")]
    return [("Repeatability: cycle measurements that spread more than 1 %", text,
             rows.assign(spread=rows.spread.round(4), value=rows.value.round(3)) if len(rows) else None)]


def _fleet_section(store: Store, facts: dict) -> list:
    """Where the database holds this GPU's model at least MIN_SIBLINGS + 1 times: which of those GPUs
    stand apart from their siblings (harness/analysis/fleet.py)."""
    from harness.analysis import fleet

    try:
        rows, outliers = fleet.table(store)
    except Exception:  # no valid measurement anywhere: nothing to say
        return []
    model = facts.get("gpu") or ""
    mine = rows[rows.gpu.str.startswith(model + " ")]
    gpus = mine.gpu.nunique()
    if gpus < fleet.MIN_SIBLINGS + 1:
        return []
    apart = outliers[outliers.gpu.str.startswith(model + " ")]
    text = [f"{gpus} GPUs of this model ({model}) in the database, each with its newest measurement of every "
            "case; a GPU stands apart where it differs from the median of the others by more than their noise "
            "(cycle metrics as they are, time-based ones per cycle, the SM clock on its own; `bench fleet`). "
            + ("None does." if apart.empty else f"{len(apart)} do{'es' if len(apart) == 1 else ''}:")]
    return [("Fleet: this GPU's siblings", text, apart if len(apart) else None)]


def _footer(url: str) -> str:
    return f"Generated by `bench report`; every number comes from {url}."


def _markdown(sections, facts, run_id, url) -> str:
    lines = [f"# {facts['gpu']}: run {run_id} against the paper and the model", "", "Contents:", ""]
    lines += [f"{i}. [{heading}](#{_anchor(heading)})" for i, (heading, _, _) in enumerate(sections, 1)] + [""]
    for heading, paragraphs, body in sections:
        lines += [f"## {heading}", ""]
        if heading == "Summary":
            lines += [f"- {text}" for text in paragraphs] + [""]
        else:
            for text in paragraphs:
                lines += [text, ""]
        if isinstance(body, Path):
            lines += [f"![{heading}]({body.name})", ""]
        elif body is not None:
            lines += [output.markdown(body), ""]
    lines.append(_footer(url))
    return "\n".join(lines) + "\n"


def _anchor(heading: str) -> str:
    """The id GitHub's Markdown gives a heading (lower case, spaces as dashes, punctuation dropped)."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def _html(sections, facts, run_id, url) -> str:
    title = html.escape(f"{facts['gpu']}: run {run_id} against the paper and the model")
    parts = [f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{title}</title>"
             f"<style>{CSS}</style></head><body><h1>{title}</h1>",
             "<nav><h2>Contents</h2><ol>" + "".join(f"<li><a href='#{_anchor(h)}'>{html.escape(h)}</a></li>"
                                                     for h, _, _ in sections) + "</ol></nav>"]
    for heading, paragraphs, body in sections:
        parts.append(f"<h2 id='{_anchor(heading)}'>{html.escape(heading)}</h2>")
        if heading == "Summary":
            parts.append("<ul>" + "".join(f"<li>{html.escape(t)}</li>" for t in paragraphs) + "</ul>")
        else:
            parts += [f"<p>{html.escape(t)}</p>" for t in paragraphs]
        if isinstance(body, Path):
            data = base64.b64encode(body.read_bytes()).decode()
            parts.append(f"<img alt='{html.escape(heading)}' src='data:image/png;base64,{data}'>")
        elif body is not None:
            parts.append(html_table(body))
    parts.append(f"<footer>{html.escape(_footer(url))}</footer></body></html>")
    return "\n".join(parts)
