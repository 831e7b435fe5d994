"""`bench merge`: runs, devices, cases, builds, measurements and samples come across once; merging twice
changes nothing; older files are read through an upgraded copy; a file that is not ours is refused."""

import hashlib
import sqlite3

from click.testing import CliRunner

from helpers import copy_fixture, make_db
from harness.cli import cli
from harness.db.tables import register_functions

TABLES = ("devices", "runs", "cases", "builds", "measurements", "samples")


def counts(path):
    with sqlite3.connect(path) as con:
        register_functions(con)  # the samples view expands packed arrays (schema 10)
        return {t: con.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in TABLES}


def results(path):
    with sqlite3.connect(path) as con:
        return sorted(con.execute("SELECT run_started_at, case_id, metric, launch, value, n_samples, valid "
                                  "FROM results").fetchall(), key=repr)


def bench(*args):
    return CliRunner().invoke(cli, list(args))


def test_merging_two_files_brings_every_row_once_and_twice_changes_nothing(tmp_path):
    a, b = make_db(tmp_path / "a.db"), make_db(tmp_path / "b.db", fresh=True)  # the same GPU, two runs
    into = tmp_path / "all.db"
    first = bench("merge", str(a), str(b), "--into", str(into))
    assert first.exit_code == 0, first.output
    assert "a.db: 1 run added (as 1); 6 measurements, 16 samples" in first.output and "b.db: 1 run added (as 2)" in first.output
    merged = counts(into)
    assert merged["runs"] == 2 and merged["devices"] == 1 and merged["cases"] == 3
    assert merged["measurements"] == counts(a)["measurements"] + counts(b)["measurements"]
    assert merged["samples"] == counts(a)["samples"] + counts(b)["samples"]
    assert results(into) == sorted(results(a) + results(b), key=repr)
    again = bench("merge", str(b), str(a), "--into", str(into))
    assert again.exit_code == 0 and again.output.count("no run added, 1 already there") == 2, again.output
    assert counts(into) == merged


def test_an_older_source_is_read_through_an_upgraded_copy(tmp_path):
    old = copy_fixture("schema_v1.db", tmp_path)
    before = hashlib.sha256(old.read_bytes()).hexdigest()
    result = bench("merge", str(old), "--into", str(tmp_path / "new.db"))
    assert result.exit_code == 0 and "read from an upgraded copy of schema 1" in result.output, result.output
    assert hashlib.sha256(old.read_bytes()).hexdigest() == before and not list(tmp_path.glob("*.bak"))
    assert counts(tmp_path / "new.db")["runs"] == 1


def test_a_file_that_is_not_ours_is_refused_in_one_line_and_changes_nothing(tmp_path):
    into = make_db(tmp_path / "into.db")
    before = counts(into)
    (tmp_path / "notes.txt").write_text("hello")
    for source, message in ((tmp_path / "notes.txt", "not a hopper-bench database"),
                            (tmp_path / "none.db", "no results database at"), (into, "is the database merged into")):
        result = bench("merge", str(source), "--into", str(into))
        lines = result.output.strip().splitlines()
        assert result.exit_code == 4 and len(lines) == 1 and message in lines[0], result.output
    assert counts(into) == before


def test_a_merge_that_fails_changes_no_byte_of_the_target_and_makes_no_new_one(tmp_path):
    """Issue 46, item 14: a merge refused after the target was opened (simulated runs into a file of real ones)
    used to leave the published figures rewritten (their own commit, on open) and a new target made; now the merge
    runs in a copy that replaces the target only when every source is in."""
    def digest(path):
        return hashlib.sha256(path.read_bytes()).hexdigest()

    into = make_db(tmp_path / "into.db")
    with sqlite3.connect(into) as con:  # figures out of date: opening the target to write brings them up to date
        con.execute("DELETE FROM reference_figures WHERE rowid = (SELECT MIN(rowid) FROM reference_figures)")
        con.execute("UPDATE meta SET value = 'an older set' WHERE key = 'references_hash'")
    con.close()
    simulated = make_db(tmp_path / "simulated.db", fresh=True)
    with sqlite3.connect(simulated) as con:
        con.execute("UPDATE devices SET uuid = 'FAKE-GPU-0'")
    con.close()
    before = digest(into)
    refused = bench("merge", str(simulated), "--into", str(into))
    assert refused.exit_code == 4 and "holds runs of real GPUs" in refused.output, refused.output
    assert digest(into) == before
    real = make_db(tmp_path / "real.db", fresh=True)
    new = tmp_path / "new.db"
    refused = bench("merge", str(real), str(simulated), "--into", str(new))  # the first source goes in, the second not
    assert refused.exit_code == 4 and "holds runs of real GPUs" in refused.output, refused.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["into.db", "real.db", "simulated.db"]
    done = bench("merge", str(real), "--into", str(into))  # and a merge that succeeds still brings the figures
    assert done.exit_code == 0, done.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["into.db", "real.db", "simulated.db"]
    assert counts(into)["runs"] == 2 and digest(into) != before
