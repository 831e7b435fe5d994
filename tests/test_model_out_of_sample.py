"""Issue 44, item 3: `bench model --run N` reports a model's misses out of sample by default: fitted to another run
(the nearest of the same GPU model holding the family's cases, else of another GPU model), scored on N; in sample
only with --in-sample or where no transfer exists, and labelled either way. Against the shipped runs of record:
which run is fitted is read from the database with plain SQL here, and "out of sample" is shown by changing run
N's measurements in a copy: the predictions must not move."""

import re
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import cli

DB = Path(__file__).resolve().parent.parent / "results.db"


@pytest.fixture(scope="module")
def shipped(tmp_path_factory):
    if not DB.exists():
        pytest.skip("no results.db beside the tests")
    copy = tmp_path_factory.mktemp("oos") / "results.db"
    with sqlite3.connect(DB) as source, sqlite3.connect(copy) as target:
        source.backup(target)
    return copy


def _copy(shipped, tmp_path, name="r.db") -> Path:
    path = tmp_path / name
    with sqlite3.connect(shipped) as source, sqlite3.connect(path) as target:
        source.backup(target)
    return path


def _runs_of(db: Path, family: str) -> dict[int, str]:
    """{run: its GPU's name} of every run holding `family`'s measurements, by plain SQL."""
    with sqlite3.connect(db) as con:
        rows = con.execute("SELECT DISTINCT m.run_id, d.name FROM measurement_rows m JOIN cases c ON c.id = m.case_pk "
                           "JOIN runs r ON r.id = m.run_id JOIN devices d ON d.id = r.device_id "
                           "WHERE c.family = ?", (family,)).fetchall()
    return dict(rows)


def _nearest_same_gpu(db: Path, family: str, run: int) -> int:
    runs = _runs_of(db, family)
    same = [r for r, gpu in runs.items() if gpu == runs[run] and r != run]
    before = [r for r in same if r < run]
    return max(before) if before else min(same)


