"""The overlap model (harness/families/simt/model.py): its equations against values worked by hand, and its fit
against a synthetic run made with known parameters (the fit must find them again)."""

import json

import pandas as pd
import pytest

from harness.families.simt import model
from harness.families.simt.overlap import cases
from harness.families.simt.model import Params

P = Params(f_inf=0.8, g=4.0, phi=0.25, h=14.0, rho=0.9, h_rs=20.0, rho_rs=1.0)


def test_units_come_from_the_sass():
    assert [model.unit(op) for op in ("ex2.approx.ftz.f32", "fma.rn.f32", "fma.rn.f16x2", "shfl.sync.bfly.b32",
                                      "cvt.rn.bf16x2.f32")] == ["mufu", "ffma", "other", "shuffle", "other"]


def test_equations_by_hand():
    # f(64) = 0.8 (1 - 4/64) = 0.75: one port cycle in 4 is free
    assert model.port_share(P, 64) == pytest.approx(0.75)
    assert model.predict_simt(P, "other", "f16.SS", 64, 1.1) == pytest.approx(4.0)  # max(1.1, 1 / 0.25)
    assert model.predict_simt(P, "other", "f16.SS", 64, 5.0) == pytest.approx(5.0)  # slower than the free cycles
    assert model.predict_simt(P, "shuffle", "f16.SS", 64, 4.6) == pytest.approx(16.0)  # 4 passes / 0.25
    assert model.predict_simt(P, "mufu", "f16.SS", 64, 8.0) == pytest.approx(11.0)  # 8 + 0.75 / 0.25
    # wgmma beside FFMA: max(W0, h + rho W0)
    assert model.predict_wgmma(P, "ffma", "f16.SS", 32) == pytest.approx(42.8)  # 14 + 28.8
    assert model.predict_wgmma(P, "ffma", "e4m3.SS", 128) == pytest.approx(129.2)  # 14 + 115.2
    assert model.predict_wgmma(P, "ffma", "f16.RS", 32) == pytest.approx(52.0)  # 20 + 32
    assert model.predict_wgmma(P, "ffma", "f16.SS", 512) == 512  # 14 + 460.8 < 512: the tensor core's own
    assert model.predict_wgmma(P, "mufu", "f16.RS", 32) == 32
    # FFMA beside it: W = 42.8, f = 0.8 (1 - 4/42.8) = 0.7252336, S = 1.1 / (1 - 0.25 f) = 1.1 / 0.8186916
    assert model.predict_simt(P, "ffma", "f16.SS", 32, 1.1) == pytest.approx(1.343607, abs=2e-6)


def _synthetic_frame(p: Params) -> pd.DataFrame:
    """A run's overlap rows made by the model itself with parameters p, with the inputs a run would hold."""
    alone = {"ex2.approx.ftz.f32": 8.07, "fma.rn.f32": 1.10, "fma.rn.f16x2": 1.12, "shfl.sync.bfly.b32": 4.63,
             "cvt.rn.bf16x2.f32": 2.09}
    rows = []
    for case in cases():
        w0 = case.n / 2 if case.n else None
        if case.n is None:
            rows.append((case.base_id, "simt", alone[case.op]))
        elif case.op is None:
            rows.append((case.base_id, "wgmma", w0))
        else:
            u = model.unit(case.op)
            rows.append((case.base_id, "wgmma", model.predict_wgmma(p, u, case.form, w0)))
            rows.append((case.base_id, "simt", model.predict_simt(p, u, case.form, w0, alone[case.op])))
    return pd.DataFrame([{"case_id": c, "metric": "issue_interval_cycles", "launch": json.dumps({"role": r}),
                          "value": v} for c, r, v in rows])


def test_fit_recovers_known_parameters():
    frame = _synthetic_frame(P)
    report = model.OverlapModel().fit(frame, "synthetic", "fitted to a synthetic run")
    for name, want in vars(P).items():
        assert getattr(report.params, name) == pytest.approx(want, rel=0.01, abs=0.02), name
    assert report.residuals.relative.abs().max() < 1e-3
    assert set(report.residuals["sample"]) == {"in-sample"}


