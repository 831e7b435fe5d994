"""Issue 42: the planner's ping-pong term (harness/families/gemm/model.py pingpong_cycles, pingpong.py). Expectations
from outside the code: cycle counts worked by hand for small configurations, and the stored runs of record 109 and
112 (H100 SXM), read with plain SQL."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from harness.families.gemm import configs
from harness.families.gemm.ids import parse
from harness.families.gemm.model import epilogue_cycles, kblock_cycles, pingpong_cycles, predict_case
from harness.families.gemm.params import PRIOR, Params
from harness.families.gemm.pingpong import counter_per_kblock, fit_turn, mainloop_per_tile

DB = Path(__file__).resolve().parent.parent / "results.db"


def _params(**changes) -> Params:
    return replace(Params("test", 132, 4096.0, **PRIOR, hbm_gbps=3084.0, launch_cycles=0.0, clock_mhz=1500.0),
                   **changes)


def _pingpong(m, n, k, stages=5, cluster=2, tile=(128, 128)):
    return configs.pipeline("f16", (m, n, k), bm=tile[0], bn=tile[1], stages=stages, consumers=2, rebalance=True,
                            cluster=cluster, persistent=True, order="grouped", epilogue="tmastore", schedule="pingpong")


def test_a_ping_pong_cta_by_hand():
    """8192^3 in 128x128 tiles: 4096 tiles on 132 SMs, the busiest CTA 32 of them (31.03), 128 k-blocks each. With a
    k-block of 600 cycles, a turn of 171 and an epilogue of 2000: a tile's mainloop 128 x 600 + 171 = 76971, every
    epilogue but the last under the other warpgroup's mainloop: 32 x 76971 + 2000 = 2465072 cycles, 2000 exposed."""
    case = _pingpong(8192, 8192, 8192)
    tile, compute, exposed = pingpong_cycles(case, _params(turn_cycles=171.0), 32, 600.0, 2000.0)
    assert (compute, exposed, tile) == (2465072.0, 2000.0, 2465072.0 / 32)


def test_an_epilogue_longer_than_the_mainloop_is_exposed_beyond_it():
    """K = 64, one k-block a tile: a mainloop of 600 + 171 = 771 cycles; a warpgroup's next mainloop waits for its own
    epilogue (2000), so the CTA's 32 tiles take 31 x 2000 + 771 + 2000 = 64771 cycles, of which 31 x 1229 + 2000 =
    40099 are the epilogue's."""
    case = _pingpong(8192, 8192, 64)
    _, compute, exposed = pingpong_cycles(case, _params(turn_cycles=171.0), 32, 600.0, 2000.0)
    assert (compute, exposed) == (64771.0, 40099.0)


def test_predict_case_prices_ping_pong_as_the_cta_by_hand():
    """The whole prediction: the CTA's cycles above from the planner's own k-block and epilogue, plus the launch; the
    cooperative schedule of the same tile pays every tile's epilogue."""
    p = _params(launch_cycles=5000.0, turn_cycles=171.0)
    case = _pingpong(8192, 8192, 8192)
    t, e = kblock_cycles(case, p, 1500.0)[0], epilogue_cycles(case, p)
    total = case.flops / (predict_case(case, p, 1500.0).flops_per_cycle_sm * p.sm_count)
    assert total == pytest.approx(32 * (128 * t + 171.0) + e + 5000.0, rel=1e-9)
    cooperative = replace(case, schedule="cooperative")
    t_c = kblock_cycles(cooperative, p, 1500.0)[0]
    total_c = cooperative.flops / (predict_case(cooperative, p, 1500.0).flops_per_cycle_sm * p.sm_count)
    assert total_c == pytest.approx(32 * (128 * t_c + e) + 5000.0, rel=1e-9)


def test_the_counter_reading_inverts():
    """Run 109's 8192^3 128x128 s5 cluster-2 case counted 1129 cycles a k-block and 2215 an epilogue (stored values,
    rounded): warpgroup 0 takes 16 of the CTA's 32 tiles, so T = (1129 x 128 x 16 + 15 x 2215) / 31 = 75658.6 cycles a
    tile (591 a k-block)."""
    case = _pingpong(8192, 8192, 8192, stages=5, cluster=2)
    assert mainloop_per_tile(case, 1129.0, 2215.0, 132) == pytest.approx(2345417 / 31)
    assert counter_per_kblock(case, 132, 2345417 / 31, 2215.0) == pytest.approx(1129.0)


