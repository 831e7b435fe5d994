"""Every command through click's CliRunner, including the error paths (no GPU needed)."""

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from helpers import digest, make_db, one_error_line
from harness.db.tables import SCHEMA_VERSION
from harness.cli import cli
from harness.registry import parse_case_id

README = Path(__file__).resolve().parent.parent / "README.md"


def bench(*args):
    return CliRunner().invoke(cli, list(args))


def test_list_suites_and_cases():
    assert re.search(r"^wgmma\s+192\s+dense wgmma", bench("list").output, re.M)
    cases = bench("list", "--suite", "wgmma", "--filter", "*m64n128k16*").output.split()
    assert len(cases) == 6 and all("m64n128k16" in c for c in cases)
    # without --suite, a filter looks through every family: ldmatrix/stmatrix x1/x2/x4, each with .trans
    loaders = bench("list", "--filter", "*matrix.sync*").output.split()
    assert len(loaders) == 12 and {c.split(".")[0] for c in loaders} == {"ldmatrix", "stmatrix"}


def test_show_prints_source_descriptors_and_log(shared_cache):
    result = bench("show", "wgmma.mma_async.m64n64k16.f32.bf16.bf16.SS", "--sass")
    assert result.exit_code == 0, result.output
    assert "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16" in result.output
    assert "// A: 0x0000001000080000: start=0 B, LBO=128 B, SBO=256 B" in result.output
    assert "ptxas info" in result.output and "HGMMA.64x64x16.F32.BF16" in result.output


def test_show_of_a_gemm_library_anchor_says_it_has_no_source(cache_dir):
    """An anchor (a library call) has no template: `bench show` says so and describes the call, compiling nothing."""
    result = bench("show", "cublaslt.e4m3.4096x4096x4096.fastaccum", "--sass")
    assert result.exit_code == 0, result.output
    assert "a library call, no probe source" in result.output and "fast accumulation on" in result.output
    assert "ptxas" not in result.output and not any(cache_dir.rglob("*.cubin"))


def test_sql_formats(tmp_path):
    db = str(make_db(tmp_path / "r.db"))
    query = "SELECT case_id, value FROM results WHERE metric='issue_interval_cycles' ORDER BY n"
    assert re.search(r"^wgmma.mma_async.m64n8k16.f32.f16.f16.SS +18$", bench("sql", query, "--db", db).output, re.M)
    assert bench("sql", query, "--db", db, "--format", "csv").output.splitlines()[1] == \
        "wgmma.mma_async.m64n8k16.f32.f16.f16.SS,18.0"
    assert '"value":128.0' in bench("sql", query, "--db", db, "--format", "json").output.replace(" ", "")
    assert "| wgmma.mma_async.m64n256k16.f32.f16.f16.SS | 128 |" in bench("sql", query, "--db", db, "--format", "markdown").output


def test_sql_keeps_a_long_id_whole_and_cuts_prose(tmp_path):
    """Issue 46, item 5: an id past 64 characters is folded, not cut, at any width; a long sentence is still cut."""
    db = str(make_db(tmp_path / "r.db"))
    long_id = "attention.bf16.4x4096x16x128.causal.tile128x128.s3.wg2.setmaxnreg.turns.overlap"
    prose = "a sentence of words " * 6
    query = f"SELECT '{long_id}' AS case_id, '{prose.strip()}' AS note, 1.5 AS value"
    wide = CliRunner().invoke(cli, ["sql", query, "--db", db], env={"COLUMNS": "250"}).output
    assert long_id in wide and prose.strip() not in wide, wide
    narrow = CliRunner().invoke(cli, ["sql", query, "--db", db], env={"COLUMNS": "80"}).output
    cells = "".join(line.split()[0] for line in narrow.splitlines()[2:] if line.strip())
    assert long_id in cells, narrow  # folded over lines, every character kept


def test_runs(tmp_path):
    result = bench("runs", "--db", str(make_db(tmp_path / "r.db")), "--wide")
    assert result.exit_code == 0 and re.search(r"^ *1 .* complete +NVIDIA H100 80GB HBM3 U-test-0 +wgmma +3 +1 +0 +0 "
                                               r"+abc123", result.output, re.M), result.output


