"""Several `bench run` processes (one per GPU) and readers share one SQLite file."""

import subprocess
import sys
import time
from pathlib import Path

from harness.db.store import Store

# 250 measurements a writer (it was 1000): the writers wait at a gate until all four have started (their imports
# take a second or more each, and 1000 writes were there to outlast that stagger), then create the file and write
# at once, so that every one of their 250 transactions contends with the other three for the write lock and the
# reader polls (every 0.05 s) through all of it.
WRITERS, PER_WRITER = 4, 250
SCRIPT = Path(__file__).resolve().parent / "store_writer.py"


def test_four_writers_and_a_reader_lose_nothing(tmp_path):
    db = tmp_path / "shared.db"  # not created yet: the writers race to create it too
    gate = tmp_path / "gate"
    gate.mkdir()
    writers = [subprocess.Popen([sys.executable, str(SCRIPT), str(db), f"w{i}", str(PER_WRITER), str(gate)],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
               for i in range(WRITERS)]
    while len(list(gate.glob("*.ready"))) < WRITERS:
        assert all(w.poll() is None for w in writers), [w.communicate()[0] for w in writers if w.poll() is not None]
        time.sleep(0.01)
    (gate / "go").touch()
    counts, reader = [], None
    while any(w.poll() is None for w in writers):
        if db.exists():  # it appears whole (made under another name, then linked): readable at once
            reader = reader or Store.open(str(db), read_only=True)
            counts.append(int(reader.query("SELECT COUNT(*) AS n FROM measurements").n[0]))
        time.sleep(0.05)
    outputs = [w.communicate()[0] for w in writers]
    assert [w.returncode for w in writers] == [0] * WRITERS, outputs
    assert not any("locked" in out for out in outputs), outputs
    store = Store.open(str(db))
    per_run = store.query("SELECT run_id, COUNT(*) AS n, COUNT(DISTINCT launch) AS distinct_rows FROM measurements "
                          "GROUP BY run_id ORDER BY run_id")
    assert per_run.n.tolist() == [PER_WRITER] * WRITERS and per_run.distinct_rows.tolist() == [PER_WRITER] * WRITERS
    assert store.query("SELECT COUNT(*) AS n FROM samples").n[0] == 4 * WRITERS * PER_WRITER
    assert store.query("SELECT COUNT(*) AS n FROM cases").n[0] == 3  # shared rows created once, not raced
    assert (store.query("SELECT status FROM runs").status == "complete").all()
    assert len(counts) > 5 and counts == sorted(counts), "the reader saw the data grow, never shrink"


def test_several_merges_into_a_new_file_at_once_all_succeed(tmp_path):
    """The file is made whole under another name and linked into place: no process ever finds it
    empty or half made."""
    import sys as _sys

    _sys.path.insert(0, str(Path(__file__).resolve().parent))
    from helpers import bench_process, make_db

    sources = [make_db(tmp_path / f"s{i}.db", fresh=True) for i in range(4)]  # four runs
    into = tmp_path / "new.db"
    merges = [bench_process("merge", str(source), "--into", str(into)) for source in sources]
    outputs = [m.communicate(timeout=120)[0] for m in merges]
    assert [m.returncode for m in merges] == [0] * 4, outputs
    with Store.open(str(into), read_only=True) as store:
        assert store.query("SELECT COUNT(*) AS n FROM runs").n[0] == 4
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new.db", "s0.db", "s1.db", "s2.db", "s3.db"]


def test_several_upgrades_at_once_upgrade_once(tmp_path):
    """The schema is read again under the write lock: one process upgrades and keeps one backup, the
    others find nothing to do."""
    import sys as _sys

    _sys.path.insert(0, str(Path(__file__).resolve().parent))
    from helpers import bench_process, copy_fixture

    old = copy_fixture("schema_v1.db", tmp_path)
    upgrades = [bench_process("db", "upgrade", "--db", str(old)) for _ in range(4)]
    outputs = [u.communicate(timeout=120)[0] for u in upgrades]
    assert [u.returncode for u in upgrades] == [0] * 4, outputs
    assert sum("note: upgraded" in out for out in outputs) == 1, outputs
    assert sum("nothing to do" in out for out in outputs) == 3, outputs
    assert [p.name for p in tmp_path.glob("*.bak")] == ["schema_v1.db.schema1.bak"]
