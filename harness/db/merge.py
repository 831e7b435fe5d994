"""`bench merge`: bring the runs of other results databases into one, without duplicates.

A run is the same run in two files when its device (by UUID), start time, host and command line
agree. A run the target lacks comes whole; a run it holds brings the measurements the target's copy
lacks (a measurement is one case, metric and launch of the run) and, when the source's copy is
further on (resumed more often, or finished), its status. So merging a node's file, resuming the
run on the node and merging again brings what the resumed run added, and merging twice adds nothing.
Devices are matched by UUID, cases by case id, builds by build hash. An older source is upgraded in
a temporary copy made with SQLite's backup API (commits still in its -wal come along; the file itself
is only read); a file that is not a hopper-bench database is refused with one line that names it.

A SQLite target changes all at once or not at all: the merge runs in a copy beside it (the published figures
brought up to date, an older schema upgraded, every source's runs added), which replaces the target only once
every source is in, and only if no one wrote the target meanwhile. A merge that fails (a refusal, a damaged
source, a full disk) leaves the target as it was, byte for byte, and a new target not made at all.

One source's rows: harness/db/mergerows.py; the copy that replaces a SQLite target: harness/db/workcopy.py.
"""

from __future__ import annotations

import tempfile
from contextlib import ExitStack
from pathlib import Path

from harness.db.connections import describe, sqlite_path
from harness.db.files import copy_sqlite, resolve_url
from harness.db.mergerows import MergeReport, merge_one
from harness.db.store import Store
from harness.db.workcopy import WorkCopy
from harness.errors import StoreError


def _open_source(source: str, copy: Path) -> tuple[Store, int | None]:
    """The source read-only; an older one through an upgraded copy at `copy`."""
    try:
        return Store.open(source, read_only=True), None
    except StoreError as exc:
        if "bench db upgrade" not in str(exc):
            raise
    path = sqlite_path(resolve_url(source))
    if path is None:  # an older PostgreSQL database: upgrade it first, where it is
        raise StoreError(f"{describe(resolve_url(source))} has an older schema: "
                         "run `bench db upgrade --db ...` on it first")
    copy_sqlite(path, copy)
    store = Store.open(str(copy))
    return store, store.migration.from_version if store.migration else None


def merge(sources: list[str], into: str, references=None, progress=None, on_open=None,
          atomic: bool = True) -> list[MergeReport]:
    """Merge every source into `into` (created if missing, given the published figures `references`,
    harness/published.py); one report per source. Every source is opened (and refused, if it must
    be) before the target is opened or created; a SQLite target is merged into a copy that replaces it
    at the end (module docstring), so a merge that fails changes no byte and leaves no new file.
    `on_open(migration)` is called once the target is open, with what opening it did to an older schema
    (None: nothing; its backup named as the target's will be); `progress(source, runs done, runs)` as each run is
    merged. `atomic` False merges into a SQLite target in place (a caller that builds a new file in a scratch
    folder of its own and renames it at the end)."""
    reports = []
    with tempfile.TemporaryDirectory() as scratch, ExitStack() as opened:
        into_url = resolve_url(into, write=True)
        into_path = sqlite_path(into_url)
        stores = []
        for i, source in enumerate(sources):
            source_path = sqlite_path(resolve_url(source))
            if into_path is not None and source_path is not None and source_path == into_path:
                raise StoreError(f"{source_path} is the database merged into: nothing to merge")
            store, upgraded = _open_source(source, Path(scratch) / f"source{i}.db")
            opened.callback(store.close)
            stores.append((source, store, upgraded))
        work = WorkCopy(into_path) if into_path is not None and atomic else None
        target = None
        try:
            target = Store.open(work.url if work else into, create=True, references=references)
            opened.callback(target.close)
            if on_open is not None:
                on_open(work.planned(target.migration) if work is not None else target.migration)
            for source, store, upgraded in stores:
                name = describe(resolve_url(source))
                report = merge_one(store, target, name,
                                   progress and (lambda done, total, _run, name=name: progress(name, done, total)),
                                   describe(into_url))
                report.upgraded_from = upgraded
                reports.append(report)
            if work is not None:
                target.close()
                work.replace(target.migration)
        except BaseException:
            if work is not None:
                if target is not None:
                    target.close()
                work.discard(target.migration if target is not None else None)
            raise
    return reports
