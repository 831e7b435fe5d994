"""nvMatmulHeuristics beside the planner (issue 44, item 4; harness/families/gemm/heuristics.py): its configurations
mapped onto the family's cases or refused with the reason, the regret arithmetic, the suite made from its pinned
answer, the package still giving that answer (CPU only), and `bench plan --against nvmh`."""

import csv
import io
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import cli
from harness.families.gemm import configs
from harness.families.gemm import heuristics as H
from harness.families.gemm import regret as R
from harness.families.gemm.ids import parse
from harness.registry import FAMILIES
from helpers import one_error_line

SQUARE8K = (8192, 8192, 8192)


@pytest.mark.parametrize("config,dtype,shape,case_id,note", [
    # its 8192^3 top pick: 4 stages of 128x256 leave no room for our TMA store's whole output tile
    (H.Config(128, 256, 64, 4, 2, 1), "f16", SQUARE8K,
     "gemm.f16.8192x8192x8192.tile128x256x64.s4.wg2.setmaxnreg.cluster2.persistent-grouped.regs", "epilogue from registers"),
    (H.Config(128, 128, 64, 5), "bf16", (4096, 4096, 4096),
     "gemm.bf16.4096x4096x4096.tile128x128x64.s5.wg2.setmaxnreg.cluster1.persistent-grouped.tmastore", ""),
    (H.Config(64, 256, 64, 5, 2, 1), "f16", SQUARE8K,  # 64 rows: one consumer warpgroup, no setmaxnreg
     "gemm.f16.8192x8192x8192.tile64x256x64.s5.wg1.cluster2.persistent-grouped.regs", "epilogue from registers"),
    (H.Config(128, 256, 64, 3, 4, 1), "f16", SQUARE8K,  # a cluster of 4: the 120 SMs that hold 30 of them
     "gemm.f16.8192x8192x8192.tile128x256x64.s3.wg2.setmaxnreg.cluster4.persistent-grouped.tmastore.sms120", ""),
    (H.Config(64, 128, 128, 6, 2, 1), "e4m3", (4096, 4096, 4096),  # fp8: the best promotion, pipelined
     "gemm.e4m3.4096x4096x4096.tile64x128x128.s6.wg1.cluster2.persistent-grouped.tmastore.pipelined", ""),
])
def test_a_configuration_maps_to_the_case_with_its_tile_stages_and_cluster(config, dtype, shape, case_id, note):
    mapped = H.map_config(config, dtype, *shape)
    assert mapped.case is not None and mapped.case.case_id == case_id, mapped
    assert parse(case_id) == mapped.case and mapped.why.startswith(note)


@pytest.mark.parametrize("config,dtype,shape,why", [
    (H.Config(128, 256, 64, 4, 2, 1, split_k=5), "f16", SQUARE8K, "split-K 5: the family splits K in 1, 2, 3"),
    (H.Config(128, 256, 64, 4, 2, 1, split_k=2), "f16", SQUARE8K, "split-K runs the cooperative schedule with no cluster"),
    (H.Config(128, 256, 128, 2, 1, 1), "f16", SQUARE8K, "a k-tile of 128: the family's k-block of f16 is 64"),
    (H.Config(128, 128, 64, 4), "e4m3", SQUARE8K, "a k-tile of 64: the family's k-block of e4m3 is 128"),
    (H.Config(128, 160, 64, 5, 2, 1), "f16", SQUARE8K, "tile 128x160: not one of the family's"),
    (H.Config(256, 128, 64, 4, 1, 2), "f16", SQUARE8K, r"a cluster of 1x2 \(along N, sharing A\)"),
    (H.Config(128, 160, 64, 5, 4, 2), "f16", SQUARE8K, "tile 128x160"),  # the first reason found
    (H.Config(256, 128, 64, 7), "f16", SQUARE8K, "bytes of shared memory: more than the"),  # registers' epilogue too
    (H.Config(128, 256, 128, 4, 2, 1), "e4m3", SQUARE8K, "f32 accumulators per thread"),  # three sets of 128
    (H.Config(128, 256, 64, 3, 2, 1), "f16", (4224, 4096, 4096), "is not a whole number of 256-row tiles"),
])
def test_a_configuration_that_cannot_be_mapped_says_why(config, dtype, shape, why):
    import re

    mapped = H.map_config(config, dtype, *shape)
    assert mapped.case is None and re.search(why, mapped.why), mapped.why


def test_regret_is_the_best_measured_picks_loss_against_the_problems_best():
    measured = {"a": 600.0, "b": 540.0, "c": 480.0, "z": 500.0}  # TFLOPS of every pipeline case the run holds
    r = R.regret(["b", None, "c", "x", "a", "z"], measured)  # the sixth pick is past the top five
    assert r.top1 == pytest.approx(0.1) and r.topk == pytest.approx(0.0)
    assert (r.measured, r.unmeasured, r.unmappable) == (3, 1, 1)
    r = R.regret([None, "c", "y"], measured)  # top-1 unmappable: no top-1 regret; top-5 from what is measured
    assert r.top1 is None and r.topk == pytest.approx(0.2) and (r.measured, r.unmeasured, r.unmappable) == (1, 1, 1)
    r = R.regret(["x", "y"], measured)
    assert r.top1 is None and r.topk is None and r.measured == 0
    assert R.regret(["c", "b"], measured, top=1).topk == pytest.approx(0.2)
    with pytest.raises(Exception, match="no pipeline case"):
        R.regret(["a"], {})


