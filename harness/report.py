"""`bench report`: a run against the paper and the fitted model, as Markdown and self-contained
HTML with PNG figures, under reports/<gpu>-<date>/."""

from __future__ import annotations

import base64
import html
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from harness import compare as comparing
from harness import output, perfmodel
from harness.fitting import FitReport, fit_run
from harness.spec import Case
from harness.store import Store

PAPER_N = (8, 16, 32, 64, 128, 256)
DTYPE_ORDER = ("f16/f32", "f16/f16", "bf16/f32")
COLORS = {"SS": "#1f77b4", "RS": "#d62728"}


@dataclass(frozen=True)
class Report:
    directory: Path
    markdown: Path
    html: Path
    figures: list[Path]


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _run_facts(store: Store, run_id: int) -> dict:
    run = store.query(f"""SELECT r.*, d.name AS gpu, d.sm_count, d.uuid, d.max_sm_clock_mhz, d.power_limit_w
                          FROM runs r LEFT JOIN devices d ON d.id = r.device_id WHERE r.id = {int(run_id)}""").iloc[0]
    stats = store.query(f"""SELECT COUNT(DISTINCT case_id) AS cases,
            COUNT(DISTINCT CASE WHEN status = 'invalid' THEN case_id END) AS invalid,
            COUNT(DISTINCT CASE WHEN status = 'fault' THEN case_id END) AS faults,
            MIN(sm_clock_mhz) AS clock_min, MAX(sm_clock_mhz) AS clock_max,
            MAX(power_w) AS power_max, MAX(temperature_c) AS temp_max,
            SUM(flagged) AS flagged, SUM(power_capped) AS power_capped, COUNT(*) AS measurements,
            SUM(CASE WHEN nvml_sm_clock_mhz IS NOT NULL THEN 1 ELSE 0 END) AS with_telemetry
            FROM results WHERE run_id = {int(run_id)}""").iloc[0]
    return {**run.to_dict(), **stats.to_dict()}


def _issue_intervals(store: Store, run_id: int, include_flagged: bool) -> pd.DataFrame:
    frame = comparing.measured(store, run_id, include_flagged)
    frame = frame[frame.metric == "issue_interval_cycles"].copy()
    frame["types"] = frame.dtype_a + "/" + frame.dtype_acc
    return frame


def _paper_points(store: Store) -> pd.DataFrame:
    return store.query(f"""SELECT n, operands, dtype_a || '/' || dtype_acc AS types, value FROM reference_values
                          WHERE gpu_name = '{comparing.PAPER_GPU}' AND metric = 'issue_interval_cycles'
                          AND NOT sparse AND k = 16""").drop_duplicates()