# (arguments, exit status, what the one error line must say). DB is the database under test, TEXT
# a file that is not a database, DIR a directory; every other command reads the database through
# $HOPPER_BENCH_DB, which points at the same file.
BAD_INPUTS = [
    (["run", "--suite", "nope"], 2, "unknown suite 'nope': expected one of wgmma, wgmma-energy, wgmma-quick, faults, wgmma-all, wgmma-dense"),
    (["run", "--suite", "wgmma", "--filter", "*m64n7k16*"], 2, "matches none of the 192 cases .*e.g."),
    (["run"], 2, "missing option --suite \\(or --resume RUN_ID\\)"),
    (["run", "--suite", "wgmma", "--force"], 2, "--force goes with --resume RUN_ID"),
    (["run", "--suite", "wgmma", "--gpu", "x"], 2, "'x' is not a valid integer"),
    (["run", "--suite", "wgmma", "--gpu", "-1"], 2, "--gpu.*-1 is not in the range 0<=x<=1023"),
    (["run", "--suite", "wgmma", "--db", "bogus://::"], 4, "not a database URL.*expected a file path"),
    (["run", "--suite", "wgmma", "--jobs", "0"], 2, "--jobs.*0 is not in the range 1<=x<=1024"),
    (["run", "--suite", "wgmma", "--watchdog", "0"], 2, "--watchdog.*0 is not in the range 1..86400"),
    (["run", "--suite", "wgmma", "--watchdog", "nan"], 2, "--watchdog.*nan is not in the range 1..86400"),
    (["run", "--suite", "wgmma", "--watchdog", "inf"], 2, "--watchdog.*inf is not in the range"),
    (["run", "--resume", "99999999999999999999"], 2, "--resume.*is not in the range 1<=x<=9223372036854775807"),
    (["run", "--suite", "wgmma", "--seed", "-3"], 2, "--seed.*is not in the range 0<=x<=4294967295"),
    (["run", "--suite", "wgmma", "--db", "~nosuchuser/r.db"], 4, "~nosuchuser does not exist"),
    (["run", "--resume", "99"], 4, "no run 99 .*runs 1..1; see `bench runs`"),
    (["run", "--resume", "1", "--suite", "wgmma"], 2, "--resume takes the suite and filter from the run"),
    (["run", "--resume", "1"], 2, "run 1 is complete: only interrupted or failed runs can be resumed"),
    (["run", "--resume", "one"], 2, "'one' is not a valid integer"),
    (["list", "--suite", "nope"], 2, "unknown suite 'nope': expected one of"),
    (["show", "wgmma.mma_async.m64n12k16.f32.f16.f16.SS"], 2, "N must be a multiple of 8 from 8 to 256"),
    (["show", "attention.bf16.4x4096x16x128.causal.tile128x128.s3.wg2.setmaxnreg.cluster2.overlap"], 2,
     "the tiles of a causal cluster walk different numbers of key blocks"),
    (["show", "not-a-case"], 2, "cannot parse case id .*no family spells it .*mma.sync.m16n8k16"),
    (["show", "cublas.f16.4096x4096x4096.inputs-ones"], 2, "inputs 'ones': expected one of random, int, zero"),
    (["show", "cublaslt.e4m3.4096x4096x4096.inputs-zero"], 2, "zero inputs for the measured problem are f16 and bf16's"),
    (["show", "mma.sync.m16n8k12.row.col.f32.f16.f16.f32"], 2, "f16 mma.sync has shapes m8n8k4, m16n8k8, m16n8k16, not m16n8k12"),
    (["show", "mma.sync.m16n8k16.row.col.f32.f16.f16.f16"], 2, "not a legal f16 m16n8k16 mma.sync form; legal: row.col.f16"),
    (["show", "mma.sync.m16n8k16.row.col.f32.f8.f8.f32"], 2, "mma.sync has no input type 'f8'; types: b1, bf16"),
    (["show", "wgmma.mma_async.m64n64k16.f32.f16.f16.SS+boom"], 2, "unknown planted fault 'boom'.*trap, oob, hang"),
    (["show", "wgmma.mma_async.m64n64k16.f32.e4m3.e4m3.SS"], 2, "e4m3 wgmma has K = 32, got K = 16"),
    (["show", "wgmma.mma_async.m64n40k32.s32.s8.s8.SS"], 2, "s8 wgmma takes N in 8, 16, 24, 32, 48, .*got N = 40"),
    (["show", "wgmma.mma_async.m64n64k256.s32.b1.b1.SS"], 2, "b1 wgmma is written .s32.b1.b1.and.popc"),
    (["show", "wgmma.mma_async.m64n64k16.satfinite.f32.f16.f16.SS"], 2, ".satfinite is for s8/u8 wgmma only"),
    (["show", "wgmma.mma_async.sp.m64n64k512.s32.b1.b1.and.popc.SS"], 2, "there is no sparse b1 wgmma"),
    (["show", "wgmma.mma_async.m64n64k16.f32.f16.f16.XS"], 2, "unknown operand mode 'XS'.*SS, RS"),
    (["show", "cp.async.bulk.tensor.2d.shared::cluster.global.tile.b16.box64x300"], 2,
     "every box extent is 1 to 256 elements"),
    (["show", "cp.async.bulk.tensor.2d.shared::cluster.global.tile.b8.box24x8"], 2,
     "inner extent must be a multiple of 16 bytes, not 24"),
    (["show", "cp.async.bulk.tensor.2d.shared::cluster.global.tile.b16.box128x8.sw128"], 2,
     "with a 128-byte swizzle the box's inner extent is at most 128 bytes, not 256"),
    (["show", "cp.async.bulk.tensor.2d.shared::cluster.global.tile.b16.box64x64.sw128.multicast32"], 2,
     "multicast goes to a cluster of 2, 4, 8, 16 CTAs, not 32"),
    (["show", "cp.async.bulk.shared::cluster.global.1000B"], 2, "a bulk copy moves a multiple of 16 bytes"),
    (["sql", "SELECT 1", "--format", "yaml"], 2, "'yaml' is not one of 'table', 'csv', 'json', 'markdown'"),
    (["sql", "SELEC nonsense"], 4, "SQL error: near \"SELEC\""),
    (["sql", "DELETE FROM runs"], 4, "read-only: pass --write"),
    (["sql", "SELECT 1; DELETE FROM runs"], 4, "one statement at a time"),
    (["sql", "  "], 2, "QUERY.*is empty"),
    (["sql", "SELECT * FROM nope"], 4, "no such table: nope"),
    (["runs", "--db", "MISSING"], 4, "no results database at .*run `bench run` first, or pass --db"),
    (["runs", "--db", "TEXT"], 4, "not a hopper-bench database"),
    (["runs", "--format", "xml"], 2, "'xml' is not one of"),
    (["db", "upgrade", "--db", "DIR"], 4, "is a directory, not a database file"),
    (["compare", "--against", "yesterday"], 2, "--against: 'yesterday': expected paper, model or a run id from 1"),
    (["compare", "--against", "99999999999999999999"], 2, "--against.*a run id from 1 to 9223372036854775807"),
    (["compare", "--run", "99999999999999999999"], 2, "--run.*is not in the range 1<=x<=9223372036854775807"),
    (["compare", "--tolerance", "nan"], 2, "--tolerance.*nan is not in the range 0..10"),
    (["runs", "--db", "postgresql://bob:hunter2@127.0.0.1:9/x"], 4, "postgresql://bob:\\*\\*\\*@127.0.0.1:9/x"),
    (["compare", "--run", "42"], 4, "no run 42 .*runs 1..1"),
    (["compare", "--metric", "speed"], 2, "'speed' is not among this comparison's metrics: issue_interval_cycles"),
    (["compare", "--tolerance", "-1"], 2, "--tolerance.*-1 is not in the range 0..10"),
    (["model", "--gpu", "B200"], 2, "no datasheet figures for GPU 'B200': expected one of H100 SXM5, H100 PCIe"),
    (["model", "--run", "7"], 4, "no run 7"),
    (["model", "--in-sample"], 2, "--in-sample needs --run and no --fit-run"),
    (["model", "--clock", "nan"], 2, "nan is not in the range 100..5000"),
    (["model", "--clock", "NaN"], 2, "NaN is not in the range 100..5000"),  # issue 46, item 15: each spelling
    (["model", "--clock", " nan"], 2, "nan is not in the range 100..5000"),
    (["model", "--clock", "-inf"], 2, "-inf is not in the range 100..5000"),
    (["model", "--clock", " NaN"], 2, "NaN is not in the range 100..5000"),
    (["model", "--clock", "inf"], 2, "inf is not in the range 100..5000"),
    (["advise", "swapab", "--m", "0", "--n", "64", "--k", "16"], 2, "--m.*0 is not in the range 1<=x<=65536"),
    (["advise", "swapab", "--m", "16", "--n", "99999999999", "--k", "99999999999"], 2, "--n.*not in the range 1<=x<=1048576"),
    (["advise", "swapab", "--m", "16", "--n", "64", "--k", "16", "--run", "99999999999999999999"], 2,
     "--run.*not in the range"),
    (["advise", "swapab", "--m", "16", "--n", "64"], 2, "Missing option '--k'"),
    (["advise", "swapab", "--m", "16", "--n", "64", "--k", "16", "--gpu", "H20", "--run", "1"], 2, "--gpu or --run, not both"),
    (["advise", "splitk"], 2, "No such command 'splitk'"),
    (["plan", "--m", "0", "--n", "8192", "--k", "8192"], 2, "--m.*0 is not in the range 1<=x<=65536"),
    (["plan", "--m", "100", "--n", "8192", "--k", "8192"], 2, "no pipeline configuration tiles 100x8192x8192"),
    (["plan", "--m", "128", "--n", "128", "--k", "64", "--dtype", "f64"], 2, "--dtype.*'f64' is not one of"),
    (["plan", "--m", "8192", "--n", "8192", "--k", "8192", "--against", "cublas"], 2, "--against.*'cublas' is not one of"),
    (["plan", "--m", "100", "--n", "8192", "--k", "8192", "--against", "nvmh"], 2,
     "no pipeline configuration tiles 100x8192x8192"),
    (["plan", "--m", "8192", "--n", "8192", "--k", "8192", "--against", "nvmh", "--gpu", "A100"], 2,
     "nvMatmulHeuristics is compared here on H100, H200 only, not 'A100'"),
    (["report", "--run", "3"], 4, "no run 3 .*runs 1..1"),
    (["report", "--out", "/proc/no/such/place"], 2, "--out: cannot write the report under /proc/no/such/place"),
    (["sql", "PRAGMA query_only=OFF"], 4, "not authorized .*read-only: pass --write"),
    (["sql", "PRAGMA journal_mode=DELETE"], 4, "not authorized"),
    (["report", "--out", "TEXT"], 2, "--out.*is a file"),
    (["site", "--out", "/proc/no/such/place"], 2, "--out: cannot write the site under /proc/no/such/place"),
    (["site", "--out", "TEXT"], 2, "--out.*is a file"),
    (["references", "--format", "pdf"], 2, "'pdf' is not one of"),
    (["db", "downgrade"], 2, "No such command 'downgrade'"),
    (["fleet", "--metric", "speed"], 2, "no metric 'speed' in the database: metrics are"),
    (["fleet", "--tolerance", "-2"], 2, "--tolerance.*-2 is not in the range 0..10"),
    (["merge", "TEXT", "--into", "DB"], 4, "not a hopper-bench database"),
    (["merge", "DB", "--into", "DB"], 4, "is the database merged into: nothing to merge"),
    (["merge", "--into", "DB"], 2, "Missing argument 'SOURCES...'"),
    (["run", "--suite", "wgmma", "--gpus", "0,0"], 2, "--gpus '0,0' names a GPU twice"),
    (["run", "--suite", "wgmma", "--gpus", "0,x"], 2, "--gpus '0,x': expected 'all' or comma-separated GPU indices"),
    (["run", "--suite", "wgmma", "--gpus", "all", "--gpu", "1"], 2, "--gpus runs a suite on several GPUs: drop --gpu"),
    (["run", "--suite", "nope", "--gpus", "all"], 2, "unknown suite 'nope'"),
    (["export", "--run", "3"], 2, "no run 3 .*runs 1..1"),
    (["export", "--family", "attention"], 2, "run 1 has no attention cases \\(it has: wgmma\\)"),
    (["export", "--format", "xml"], 2, "'xml' is not one of"),
    (["gemm"], 2, "give --shape M,N,K\\[,dtype\\] or --shapes FILE"),
    (["gemm", "--shape", "0,2048,2048"], 2, "--shape '0,2048,2048': M = 0: expected 1..65536"),
    (["gemm", "--shape", "2048,-64,2048"], 2, "N = -64: expected 1..65536"),
    (["gemm", "--shape", "2048,2048,2048,f64"], 2, "dtype 'f64': expected one of f16, bf16, e4m3"),
    (["gemm", "--shape", "100,8192,8192"], 2, "100x8192x8192 f16: no pipeline configuration tiles it"),
    (["gemm", "--shape", "2048,2048"], 2, "expected M,N,K\\[,dtype\\]"),
    (["gemm", "--shapes", "TEXT"], 2, "--shapes .*notes.txt line 1: 'not a database': expected M,N,K"),
    (["gemm", "--shapes", "DIR"], 2, "--shapes.*is a directory"),
    (["gemm", "--shapes", "MISSING"], 2, "--shapes.*does not exist"),
    (["gemm", "--shape", "2048,2048,2048", "--top", "0"], 2, "--top.*0 is not in the range 1<=x<=100"),
    (["gemm", "--shape", "2048,2048,2048", "--case", "wgmma.mma_async.m64n64k16.f32.f16.f16.SS"], 2, "not a GEMM case"),
    (["gemm", "--shape", "2048,2048,2048", "--case", "gemm.f16.100x64x64.tile64x64x64.s2.wg1.cluster1.grid-row.regs"], 2,
     "M = 100 is not a whole number of 64-row tiles"),
    (["gemm", "--shape", "2048,2048,2048", "--fit-run", "99"], 4, "no run 99 .*runs 1..1"),
    (["gemm", "--shape", "2048,2048,2048", "--fit-run", "1"], 2, "--fit-run 1: the run has no gemm measurements"),
    (["bogus-command"], 2, "No such command 'bogus-command'"),
]


