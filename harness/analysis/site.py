"""`bench site`: one static HTML page over every run and GPU in a database.

It answers, in this order: what each instruction family's measurements say (each family's
`findings(context)`, the question each family answers from the newest measurements), how each GPU's newest runs stand against the paper and against their siblings, how the
headline numbers moved across harness commits, and which runs there are (linked to their reports).
The page is one file with its figures inside; links to reports are relative, and no path of the
machine that made it appears in it.
"""

from __future__ import annotations

import base64
import html
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from harness.analysis.noise import basis_of, noise_floor
from harness.analysis.pages import CSS, html_table, slug
from harness.analysis.paper_verdicts import against_paper
from harness.analysis.report import portable_database
from harness.db.frames import latest, results
from harness.db.store import Store
from harness.errors import StoreError, redact
from harness.paper import DEFAULT_TOLERANCE, PAPER_GPU
from harness.plotting import history_range, mark_coinciding
from harness.registry import FAMILIES
from harness.verdicts import AGAINST_PAPER, DISAGREES

HISTORY_SERIES = 6  # headline measurements followed across commits


@dataclass(frozen=True)
class SiteContext:
    """What a family's findings(context) may read: the newest valid measurement of every GPU model,
    case, metric and launch (harness.latest's frame), and where to write figures."""

    store: Store
    latest: pd.DataFrame
    directory: Path


@dataclass(frozen=True)
class Site:
    page: Path
    sections: list[str]


def build(store: Store, out: Path, reports: Path | None = None, progress=None) -> Site:
    """Write `out`/index.html (replacing an earlier one). `reports`: the folder of `bench report`'s
    output, linked from the runs table where a run's report is there. `progress(step, done, steps)`
    is called as each step starts (each family's findings, the paper, history, the page) and once
    at the end (done == steps)."""
    steps = [f"{name}: findings" for name in FAMILIES] + ["against the paper", "history", "the page"]
    step = iter(enumerate(steps))

    def next_step() -> None:
        if progress is not None:
            done, name = next(step)
            progress(name, done, len(steps))

    import matplotlib

    matplotlib.use("Agg")
    runs = store.runs()
    if runs.empty:
        raise StoreError(f"{store.url} holds no runs (see `bench run`)")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        figures = Path(scratch)
        newest = latest(store)
        context = SiteContext(store, newest, figures)
        sections = []
        for family in FAMILIES.values():
            next_step()
            sections += family.findings(context)
        next_step()
        sections += _paper_and_siblings(store, runs)
        next_step()
        sections += _history(store, figures)
        next_step()
        sections.append(("Every run", ["Newest last. A run's report, where `bench report` wrote one into the "
                                       "reports folder, is linked from its number."],
                         _runs_table(runs, out, reports)))
        page = out / "index.html"
        temp = out / f".index.{os.getpid()}.html"
        temp.write_text(_page(store, runs, sections))
        os.replace(temp, page)
    if progress is not None:
        progress("done", len(steps), len(steps))
    return Site(page, [heading for heading, _, _ in sections])


