"""`bench gemm` (issue 44, item 1) end to end on the simulated GPU: the planner's top k and the library in one run,
stored as a run of suite `gemm-shape`, and the ranking printed; its bad inputs (tests/test_cli.py BAD_INPUTS holds
those that need no GPU)."""

import json

import pytest
from click.testing import CliRunner

from helpers import digest, one_error_line
from harness.cli import cli
from harness.db.store import Store
from harness.errors import SpecError
from harness.families.gemm import configs
from harness.families.gemm import shapes
from harness.families.gemm.heuristics import planner_top
from harness.families.gemm.planner import GemmModel
from harness.orchestration.fakegpu import simulated_device


def bench(*args):
    return CliRunner().invoke(cli, list(args), env={"COLUMNS": "200"})


def top_ids(dtype, m, n, k, top=5):
    """The planner's first `top` for the problem (bench plan's order), from the prior the simulated GPU gets."""
    return [c.case_id for c, _ in planner_top(dtype, m, n, k, GemmModel().prior("H100 SXM5"), top)]


def stored(db):
    store = Store.open(db)
    try:
        runs = store.query("SELECT id, suite, filter, status FROM runs ORDER BY id")
        cases = store.query("SELECT DISTINCT run_id, case_id FROM results")
        return runs, cases
    finally:
        store.close()


@pytest.fixture
def fake(monkeypatch, shared_cache):
    monkeypatch.setenv("HOPPER_BENCH_BACKEND", "fake")


def test_one_shape_stores_the_planners_top_k_beside_the_library_and_prints_the_ranking(tmp_path, fake):
    db = str(tmp_path / "r.db")
    result = bench("gemm", "--shape", "2048,2048,2048", "--db", db)
    assert result.exit_code == 0, result.output
    runs, cases = stored(db)
    assert list(runs.suite) == ["gemm-shape"] and list(runs.status) == ["complete"]
    expected = top_ids("f16", 2048, 2048, 2048) + ["cublas.f16.2048x2048x2048"]
    assert sorted(cases.case_id) == sorted(expected)
    assert runs["filter"].iloc[0] == ",".join(expected)  # the run's own cases, as --resume reads them back
    lines = result.output.splitlines()
    header = next(i for i, line in enumerate(lines) if line.lstrip().startswith("shape"))
    for column in ("rank", "tile", "stages", "predicted", "measured", "library_fraction", "miss"):
        assert column in lines[header], lines[header]
    rows = [line for line in lines[header + 2:] if line.startswith("2048x2048x2048")]
    assert len(rows) == 6 and rows[0].split()[2] == "1" and "cuBLAS" in rows[-1]
    assert "%" in rows[0] and "prior for H100 SXM5" in result.output and "out of a fit" in result.output


def test_fp8_and_a_named_case_with_its_rank_and_json(tmp_path, fake):
    db = str(tmp_path / "r.db")
    named = "gemm.e4m3.2048x2048x2048.tile128x128x128.s4.wg2.setmaxnreg.cluster1.persistent-grouped.tmastore.overlap"
    result = bench("gemm", "--shape", "2048,2048,2048,e4m3", "--top", "2", "--case", named, "--db", db,
                   "--format", "json")
    assert result.exit_code == 0, result.output
    _, cases = stored(db)
    assert sorted(cases.case_id) == sorted(top_ids("e4m3", 2048, 2048, 2048, 2) + [named, "cublaslt.e4m3.2048x2048x2048"])
    table = json.loads(result.output[result.output.index("["):result.output.rindex("]") + 1])
    by_id = {row["case_id"]: row for row in table}
    assert by_id[named]["rank"] > 2 and by_id[named]["promotion"] == "overlap" and by_id[named]["predicted"] > 0
    assert by_id["cublaslt.e4m3.2048x2048x2048"]["tile"] == "cuBLASLt"
    first = by_id[top_ids("e4m3", 2048, 2048, 2048, 1)[0]]
    assert first["rank"] == 1 and first["miss"] == f"{first['measured'] / first['predicted'] - 1:+.1%}"