@pytest.mark.parametrize("args,code,pattern", BAD_INPUTS, ids=[" ".join(a) for a, _, _ in BAD_INPUTS])
def test_bad_input_gets_one_line_a_nonzero_status_and_leaves_the_database_alone(tmp_path, monkeypatch,
                                                                                   args, code, pattern):
    db = make_db(tmp_path / "r.db")
    (tmp_path / "notes.txt").write_text("not a database")
    (tmp_path / "dir").mkdir()
    monkeypatch.setenv("HOPPER_BENCH_DB", str(db))
    files = {"DB": db, "TEXT": tmp_path / "notes.txt", "DIR": tmp_path / "dir", "MISSING": tmp_path / "none.db"}
    args = [str(files.get(a, a)) for a in args]
    before = {p.name: digest(p) for p in tmp_path.iterdir() if p.is_file()}
    one_error_line(bench(*args), code, pattern)
    assert {p.name: digest(p) for p in tmp_path.iterdir() if p.is_file() and not p.name.endswith(("-wal", "-shm"))} == before
    assert not (tmp_path / "none.db").exists()


def test_there_are_at_least_twenty_distinct_bad_inputs_covering_every_command():
    assert len({tuple(a) for a, _, _ in BAD_INPUTS}) >= 20
    assert set(cli.commands) <= {a[0] for a, _, _ in BAD_INPUTS}


