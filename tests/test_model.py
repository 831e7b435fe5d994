"""The analytical model against the article's tables, its fit on synthetic data, and the advisor."""

import numpy as np
import pytest

from harness.families.wgmma import model as perfmodel
from harness.errors import SpecError
from harness.families.wgmma.cases import WgmmaCase

N_VALUES = (8, 16, 32, 64, 128, 256)
# The seed article's tables (harness/db/data/references/article_wgmma_h800_h20.csv), f16 SS.
ARTICLE = {"H800": (18, 20, 24, 32, 64, 128), "H20": (18, 32, 64, 128, 256, 512)}
# arXiv 2402.13499 Tables IX-X, H800 PCIe, f16 inputs (as shipped in harness/db/data/references/luo2024_tables.csv).
PAPER_RS = (13, 13, 16, 32, 64, 128)
PAPER_SPARSE_SS = (20, 24, 32, 48, 80, 144)
PAPER_SPARSE_RS = (16, 18, 18)  # N = 8, 16, 32, Table IX


def case(n, ops="SS", dtype="f16", sparse=False, k=16):
    return WgmmaCase(64, n, 2 * k if sparse else k, dtype, dtype, "f32", ops, sparse)


@pytest.mark.parametrize("gpu", sorted(ARTICLE))
def test_the_article_tables_are_reproduced_exactly(gpu):
    params = perfmodel.datasheet(gpu)
    assert tuple(perfmodel.predict(case(n), params).cycles for n in N_VALUES) == ARTICLE[gpu]
    assert perfmodel.table(params).SS.tolist() == list(ARTICLE[gpu])


def test_rs_and_the_other_dtypes_on_the_paper_gpu():
    params = perfmodel.datasheet("H800 PCIe")
    assert tuple(perfmodel.predict(case(n, "RS"), params).cycles for n in N_VALUES) == PAPER_RS
    # every dense dtype takes 128 cycles at N = 256, SS and RS (Table VIII)
    for dtype, k in (("tf32", 8), ("e4m3", 32), ("s8", 32), ("bf16", 16)):
        for ops in ("SS", "RS"):
            assert perfmodel.predict(case(256, ops, dtype, k=k), params).cycles == 128


def test_sparse_rs_floors_follow_the_accumulator():
    """Sparse SS follows 16 + N/2 exactly. Sparse RS below N = 40 sits on a floor: 16 with a 16-bit
    accumulator (runs 20 and 23, both GPUs: 16 at N = 8..32), and with f32 or s32 16 at N = 8 but 18 from
    N = 16 (the same runs, and the paper's column: 16, 18, 18)."""
    params = perfmodel.datasheet("H800 PCIe")
    assert tuple(perfmodel.predict(case(n, sparse=True), params).cycles for n in N_VALUES) == PAPER_SPARSE_SS
    wide = [perfmodel.predict(case(n, "RS", sparse=True), params).cycles for n in (8, 16, 32)]
    assert wide == list(PAPER_SPARSE_RS)
    narrow = WgmmaCase(64, 16, 32, "f16", "f16", "f16", "RS", True)
    assert perfmodel.predict(narrow, params).cycles == 16 and perfmodel.floor_of(narrow) == "l_sparse"
    assert perfmodel.predict(WgmmaCase(64, 40, 32, "f16", "f16", "f32", "RS", True), params).bound == "tensor cores"


def test_the_bounds_and_crossovers():
    params = perfmodel.datasheet("H100 SXM5")
    assert perfmodel.predict(case(8), params).bound == "shared memory"
    assert perfmodel.predict(case(8, "RS"), params).bound == "floor"
    assert perfmodel.predict(case(128), params).bound == "tensor cores"
    assert perfmodel.crossover_n("f16", "SS", params) == pytest.approx(64)
    assert perfmodel.crossover_n("f16", "RS", params) == pytest.approx(26)
    assert perfmodel.crossover_n("f16", "SS", perfmodel.datasheet("H20")) == pytest.approx(64 / 7)


def test_the_fit_recovers_known_parameters_from_noisy_synthetic_data():
    truth = perfmodel.Params("synthetic", b_smem=96.0, f_tc=768.0, l_min=11.0, source="truth")
    rng = np.random.default_rng(0)
    points = [(c, perfmodel.predict(c, truth).cycles * (1 + 1e-3 * rng.standard_normal()))
              for c in (case(n, ops) for n in range(8, 257, 8) for ops in ("SS", "RS"))]
    fit = perfmodel.fit(points, perfmodel.datasheet("H100 SXM5"), "fitted")
    assert fit.params.b_smem == pytest.approx(96, rel=5e-3)
    assert fit.params.f_tc == pytest.approx(768, rel=5e-3)
    assert fit.params.l_min == pytest.approx(11, rel=5e-3)
    assert fit.rms < 0.2 and len(fit.residuals) == 64