def _paper_and_siblings(store: Store, runs: pd.DataFrame) -> list:
    """Verdicts against the paper for each GPU's newest complete run of each suite, and the GPUs
    beside each other and the paper on every cycle figure the paper prints."""
    complete = runs[runs.status == "complete"].assign(model=lambda f: f.gpu.map(_model))
    newest = complete.sort_values("run").groupby(["model", "suite"], as_index=False).last()
    rows, beside = [], []
    for run in newest.itertuples(index=False):
        against = against_paper(store, int(run.run))
        if against.empty:
            continue
        counts = against.verdict.value_counts()
        rows.append({"gpu": run.model, "suite": run.suite, "run": int(run.run),
                     **{v: int(counts.get(v, 0)) for v in AGAINST_PAPER}})
        cycles = against[(against.unit == "cycles") & against.paper.notna()]
        beside.append(cycles.assign(gpu=run.model))
    sections = []
    if rows:
        table = pd.DataFrame(rows)
        table = table.loc[:, (table != 0).any(axis=0)]
        failing = int(table.get(DISAGREES, pd.Series([0])).sum())
        sections.append(("Against the paper", [
            "Each GPU model's newest complete run of each suite against the published figures of Luo et al. "
            f"(arXiv 2402.13499, 2501.12084; an {PAPER_GPU}): cycle figures directly, throughput per cycle per SM "
            "at the clock the paper printed (`bench compare --run N` gives every row and its note). "
            + (f"{failing} rows disagree with no reason found." if failing else
               "No row disagrees without a reason: every difference is explained by the family or by the "
               "paper's clock.")], table))
    if beside:
        frame = pd.concat(beside, ignore_index=True)
        frame["what"] = frame.case_id + " " + frame.metric
        side = frame.pivot_table(index="what", columns="gpu", values="value", aggfunc="first")
        paper = frame.groupby("what").paper.first()
        side = side.join(paper.rename(f"paper ({PAPER_GPU})")).reset_index().rename(columns={"what": "case and metric"})
        sections.append(("GPUs beside each other and the paper, in cycles", [
            "Every cycle figure the paper prints, beside the newest measurement of each GPU model: cycles do not "
            "depend on the clock, so GPUs of one architecture should agree, and they do where the rows match."],
            side.round(2)))
    fleet = _fleet(store)
    if fleet is not None:
        sections.append(fleet)
    return sections


def _fleet(store: Store):
    from harness.analysis.fleet import table

    try:
        rows, outliers = table(store, tolerance=DEFAULT_TOLERANCE)
    except StoreError:
        return None
    gpus = rows.groupby(["gpu", "git_commit"]).agg(rows=("case_id", "size"), rows_apart=("outlier", "sum"),
                                                  siblings=("siblings", "max")).reset_index()
    alone = int((gpus.siblings.fillna(0) < 2).sum())
    gpus = gpus[gpus.siblings.fillna(0) >= 2]
    text = ("No GPU stands apart from its siblings (same model, same harness commit) by more than the noise."
            if outliers.empty else
            "; ".join(f"{r.gpu} stands apart on {r.rows_apart} of {r.of_rows} rows, most on {r.worst_case} "
                      f"{r.worst_metric} ({r.worst_difference:+.1%})" for r in outliers.itertuples(index=False)) + ".")
    return ("Against their siblings", [
        text, "Every GPU's newest measurements against the median of the other GPUs of its model measured by the "
              f"same commit (`bench fleet`); a GPU needs at least two such siblings to be judged ({alone} of the "
              "GPUs here have fewer, and are left out of the table)."], gpus if len(gpus) else None)