def test_run_without_a_gpu_fails_cleanly_and_leaves_the_database_alone(tmp_path):
    db = make_db(tmp_path / "r.db")
    before = digest(db)
    one_error_line(bench("run", "--suite", "wgmma-quick", "--db", str(db)), 3, "GPU")
    assert digest(db) == before
    one_error_line(bench("run", "--suite", "wgmma-quick", "--db", str(tmp_path / "new.db")), 3, "GPU")
    assert not (tmp_path / "new.db").exists()


def test_reading_commands_need_an_existing_database(tmp_path):
    for args in (["runs"], ["sql", "SELECT 1"]):
        one_error_line(bench(*args, "--db", str(tmp_path / "none.db")), 4, "no results database")
    assert not (tmp_path / "none.db").exists()
    db = make_db(tmp_path / "r.db")
    before = digest(db)
    one_error_line(bench("sql", "SELEC nonsense", "--db", str(db)), 4, "SQL error")
    assert digest(db) == before


def test_every_command_has_help_with_an_example_and_is_in_the_readme():
    readme = README.read_text()
    for name, command in cli.commands.items():
        result = bench(name, "--help")
        assert result.exit_code == 0 and "Example" in result.output, name
        assert f"bench {name}" in readme, f"`bench {name}` is not documented in README.md"


