"""Several `bench run` processes (one per GPU) and readers share one SQLite file."""

import subprocess
import sys
import time
from pathlib import Path

from harness.db.store import Store

WRITERS, PER_WRITER = 4, 1000
SCRIPT = Path(__file__).resolve().parent / "store_writer.py"


def test_four_writers_and_a_reader_lose_nothing(tmp_path):
    db = tmp_path / "shared.db"  # not created yet: the writers race to create it too
    writers = [subprocess.Popen([sys.executable, str(SCRIPT), str(db), f"w{i}", str(PER_WRITER)],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
               for i in range(WRITERS)]
    counts, reader = [], None
    while any(w.poll() is None for w in writers):
        if db.exists():
            try:
                reader = reader or Store.open(str(db))
                counts.append(int(reader.query("SELECT COUNT(*) AS n FROM measurements").n[0]))
            except Exception as exc:  # the file may exist before its first migration commits
                assert "locked" not in str(exc), exc
                if "no results database" not in str(exc) and "empty" not in str(exc) and "not a hopper" not in str(exc):
                    raise
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