def test_transfer_is_out_of_sample_and_sees_a_different_gpu():
    fitted = model.OverlapModel().fit(_synthetic_frame(P), "GPU A", "fitted to run 1")
    other = _synthetic_frame(Params(0.6, 2.0, 0.5, 10.0, 0.95, 16.0, 1.1))
    moved = model.OverlapModel().transfer(fitted, other, "GPU B", "run 1")
    assert set(moved.residuals["sample"]) == {"out-of-sample (GPU A, run 1)"}
    assert moved.gpu == "GPU B" and moved.params == fitted.params
    # the other GPU's ports are not this one's: its rows miss by more than a per cent
    assert moved.residuals.relative.abs().max() > 0.05


def test_nothing_to_fit():
    frame = _synthetic_frame(P)
    assert model.OverlapModel().fit(frame[frame.case_id.str.endswith("alone")], "x", "y") is None


def test_a_run_without_rs_cases_predicts_rs_as_ss():
    frame = _synthetic_frame(P)
    ss_only = frame[~frame.case_id.str.contains(r"\.RS")]
    fitted = model.OverlapModel().fit(ss_only, "x", "y").params
    assert (fitted.h_rs, fitted.rho_rs) == (fitted.h, fitted.rho)
    assert fitted.h == pytest.approx(P.h, rel=0.01)


def test_docs_simt_quotes_the_fits_of_the_runs_of_record():
    """docs/simt.md, "The overlap model": its parameters, its table of misses and the misses its bullets name,
    computed here from the shipped results.db."""
    import re
    from pathlib import Path

    import numpy as np

    from harness.analysis.models import fit_run
    from harness.db.store import Store

    root = Path(__file__).resolve().parents[1]
    if not (root / "results.db").exists():
        pytest.skip("no shipped results.db in this checkout")
    doc = " ".join((root / "docs" / "simt.md").read_text().split())
    with Store.open(str(root / "results.db"), read_only=True) as store:
        fits = {(run, by): fit_run(store, run, fit_run_id=by)["simt"]
                for run, by in ((117, None), (116, None), (117, 116), (144, 117))}
    p = fits[(117, None)].params
    assert (f"f_inf {p.f_inf:.2f}, g {p.g:.1f}, phi {p.phi:.2f}, h {p.h:.1f}, rho {p.rho:.2f}, h_RS {p.h_rs:.1f}, "
            f"rho_RS {p.rho_rs:.2f}") in doc
    for (run, by), scored in (((117, None), "run 117, in-sample"), ((116, None), "run 116, in-sample"),
                              ((117, 116), "run 117: RS and e4m3 out-of-sample"),
                              ((144, 117), "run 144 (H200): the other GPU, out-of-sample")):
        miss = fits[(run, by)].residuals.relative.abs()
        assert (f"| {scored} | {len(miss)} | {100 * np.median(miss):.1f} % | {100 * miss.max():.1f} % | "
                f"{int((miss > 0.05).sum())} |") in doc, (run, by)
    rows = fits[(117, None)].residuals.set_index(["case_id", "launch"])
    worst = rows.loc[("simt.overlap.shfl.sync.bfly.b32.m64n64k16.RS", "role=simt")]
    assert worst.relative == rows.relative.abs().max() * np.sign(worst.relative)  # the worst, as the doc says
    assert f"{worst.measured:.1f} cycles measured, {worst.fitted:.1f} predicted ({100 * abs(worst.relative):.0f} %" in doc
    ss = rows.loc[("simt.overlap.shfl.sync.bfly.b32.m64n64k16", "role=simt")]
    assert f"same N ({ss.measured:.1f})" in doc
    moved = fits[(117, 116)].residuals.set_index(["case_id", "launch"])
    rs = [moved.loc[(f"simt.overlap.fma.rn.f32.m64n{n}k16.RS", "role=wgmma")] for n in (64, 256)]
    assert (f"predicted at {rs[0].fitted:.1f} and {rs[1].fitted:.0f} cycles where RS measures {rs[0].measured:.1f} "
            f"and {rs[1].measured:.0f} (misses of {100 * rs[0].relative:.0f} % and {100 * rs[1].relative:.0f} %)") in doc
    assert f"rho_RS - rho is about {p.rho_rs - p.rho:.2f}" in doc
    port = rows[rows.model.str.contains(r"\((?:other|shuffle) beside") & (rows.index.get_level_values(1) == "role=simt")]
    n = port.index.get_level_values(0).str.extract(r"m64n(\d+)k", expand=False).astype(int).to_numpy()
    at128 = port.relative[n == 128]
    others = port.relative[(n != 128)].drop(("simt.overlap.shfl.sync.bfly.b32.m64n64k16.RS", "role=simt"))
    assert f"at N = 128 are {100 * at128.min():.1f}-{100 * at128.max():.1f} % slower" in doc
    assert f"miss by at most {100 * others.abs().max():.1f} %" in doc
    e4m3 = moved[moved.index.get_level_values(0).str.contains("e4m3")].relative.abs().max()
    assert f"predicts its rows within {100 * e4m3:.1f} %" in doc