def test_an_unknown_gpu_names_the_known_ones():
    with pytest.raises(SpecError, match="no datasheet figures for GPU 'B200': expected one of H100 SXM5"):
        perfmodel.datasheet("B200")


def test_swapab_reproduces_the_article_example_on_the_h20():
    advice = perfmodel.swapab(16, 64, 16, perfmodel.datasheet("H20"))
    unit = perfmodel.predict(case(16), perfmodel.datasheet("H20")).cycles  # T: one m64n16k16
    assert (advice.direct.cycles, advice.swapped.cycles) == (4 * unit, unit)
    assert advice.direct.instruction == "m64n64k16" and advice.swapped.instruction == "m64n16k16"
    assert advice.recommendation == "swap A and B"


def test_swapab_on_the_h100_gains_far_less():
    """The article says T either way on an H100; the model gives 32 against 20 cycles: the swapped
    instruction is shared-memory bound, so it saves 1.6x, not the H20's 4x."""
    advice = perfmodel.swapab(16, 64, 16, perfmodel.datasheet("H100 SXM5"))
    assert (advice.direct.cycles, advice.swapped.cycles) == (32, 20)
    assert advice.swapped.bound == "shared memory" and advice.speedup == pytest.approx(1.6)


def test_swapab_large_shapes_and_bad_sizes():
    advice = perfmodel.swapab(200, 512, 64, perfmodel.datasheet("H100 SXM5"))
    assert advice.direct.instruction == "m64n256k16" and advice.direct.count == 4 * 4 * 2
    odd = perfmodel.swapab(64, 1000, 16, perfmodel.datasheet("H100 SXM5")).direct  # 1000 = 3 x 256 + 232
    assert odd.instruction == "m64n256k16 and m64n232k16" and odd.count == 4
    huge = perfmodel.swapab(16, 1 << 20, 1 << 20, perfmodel.datasheet("H100 SXM5")).direct  # bounded work and text
    assert huge.count == (1 << 16) * (1 << 12) and len(huge.instruction) < 40
    assert perfmodel.swapab(64, 64, 16, perfmodel.datasheet("H20")).recommendation.startswith("either")
    with pytest.raises(SpecError, match="--m must be a positive size"):
        perfmodel.swapab(0, 64, 16, perfmodel.datasheet("H20"))


def test_the_per_type_fit_keeps_sparse_apart_and_ignores_other_layouts():
    """Synthetic intervals from the datasheet model with sparse floors of 15 and 17 (not the prior's), and
    a layout case given an absurd value: the sparse fit finds its floors, the dense fit sees neither."""
    import pandas as pd

    from harness.families.wgmma.cases import WgmmaCase
    from harness.families.wgmma.fitting import WgmmaModel

    from dataclasses import replace

    params = perfmodel.datasheet("H100 SXM5")
    truth = replace(params, l_sparse=15.0, l_sparse_wide=17.0)  # sparse floors unlike the prior's 16 and 18
    rows = []
    for sparse in (False, True):
        for ops in ("SS", "RS"):
            for n in range(8, 257, 8):
                case = WgmmaCase(64, n, 32 if sparse else 16, "f16", "f16", "f32", ops, sparse)
                rows.append((str(case), perfmodel.predict(case, truth).cycles))
    rows.append(("wgmma.mma_async.m64n64k16.f32.f16.f16.SS.K-SW128", 1000.0))
    frame = pd.DataFrame(rows, columns=["case_id", "value"]).assign(metric="issue_interval_cycles")
    fits = WgmmaModel().fit(frame, "NVIDIA H100 80GB HBM3", "test")
    assert sorted(fits.fits) == ["f16/f32", "f16/f32 sparse"]
    dense, sparse = fits.fits["f16/f32"], fits.fits["f16/f32 sparse"]
    assert len(dense.residuals) == 64 and dense.rms < 1e-9 and dense.params.l_min == pytest.approx(13)
    assert sparse.params.l_sparse == pytest.approx(15) and sparse.params.l_sparse_wide == pytest.approx(17)
    assert sparse.rms < 1e-9
    table = fits.parameters.set_index("types")
    assert table.loc["f16/f32 sparse", "crossover_N_SS"] == float("inf")  # SS sparse: shared memory bound


