"""How runs of record enter the repository (docs/database.md, "Where runs go"): one small file per run in
runs/, written once; results.db is built from them and not tracked. The files stay within the budget
of issue 32, and an export and a build give every run back."""

import importlib.util
import sqlite3
import subprocess
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest

from helpers import make_db
from harness.db.tables import register_functions

ROOT = Path(__file__).resolve().parent.parent
BUDGET_MIB_PER_RUN = 0.5  # the average size of a run's file in runs/ (issue 32: well under 0.5 MiB a run)

spec = importlib.util.spec_from_file_location("runs_of_record", ROOT / "scripts" / "runs_of_record.py")
runs_of_record = importlib.util.module_from_spec(spec)
spec.loader.exec_module(runs_of_record)


def git(*args) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout


@pytest.fixture(scope="module")
def in_git():
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")


def test_results_db_is_built_not_tracked(in_git):
    assert git("ls-files", "results.db").strip() == ""
    assert git("check-ignore", "results.db").strip() == "results.db"


def test_the_runs_of_record_stay_within_budget():
    files = runs_of_record.run_files()
    assert files, "runs/ holds no run of record"
    assert list(files) == list(range(1, len(files) + 1)), "run files are numbered 1..N without a gap"
    total = sum(p.stat().st_size for p in files.values())
    assert total <= BUDGET_MIB_PER_RUN * 2 ** 20 * len(files), \
        f"runs/ holds {total / 2 ** 20:.1f} MiB for {len(files)} runs, over {BUDGET_MIB_PER_RUN} MiB a run"


def test_a_run_file_is_written_once(in_git):
    """A committed run file is never rewritten or removed: over the whole history each path under runs/ has had
    one content, and HEAD holds it. (Two commits of 2026-11-27, cd765e1 and 3007249, dropped runs/ while it was
    set aside for a device call; the next commit restored every file byte for byte. What the runs of record rest
    on is the content, which this checks: a rewrite or a file missing at HEAD fails it.)"""
    contents: dict[str, set[str]] = {}
    for line in git("log", "--format=", "--raw", "--no-abbrev", "--", "runs/").splitlines():
        if not line.startswith(":"):
            continue
        meta, path = line.split("\t", 1)
        new = meta.split()[3]
        if set(new) != {"0"}:  # a deletion names no content
            contents.setdefault(path, set()).add(new)
    head = {}
    for line in git("ls-tree", "-r", "HEAD", "--", "runs/").splitlines():  # <mode> blob <sha>\t<path>
        meta, path = line.split("\t", 1)
        head[path] = meta.split()[2]
    assert contents and {path: shas for path, shas in contents.items() if len(shas) != 1} == {}
    assert [path for path, shas in contents.items() if head.get(path) not in shas] == []


def test_every_run_of_results_db_has_its_file():
    if not runs_of_record.DB.exists():
        pytest.skip("no results.db: `python scripts/runs_of_record.py build`")
    assert runs_of_record.check() == []


def _contents(path):
    with closing(sqlite3.connect(path)) as con:
        register_functions(con)
        results = sorted(con.execute("SELECT run_id, run_started_at, gpu_name, case_id, metric, launch, value, "
                                     "n_samples, spread, valid, error, notes, status, executes FROM results"),
                         key=repr)
        samples = {}
        for key, value in con.execute("SELECT r.run_id || r.case_id || r.metric || r.launch, s.value FROM samples s "
                                      "JOIN results r ON r.measurement_id = s.measurement_id "
                                      "ORDER BY s.measurement_id, s.idx"):
            samples.setdefault(key, []).append(value)
        runs = con.execute("SELECT * FROM runs ORDER BY id").fetchall()
    return results, {k: np.asarray(v).tobytes() for k, v in samples.items()}, runs


def test_export_then_build_gives_every_run_back(tmp_path):
    source = make_db(tmp_path / "source.db")
    second = make_db(tmp_path / "second.db", fresh=True)
    from harness.db.merge import merge

    merge([str(second)], str(source))
    folder = tmp_path / "runs"
    written = runs_of_record.export(source, folder)
    assert [p.name for p in written] == ["run-0001.db.xz", "run-0002.db.xz"]
    assert runs_of_record.export(source, folder) == []  # written once
    built = tmp_path / "built.db"
    assert runs_of_record.build(built, folder) == 2
    assert _contents(built) == _contents(source)
    assert runs_of_record.check(built, folder) == []
    with closing(sqlite3.connect(source)) as con:  # the run changed after its file was written (resumed)
        con.execute("UPDATE runs SET resumes = resumes + 1 WHERE id = 2")
        con.commit()
    assert [line.split(" (")[0] for line in runs_of_record.check(source, folder)] == \
        ["run 2 of source.db differs from run-0002.db.xz"]


@pytest.mark.parametrize("batch", [1, 2])
def test_a_build_in_batches_keeps_every_runs_number_and_refuses_a_gap(tmp_path, monkeypatch, batch):
    """The build merges its files a batch at a time (BATCH); each file must still become its own run, whether the
    batch ends between two runs or holds both, and a file missing from runs/ stops the build with one line."""
    source = make_db(tmp_path / "source.db")
    from harness.db.merge import merge

    for name in ("second.db", "third.db"):
        merge([str(make_db(tmp_path / name, fresh=True))], str(source))
    folder = tmp_path / "runs"
    runs_of_record.export(source, folder)
    monkeypatch.setattr(runs_of_record, "BATCH", batch)
    assert runs_of_record.build(tmp_path / "built.db", folder) == 3
    assert _contents(tmp_path / "built.db") == _contents(source)
    (folder / "run-0002.db.xz").unlink()
    with pytest.raises(SystemExit, match="run-0003.db.xz became run \\[2\\] of gapped.db, not 3"):
        runs_of_record.build(tmp_path / "gapped.db", folder)
    assert not (tmp_path / "gapped.db").exists()
