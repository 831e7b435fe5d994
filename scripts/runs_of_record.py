#!/usr/bin/env python3
"""The runs of record: one small compressed file per run in runs/, from which results.db is built.

git tracks runs/run-NNNN.db.xz (a SQLite database holding run NNNN alone: its device, cases, builds,
strings, measurements and sample arrays, xz-compressed), written once and never rewritten; results.db
is built from them and ignored by git. So a run of record adds its own file to the history (about 0.3
MiB), never a new copy of every run (see docs/database.md, "Where runs go").

    python scripts/runs_of_record.py build              # results.db from runs/ (run ids as numbered)
    python scripts/runs_of_record.py export             # a file for each run of results.db lacking one
    python scripts/runs_of_record.py export --db new.db # ...of another database (after merging it in)
    python scripts/runs_of_record.py check              # results.db and runs/ hold the same runs

A device run comes home as before (`bench merge new.db --into results.db`), then `export` writes the
new run's file, which is what you commit.
"""

from __future__ import annotations

import argparse
import lzma
import os
import shutil
import sqlite3
import sys
import tempfile
from contextlib import closing
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

RUNS = ROOT / "runs"
DB = ROOT / "results.db"
XZ = lzma.PRESET_EXTREME | 9
BATCH = 25  # run files a merge call takes when building (their unpacked copies sit in the scratch folder)


def run_file(run_id: int, folder: Path = RUNS) -> Path:
    return folder / f"run-{run_id:04d}.db.xz"


def run_files(folder: Path = RUNS) -> dict[int, Path]:
    """{run id: its file} of runs/ (the id is in the name)."""
    return {int(p.name[4:8]): p for p in sorted(folder.glob("run-[0-9][0-9][0-9][0-9].db.xz"))}


def _one_run(source: Path, run_id: int, target: Path) -> None:
    """`target`: a copy of `source` (a results database at the newest schema) holding run `run_id` alone."""
    with closing(sqlite3.connect(source)) as src, closing(sqlite3.connect(target)) as dst:
        src.backup(dst)
    con = sqlite3.connect(target)
    try:
        con.executescript(f"""
            PRAGMA foreign_keys=OFF;
            BEGIN;
            DELETE FROM sample_arrays WHERE measurement_id IN (SELECT id FROM measurement_rows WHERE run_id != {run_id});
            DELETE FROM measurement_rows WHERE run_id != {run_id};
            DELETE FROM runs WHERE id != {run_id};
            DELETE FROM devices WHERE id NOT IN (SELECT device_id FROM runs WHERE device_id IS NOT NULL);
            DELETE FROM cases WHERE id NOT IN (SELECT case_pk FROM measurement_rows);
            DELETE FROM builds WHERE id NOT IN (SELECT build_id FROM measurement_rows WHERE build_id IS NOT NULL);
            DELETE FROM reference_figures;
            COMMIT;
        """)
        used = " UNION ".join(f"SELECT {c}_id FROM measurement_rows WHERE {c}_id IS NOT NULL" for c in
                              ("metric", "unit", "launch", "status", "input_distribution", "notes", "stop_reason",
                               "throttle_reasons"))
        con.execute(f"DELETE FROM texts WHERE id NOT IN ({used})")
        con.commit()
        con.execute("PRAGMA journal_mode=DELETE")
        con.execute("VACUUM")
    finally:
        con.close()


def export(db: Path, folder: Path = RUNS, force: bool = False) -> list[Path]:
    """Write the file of each run of `db` that has none in `folder` (every run where `force`); the
    files written. The database is upgraded to the newest schema first (on a copy)."""
    from harness.db.store import Store

    folder.mkdir(exist_ok=True)
    written = []
    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch) / "copy.db"
        with closing(sqlite3.connect(db)) as src, closing(sqlite3.connect(copy)) as dst:
            src.backup(dst)
        Store.open(str(copy)).close()  # upgraded to the newest schema (a copy: the source is only read)
        with closing(sqlite3.connect(copy)) as con:
            ids = [row[0] for row in con.execute("SELECT id FROM runs WHERE status != 'running' ORDER BY id")]
        for run_id in ids:
            path = run_file(run_id, folder)
            if path.exists() and not force:
                continue
            single = Path(scratch) / f"run-{run_id}.db"
            _one_run(copy, run_id, single)
            with open(single, "rb") as raw, lzma.open(path.with_suffix(".xz.part"), "wb", preset=XZ) as packed:
                shutil.copyfileobj(raw, packed)
            os.replace(path.with_suffix(".xz.part"), path)
            single.unlink()
            written.append(path)
    return written


