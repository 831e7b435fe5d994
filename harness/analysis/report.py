"""`bench report`: a run against the paper and the models, as Markdown and self-contained HTML
with PNG figures, under reports/<gpu>-<date>-run<N>/.

The shared sections (summary, the paper, rates by family, disagreements, provenance) read the
metric registry; each family of the run adds its own sections (Family.figures).

report_summary.py writes the summary and provenance, report_tables.py the shared tables, report_render.py
the Markdown and the HTML."""

from __future__ import annotations

import os
import re
import shutil
import socket
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from harness.analysis import run_rows
from harness.analysis.pages import slug
from harness.analysis.paper_verdicts import against_paper
from harness.analysis.report_render import html_page, markdown_page
from harness.analysis.report_summary import provenance_table, run_facts, summary_lines
from harness.analysis.report_tables import (TENSOR_UNITS, disagreements_section, energy_section, fleet_section,
                                            paper_section, rates_section, spread_section)
from harness.db.store import Store
from harness.errors import StoreError, redact
from harness.registry import FAMILIES


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
    facts = run_facts(store, run_id)
    date = str(facts["started_at"])[:10]
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"{slug(facts['gpu'] or 'unknown-gpu')}-{date}-run{run_id}"
    # Everything is written into a new folder of our own, then moved into place whole: no write
    # follows a link someone left in the output folder, and an interrupted report leaves nothing.
    # A killed one (SIGKILL, a lost node) cannot clean up: the next report of the run does (_sweep_stale).
    _sweep_stale(root, final.name)
    staging = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=root))
    try:
        (staging / STAGING_MARK).write_text(f"{socket.gethostname()} {os.getpid()}\n")
        markdown, page, figures = _write(store, run_id, facts, staging, include_flagged)
        (staging / STAGING_MARK).unlink()
        os.chmod(staging, 0o755)
        _publish(staging, final)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return Report(final, final / markdown.name, final / page.name, [final / f.name for f in figures])


STAGING_MARK = ".bench-staging"  # in a report's folder while it is written: the host and process writing it


def _sweep_stale(root: Path, name: str) -> None:
    """Remove the folders a killed `bench report` of this report left in `root` while writing it: each holds
    STAGING_MARK naming this host and a process that is gone. Nothing else is touched: not a folder without the
    mark (a replaced report's, mid-move, or anyone's), not one of another host or of a process still running."""
    for folder in root.glob(f".{name}.*"):
        mark = folder / STAGING_MARK
        if folder.is_symlink() or not folder.is_dir() or mark.is_symlink() or not mark.is_file():
            continue
        host, _, pid = mark.read_text(errors="replace").strip().partition(" ")
        if host == socket.gethostname() and pid.isdigit() and not _running(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


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
    markdown.write_text(markdown_page(sections, facts, run_id, url))
    page = directory / "report.html"
    page.write_text(html_page(sections, facts, run_id, url))
    return markdown, page, figures


def _publish(staging: Path, final: Path) -> None:
    """Move the finished report folder to `final`, replacing an earlier report there. A link at
    `final` is replaced itself (its target is left alone); anything else that is not a folder of
    ours is refused. Of an earlier report's folder only what bench wrote is replaced (issue 46, item 17): the
    files someone else put there move into the new folder, and one the new report would overwrite is refused
    before anything changes."""
    if final.is_symlink():
        final.unlink()
    elif final.exists():
        if not final.is_dir():
            raise StoreError(f"cannot write the report: {final} exists and is not a folder")
        theirs = sorted(set(p.name for p in final.iterdir()) - _written_by_bench(final, staging))
        clash = [name for name in theirs if (staging / name).exists() or (staging / name).is_symlink()]
        if clash:
            raise StoreError(f"cannot write the report: {final / clash[0]} is not a file bench wrote, and the new "
                             "report has one of that name: move it, or pass another --out")
        old = Path(tempfile.mkdtemp(prefix=f".{final.name}.old.", dir=final.parent))
        os.replace(final, old / final.name)
        os.replace(staging, final)
        for name in theirs:
            os.replace(old / final.name / name, final / name)
        shutil.rmtree(old, ignore_errors=True)
        return
    os.replace(staging, final)


def _written_by_bench(folder: Path, staging: Path) -> set[str]:
    """The names bench wrote in an earlier report's folder: its two pages and the figures its Markdown shows; where
    that Markdown is gone or is someone's link (never read through), the names the new report writes."""
    markdown = folder / "report.md"
    if markdown.is_symlink() or not markdown.is_file():
        return {"report.md", "report.html", *(p.name for p in staging.iterdir())}
    figures = re.findall(r"^!\[[^\n]*\]\(([^/()\n]+)\)$", markdown.read_text(errors="replace"), flags=re.MULTILINE)
    return {"report.md", "report.html", *figures}


def _sections(store: Store, run_id: int, facts: dict, against: pd.DataFrame, family_sections: list,
              include_flagged: bool, tensor_run: bool = True) -> list:
    """[(heading, text paragraphs, Path | DataFrame | None)] shared by the Markdown and the HTML."""
    return [
        ("Summary", summary_lines(store, run_id, facts, against), None),
        *family_sections,
        *paper_section(against),
        *energy_section(store, run_id, against, facts),
        *rates_section(store, facts, include_flagged, tensor_run),
        *fleet_section(store, facts),
        *spread_section(store, run_id),
        disagreements_section(against),
        ("Provenance", [], provenance_table(run_id, facts)),
    ]
