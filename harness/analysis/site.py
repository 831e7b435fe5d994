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
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pandas as pd

from harness.analysis.pages import CSS, html_table, slug
from harness.analysis.paper_verdicts import against_paper
from harness.analysis.report import portable_database
from harness.analysis.site_history import history
from harness.db.frames import latest
from harness.db.store import Store
from harness.errors import StoreError, redact
from harness.paper import DEFAULT_TOLERANCE, PAPER_GPU
from harness.registry import FAMILIES
from harness.verdicts import AGAINST_PAPER, DISAGREES


@dataclass(frozen=True)
class SiteContext:
    """What a family's findings(context) may read: the newest valid measurement of every GPU model,
    case, metric and launch (harness.latest's frame), where to write figures, and `against(run_id)`: a run's
    rows against the published figures (bench compare's frame, paper_verdicts.against_paper; None where not given)."""

    store: Store
    latest: pd.DataFrame
    directory: Path
    against: Callable[[int], pd.DataFrame] | None = None


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
        context = SiteContext(store, newest, figures, lru_cache(maxsize=None)(lambda run: against_paper(store, run)))
        sections = []
        for family in FAMILIES.values():
            next_step()
            sections += family.findings(context)
        next_step()
        sections += _paper_and_siblings(store, runs)
        next_step()
        sections += history(store, figures)
        next_step()
        sections.append(("Every run", ["Newest last. A run's report, where `bench report` wrote one into the "
                                       "reports folder, is linked from its number."],
                         _runs_table(runs, out, reports)))
        page = out / "index.html"
        temp = out / f".index.{os.getpid()}.html"
        try:  # a full disk or an interruption leaves no partial file behind
            temp.write_text(_page(store, runs, sections))
            os.replace(temp, page)
        except BaseException:
            temp.unlink(missing_ok=True)
            raise
    if progress is not None:
        progress("done", len(steps), len(steps))
    return Site(page, [heading for heading, _, _ in sections])


def _paper_and_siblings(store: Store, runs: pd.DataFrame) -> list:
    """Verdicts against the paper for each GPU's newest complete run of each suite, and the GPUs
    beside each other and the paper on every cycle figure the paper prints."""
    complete = runs[runs.status == "complete"].assign(model=lambda f: f.gpu.map(_model))
    newest = complete.sort_values("run").groupby(["model", "suite"], as_index=False).last()
    rows, beside, own = [], [], []
    for run in newest.itertuples(index=False):
        against = against_paper(store, int(run.run))
        if against.empty:
            continue
        own.append(against[against.paper.notna() & (against.paper_gpu != PAPER_GPU)]
                   .assign(gpu=run.model, suite=run.suite, run=int(run.run)))
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
    if own and sum(len(o) for o in own):
        sections.append(_own_model(pd.concat(own, ignore_index=True)))
    fleet = _fleet(store)
    if fleet is not None:
        sections.append(fleet)
    return sections


OWN_MODEL_COLUMNS = {"gpu": "gpu", "run": "run", "suite": "suite", "case_id": "case_id", "metric": "metric",
                     "value": "ours (measured)", "comparable": "ours, in its terms", "paper": "published", "paper_unit": "unit", "paper_gpu": "its GPU",
                     "paper_table": "where", "verdict": "verdict", "note": "why"}


def _own_model(frame: pd.DataFrame):
    """The figures published for a run's own GPU model (the seed documents': the architecture chapter's, the
    worklog's, the CuTe chapter's bank check), each GPU model's newest run of each suite: every row and its verdict."""
    lines = []
    for gpu, part in frame.groupby("gpu"):
        counts = part.verdict.value_counts()
        lines.append(f"{gpu}: {len(part)} figures compared, " + ", ".join(f"{n} {v}" for v, n in counts.items()) + ".")
    table = frame[list(OWN_MODEL_COLUMNS)].rename(columns=OWN_MODEL_COLUMNS).round(3)
    return ("Against the figures published for each GPU's own model", lines + [
        "Figures stated for the GPU model a run measured (the seed documents: the architecture chapter's H100 SXM "
        "figures, the HGEMM worklog's, the CuTe chapter's bank check), and for a GPU model with the same SM on another "
        "board its figures of the SM only (gpu_specs.csv sm_of: the H200 meets the H100 SXM5's tensor-core, CUDA-core, "
        "shared-memory and L1 figures, not its L2's or HBM's), against each GPU model's newest complete run "
        "of each suite, as `bench compare` judges them: cycles directly, a rate per cycle per SM at the clock printed "
        "beside it or its GPU's highest, a bandwidth in wall time with our clock beside it; 'why' is the row's note."],
        table)


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
                      f"{r.worst_metric} ({r.worst_difference:+.1%} {r.worst_basis})" for r in outliers.itertuples(index=False)) + ".")
    return ("Against their siblings", [
        text, "Every GPU's newest measurements against the median of the other GPUs of its model measured by the "
              f"same commit (`bench fleet`); a GPU needs at least two such siblings to be judged ({alone} of the "
              "GPUs here have fewer, and are left out of the table)."], gpus if len(gpus) else None)


def _model(label: str) -> str:
    """A GPU's model from its label (store.gpu_label: the model, then the end of its UUID)."""
    head, _, tail = label.rpartition(" ")
    return head if head and re.fullmatch(r"[0-9a-f]{8}", tail) else label


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