def build(into: Path = DB, folder: Path = RUNS, force: bool = False) -> int:
    """Build `into` from every file of `folder`, in run order (each keeps its id); the number of runs."""
    from harness.db.merge import merge
    from harness.published import shipped

    files = run_files(folder)
    if into.exists() and not force:
        raise SystemExit(f"{into} exists: remove it, or pass --force to rebuild it")
    references = shipped()
    order = list(files.items())
    with tempfile.TemporaryDirectory(dir=into.parent) as scratch:
        target = Path(scratch) / into.name
        # A merge call takes a batch of files (opening the target and its figures once a batch, not once a run:
        # a third of the build's time when each run was its own merge); each file must become its own run id.
        for start in range(0, len(order), BATCH):
            batch = order[start:start + BATCH]
            singles = []
            for run_id, path in batch:
                singles.append(Path(scratch) / f"run-{run_id}.db")
                with lzma.open(path) as packed, open(singles[-1], "wb") as raw:
                    shutil.copyfileobj(packed, raw)
            reports = merge([str(single) for single in singles], str(target), references,
                            atomic=False)  # the scratch file is renamed at the end
            for single in singles:
                single.unlink()
            for (run_id, path), report in zip(batch, reports):
                if report.added != [run_id]:
                    raise SystemExit(f"{path.name} became run {report.added or 'none'} of {into.name}, not "
                                     f"{run_id}: a run of record is missing from runs/")
        with closing(sqlite3.connect(target, isolation_level=None)) as con:
            con.execute("PRAGMA journal_mode=DELETE")
            con.execute("VACUUM")
        for suffix in ("", "-wal", "-shm"):
            Path(str(into) + suffix).unlink(missing_ok=True)
        os.replace(target, into)
    return len(files)


RUN_STATE = "SELECT id, status, finished_at, resumes, (SELECT COUNT(*) FROM measurement_rows m WHERE m.run_id = runs.id) FROM runs"


def check(db: Path = DB, folder: Path = RUNS) -> list[str]:
    """What differs between the runs of `db` and the files of `folder` (nothing: an empty list): a run
    without its file, a file without its run, or a run that changed after its file was written (resumed,
    or gained measurements by a merge). A run still `running` needs no file yet."""
    from harness.db.files import reading_sqlite

    with reading_sqlite(db.resolve()) as con:  # read-only, and leaves no -wal/-shm beside it
        state = {row[0]: row[1:] for row in con.execute(RUN_STATE)}
    files = run_files(folder)
    problems = [f"run {i} of {db.name} has no file in {folder.name}/: run `export`"
                for i in sorted(set(state) - set(files)) if state[i][0] != "running"]
    problems += [f"{run_file(i, folder).name} is not in {db.name}: run `build --force`"
                 for i in sorted(set(files) - set(state))]
    with tempfile.TemporaryDirectory() as scratch:
        for run_id in sorted(set(files) & set(state)):
            single = Path(scratch) / "run.db"
            with lzma.open(files[run_id]) as packed, open(single, "wb") as raw:
                shutil.copyfileobj(packed, raw)
            with closing(sqlite3.connect(single)) as con:
                stored = {row[0]: row[1:] for row in con.execute(RUN_STATE)}
            single.unlink()
            if stored.get(run_id) != state[run_id]:
                problems.append(f"run {run_id} of {db.name} differs from {files[run_id].name} (status, finish, "
                                f"resumes, measurements: {state[run_id]} against {stored.get(run_id)}): a run of "
                                "record enters once it is finished")
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="results.db from runs/")
    b.add_argument("--into", type=Path, default=DB)
    b.add_argument("--force", action="store_true", help="replace an existing database")
    e = sub.add_parser("export", help="a file in runs/ for each run of the database lacking one")
    e.add_argument("--db", type=Path, default=DB)
    e.add_argument("--force", action="store_true", help="rewrite existing files too")
    c = sub.add_parser("check", help="results.db and runs/ hold the same runs")
    c.add_argument("--db", type=Path, default=DB)
    args = parser.parse_args(argv)
    if args.command == "build":
        print(f"built {args.into} from {build(args.into, force=args.force)} runs of record")
    elif args.command == "export":
        for path in export(args.db, force=args.force):
            print(f"wrote {path.relative_to(ROOT)} ({path.stat().st_size / 2 ** 20:.2f} MiB)")
    else:
        problems = check(args.db)
        print("\n".join(problems) or f"{args.db.name} and runs/ hold the same runs")
        return 1 if problems else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