def test_the_mma_model_fit_recovers_its_constants_from_synthetic_intervals():
    """Intervals, best throughputs and latencies made from known constants (not Hopper's), every native
    mma form of the family: the fit gives them back; emulated forms (fp8, s4, m8n8k4 f16) are not fitted."""
    import json

    import pandas as pd

    from harness.registry import FAMILIES
    from harness.families.mma import model as mma_model

    truth = mma_model.MmaParams("synthetic", 768.0, 3.0, 5.0, 6.0, 8.0, 4.0, "truth")
    rows = []
    for case in FAMILIES["mma"].cases():
        for metric in mma_model.MmaModel.metrics:
            value = mma_model.predict_mma(case, metric, truth)
            if value is None:
                value = 1000.0  # an emulated form: absurd, and must not move the fit
            rows.append((case.case_id, metric, json.dumps({"warps": 8}), value))
    frame = pd.DataFrame(rows, columns=["case_id", "metric", "launch", "value"])
    report = FAMILIES["mma"].model.fit(frame, "NVIDIA H100 80GB HBM3", "test")
    p = report.params
    assert (p.f_tc, p.c_dense, p.c_sparse, p.floor) == pytest.approx((768.0, 3.0, 5.0, 6.0))
    assert (p.latency_base, p.latency_per_cycle) == pytest.approx((8.0, 4.0))
    assert report.residuals.residual.abs().max() < 1e-6
    assert not any("e4m3" in c or "m8n8k4" in c for c in report.residuals.case_id)
    # the H100 datasheet prior: m16n8k16 f16 holds a tensor core 2 + 4096 / 1024 = 6 cycles -> 4 x 4096 / 6
    prior = FAMILIES["mma"].model.prior("H100 SXM5")
    case = FAMILIES["mma"].parse("mma.sync.m16n8k16.row.col.f32.f16.f16.f32")
    assert mma_model.predict_mma(case, "sm_throughput", prior) == pytest.approx(4 * 4096 / 6)


def test_the_loader_model_finds_the_bank_limit_and_each_one_warp_rate():
    import json

    import pandas as pd

    from harness.registry import FAMILIES

    truth = {"ldmatrix.sync.m8n8.x1.shared.b16": 20.0, "stmatrix.sync.m8n8.x4.shared.b16": 45.0}
    rows = [(case_id, "sm_throughput", json.dumps({"warps": w}), min(100.0, w * r1))
            for case_id, r1 in truth.items() for w in (1, 2, 4, 8, 16, 32)]
    report = FAMILIES["loaders"].model.fit(pd.DataFrame(rows, columns=["case_id", "metric", "launch", "value"]),
                                           "H100", "test")
    assert report.b_bank == pytest.approx(100.0) and report.one_warp == pytest.approx(truth)
    assert report.residuals.residual.abs().max() < 1e-9


def test_a_fit_flipped_to_fit_80_columns_keeps_a_text_parameter_as_a_row(capsys, monkeypatch):
    """Issue 46, item 6: `bench model --run 51` at 80 columns folded mma's latency ("10.22 + 3.437/cycle", a text
    parameter) into the heading beside the GPU's name, and dropped its row; an empty parameter read "None" there."""
    import pandas as pd

    from harness import output
    from harness.cli.modelling import _model_summary

    monkeypatch.setattr(output, "terminal_width", lambda: 80)
    fit = pd.DataFrame({"gpu": ["NVIDIA H100 80GB HBM3"], "types": ["f16/f32"], "F_tc": [1024.0],
                        "latency": ["10.22 + 3.437/cycle"], "floor_wide": [None], "rms_interval": [5.00327e-05],
                        "a_parameter_with_a_long_name_to_make_it_wide": [1.0], "another_long_one_too": [2.0]})
    _model_summary("mma", fit, pd.DataFrame(), False, "in sample", "in sample")
    lines = capsys.readouterr().out.splitlines()
    assert lines[2].split() == ["parameter", "NVIDIA", "H100", "80GB", "HBM3", "f16/f32"], lines
    rows = {line.split()[0]: line.split()[1:] for line in lines[4:]}
    assert rows["latency"] == ["10.22", "+", "3.437/cycle"] and rows["F_tc"] == ["1024"], rows
    assert rows["floor_wide"] == [] and "None" not in "\n".join(lines)