def test_read_only_commands_leave_the_file_byte_identical(tmp_path):
    """A DELETE-journal file whose stored reference figures are out of date: reading commands neither
    switch it to WAL, nor re-sync the figures, nor let SQL attach another file or lift query_only."""
    import sqlite3

    db = make_db(tmp_path / "r.db")
    with sqlite3.connect(db) as con:
        con.execute("PRAGMA journal_mode=DELETE")
        con.execute("UPDATE meta SET value = 'stale' WHERE key = 'references_hash'")
    before = digest(db)
    attached = tmp_path / "x.db"
    for args in (["runs"], ["sql", "SELECT COUNT(*) FROM results"], ["references"], ["compare"],
                 ["compare", "--against", "1"], ["model", "--run", "1"], ["report", "--out", str(tmp_path / "rep")],
                 ["sql", f"ATTACH DATABASE '{attached}' AS x"], ["sql", "PRAGMA query_only=OFF"]):
        bench(*args, "--db", str(db))
    assert digest(db) == before and not attached.exists()
    with sqlite3.connect(db) as con:
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
        assert con.execute("SELECT value FROM meta WHERE key = 'references_hash'").fetchone()[0] == "stale"


def test_sql_write_says_how_many_rows_changed(tmp_path):
    db = str(make_db(tmp_path / "r.db"))
    result = bench("sql", "--write", "UPDATE measurement_rows SET notes_id = NULL WHERE metric_id = "
                   "(SELECT id FROM texts WHERE text = 'issue_interval_cycles')",
                   "--db", db)
    assert result.exit_code == 0 and result.output.strip() == "3 rows changed"
    assert bench("sql", "--write", "DELETE FROM sample_arrays WHERE 0", "--db", db).output.strip() == "0 rows changed"