def test_the_suite_is_both_predictors_top_five_with_cublas_under_forty_cases():
    from harness.families.gemm.planner import GemmModel

    cases = FAMILIES["gemm"].suites()["gemm-heuristics"].make()
    ids = [c.case_id for c in cases]
    assert len(ids) == len(set(ids)) <= 40 and ids == [c.case_id for c in H.suite()]  # deterministic
    assert {c.case_id for c in cases} <= {c.case_id for c in FAMILIES["gemm"].cases()}  # compiled in CI's sweep
    params = GemmModel().prior(H.SUITE_GPU)
    for shape, answer in H.SUITE_ANSWERS.items():
        assert configs.library("f16", shape).case_id in ids
        ours = [c.case_id for c, _ in H.planner_top("f16", *shape, params)]
        theirs = [m.case.case_id for m in H.top_mapped([H.Config(*row) for row in answer], "f16", *shape) if m.case]
        assert len(ours) == 5 and theirs and set(ours + theirs) <= set(ids)
    # the planner's picks are `bench plan`'s first five
    result = CliRunner().invoke(cli, ["plan", "--m", "8192", "--n", "8192", "--k", "8192", "--top", "5", "--format", "csv"])
    assert [r["case_id"] for r in csv.DictReader(io.StringIO(result.stdout))] == \
        [c.case_id for c, _ in H.planner_top("f16", *SQUARE8K, params)]


def test_the_package_still_gives_the_pinned_answer_on_the_cpu():
    """The suite is made from SUITE_ANSWERS: the pinned version must still answer it (else regenerate it from
    H.ask). Its first configurations do not depend on how many are asked for; its estimate of a configuration
    built here from our case equals the one it gave with its own pick."""
    pytest.importorskip("nvMatmulHeuristics")
    from importlib.metadata import version

    assert version("nvidia-matmul-heuristics") == H.VERSION
    for shape, answer in H.SUITE_ANSWERS.items():
        got = H.ask("f16", *shape)
        assert [tuple(vars(c).values()) for c in got[:H.TOP]] == list(answer), (shape, got[:H.TOP])
        assert H.ask("f16", *shape, count=8)[:3] == got[:3]
    top = H.map_config(H.Config(*H.SUITE_ANSWERS[SQUARE8K][0]), "f16", *SQUARE8K).case
    assert H.estimate_us(top) == H.SUITE_ANSWERS[SQUARE8K][0][-1]
    fp8 = H.ask("e4m3", 4096, 4096, 4096)  # fp8 (QQHSH) is answered, with its k-tile of 128
    assert fp8 and all(c.bk == 128 for c in fp8[:H.TOP])


def test_plan_against_nvmh_without_a_run_gives_both_top_fives():
    pytest.importorskip("nvMatmulHeuristics")
    result = CliRunner().invoke(cli, ["plan", "--m", "8192", "--n", "8192", "--k", "8192", "--against", "nvmh",
                                      "--format", "csv"])
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert [(r["predictor"], r["rank"]) for r in rows] == [(p, str(i)) for p in ("planner", "nvmh") for i in range(1, 6)]
    nvmh = [r for r in rows if r["predictor"] == "nvmh"]
    assert [r["nvmh us"] for r in nvmh] == [str(row[-1]) for row in H.SUITE_ANSWERS[SQUARE8K]]
    assert sum(1 for r in nvmh if not r["case_id"]) == 3 and all(r["note"] for r in nvmh if not r["case_id"])
    assert all(r["planner TFLOPS"] and r["nvmh TFLOPS"] for r in rows if r["case_id"])
    prose = " ".join(result.stderr.split())  # the prose is wrapped to the terminal
    assert "No --run" in prose and "3 of its 5 cannot be mapped" in prose


def test_plan_against_nvmh_gives_each_predictors_regret_from_the_runs_measurements():
    """On the shipped run 108 (H100, gemm-full): the regrets, computed here from the database."""
    pytest.importorskip("nvMatmulHeuristics")
    db = Path(__file__).resolve().parents[1] / "results.db"
    if not db.exists():
        pytest.skip("no shipped results.db in this checkout")
    result = CliRunner().invoke(cli, ["plan", "--m", "8192", "--n", "8192", "--k", "8192", "--against", "nvmh",
                                      "--run", "108", "--db", str(db), "--format", "csv"])
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
        values = dict(con.execute("SELECT case_id, value FROM results WHERE run_id = 108 AND metric = "
                                  "'throughput_tflops' AND case_id LIKE 'gemm.f16.8192x8192x8192.%'").fetchall())
    best = max(values.values())
    for who, name in (("planner", "planner"), ("nvmh", "nvMatmulHeuristics")):
        picks = [r["case_id"] for r in rows if r["predictor"] == who]
        for r in rows:
            if r["predictor"] == who and r["case_id"]:
                assert (r["measured"] != "") == (r["case_id"] in values)
        first = f"{100 * (1 - values[picks[0]] / best):.1f} %" if picks[0] in values else "unmeasured"
        top5 = [values[p] for p in picks if p in values]
        line = f"{name}: {first} / " + (f"{100 * (1 - max(top5) / best):.1f} %" if top5 else "none measured")
        assert line in " ".join(result.stderr.split()), (line, result.stderr)


def test_plan_against_nvmh_without_the_package_is_one_line(monkeypatch):
    import builtins

    real = builtins.__import__

    def missing(name, *args, **kwargs):
        if name == "nvMatmulHeuristics":
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", missing)
    result = CliRunner().invoke(cli, ["plan", "--m", "8192", "--n", "8192", "--k", "8192", "--against", "nvmh"])
    one_error_line(result, 2, r"nvMatmulHeuristics is not installed: pip install '\.\[nvmh\]'")