def _stored_pingpong() -> pd.DataFrame:
    if not DB.exists():
        pytest.skip("no results.db beside the tests")
    query = ("SELECT m.run_id AS run, c.case_id, t.text AS metric, m.value, m.sm_clock_mhz FROM measurement_rows m "
             "JOIN cases c ON c.id = m.case_pk JOIN texts t ON t.id = m.metric_id WHERE m.run_id IN (109, 112) "
             "AND c.case_id LIKE 'gemm.%.pingpong' AND t.text IN ('throughput_tflops', 'cycles_per_kblock', "
             "'epilogue_cycles_per_tile')")
    with sqlite3.connect(DB) as con:
        rows = pd.read_sql_query(query, con)
    clocks = rows[rows.metric == "throughput_tflops"].set_index(["run", "case_id"]).sm_clock_mhz
    table = rows.pivot_table(index=["run", "case_id"], columns="metric", values="value", aggfunc="first")
    return table.assign(clock_mhz=clocks)


def test_the_counters_read_with_the_turn_wait_give_the_timed_kernel():
    """Every stored ping-pong case (33, runs 109 and 112): the kernel's cycles, from its measured TFLOPS at its measured
    clock, against the busiest CTA's n tiles of the mainloop the counters imply and its last epilogue. Read so they come
    within the launch's fixed cost (0-6 %); read as one tile's mainloop, the counter gives 1.6-1.9 times the kernel."""
    table = _stored_pingpong()
    assert len(table) == 33
    for (run, cid), r in table.iterrows():
        case = parse(cid)
        n = -(-case.tiles // 132)
        timed = case.flops / (r.throughput_tflops * 1e12) * r.clock_mhz * 1e6
        T = mainloop_per_tile(case, r.cycles_per_kblock, r.epilogue_cycles_per_tile, 132)
        assert 0.99 <= timed / (n * T + r.epilogue_cycles_per_tile) <= 1.06, (run, cid)
        assert n * case.kblocks * r.cycles_per_kblock / timed > 1.6, (run, cid)


def _counted(cases, p, turn, epilogue=800.0):
    """A table of ping-pong cases whose counters a turn of `turn` cycles would give (the planner's k-blocks)."""
    rows = {}
    for case in cases:
        t = kblock_cycles(case, p, 1500.0)[0]
        rows[case.case_id] = {"cycles_per_kblock": counter_per_kblock(case, 132, case.kblocks * t + turn, epilogue),
                              "epilogue_cycles_per_tile": epilogue, "clock_mhz": 1500.0, "sm_count": 132}
    table = pd.DataFrame.from_dict(rows, orient="index")
    return table, {cid: parse(cid) for cid in table.index}


def test_the_turn_is_fitted_only_where_short_tiles_show_it():
    """Tiles of 2 k-blocks (K = 128), where a turn of 600 cycles is a third of a tile: the fit moves the turn from the
    prior's 171 most of the way to it (the prior's hold, as on the other terms, keeps it short of 600). Tiles of 128
    k-blocks (K = 8192) cannot show it: the prior's turn stays, whatever their counters say."""
    p = _params(turn_cycles=171.0)
    kblock = lambda c, q, mhz: kblock_cycles(c, q, mhz)[0]  # noqa: E731
    short = [_pingpong(8192, 8192, 128, stages=s, cluster=c) for s in (4, 5) for c in (1, 2)]
    fitted = fit_turn(p, *_counted(short, p, 600.0), kblock, 0.02).turn_cycles
    assert 171.0 + 0.5 * (600.0 - 171.0) < fitted < 600.0
    long = [_pingpong(8192, 8192, 8192, stages=s, cluster=c) for s in (4, 5) for c in (1, 2)]
    assert fit_turn(p, *_counted(long, p, 3000.0), kblock, 0.02).turn_cycles == 171.0


def test_a_ping_pong_run_fits_the_planner_for_other_runs():
    """Run 112 (gemm-pingpong: 18 ping-pong cases of 22) fitted, run 108's (H100, gemm-full, no ping-pong) cases
    predicted: read as plain k-blocks its ping-pong counters had put the miss at 29 % at the median and 70 % at worst;
    read apart, 2.5 % and 15 %, as the other H100 fits predict run 108."""
    if not DB.exists():
        pytest.skip("no results.db beside the tests")
    from harness.analysis.models import measured
    from harness.db.store import Store
    from harness.families.gemm.planner import GemmModel

    with Store.open(str(DB), read_only=True) as store:
        fit_rows, scored_rows = (f[f.family == "gemm"] for f in (measured(store, 112), measured(store, 108)))
    model = GemmModel()
    report = model.transfer(model.fit(fit_rows, "NVIDIA H100 80GB HBM3", "run 112"), scored_rows,
                            "NVIDIA H100 80GB HBM3", "run 112")
    misses = report.summary()
    assert misses["median"] < 0.04 and misses["worst"] < 0.20