def test_an_older_file_is_upgraded_only_by_a_writing_command(tmp_path):
    import shutil

    fixture = Path(__file__).resolve().parent / "fixtures" / "schema_v3.db"
    db = tmp_path / "old.db"
    shutil.copy(fixture, db)
    before = digest(db)
    one_error_line(bench("runs", "--db", str(db)), 4, f"has schema 3, this harness {SCHEMA_VERSION}: run `bench db upgrade")
    assert digest(db) == before
    result = bench("db", "upgrade", "--db", str(db))
    assert result.exit_code == 0 and "upgraded" in result.output and bench("runs", "--db", str(db)).exit_code == 0


def test_json_output_of_duplicate_names_and_blobs(tmp_path):
    db = str(make_db(tmp_path / "r.db"))
    out = bench("sql", "SELECT 1 AS a, 2 AS a, x'00ff' AS b, NULL AS c", "--format", "json", "--db", db).output
    assert json.loads(out) == [{"a": 1, "a_2": 2, "b": "x'00ff'", "c": None}]


def test_csv_names_columns_of_one_name_as_json_does_in_every_rendered_table():
    """Issue 46, item 18: CSV repeated a duplicate column name where JSON renamed it. Every command's table
    (output.render, beside bench sql's stream) names them alike in both: `a`, `a_2`, and an `a_2` of its own
    kept (the next free suffix)."""
    import csv
    import io

    import pandas as pd

    from harness import output

    frame = pd.DataFrame([[1, 2, 3, 4]], columns=["a", "a", "a_2", "b"])
    header = next(csv.reader(io.StringIO(output.render(frame, "csv").text)))
    keys = list(json.loads(output.render(frame, "json").text)[0])
    assert header == keys == ["a", "a_3", "a_2", "b"]


def test_a_gpu_without_a_datasheet_row_gets_answers_that_say_so(tmp_path):
    """An H100 PCIe user, a GH200, the simulated GPU: the paper comparison and the fit need no datasheet."""
    import sqlite3

    db = make_db(tmp_path / "r.db")
    with sqlite3.connect(db) as con:
        con.execute("UPDATE devices SET name = 'NVIDIA GH200 480GB'")
    compare = CliRunner().invoke(cli, ["compare", "--db", str(db)])
    assert compare.exit_code == 0 and "no model prediction for this run" in compare.output
    model = bench("model", "--run", "1", "--db", str(db))
    assert model.exit_code == 0 and "NVIDIA GH200 480GB" in model.output
    advise = bench("advise", "swapab", "--m", "16", "--n", "512", "--k", "64", "--run", "1", "--db", str(db))
    assert advise.exit_code == 0 and "fitted to run 1" in advise.output
    report = bench("report", "--db", str(db), "--out", str(tmp_path / "rep"))
    assert report.exit_code == 0
    text = next((tmp_path / "rep").glob("*/report.md")).read_text()
    assert "no gpu_specs.csv row for NVIDIA GH200 480GB: started from the H100 SXM5's" in text


def test_model_finds_the_h200_row():
    result = bench("model", "--gpu", "H200")
    # one line per family whose model has a datasheet table (wgmma's parameters, the GEMM planner's prior)
    assert result.exit_code == 0 and result.output.startswith("wgmma: H200 SXM: ") and "no H200 row" not in result.output
    assert "gemm: H200 SXM: GEMM planner prior" in result.output


