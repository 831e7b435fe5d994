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


def test_where_the_model_does_not_fit_sparse_rs():
    """Sparse SS follows 16 + N/2 exactly; sparse RS below N = 64 does not (the paper: 16, 18, 18)."""
    params = perfmodel.datasheet("H800 PCIe")
    assert tuple(perfmodel.predict(case(n, sparse=True), params).cycles for n in N_VALUES) == PAPER_SPARSE_SS
    rs = [perfmodel.predict(case(n, "RS", sparse=True), params).cycles for n in (8, 16, 32)]
    assert rs == [13, 13, 16]
    assert rs != list(PAPER_SPARSE_RS)


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
    """Synthetic intervals from the datasheet model, except sparse RS whose floor is 16 (measured on H100
    and H200) and a layout case given an absurd value: the dense fit must not see either."""
    import pandas as pd

    from harness.families.wgmma.cases import WgmmaCase
    from harness.families.wgmma.fitting import WgmmaModel

    params = perfmodel.datasheet("H100 SXM5")
    rows = []
    for sparse in (False, True):
        for ops in ("SS", "RS"):
            for n in range(8, 257, 8):
                case = WgmmaCase(64, n, 32 if sparse else 16, "f16", "f16", "f32", ops, sparse)
                value = perfmodel.predict(case, params).cycles
                if sparse and ops == "RS":
                    value = max(value, 16.0)
                rows.append((str(case), value))
    rows.append(("wgmma.mma_async.m64n64k16.f32.f16.f16.SS.K-SW128", 1000.0))
    frame = pd.DataFrame(rows, columns=["case_id", "value"]).assign(metric="issue_interval_cycles")
    fits = WgmmaModel().fit(frame, "NVIDIA H100 80GB HBM3", "test")
    assert sorted(fits.fits) == ["f16/f32", "f16/f32 sparse"]
    dense, sparse = fits.fits["f16/f32"], fits.fits["f16/f32 sparse"]
    assert len(dense.residuals) == 64 and dense.rms < 1e-9 and dense.params.l_min == pytest.approx(13)
    assert sparse.params.l_min == pytest.approx(16) and sparse.rms < 1e-9
    table = fits.parameters.set_index("types")
    assert table.loc["f16/f32 sparse", "crossover_N_SS"] == float("inf")  # SS sparse: shared memory bound