def _figure_intervals(path: Path, intervals: pd.DataFrame, fits: FitReport, paper: pd.DataFrame, title: str) -> None:
    import matplotlib.pyplot as plt

    keys = [k for k in DTYPE_ORDER if k in set(intervals.types)]
    fig, axes = plt.subplots(1, len(keys), figsize=(5.2 * len(keys), 4.4), sharey=True, squeeze=False)
    grid = np.arange(8, 257, 8)
    for ax, key in zip(axes[0], keys):
        a, acc = key.split("/")
        params = fits.fits[key].params
        for ops in ("SS", "RS"):
            data = intervals[(intervals.types == key) & (intervals.operands == ops)].sort_values("n")
            ax.plot(data.n, data.value, "o", ms=4, color=COLORS[ops], label=f"measured {ops}")
            model = [perfmodel.predict(Case("wgmma", 64, int(n), 16, a, a, acc, ops), params).cycles for n in grid]
            ax.plot(grid, model, "-", lw=1.2, color=COLORS[ops], alpha=0.6, label=f"fitted model {ops}")
            points = paper[(paper.types == key) & (paper.operands == ops)]
            if len(points):
                ax.plot(points.n, points.value, "s", ms=10, mfc="none", mew=1.5, color="black",
                        label=f"paper (H800 PCIe) {ops}" if ops == "SS" else "_nolegend_")
        ax.set_title(f"{a} inputs, {acc} accumulate")
        ax.set_xlabel("N (m64nNk16)")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log", base=2)
        ax.set_xticks([8, 16, 32, 64, 128, 256], labels=["8", "16", "32", "64", "128", "256"])
        ax.set_yticks([8, 16, 32, 64, 128], labels=["8", "16", "32", "64", "128"])
        ax.grid(True, which="major", alpha=0.3)
    axes[0][0].set_ylabel("issue interval (cycles per wgmma)")
    axes[0][0].legend(fontsize=8, loc="upper left")
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _figure_throughput(path: Path, store: Store, run_id: int, include_flagged: bool, title: str) -> None:
    import matplotlib.pyplot as plt

    frame = comparing.measured(store, run_id, include_flagged)
    frame = frame[(frame.metric == "sm_throughput") & (frame.dtype_a == "f16") & (frame.dtype_acc == "f32")]
    fig, axes = plt.subplots(1, 2, figsize=(10.4, 4.2), sharey=True)
    for ax, ops in zip(axes, ("SS", "RS")):
        for wg, data in frame[frame.operands == ops].groupby("warpgroups"):
            data = data.sort_values("n")
            ax.plot(data.n, data.value, "o-", ms=3, lw=1, label=f"{wg} warpgroup{'s' if wg > 1 else ''}/SM")
        ax.axhline(4096, color="black", ls="--", lw=1, label="dense peak 4096")
        ax.set_title(f"f16 inputs, f32 accumulate, {ops}")
        ax.set_xlabel("N (m64nNk16)")
        ax.set_ylim(0, 4500)
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel("FLOP per cycle per SM")
    axes[0].legend(fontsize=8, loc="lower right")
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _figure_residuals(path: Path, fits: FitReport, title: str) -> None:
    import matplotlib.pyplot as plt

    residuals = fits.residuals
    fig, ax = plt.subplots(figsize=(8, 3.6))
    for (key, ops), data in residuals.groupby(["types", "operands"]):
        data = data.sort_values("n")
        ax.plot(data.n, data.residual, "o-", ms=3, lw=0.8, label=f"{key} {ops}")
    ax.axhline(0, color="black", lw=0.8)
    ax.set_xlabel("N (m64nNk16)")
    ax.set_ylabel("measured - fitted (cycles)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, ncol=3)
    ax.set_title(title, fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _paper_table(against: pd.DataFrame) -> pd.DataFrame:
    rows = against[against.paper.notna()].copy()
    rows["measured"] = rows.value.round(2)
    rows["scaled to H800"] = np.where(rows.metric == "throughput_tflops", rows.comparable.round(1), np.nan)
    rows["ratio"] = rows.paper_ratio.round(3)
    rows["paper implies MHz"] = rows.paper_implied_mhz.round(0)
    return rows[["case_id", "metric", "measured", "scaled to H800", "paper", "ratio", "paper implies MHz", "verdict"]]


def build(store: Store, run_id: int | None = None, root: Path = Path("reports"),
          include_flagged: bool = False) -> Report:
    import matplotlib

    matplotlib.use("Agg")
    run_id = comparing.default_run(store) if run_id is None else run_id
    store.run_info(run_id)  # StoreError naming the runs there are
    facts = _run_facts(store, run_id)
    date = str(facts["started_at"])[:10]
    directory = Path(root) / f"{_slug(facts['gpu'] or 'unknown-gpu')}-{date}-run{run_id}"
    directory.mkdir(parents=True, exist_ok=True)
    fits = fit_run(store, run_id, include_flagged)
    intervals = _issue_intervals(store, run_id, include_flagged)
    against = comparing.against_paper(store, run_id, include_flagged)
    gpu = facts["gpu"]
    figures = [directory / "issue_interval_vs_n.png", directory / "sm_throughput_vs_n.png",
               directory / "residuals.png"]
    _figure_intervals(figures[0], intervals, fits, _paper_points(store),
                      f"{gpu}, run {run_id}: wgmma issue interval against N (measured, fitted model, paper)")
    _figure_throughput(figures[1], store, run_id, include_flagged,
                       f"{gpu}, run {run_id}: tensor-core throughput per SM (clock-independent)")
    _figure_residuals(figures[2], fits, f"{gpu}, run {run_id}: residuals of the fitted model")
    sections = _sections(store, run_id, facts, fits, against)
    markdown = directory / "report.md"
    markdown.write_text(_markdown(sections, figures, facts, run_id))
    page = directory / "report.html"
    page.write_text(_html(sections, figures, facts, run_id))
    return Report(directory, markdown, page, figures)


def _sections(store: Store, run_id: int, facts: dict, fits: FitReport, against: pd.DataFrame) -> list:
    """[(heading, text paragraphs, table or None)] shared by the Markdown and the HTML."""
    params = fits.parameters.copy()
    prior = fits.prior
    disagree = against[(against.verdict == "DISAGREES") | (against.model_verdict == "DISAGREES")]
    cycle_rows = against[(against.metric == "issue_interval_cycles") & against.paper.notna()]
    cycle_ok = (cycle_rows.verdict == "agrees").sum()
    tput = against[(against.metric == "throughput_tflops") & against.paper.notna()]
    worst_resid = fits.residuals.residual.abs().max()
    summary = [
        f"Issue intervals: {cycle_ok} of {len(cycle_rows)} cases with a paper figure agree with the paper's "
        f"H800 PCIe within the measurement's spread plus 3 %.",
        f"Fitted model: B_smem = {params.B_smem.min():g}..{params.B_smem.max():g} B/cycle/SM, "
        f"F_tc = {params.F_tc.min():g}..{params.F_tc.max():g} FLOP/cycle per tensor core, "
        f"L_min = {params.L_min.min():g}..{params.L_min.max():g} cycles (datasheet: {prior.b_smem:g}, "
        f"{prior.f_tc:g}, {prior.l_min:g}; {prior.source}); the largest residual is {worst_resid:.3f} cycles "
        f"over {len(fits.residuals)} cases.",
    ]
    if len(tput):
        implied = tput.paper_implied_mhz
        summary.append(
            f"Throughput: scaled to the H800 PCIe (114 SMs, 1755 MHz), this GPU's single-warpgroup TFLOPS are "
            f"{tput.paper_ratio.min():.2f}..{tput.paper_ratio.max():.2f} times the paper's random-input figures. "
            f"The cycle figures agree, so the difference is the clock: at this GPU's measured "
            f"FLOP/cycle the paper's numbers imply an SM clock of {implied.min():.0f}..{implied.max():.0f} MHz "
            "on the power-limited H800 PCIe (350 W), which the paper does not report.")
    if facts.get("with_telemetry"):
        summary.append(
            f"GPU state (NVML, during every measurement): SM clock in the kernel {facts['clock_min']:.0f}.."
            f"{facts['clock_max']:.0f} MHz, power up to {facts['power_max']:.0f} W, temperature up to "
            f"{facts['temp_max']:.0f} C; {int(facts['flagged'] or 0)} of {int(facts['measurements'])} measurements "
            f"flagged (thermal/hardware throttling or another process), {int(facts['power_capped'] or 0)} saw the "
            "software power cap (recorded, not flagged: cycle metrics do not depend on the clock).")
    else:
        summary.append("This run predates per-measurement NVML telemetry (schema 2): its GPU state was not recorded.")
    fit_text = ["Least squares per dtype (harness/perfmodel.py fit): each case is assigned to the term that bounds "
                "it, each term is fitted on its cases, until the assignment is stable. Crossover N: where the "
                "instruction turns tensor-core bound (SS: arithmetic overtakes reading A and B; RS: overtakes "
                "the floor)."]
    provenance = pd.DataFrame([
        ("GPU", f"{facts['gpu']} ({facts['sm_count']} SMs, {facts['uuid']})"),
        ("run", f"{run_id}: suite {facts['suite']}, {facts['status']}, {int(facts['cases'])} cases, "
                f"{int(facts['invalid'])} invalid, {int(facts['faults'])} faults"),
        ("started", str(facts["started_at"])[:19] + " UTC"),
        ("clocks", f"max SM {facts['max_sm_clock_mhz']} MHz (not locked); measured in kernels "
                   f"{facts['clock_min']:.0f}..{facts['clock_max']:.0f} MHz; power limit {facts['power_limit_w']} W"),
        ("software", f"driver {facts['driver_version']}, CUDA {facts['cuda_driver_version']}, NVRTC "
                     f"{facts['nvrtc_version']}, CuPy {facts['cupy_version']}, Python {facts['python_version']}, "
                     f"hopper-bench {facts['harness_version']}"),
        ("commit", f"{facts['git_commit']}{' (dirty)' if facts['git_dirty'] else ''}"),
        ("command", facts["command_line"]),
    ], columns=["", "value"])
    disagree_table = disagree[["case_id", "metric", "value", "comparable", "paper", "paper_ratio", "model",
                               "model_ratio", "verdict", "model_verdict"]].round(3).dropna(axis=1, how="all")
    return [
        ("Summary", summary, None),
        ("Issue interval against N", [], "figure:0"),
        ("Against the paper (H800 PCIe, arXiv 2402.13499)", [], _paper_table(against)),
        ("Throughput against N", ["FLOP per cycle per SM with W warpgroups per SM on every SM; the peak is "
                                  "4 tensor cores x 1024 FLOP per cycle for 16-bit inputs. The W lines lie on top "
                                  "of each other: one warpgroup's chain already keeps the tensor cores as busy as "
                                  "four do (4 warpgroups fit up to N = 200 only, by registers)."], "figure:1"),
        ("Fitted model", fit_text, params.round(4)),
        ("Residuals", [], "figure:2"),
        ("Disagreements", ["Rows where the measurement and the paper or the datasheet model differ by more than "
                           "the measurement's spread plus 3 %." if len(disagree) else "None."],
         disagree_table if len(disagree) else None),
        ("Provenance", [], provenance),
    ]


def _markdown(sections, figures, facts, run_id) -> str:
    lines = [f"# {facts['gpu']}: run {run_id} against the paper and the model", ""]
    for heading, paragraphs, body in sections:
        lines += [f"## {heading}", ""]
        if heading == "Summary":
            lines += [f"- {text}" for text in paragraphs] + [""]
        else:
            for text in paragraphs:
                lines += [text, ""]
        if isinstance(body, str):
            figure = figures[int(body.split(":")[1])]
            lines += [f"![{heading}]({figure.name})", ""]
        elif body is not None:
            lines += [output.markdown(body), ""]
    lines.append("Generated by `bench report`; every number comes from results.db.")
    return "\n".join(lines) + "\n"


def _html_table(frame: pd.DataFrame) -> str:
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    rows = []
    for row in frame.itertuples(index=False):
        cells = []
        for value in row:
            text = output._cell(value)
            cls = ' class="bad"' if text == "DISAGREES" else ' class="good"' if text == "agrees" else ""
            cells.append(f"<td{cls}>{html.escape(text)}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


CSS = """body{font:15px/1.5 system-ui,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.8em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:13px;margin:.5em 0;display:block;overflow-x:auto}
th,td{border:1px solid #ddd;padding:3px 7px;text-align:left;white-space:nowrap}th{background:#f4f4f4}
td.bad{color:#b00;font-weight:600}td.good{color:#070}img{max-width:100%;height:auto}
li{margin:.3em 0}footer{margin-top:3em;color:#777;font-size:13px}"""


def _html(sections, figures, facts, run_id) -> str:
    title = html.escape(f"{facts['gpu']}: run {run_id} against the paper and the model")
    parts = [f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{title}</title>"
             f"<style>{CSS}</style></head><body><h1>{title}</h1>"]
    for heading, paragraphs, body in sections:
        parts.append(f"<h2>{html.escape(heading)}</h2>")
        if heading == "Summary":
            parts.append("<ul>" + "".join(f"<li>{html.escape(t)}</li>" for t in paragraphs) + "</ul>")
        else:
            parts += [f"<p>{html.escape(t)}</p>" for t in paragraphs]
        if isinstance(body, str):
            figure = figures[int(body.split(":")[1])]
            data = base64.b64encode(figure.read_bytes()).decode()
            parts.append(f"<img alt='{html.escape(heading)}' src='data:image/png;base64,{data}'>")
        elif body is not None:
            parts.append(_html_table(body))
    parts.append("<footer>Generated by <code>bench report</code>; every number comes from results.db.</footer>"
                 "</body></html>")
    return "\n".join(parts)