def _model(db: Path, *args) -> str:
    result = CliRunner().invoke(cli, ["model", "--db", str(db), *args], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return result.output


def _scored(db: Path, run: int, **options):
    from harness.analysis.models import score_run
    from harness.db.store import Store

    with Store.open(str(db), read_only=True) as store:
        return score_run(store, run, **options)


def test_bench_model_fits_the_nearest_other_run_of_the_gpu_and_says_so(shipped):
    run = 133
    fitted = _nearest_same_gpu(shipped, "gemm", run)
    assert fitted != run
    out = _model(shipped, "--run", str(run))
    assert f"out of sample: fitted to run {fitted} " in out and f"scored on run {run}" in out
    assert "the same GPU model" in out
    misses = [line for line in out.splitlines() if "measurements: median miss" in line]
    assert misses and all(line.startswith("out of sample, ") for line in misses), misses
    assert "in sample" not in out


def test_out_of_sample_predictions_do_not_move_with_the_scored_runs_measurements(shipped, tmp_path):
    """Run 133's values x 1.5 in a copy: the out-of-sample predictions stay, its measured column scales; the in-sample
    fit (the test's control) moves with them."""
    run, scale = 133, 1.5
    changed = _copy(shipped, tmp_path)
    with sqlite3.connect(changed) as con:
        con.execute("UPDATE measurement_rows SET value = value * ? WHERE run_id = ?", (scale, run))
    before, after = (_scored(db, run)["gemm"] for db in (shipped, changed))
    assert not before.in_sample and before.fit_run == after.fit_run != run
    a, b = before.report.residuals, after.report.residuals
    assert len(a) >= 12 and list(a.case_id) == list(b.case_id)
    assert list(a.fitted) == list(b.fitted)  # nothing of run 133's values is in them
    assert b.measured.to_numpy() == pytest.approx(scale * a.measured.to_numpy(), rel=0.01)
    own = [_scored(db, run, in_sample=True)["gemm"].report.residuals for db in (shipped, changed)]
    assert own[0].fitted.to_numpy() != pytest.approx(own[1].fitted.to_numpy(), rel=0.01)


def test_the_misses_printed_are_the_residuals_of_the_fit_to_the_other_run(shipped):
    """The median and worst miss on the screen, recomputed from the --residuals rows in JSON."""
    import json

    out = _model(shipped, "--run", "133", "--residuals", "--format", "json")
    blocks = out.split("\n[")  # the heading line, the parameters, the residuals
    residuals = json.loads("[" + blocks[-1])
    measured_over_fitted = [abs(r["measured"] / r["fitted"] - 1) for r in residuals]
    table = _model(shipped, "--run", "133")
    median, worst = map(float, re.search(r"out of sample, \d+ measurements: median miss ([0-9.]+) %, worst ([0-9.]+) %",
                                         table).groups())
    import numpy as np

    assert median == pytest.approx(100 * np.median(measured_over_fitted), rel=0.01)
    assert worst == pytest.approx(100 * max(measured_over_fitted), rel=0.01)


def test_in_sample_only_when_asked_and_labelled(shipped):
    out = _model(shipped, "--run", "133", "--in-sample")
    assert "in sample: fitted to run 133 and scored on it (--in-sample)" in out
    misses = [line for line in out.splitlines() if "measurements: median miss" in line]
    assert misses and all(line.startswith("in sample, ") for line in misses)


def test_another_gpu_model_where_the_run_has_no_sibling_and_its_datasheet_rates(shipped, tmp_path):
    """The H200's gemm runs but one removed from a copy: run 102 is fitted to the nearest H100 gemm run, with the
    H200's own datasheet rates for what the fit does not carry."""
    from harness.families.gemm.planner import GemmModel

    run = 102
    runs = _runs_of(shipped, "gemm")
    gpu = runs[run]
    alone = _copy(shipped, tmp_path)
    with sqlite3.connect(alone) as con:
        siblings = [r for r, g in runs.items() if g == gpu and r != run]
        assert siblings
        con.execute(f"DELETE FROM measurement_rows WHERE run_id IN ({','.join(map(str, siblings))}) AND case_pk IN "
                    "(SELECT id FROM cases WHERE family = 'gemm')")
    others = [r for r, g in runs.items() if g != gpu]
    expected = max(r for r in others if r < run)
    scored = _scored(alone, run)["gemm"]
    assert scored.fit_run == expected and "another GPU model" in scored.basis and not scored.in_sample
    prior = GemmModel().prior(gpu)
    assert scored.report.params.hbm_gbps == prior.hbm_gbps
    assert scored.report.params.hbm_gbps != GemmModel().prior(runs[expected]).hbm_gbps


def test_a_model_that_carries_nothing_is_scored_in_sample_and_says_why(shipped):
    out = _model(shipped, "--run", "52")  # wgmma: its model has no transfer
    assert "in sample: fitted to run 52 and scored on it, as the wgmma model carries no parameters" in out
    assert all(line.startswith("in sample, ") for line in out.splitlines() if "median miss" in line)


def test_a_row_fitted_to_the_scored_run_itself_is_labelled_in_sample(shipped):
    """tma carries its issue cost to another run; its latency lines are fitted to the run scored."""
    out = _model(shipped, "--run", "80")
    assert re.search(r"^in sample, copy latency \(L2\): \d+ measurements", out, re.M)
    assert re.search(r"^out of sample, copies in flight: \d+ measurements", out, re.M)


def test_in_sample_with_fit_run_is_refused_in_one_line(shipped):
    from helpers import one_error_line

    result = CliRunner().invoke(cli, ["model", "--db", str(shipped), "--run", "133", "--fit-run", "132", "--in-sample"])
    one_error_line(result, 2, "--in-sample needs --run and no --fit-run")


def test_a_fit_run_that_is_the_run_scored_is_labelled_in_sample(shipped):
    out = _model(shipped, "--run", "133", "--fit-run", "133")
    assert "in sample: --fit-run 133 is the run scored" in out and "out of sample" not in out
    named = _model(shipped, "--run", "133", "--fit-run", "108")
    assert "out of sample: fitted to run 108 (named by --fit-run; the same GPU model), scored on run 133" in named


def test_the_planners_evaluation_script_scores_what_bench_model_does(shipped, tmp_path):
    """scripts/planner_out_of_sample.py's `nearest` pair for run 133 is score_run's (fitted to run 132): the same
    cases, the same predictions; and its top-1 regret is the measured loss of the first pick, the worst of a tie."""
    import importlib.util

    import pandas as pd

    path = Path(__file__).resolve().parent.parent / "scripts" / "planner_out_of_sample.py"
    spec = importlib.util.spec_from_file_location("planner_out_of_sample", path)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    cases, shapes = tmp_path / "cases.csv", tmp_path / "shapes.csv"
    assert script.main(["--db", str(shipped), "--only", "132,133", "--runs", "133", "--pairs", "nearest",
                        "--cases", str(cases), "--shapes", str(shapes), "--worst", "0"]) == 0
    rows, regrets = pd.read_csv(cases), pd.read_csv(shapes)
    assert set(rows.fit) == {132} and set(rows.run) == {133}
    scored = _scored(shipped, 133)["gemm"]
    assert scored.fit_run == 132
    own = scored.report.residuals
    own = own[own.metric == "throughput_tflops"].set_index("case_id")
    assert sorted(rows.case_id) == sorted(own.index)
    for r in rows.itertuples():
        assert r.predicted == pytest.approx(own.fitted[r.case_id]) and r.measured == pytest.approx(own.measured[r.case_id])
        assert r.miss == pytest.approx(r.measured / r.predicted - 1)
    for g in regrets.itertuples():
        mine = rows[rows.case_id.str.contains(g.shape.split(".", 1)[1] + ".", regex=False)
                    & rows.case_id.str.startswith(f"gemm.{g.shape.split('.')[0]}.")]
        assert g.pick in set(mine.case_id)
        assert g.regret == pytest.approx(1 - mine.set_index("case_id").measured[g.pick] / mine.measured.max())