def _history(store: Store, figures: Path) -> list:
    """The measurements taken in the most runs (one per family where it can), followed across runs
    and commits, one line per GPU model."""
    frame = results(store, valid=True)
    if frame.empty:
        return []
    frame = frame[~frame.flagged.fillna(False)]
    counts = (frame.groupby(["family", "case_id", "metric", "launch_key"]).agg(runs=("run_id", "nunique"),
                                                                            commits=("git_commit", "nunique"))
              .reset_index())
    counts = counts[(counts.runs >= 3) & (counts.commits >= 2)].sort_values(["runs", "commits"], ascending=False)
    if counts.empty:
        return []
    picked = counts.groupby("family").head(2).head(HISTORY_SERIES)
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(picked), 1, figsize=(10, 2.6 * len(picked)), squeeze=False)
    rows, said = [], []
    for ax, key in zip(axes[:, 0], picked.itertuples(index=False)):
        series = frame[(frame.case_id == key.case_id) & (frame.metric == key.metric)
                       & (frame.launch_key == key.launch_key)].sort_values("run_id")
        changes = _history_changes(store, series)
        bands = []
        for gpu, part in series.groupby("gpu_name"):
            line, = ax.plot(part.run_id, part.value, "o-", label=gpu, markersize=4)
            band = changes[changes.gpu_name == gpu]
            # the noise band compare uses about each run's value: a step inside it is noise
            noise, values = band.noise_here.to_numpy(), part.value.to_numpy()
            ax.fill_between(part.run_id.to_numpy(), values * (1 - noise), values * (1 + noise),
                            color=line.get_color(), alpha=0.15, lw=0)
            bands += list(band.noise_here)
            moved = band[band.verdict != "same"]
            ax.plot(moved.run_id, moved.value, "o", ms=10, mfc="none", mec="red", mew=1.5,
                    label="_changed")
            for change in moved.itertuples(index=False):
                ax.annotate(change.verdict, (change.run_id, change.value), textcoords="offset points",
                            xytext=(0, 8), ha="center", fontsize=7, color="red")
        said += [f"{key.case_id} {key.metric}: {s}" for s in mark_coinciding(ax)]
        low, high = history_range(series.value.to_numpy(), max(bands) if bands else 0.0)
        ax.set_ylim(low, high)
        ax.ticklabel_format(axis="y", useOffset=False, style="plain")  # values as they are, no +1.28e2
        unit = series.unit.iloc[0]
        ax.set_title(f"{key.case_id}  {key.metric}  {_launch_text(key.launch_key)}", fontsize=9)
        ax.set_ylabel(unit, fontsize=8)
        ax.tick_params(labelsize=8)
        ax.legend(fontsize=7, loc="best")
        spread = series.value.max() / series.value.min() - 1 if series.value.min() > 0 else float("nan")
        rows.append({"case_id": key.case_id, "metric": key.metric, "launch": _launch_text(key.launch_key),
                     "runs": int(key.runs), "commits": int(key.commits), "unit": unit,
                     "lowest": series.value.min(), "highest": series.value.max(), "max / min - 1": spread,
                     "changes beyond the noise": int((changes.verdict != "same").sum())})
    axes[-1, 0].set_xlabel("run")
    fig.tight_layout()
    path = figures / "history.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return [("History across commits", [
        "The measurements taken in the most runs and by at least two harness commits, one line per GPU model "
        "(x: run number, in the order runs were stored). The shaded band about each point is the noise "
        "`bench compare` allows between two runs (the spreads of both, and the metric's floor); a red ring "
        "marks a run that differs from that GPU's previous one beyond it, as `bench compare --run N --against M` "
        "would say (slower, faster), and nothing else is a change. A step between commits is a change of the "
        "harness or of the probe, not of the GPU: the runs' commits are in the table below.", *said], path),
        ("History in numbers", [], pd.DataFrame(rows).round(4))]


def _history_changes(store: Store, series: pd.DataFrame) -> pd.DataFrame:
    """Each run of a measurement's history beside the same GPU's previous run, judged as
    compare.against_run judges two runs: the noise is the larger spread of the two, the metric's
    floor (two whole cycles where both sides' samples are whole cycles) and, for time-based metrics,
    the clock's drift; beyond it "slower" or "faster" (or less/more energy). Columns: gpu_name,
    run_id, value, noise_here (the band drawn about the point), verdict."""
    import numpy as np

    from harness import metrics as registry
    from harness.verdicts import FASTER, LESS_ENERGY, MORE_ENERGY, SAME, SLOWER

    arrays = store.samples_of(series.measurement_id) if len(series) else {}
    whole = {i: bool(len(a)) and np.array_equal(a, np.round(a)) for i, a in arrays.items()}
    metric = series.metric.iloc[0]
    basis = basis_of(pd.Series([metric])).iloc[0]
    lower = bool(registry.lower_is_better(metric))
    out = []
    for gpu, part in series.groupby("gpu_name"):
        previous = None
        for row in part.itertuples(index=False):
            spread = float(row.spread) if row.spread == row.spread and row.spread is not None else 0.0
            own = float(noise_floor(basis, whole.get(row.measurement_id, False), row.value, row.value))
            verdict, noise = SAME, max(spread, own)
            if previous is not None:
                stepped = whole.get(row.measurement_id, False) and whole.get(previous.measurement_id, False)
                floor = float(noise_floor(basis, stepped, row.value, previous.value))
                prev_spread = float(previous.spread) if previous.spread == previous.spread and previous.spread is not None else 0.0
                limit = max(spread, prev_spread, floor)
                compared = row.value / previous.value if previous.value else float("nan")
                clocks = getattr(row, "sm_clock_mhz", None), getattr(previous, "sm_clock_mhz", None)
                if basis == "seconds" and all(c and c == c for c in clocks):
                    compared = (row.value / clocks[0]) / (previous.value / clocks[1])
                if compared == compared and abs(compared - 1) > limit + 1e-9:
                    better = compared < 1 if lower else compared > 1
                    verdict = ((LESS_ENERGY if better else MORE_ENERGY) if basis == "energy"
                               else FASTER if better else SLOWER)
            out.append({"gpu_name": gpu, "run_id": row.run_id, "value": row.value, "noise_here": noise,
                        "verdict": verdict})
            previous = row
    return pd.DataFrame(out, columns=["gpu_name", "run_id", "value", "noise_here", "verdict"])