def test_tma_cases_take_their_own_alone_sides_and_are_never_fitted():
    frame = _synthetic_frame(P)
    extra = []
    for case_id, role, value in (("simt.overlap.fma.rn.f32.alone.tma", "simt", 1.2),  # inputs with TMA traffic
                                 ("simt.overlap.none.m64n64k16.tma", "wgmma", 33.0),
                                 ("simt.overlap.fma.rn.f32.m64n64k16.tma", "wgmma", 500.0),  # far off: not fitted
                                 ("simt.overlap.fma.rn.f32.m64n64k16.tma", "simt", 1.5),
                                 ("simt.overlap.fma.rn.f32.m64n64k16.tma", "tma", 200.0)):
        extra.append({"case_id": case_id, "metric": "issue_interval_cycles", "launch": json.dumps({"role": role}),
                      "value": value})
    report = model.OverlapModel().fit(pd.concat([frame, pd.DataFrame(extra)], ignore_index=True), "x", "y")
    for name, want in vars(P).items():
        assert getattr(report.params, name) == pytest.approx(want, rel=0.01, abs=0.02), name
    rows = report.residuals[report.residuals.case_id.str.endswith(".tma")].set_index("launch")
    assert set(rows["sample"]) == {"out-of-sample (TMA: never fitted)"} and len(rows) == 2
    assert rows.loc["role=wgmma", "fitted"] == pytest.approx(max(33.0, 14 + 0.9 * 33.0), abs=1e-3)  # W0 = 33 with TMA


def test_the_tma_overlap_table_in_docs_simt_comes_from_run_138():
    """docs/simt.md's table of run 138: each cell is the run's median for that case and side."""
    import json
    from pathlib import Path

    import harness

    root = Path(__file__).resolve().parents[1]
    if not (root / "results.db").exists():
        pytest.skip("no shipped results.db in this checkout")
    rows = harness.results(str(root / "results.db"), run_id=138, metric="issue_interval_cycles")
    role = [(json.loads(x) if isinstance(x, str) else (x or {})).get("role") for x in rows.launch]
    value = {(c, r): v for c, r, v in zip(rows.case_id, role, rows.value)}
    text = " ".join((root / "docs" / "simt.md").read_text().split())
    alone = value[("simt.overlap.none.alone.tma", "tma")]
    assert f"| nothing | {alone:.1f} ({8192 / alone:.1f} B/cycle) |" in text
    assert f"| wgmma N = 256 alone | {value[('simt.overlap.none.m64n256k16.tma', 'tma')]:.1f} |" in text
    for label, op in (("FFMA", "fma.rn.f32"), ("HFMA2", "fma.rn.f16x2"), ("ex2", "ex2.approx.ftz.f32")):
        line = (f"| {label} alone | {value[(f'simt.overlap.{op}.alone.tma', 'tma')]:.1f} | "
                f"{value[(f'simt.overlap.{op}.alone.tma', 'simt')]:.2f} ({value[(f'simt.overlap.{op}.alone', 'simt')]:.2f}) |")
        assert line in text, line
    both = "simt.overlap.fma.rn.f32.m64n256k16"
    assert (f"| FFMA and wgmma N = 256 | {value[(both + '.tma', 'tma')]:.1f} | {value[(both + '.tma', 'simt')]:.2f} "
            f"({value[(both, 'simt')]:.2f}) | {value[(both + '.tma', 'wgmma')]:.2f} ({value[(both, 'wgmma')]:.2f}) |") in text
    assert f"fall to {100 * alone / value[(both + '.tma', 'tma')]:.0f} %" in text
    assert f"keep {100 * alone / value[('simt.overlap.none.m64n256k16.tma', 'tma')]:.0f} % of their rate" in text