def test_a_shapes_file_runs_every_shape_in_one_run_and_resumes(tmp_path, fake):
    from harness.orchestration.run import plan_resume

    listing = tmp_path / "model.txt"
    listing.write_text("# a model's GEMMs\n2048,2048,2048\n\n1024, 2048, 1024, bf16  # the second\n2048,2048,2048\n")
    db = str(tmp_path / "r.db")
    result = bench("gemm", "--shapes", str(listing), "--top", "1", "--db", db)
    assert result.exit_code == 0, result.output
    runs, cases = stored(db)
    assert len(runs) == 1 and "2 shape(s)" in result.output
    assert sorted(cases.case_id) == sorted(top_ids("f16", 2048, 2048, 2048, 1) + top_ids("bf16", 1024, 2048, 1024, 1)
                                           + ["cublas.f16.2048x2048x2048", "cublas.bf16.1024x2048x1024"])
    store = Store.open(db, read_only=False)
    try:
        store.finish_run(int(runs.id.iloc[0]), "interrupted", "test")
        resumed = plan_resume(store, int(runs.id.iloc[0]))
    finally:
        store.close()
    assert resumed.cases == [] and resumed.total == 4 and resumed.suite == "gemm-shape"


def test_a_shape_over_the_gpus_memory_is_one_line_and_changes_no_database(tmp_path, fake):
    db = tmp_path / "r.db"
    assert bench("gemm", "--shape", "128,128,64", "--top", "1", "--db", str(db)).exit_code == 0
    before = digest(db)
    one_error_line(bench("gemm", "--shape", "65536,65536,8192", "--db", str(db)), 2,
                   r"f16 65536x65536x8192: A, B, C and the reference buffers .* take 86.0 GiB, more than the 80.0 GiB")
    assert digest(db) == before and len(stored(str(db))[0]) == 1
    one_error_line(bench("gemm", "--shape", "65536,65536,8192", "--db", str(tmp_path / "new.db")), 2, "more than")
    assert not (tmp_path / "new.db").exists()


def test_shapes_parse_and_refuse_in_one_line(tmp_path):
    assert shapes.parse_shape(" 4096 , 14336,4096 ,BF16") == shapes.Shape(4096, 14336, 4096, "bf16")
    assert shapes.parse_shape("64,64,64", "e4m3").dtype == "e4m3"
    for text, pattern in (("0,64,64", "M = 0"), ("64,-1,64", "N = -1"), ("64,64,70000", "K = 70000"),
                          ("64,64", "expected M,N,K"), ("64,64,64,f64", "dtype 'f64'"), ("a,b,c", "whole numbers"),
                          ("64,64,64,f16,x", "expected M,N,K"), ("--5,64,64", "whole numbers")):
        with pytest.raises(SpecError, match=pattern):
            shapes.parse_shape(text)
    with pytest.raises(SpecError, match="no pipeline configuration tiles it"):
        shapes.candidates(shapes.Shape(100, 8192, 8192, "f16"))
    empty = tmp_path / "empty.txt"
    empty.write_text("# nothing\n\n")
    with pytest.raises(SpecError, match="no shapes in it"):
        shapes.read_shapes(empty)
    binary = tmp_path / "b.txt"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(SpecError, match="not a text file"):
        shapes.read_shapes(binary)
    bad = tmp_path / "bad.txt"
    bad.write_text("64,64,64\n64,64,64,f32\n")
    with pytest.raises(SpecError, match=r"line 2: '64,64,64,f32': dtype 'f32'"):
        shapes.read_shapes(bad)


def test_memory_counts_inputs_outputs_and_the_checks_buffers():
    case = configs.pipeline("f16", (8192, 8192, 8192), **configs.BEST)
    mn, inputs = 8192 * 8192, 2 * 8192 * 8192 * 2
    assert shapes.memory_bytes(case) == inputs + 21 * mn  # A, B; C, reference, f32 copies, bound, difference, mask
    fp8 = configs.pipeline("e4m3", (8192, 8192, 8192), **configs.BEST_FP8)
    assert shapes.memory_bytes(fp8) > 2 * shapes.memory_bytes(case) / 1.5  # the exact product in f64
    library = configs.library("f16", (8192, 8192, 8192))
    assert shapes.memory_bytes(library) < shapes.memory_bytes(case)
    shapes.check_memory([case, fp8], simulated_device())  # 8192^3 fits in 80 GiB
    big = configs.pipeline("e4m3", (49152, 49152, 8192), **configs.BEST_FP8)
    with pytest.raises(SpecError, match="more than the 80.0 GiB"):
        shapes.check_memory([big], simulated_device())