def test_a_missing_dependency_is_one_line_naming_the_package(tmp_path):
    # a node whose Python lacks SQLAlchemy (the GPU nodes' images do): `bench run` must say so, not crash
    import subprocess
    import sys

    code = ("import sys; sys.modules['sqlalchemy'] = None; from harness.cli import main; "
            f"sys.argv = ['bench', 'run', '--suite', 'wgmma', '--db', {str(tmp_path / 'r.db')!r}]; main()")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parent.parent)
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "'sqlalchemy' is missing" in lines[0], lines
    assert not (tmp_path / "r.db").exists()


@pytest.mark.parametrize("raised, code, pattern", [
    (lambda: __import__("sqlalchemy.exc").exc.OperationalError("SELECT", {}, OSError("disk I/O error")), 4,
     r"^error: database error: disk I/O error$"),
    (lambda: RuntimeError("a bug"), 70, r"^error: internal error \(RuntimeError: a bug\)")])
def test_a_database_failure_or_a_bug_is_one_line_with_its_own_status(monkeypatch, raised, code, pattern):
    class Failing(dict):
        def items(self):
            raise raised()

    monkeypatch.setattr("harness.suites.SUITES", Failing())
    one_error_line(bench("list"), code, pattern)


def test_plan_is_a_shortcut_for_the_advisor():
    """`bench plan` (the issue's name) is `bench advise plan`: the same command, listed at the top level."""
    top = bench("plan", "--m", "512", "--n", "8192", "--k", "8192")
    nested = bench("advise", "plan", "--m", "512", "--n", "8192", "--k", "8192")
    assert top.exit_code == 0 and top.output == nested.output and "configurations" in top.output
    assert "plan" in bench("--help").output.split("Commands:")[1]