def _model(label: str) -> str:
    """A GPU's model from its label (store.gpu_label: the model, then the end of its UUID)."""
    head, _, tail = label.rpartition(" ")
    return head if head and re.fullmatch(r"[0-9a-f]{8}", tail) else label


def _launch_text(key: str) -> str:
    return re.sub(r'[{}"]', "", key or "").replace(":", "=").replace(",", " ")


def _runs_table(runs: pd.DataFrame, out: Path, reports: Path | None) -> pd.DataFrame:
    table = runs[["run", "started_at", "status", "gpu", "suite", "cases", "invalid", "faults", "git_commit"]].copy()
    table["started_at"] = table.started_at.astype(str).str[:16]
    table["report"] = ""
    if reports is not None and Path(reports).is_dir():
        folders = {int(m.group(1)): f for f in Path(reports).iterdir()
                   if f.is_dir() and (m := re.search(r"-run(\d+)$", f.name)) and (f / "report.html").exists()}
        for i, run in table.run.items():
            if int(run) in folders:
                table.at[i, "report"] = Path(os.path.relpath(folders[int(run)] / "report.html", out)).as_posix()
    return table


def _page(store: Store, runs: pd.DataFrame, sections: list) -> str:
    models = runs.gpu.map(_model).value_counts().sort_index()
    gpus = sorted(set(runs.gpu))
    title = "hopper-bench: every run and GPU"
    anchors = [slug(heading) for heading, _, _ in sections]
    parts = [f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{title}</title>"
             f"<style>{CSS}nav li{{margin:0}}</style></head><body><h1>{title}</h1>",
             f"<p>{len(runs)} runs on {len(gpus)} GPUs ("
             f"{html.escape(', '.join(f'{m}: {runs[runs.gpu.map(_model) == m].gpu.nunique()}' for m in models.index))}"
             ") in "
             f"{html.escape(portable_database(redact(store.url)))}. Made by <code>bench site</code>.</p>",
             "<nav><h2>Contents</h2><ol>" + "".join(f"<li><a href='#{a}'>{html.escape(h)}</a></li>"
                                                     for a, (h, _, _) in zip(anchors, sections)) + "</ol></nav>"]
    for anchor, (heading, paragraphs, body) in zip(anchors, sections):
        parts.append(f"<h2 id='{anchor}'>{html.escape(heading)}</h2>")
        parts += [f"<p>{html.escape(t)}</p>" for t in paragraphs]
        if isinstance(body, Path):
            data = base64.b64encode(body.read_bytes()).decode()
            parts.append(f"<img alt='{html.escape(heading)}' src='data:image/png;base64,{data}'>")
        elif body is not None and "report" in getattr(body, "columns", []):
            parts.append(_linked_runs(body))
        elif body is not None:
            parts.append(html_table(body))
    # Says, once the page has loaded, whether every figure decoded (the browser test reads it).
    parts.append("<script>addEventListener('load',()=>{const i=[...document.images];document.body.dataset."
                 "figures=i.every(x=>x.complete&&x.naturalWidth>0)?'ok':'broken'})</script></body></html>")
    return "\n".join(parts)


def _linked_runs(table: pd.DataFrame) -> str:
    body = table.drop(columns="report")
    text = html_table(body)
    for run, link in zip(table.run, table.report):
        if link:
            text = text.replace(f"<tr><td>{int(run)}</td>", f"<tr><td><a href='{html.escape(link)}'>{int(run)}</a></td>", 1)
    return text
