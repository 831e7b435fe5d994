"""Issue 44, item 3: the planner's terms added for out-of-sample fits (harness/families/gemm/model.py, fitting.py): an
epilogue's fixed cost, fitted beside its rate; a problem that fits in the L2 neither queues on nor is bound by the
memory; the k-block's terms fitted only from a run whose rings and tiles tell them apart; split-K's fix-up rate fitted
from the counters where the run has split-K. Synthetic tables with known values: the fit must find them."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from harness.families.gemm import configs
from harness.families.gemm.ids import parse
from harness.families.gemm.fitting import _fit_epilogue, _fit_splitk, _fit_whole, _identifies_kblock
from harness.families.gemm.model import epilogue_cycles, predict_case
from harness.families.gemm.params import OUT_ELEM, PRIOR, Params
from harness.families.gemm.traffic import hbm_cycles, l2_resident, miss_fraction


def _params(**changes) -> Params:
    return replace(Params("test", 132, 4096.0, **PRIOR, hbm_gbps=3084.0, launch_cycles=0.0, clock_mhz=1500.0),
                   **changes)


def _case(m, n, k, tile=(128, 128), stages=3, wg=2, epilogue="tmastore", splits=1, order="grouped"):
    return configs.pipeline("f16", (m, n, k), bm=tile[0], bn=tile[1], stages=stages, consumers=wg, rebalance=wg == 2,
                      cluster=1, persistent=True, order=order, epilogue=epilogue, splits=splits)


def _table(rows: dict[str, dict]) -> tuple[pd.DataFrame, dict]:
    table = pd.DataFrame.from_dict(rows, orient="index")
    return table, {cid: parse(cid) for cid in table.index}


@pytest.mark.parametrize("fixed, regs, tma", [(400.0, 7.0, 60.0), (0.0, 6.5, 45.0)])
def test_the_epilogue_fit_finds_a_known_fixed_cost_and_rates(fixed, regs, tma):
    rows = {}
    for tile in ((64, 64), (64, 128), (128, 128), (128, 256)):
        for epilogue, rate in (("regs", regs), ("tmastore", tma)):
            case = _case(4096, 4096, 4096, tile=tile, wg=1 if tile[0] == 64 else 2, epilogue=epilogue)
            rows[case.case_id] = {"epilogue_cycles_per_tile": fixed + tile[0] * tile[1] * OUT_ELEM / rate}
    table, cases = _table(rows)
    p = _fit_epilogue(_params(epilogue_fixed_cycles=123.0), table, cases)
    assert p.epilogue_fixed_cycles == pytest.approx(fixed, abs=1e-6)
    assert (p.epilogue_regs, p.epilogue_tma) == pytest.approx((regs, tma))


def test_one_size_of_tile_keeps_the_rates_and_fits_the_fixed_cost_beyond_them():
    """One size of C cannot tell the bytes' rate from the fixed part: the start's rate is held and E_0 takes the rest
    (run 136's 64x64 tiles alone had put the TMA store at 17 bytes a cycle)."""
    case = _case(4096, 4096, 4096)
    table, cases = _table({case.case_id: {"epilogue_cycles_per_tile": 300.0 + 128 * 128 * 2 / 45.0}})
    p = _fit_epilogue(_params(epilogue_fixed_cycles=50.0, epilogue_tma=45.0), table, cases)
    assert p.epilogue_fixed_cycles == pytest.approx(300.0) and p.epilogue_tma == 45.0


def test_a_problem_in_the_l2_has_no_memory_queue_or_bound_and_one_beyond_it_has():
    """M = 64 against 4096 x 4096 weights: A, B and C are 32.5 MiB, inside GH100's 50 MiB L2; 8192 x 8192 weights
    (128 MiB) are not."""
    p = _params()
    small, large = _case(64, 4096, 4096, tile=(64, 64), wg=1), _case(64, 8192, 8192, tile=(64, 64), wg=1)
    assert (64 * 4096 + 4096 * 4096) * 2 + 64 * 4096 * 2 < 50 * 2 ** 20 < (64 * 8192 + 8192 * 8192) * 2
    assert l2_resident(small, p.l2_bytes) and not l2_resident(large, p.l2_bytes)
    assert miss_fraction(small, 132, p.l2_bytes) == 0.0 and hbm_cycles(small, p, 1500.0) == 0.0
    assert miss_fraction(large, 132, p.l2_bytes) > 0.4 and hbm_cycles(large, p, 1500.0) > 0.0
    # without the L2 (a capacity of 0) the same small problem queues on the memory: slower
    assert predict_case(small, replace(p, l2_bytes=0.0), 1500.0).flops_per_cycle_sm < \
        predict_case(small, p, 1500.0).flops_per_cycle_sm


def test_the_kblock_terms_are_fitted_only_where_the_rings_and_tiles_vary():
    one_depth = [_case(128, 8192, 8192, tile=t, wg=w, stages=s) for t, w, s in (((128, 128), 2, 5), ((64, 128), 1, 6))]
    assert not _identifies_kblock(one_depth)
    varied = [_case(8192, 8192, 8192, tile=t, wg=w, stages=s) for t, w in (((128, 128), 2), ((64, 128), 1))
              for s in (2, 4, 6)]
    assert _identifies_kblock(varied)
    assert not _identifies_kblock([c for c in varied if c.bm == 128])  # one tile: the overheads not apart


def test_split_k_rate_fitted_from_the_counters_mean_and_the_tile_waits_for_its_last_run():
    p = _params()
    rate, rows = 40.0, {}
    for tile, wg in (((64, 64), 1), ((64, 128), 1), ((128, 128), 2)):
        for splits in (2, 4):
            case = _case(64, 4096, 4096, tile=tile, wg=wg, splits=splits)
            truth = replace(p, splitk_bytes_per_cycle=rate)
            rows[case.case_id] = {"epilogue_cycles_per_tile": epilogue_cycles(case, truth, mean=True)}
    table, cases = _table(rows)
    fitted = _fit_splitk(p, table, cases)
    assert fitted.splitk_bytes_per_cycle == pytest.approx(rate)
    case = cases[next(iter(rows))]
    last = epilogue_cycles(case, fitted)
    assert last > epilogue_cycles(case, fitted, mean=True)  # the last run reads every run's sums and stores C
    assert _fit_splitk(p, table.iloc[:2], cases).splitk_bytes_per_cycle == p.splitk_bytes_per_cycle  # too few: the prior's
    assert _fit_splitk(replace(p, splitk_bytes_per_cycle=0.0), table.iloc[:2], cases).splitk_bytes_per_cycle == 0.0
    assert np.isfinite(last)


def test_the_promotion_fits_docs_gemm_quotes():
    """docs/gemm.md: the drain w and the additions P fit to the quoted cycles on runs 111, 124 and 126."""
    from pathlib import Path

    import harness
    from harness.families.gemm.planner import GemmModel

    root = Path(__file__).resolve().parents[1]
    if not (root / "results.db").exists():
        pytest.skip("no shipped results.db in this checkout")
    doc = " ".join((root / "docs" / "gemm.md").read_text().split())
    fits = {}
    for run in (111, 124, 126):
        frame = harness.results(str(root / "results.db"), run_id=run, family="gemm")
        fits[run] = GemmModel().fit(frame, frame.gpu_name.iloc[0], f"run {run}").params
    w = [round(fits[r].drain_cycles) for r in (111, 124, 126)]
    additions = [round(fits[r].promotion_cycles) for r in (111, 124, 126)]
    assert (f"w fits to {w[0]}, {w[1]} and {w[2]} cycles and P to {additions[0]}, {additions[1]} and {additions[2]} on "
            "runs 111, 124 and 126") in doc
    assert all(100 < v < 300 for v in w + additions)  # run 111's floors: 700-725 overlapped, 902-910 serial


def test_a_panel_read_from_both_sides_of_the_l2_is_fetched_twice():
    """M = 128, N = K = 8192 in 64x128 tiles, one wave of 128 CTAs: each B panel is read by two CTAs. In grouped order
    they are neighbours (one side group of SIDE_GROUP CTAs: one fetch); in row order they are 64 CTAs apart (two groups,
    each on either side alike: 1.5 fetches expected); a cluster of 2 multicasts the panel (one fetch)."""
    from harness.families.gemm.traffic import SIDE_GROUP

    assert SIDE_GROUP == 4
    grouped, row = _case(128, 8192, 8192, tile=(64, 128), wg=1), _case(128, 8192, 8192, tile=(64, 128), wg=1, order="row")
    read = 128 * (64 + 128)  # rows of 128 bytes the wave's CTAs read per k-block
    # A: 2 panels of 64 rows, each read by 64 CTAs of many groups (2 - 2^-15 sides, about 2) in either order
    a_sides = 2 * 64 * (2 - 2.0 ** (1 - 16))
    assert miss_fraction(grouped, 132) == pytest.approx((a_sides + 64 * 128) / read, rel=1e-3)
    assert miss_fraction(row, 132) == pytest.approx((2 * 64 * 2 + 64 * 128 * 1.5) / read, rel=1e-3)
    pair = configs.pipeline("f16", (128, 8192, 8192), bm=64, bn=128, stages=7, consumers=1, rebalance=False, cluster=2,
                            persistent=True, order="row", epilogue="tmastore")
    # 64 pairs in row order: one A panel of 128 rows (both sides), each B panel read once, by its pair (one side)
    assert miss_fraction(pair, 132) == pytest.approx((128 * 2 + 64 * 128) / (64 * (128 + 128)), rel=1e-3)
    # the memory's queue then tells the orders apart where it did not before
    p = _params()
    assert predict_case(row, p, 1400.0).flops_per_cycle_sm < 0.9 * predict_case(grouped, p, 1400.0).flops_per_cycle_sm


def test_the_launch_cost_is_fitted_on_the_cases_without_split_k():
    """Split-K launches hold time no counter records (run 136): the launch cost is fitted without them."""
    p = _params(launch_cycles=4000.0)
    plain, split = _case(64, 4096, 4096, tile=(64, 64), wg=1), _case(64, 4096, 4096, tile=(64, 64), wg=1, splits=4)
    truth = replace(p, launch_cycles=9000.0)
    rows = {}
    for case, extra in ((plain, 1.0), (split, 0.5)):  # the split case measured at half its predicted rate
        rows[case.case_id] = {"clock_mhz": 1500.0, "sm_count": 132,
                              "throughput_tflops": extra * predict_case(case, truth, 1500.0).tflops(132, 1500.0)}
    table, cases = _table(rows)
    assert _fit_whole(p, table, cases).launch_cycles == pytest.approx(9000.0, rel=0.02)