def test_a_fresh_clone_is_told_how_to_build_the_runs_of_record(tmp_path, monkeypatch):
    """Issue 46, item 2: with runs/ beside a missing results.db, the error names the build, not `bench run`."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "run-0001.db.xz").write_bytes(b"")
    line = one_error_line(bench("compare", "--db", "results.db"), 4, "no results database at")
    assert "python scripts/runs_of_record.py build" in line and not (tmp_path / "results.db").exists()


def test_a_comparison_with_nothing_published_says_what_to_ask(tmp_path):
    """Issue 46, item 2: a run none of whose cases has a paper figure (the newest run of record is a GEMM or an
    attention run) gets a note naming the newest run that has some, the model and another run."""
    import sqlite3

    db = make_db(tmp_path / "r.db")
    first = bench("compare", "--db", str(db))
    assert "no case of run" not in first.output  # wgmma rows: the paper has them
    with sqlite3.connect(db) as con:  # the same rows under ids of a family the papers never measured
        con.execute("UPDATE cases SET family = 'attention', "
                    "case_id = 'attention.bf16.1x' || (1024 * id) || 'x16x128.tile128x128.s2.wg2.setmaxnreg'")
    con.close()
    result = bench("compare", "--db", str(db), "--run", "1")
    assert "no case of run 1 has a published figure" in result.output and "--against model" in result.output, \
        result.output


@pytest.mark.parametrize("run", [170, 171])
def test_what_to_ask_names_another_run_that_has_figures(run):
    """Issue 46, item 2: the newest runs of record (170, 171: `bench gemm` at 1024^3) have no published figure, and
    the note named run 171 as "the newest run with some" (an A100's figure of the same case, which no H100 or H200
    run is compared with): the run itself, or another with none. The run it names now gives a verdict."""
    import re

    shipped = Path(__file__).resolve().parents[1] / "results.db"
    if not shipped.exists():
        pytest.skip("no results.db beside the tests")
    result = bench("compare", "--run", str(run), "--db", str(shipped))
    found = re.search(r"the newest run with some is run (\d+)", " ".join(result.output.split()))
    assert "no case of run" in result.output and found, result.output
    named = int(found.group(1))
    assert named != run
    counts = bench("compare", "--run", str(named), "--db", str(shipped), "--format", "csv", "--exit-zero")
    assert re.search(r"\d+ (agrees|DISAGREES|explained|clock not printed|paper clock doubtful)", counts.output), \
        counts.output[-500:]


def test_plan_answers_first_states_ties_and_gives_its_table_as_csv():
    """Issue 44, item 5: the answer's first line, tied predictions sharing a rank (no hand tie-break), --top, and
    --format csv with the configuration as columns on stdout alone (the prose on stderr)."""
    import csv
    import io

    result = CliRunner().invoke(cli, ["plan", "--m", "8192", "--n", "8192", "--k", "8192", "--top", "6",
                                      "--format", "csv"])
    assert result.exit_code == 0
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert len(rows) == 6 and {"rank", "TFLOPS", "tile", "stages", "wg", "cluster", "grid", "epilogue",
                               "case_id"} <= set(rows[0])
    assert "Best predicted" in result.stderr and "Best predicted" not in result.stdout
    # equal predictions share a rank (the prior's 128x128 at 6 stages with a cluster of 1 and of 2: the memory's
    # queue idle); the next distinct one takes its place in the list
    for i, (a, b) in enumerate(zip(rows, rows[1:]), start=2):
        assert (b["rank"] == a["rank"]) if b["TFLOPS"] == a["TFLOPS"] else (int(b["rank"]) == i)
    assert any(a["rank"] == b["rank"] and a["cluster"] != b["cluster"] for a, b in zip(rows, rows[1:]))
    table = bench("plan", "--m", "8192", "--n", "8192", "--k", "8192")
    assert table.output.startswith("Best predicted")
    lines_only = bench("advise", "swapab", "--m", "16", "--n", "64", "--k", "16", "--format", "csv")
    assert lines_only.exit_code == 2 and "--format table only" in lines_only.output


def test_plan_puts_the_runs_own_measurement_beside_a_prediction_and_names_what_it_extrapolates():
    """Issue 44, item 5, on the shipped runs: `measured` is the run's throughput of that very case (read here
    from the database, not through the planner), and a promotion the fitted run never measured is named."""
    import csv
    import io
    import sqlite3
    from pathlib import Path

    db = Path(__file__).resolve().parents[1] / "results.db"
    if not db.exists():
        pytest.skip("no shipped results.db in this checkout")
    result = CliRunner().invoke(cli, ["plan", "--m", "8192", "--n", "8192", "--k", "8192", "--run", "108", "--db",
                                      str(db), "--top", "10", "--format", "csv"])
    assert "1 more predict the same" in result.stderr  # fitted to run 108, a cluster of 1 and 2 tie at the top
    rows = [r for r in csv.DictReader(io.StringIO(result.stdout)) if r["measured"]]
    assert rows, result.output
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
        for row in rows:
            (value,) = con.execute("SELECT value FROM results WHERE run_id = 108 AND metric = 'throughput_tflops' "
                                   "AND case_id = ?", (row["case_id"],)).fetchone()
            assert float(row["measured"]) == pytest.approx(value, abs=0.01)
    fp8 = CliRunner().invoke(cli, ["plan", "--m", "4096", "--n", "4096", "--k", "4096", "--dtype", "e4m3", "--run",
                                   "111", "--db", str(db), "--top", "40", "--format", "csv"])
    rows = list(csv.DictReader(io.StringIO(fp8.stdout)))
    assert {r["extrapolated"] for r in rows if r["promotion"] == "pipelined"} == {"promotion"}
    assert all("promotion" not in r["extrapolated"] for r in rows if r["promotion"] in ("serial", "overlap"))


def test_export_gives_a_row_per_case_with_its_fields_and_metrics_as_columns(tmp_path):
    """Issue 44, item 1 (the export): a case's configuration as columns, not packed into its id, then each
    metric's value; the invalid case, with no value, is not a row; nothing is written."""
    import csv
    import io

    db = make_db(tmp_path / "r.db")
    before = digest(db)
    result = CliRunner().invoke(cli, ["export", "--db", str(db), "--format", "csv"])
    assert result.exit_code == 0, result.output
    rows = {r["case_id"]: r for r in csv.DictReader(io.StringIO(result.stdout))}
    assert set(rows) == {"wgmma.mma_async.m64n8k16.f32.f16.f16.SS", "wgmma.mma_async.m64n256k16.f32.f16.f16.SS"}
    wide = rows["wgmma.mma_async.m64n256k16.f32.f16.f16.SS"]
    assert (wide["n"], wide["operands"]) == ("256", "SS")  # the id's fields, each its own column
    metrics = set(wide) - set(parse_case_id(wide["case_id"]).params()) - {"case_id"}
    assert metrics and all(float(wide[m]) > 0 for m in metrics if wide[m])
    assert digest(db) == before
