"""Issue 45 section 5: the worklog's GEMM figures by their protocol, on the CPU. The case dimensions (the measured
problem's inputs, the protocol) and their ids, the suite, the burst method driven by a scripted launcher and NVML
reader, the simulated GPU's answers, the measured problem's checks, the worklog's figures mapped at 4096^3 only, and
the analysis in MHz and watts (harness/families/gemm/protocol.py)."""

import csv
import time

import numpy as np
import pytest

from harness import published as references
from harness.errors import SpecError
from harness.families.base import Work
from harness.families.gemm import FAMILY
from harness.families.gemm import configs, suite_cases as gemm_suite_cases
from harness.families.gemm import protocol
from harness.families.gemm.ids import parse
from harness.families.gemm.problem import measured_bound
from harness.measure import methods
from harness.measure.launch import Launch
from harness.measure.telemetry import BurstReadings, Instant, NullSampler, Reading, burst_state
from harness.measure.timing import RECORD_WORDS, TimingPolicy
from harness.measure.methods import whole_kernel
from harness.measure.methods.whole_kernel import SIMULATED_BURST_CLOCK_MHZ, SIMULATED_FRACTION
from harness.orchestration.fakegpu import simulated_device, synthetic_result
from harness.suites import suite_cases
from harness.verdicts import AGREES, CLOCK_NOT_PRINTED, DISAGREES, EXPLAINED

BEST_4096 = "gemm.f16.4096x4096x4096.tile128x256x64.s3.wg2.setmaxnreg.cluster2.persistent-grouped.tmastore"
CUBLAS_4096 = "cublas.f16.4096x4096x4096"
WORKLOG_CSV = references.DATA / "article_hgemm_worklog_h100.csv"
REAL_SLEEP = time.sleep  # before a test replaces the module's sleep


def _worklog_rows() -> list[dict]:
    with WORKLOG_CSV.open(newline="") as f:
        return list(csv.DictReader(f))


def _printed(instruction: str) -> float:
    """A figure as the shipped reference file prints it (never typed into a test)."""
    (row,) = [r for r in _worklog_rows() if r["instruction"] == instruction]
    return float(row["value"])


# -- ids and the suite -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("case_id,inputs,timing", [
    (BEST_4096, "random", "sustained"),
    (BEST_4096 + ".inputs-zero", "zero", "sustained"),
    (BEST_4096 + ".inputs-int.burst", "int", "burst"),
    (CUBLAS_4096 + ".burst", "random", "burst"),
    (CUBLAS_4096 + ".inputs-zero.burst", "zero", "burst"),
    ("gemm.bf16.2048x2048x2048.tile128x256x64.s3.wg2.setmaxnreg.cluster2.persistent-grouped.tmastore.inputs-int",
     "int", "sustained"),
])
def test_the_measured_problems_inputs_and_protocol_are_id_suffixes(case_id, inputs, timing):
    case = parse(case_id)
    assert (case.inputs, case.protocol, case.case_id) == (inputs, timing, case_id)


def test_the_default_inputs_and_protocol_leave_ids_and_params_as_stored():
    """Every case of the other suites keeps its id and params: no suffix, no new key."""
    others = [c for c in gemm_suite_cases.cases() if c not in gemm_suite_cases.protocol()]
    assert not [c.case_id for c in others if ".inputs-" in c.case_id or c.case_id.endswith(".burst")]
    assert not [c.case_id for c in others if {"inputs", "protocol"} & set(c.params())]
    assert parse(BEST_4096 + ".inputs-zero.burst").params()["inputs"] == "zero"
    assert parse(CUBLAS_4096 + ".burst").params() == {"dtype": "f16", "m": 4096, "n": 4096, "k": 4096,
                                                        "library": True, "protocol": "burst"}


@pytest.mark.parametrize("case_id,words", [
    (CUBLAS_4096 + ".inputs-ones", "inputs 'ones'"),
    ("cublaslt.e4m3.4096x4096x4096.inputs-zero", "f16 and bf16"),
    (CUBLAS_4096 + ".inputs-random", "not canonical"),
    (CUBLAS_4096 + ".burst.inputs-zero", "cannot parse"),  # inputs before the protocol, one spelling
])
def test_bad_inputs_or_protocols_are_refused_in_one_line(case_id, words):
    with pytest.raises(SpecError, match=words):
        parse(case_id)


def test_the_protocol_suite_is_the_best_pipeline_and_cublas_at_4096_by_inputs_and_protocol():
    ids = [c.case_id for c in suite_cases("gemm-protocol")]
    expected = [base + inputs + timing for timing in ("", ".burst") for inputs in ("", ".inputs-int", ".inputs-zero")
                for base in (BEST_4096, CUBLAS_4096)]
    assert ids == expected
    assert set(ids) <= {c.case_id for c in FAMILY.cases()}


# -- the plans -----------------------------------------------------------------------------------------------------

def test_a_burst_case_plans_the_worklogs_batch_after_idle_and_nothing_else():
    device = simulated_device()
    (spec,) = FAMILY.plan(parse(BEST_4096 + ".inputs-zero.burst"), device)
    assert (spec.idle_s, spec.burst_launches, spec.anchor, spec.energy, spec.counters) == (5.0, 8, None, False, ())
    assert spec.launch == {"problem": "measured", "protocol": "burst"} and spec.kernel == "probe_gemm"
    (library,) = FAMILY.plan(parse(CUBLAS_4096 + ".burst"), device)
    assert library.idle_s == 5.0 and not library.records
    # the sustained cases' plans are as before, whatever their inputs
    (sustained,) = FAMILY.plan(parse(BEST_4096 + ".inputs-zero"), device)
    assert sustained.idle_s == 0 and sustained.energy and sustained.counters and sustained.launch == {"problem": "measured"}


def test_a_burst_times_the_kernel_alone():
    with pytest.raises(ValueError, match="no anchor"):
        methods.WholeKernel("k", 1, 1, anchor="library", idle_s=5.0)
    assert [n for n, _ in methods.WholeKernel("k", 1, 1, idle_s=5.0).declares(Work(1, "FLOP"))] == \
        ["throughput_tflops", "peak_fraction", "power_burst_w"]


# -- the burst method, scripted --------------------------------------------------------------------------------------

class BatchProbe:
    """A launcher whose batches of `repeat` launches take `ms_per_launch` each at `clock_mhz` (its records say so)."""

    def __init__(self, ms_per_launch: float, clock_mhz: float):
        self.ms, self.clock = ms_per_launch, clock_mhz
        self.calls: list[tuple] = []

    def max_threads(self, kernel):
        return 1024

    def run(self, kernel, grid, block, iters, timing_words, repeat=1, graph=False):
        self.calls.append((kernel, repeat, graph))
        cycles = int(self.ms * 1e3 * self.clock)
        records = np.zeros((grid, RECORD_WORDS), dtype=np.int64)
        records[:, 1], records[:, 3] = cycles, int(self.ms * 1e6)
        timing = np.concatenate([records.ravel(), np.zeros(timing_words - records.size, dtype=np.int64)])
        return Launch(np.zeros(1, dtype=np.uint32), timing, self.ms * repeat)


class InstantReader:
    """A scripted NVML reader with an instantaneous power field."""

    def __init__(self, clock, watts):
        self.clock, self.watts = clock, watts

    def instant(self):
        return Instant(time.perf_counter(), self.clock, 0x4, self.watts)


class Sampled:
    def __init__(self, reader):
        self.reader = reader

    def burst(self):
        return BurstReadings(self.reader)


def test_a_burst_sleeps_then_times_one_batch_and_reads_nvml_while_it_runs(monkeypatch):
    class Slow(BatchProbe):  # a batch that lasts long enough on the host for the reader to see it
        def run(self, *args, **kw):
            REAL_SLEEP(0.01)
            return super().run(*args, **kw)

    slept = []
    monkeypatch.setattr(whole_kernel.time, "sleep", slept.append)
    probe = Slow(0.2, 1800.0)
    work = Work(2.0 * 4096 ** 3, "FLOP")
    ctx = methods.Context(probe, 132, TimingPolicy(), Sampled(InstantReader(1755.0, 512.0)), work, 4096.0)
    spec = methods.WholeKernel("probe_gemm", 132, 384, words=8, idle_s=5.0, burst_launches=8, bursts=3,
                               launch={"problem": "measured", "protocol": "burst"})
    metrics = {m.name: m for m in methods.run(spec, ctx)}
    assert slept == [5.0, 5.0, 5.0]  # idle before every burst, none before the untimed first batch
    assert probe.calls == [("probe_gemm", 8, False)] * 4  # plain launches, as a program makes them
    tflops = metrics["throughput_tflops"]
    assert np.allclose(tflops.samples, 8 * work.amount / (8 * 0.2e-3) / 1e12)
    assert tflops.sm_clock_mhz == pytest.approx(1800.0, rel=1e-3)  # the in-kernel clock, not NVML's
    assert tflops.gpu_state.sm_clock_mhz == 1755.0 and tflops.gpu_state.power_w == 512.0
    assert tflops.gpu_state.reasons == ("sw_power_cap",)
    assert np.allclose(metrics["power_burst_w"].samples, 512.0) and len(metrics["power_burst_w"].samples) == 3
    peak = 132 * 4096 * 1800e6 / 1e12
    assert np.allclose(metrics["peak_fraction"].samples, tflops.samples / peak, rtol=1e-3)


def test_a_burst_without_nvml_has_no_power(monkeypatch):
    monkeypatch.setattr(whole_kernel.time, "sleep", lambda s: None)
    ctx = methods.Context(BatchProbe(0.2, 1500.0), 4, TimingPolicy(), NullSampler(), Work(1e9, "FLOP"), None)
    metrics = methods.run(methods.WholeKernel("k", 4, 128, idle_s=1.0, bursts=2), ctx)
    assert [m.name for m in metrics] == ["throughput_tflops"] and metrics[0].gpu_state.samples == 0


def test_burst_readings_fall_back_to_a_readers_read_without_power():
    class Plain:
        def read(self):
            return Reading(1410.0, 2619.0, 690.0, 60.0, 0)

    with BurstReadings(Plain()) as readings:
        REAL_SLEEP(0.005)
    assert readings.readings and readings.power_w is None  # a 1-s average is not the burst's power
    state = burst_state(readings.readings)
    assert state.sm_clock_mhz == 1410.0 and state.power_w is None
    assert burst_state([]).samples == 0


# -- the simulated GPU ---------------------------------------------------------------------------------------------

def test_the_simulated_gpu_answers_a_burst():
    device = simulated_device()
    result = synthetic_result(parse(BEST_4096 + ".burst"), None, np.random.default_rng(0), device)
    found = {m.name: m for m in result.metrics}
    assert set(found) == {"throughput_tflops", "peak_fraction", "power_burst_w"}
    # the kernel's fraction of the peak at a cool board's clock: what a burst answers, not a sustained round's
    rate = SIMULATED_FRACTION * 4096 * device.sm_count * SIMULATED_BURST_CLOCK_MHZ * 1e6 / 1e12
    assert found["throughput_tflops"].value == pytest.approx(rate, rel=1e-3)
    assert found["throughput_tflops"].launch == {"problem": "measured", "protocol": "burst"}
    library = synthetic_result(parse(CUBLAS_4096 + ".inputs-zero.burst"), None, np.random.default_rng(0), device)
    assert {m.name for m in library.metrics} == {"throughput_tflops", "power_burst_w"}  # no clock of its own


# -- the measured problem's checks --------------------------------------------------------------------------------

def _int_problem(k=4096, seed=1):
    rng = np.random.default_rng(seed)
    a = rng.integers(-2, 3, (64, k)).astype(np.float64)
    b = rng.integers(-2, 3, (48, k)).astype(np.float64)
    return a, b, a @ b.T


def test_integer_inputs_are_checked_exactly_where_the_sum_fits_f16():
    a, b, exact = _int_problem()
    bound = measured_bound(np, "int", "f16", exact)
    right = exact.astype(np.float16).astype(np.float64)  # the f32 sum rounded once to f16, as the kernel stores it
    assert (np.abs(right - exact) <= bound).all()
    assert (bound[np.abs(exact) <= 2048] == 0).all()
    wrong = right.copy()
    wrong[0, 0] += 1  # one unit off in a sum that fits: caught
    assert (np.abs(wrong - exact) > bound).sum() == 1
    dropped = a[:, 64:] @ b[:, 64:].T  # the first k-block of 64 dropped
    assert (np.abs(dropped - exact) > bound).mean() > 0.9


def test_integer_sums_beyond_the_types_integers_are_within_half_an_ulp():
    exact = np.array([2049.0, 4097.0, -12345.0, 300.0])
    bound = measured_bound(np, "int", "f16", exact)
    assert (np.abs(exact.astype(np.float16).astype(np.float64) - exact) <= bound).all()
    assert bound[3] == 0 and measured_bound(np, "int", "bf16", exact)[3] > 0  # bf16 holds integers to 256 only


def test_zero_inputs_must_give_exactly_zero():
    reference = np.zeros((8, 8))
    bound = measured_bound(np, "zero", "f16", reference)
    ours = np.zeros((8, 8))
    ours[3, 5] = 2.0 ** -24  # f16's smallest subnormal: still wrong
    assert (np.abs(ours - reference) > bound).sum() == 1
    assert not (np.abs(-0.0 - reference) > bound).any()


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_the_measured_inputs_are_drawn_as_their_kind_and_their_exact_product_is_an_integer_one(dtype):
    """gpu.py's drawing of integers and zeros and their reference take an array module: NumPy here, CuPy on the GPU."""
    from harness.families.gemm.values import as_float, exact_product, measured_values

    a = measured_values(np, 32, 256, dtype, 7, "int")
    b = measured_values(np, 16, 256, dtype, 8, "int")
    values = as_float(np, a, dtype)
    assert set(np.unique(values)) == {-2.0, -1.0, 0.0, 1.0, 2.0}
    ints_a = values.astype(np.int64)
    ints_b = as_float(np, b, dtype).astype(np.int64)
    assert (exact_product(np, a, b, dtype) == ints_a @ ints_b.T).all()
    zeros = measured_values(np, 8, 64, dtype, 7, "zero")
    assert zeros.dtype == np.uint16 and not zeros.any()  # +0.0's bits


def test_random_inputs_keep_the_cublas_tolerance():
    reference = np.array([0.0, 100.0])
    assert measured_bound(np, "random", "f16", reference) == pytest.approx([0.05, 0.05 + 100 / 128])


# -- the worklog's figures at 4096^3 only -------------------------------------------------------------------------

def test_the_worklogs_figures_are_mapped_at_4096_only():
    rows = [r for r in references.load() if r.source == "hgemm-worklog-h100"]
    assert rows and {(r.m, r.n, r.k) for r in rows} == {(4096, 4096, 4096)}
    assert len(rows) == len(_worklog_rows())  # one figure a step, as printed
    mapped = {}
    for r in rows:
        mapped.setdefault(r.case_id, set()).add(r.value)
    assert mapped[BEST_4096] == {_printed("hgemm worklog step 10")}
    assert mapped[CUBLAS_4096] == {_printed("hgemm worklog cublas")}
    # steps 8 and 9 (no zeroing, ordered stores) are one configuration of ours
    step8 = configs.pipeline("f16", (4096,) * 3, **configs.LADDER["8"]).case_id
    assert mapped[step8] == {_printed("hgemm worklog step 8"), _printed("hgemm worklog step 9")}
    # step 11 is step 10's configuration walking its tiles along a Hilbert curve
    assert mapped[BEST_4096.replace("persistent-grouped", "persistent-hilbert")] == {_printed("hgemm worklog step 11")}
    unmapped = {r.notes.split(":")[0]: r.unmapped_reason for r in rows if not r.case_id}
    assert set(unmapped) == {"step 5a"}  # step 1 is the ladder family's reg-tiled case


def test_bench_references_lists_the_worklog_at_4096_only(tmp_path):
    from click.testing import CliRunner

    from harness.cli import cli
    from harness.db.store import Store

    db = str(tmp_path / "r.db")
    Store.open(db, create=True, references=references.shipped()).close()
    result = CliRunner().invoke(cli, ["references", "--db", db, "--format", "csv"])
    assert result.exit_code == 0, result.output
    line = [l for l in result.output.splitlines() if l.startswith("hgemm-worklog-h100")]
    assert line and line[0].split(",")[-2] == str(len([r for r in _worklog_rows()
                                                       if r["instruction"] != "hgemm worklog step 5a"]))
    result = CliRunner().invoke(cli, ["references", "--unmapped", "--all", "--db", db, "--format", "csv"])
    worklog = [l for l in result.output.splitlines() if l.startswith("hgemm-worklog-h100")]
    assert len(worklog) == 1 and not any("8192" in l or "764" in l for l in worklog)


# -- the analysis, in MHz and watts ------------------------------------------------------------------------------

def _measured(rows):
    """run_rows.measured's rows for (case id, metric, value, in-kernel clock, NVML clock)."""
    import pandas as pd

    return pd.DataFrame([{"family": "gemm", "case_id": c, "metric": m, "value": v, "sm_clock_mhz": k,
                          "nvml_sm_clock_mhz": n, "sm_count": 132, "launch": "{}"} for c, m, v, k, n in rows])


def _refs():
    import pandas as pd

    return pd.DataFrame([{"source": r.source, "case_id": r.case_id, "m": r.m, "metric": r.metric, "value": r.value,
                          "notes": r.notes} for r in references.load() if r.source == "hgemm-worklog-h100"])


def _run(ours_sustained=(660.0, 1330.0, 699.0), ours_burst=(760.0, 1560.0, 520.0), lib=(690.0, 1400.0, 700.0),
         lib_burst=(700.0, 1450.0, 600.0)):
    nan = float("nan")
    rows = []
    for suffix, (tflops, mhz, watts), burst in ((BEST_4096, ours_sustained, False),
                                                (BEST_4096 + ".burst", ours_burst, True)):
        rows += [(suffix, "throughput_tflops", tflops, mhz, mhz + 40), (suffix, "power_burst_w" if burst else
                                                                        "power_mean_w", watts, mhz, nan)]
    for suffix, (tflops, mhz, watts), burst in ((CUBLAS_4096, lib, False), (CUBLAS_4096 + ".burst", lib_burst, True)):
        rows += [(suffix, "throughput_tflops", tflops, nan, mhz), (suffix, "power_burst_w" if burst else
                                                                   "power_mean_w", watts, nan, nan)]
    rows.append((BEST_4096 + ".inputs-zero", "throughput_tflops", 720.0, 1480.0, nan))
    return _measured(rows)


def test_the_table_gives_each_protocol_its_clock_and_power_and_the_clock_each_figure_needs():
    found = protocol.table(_run())
    ours = found[found.contender == "ours"].set_index(["protocol", "inputs"])
    # 8 launches of 4096^3 at 760 TFLOPS last 1.4 ms: NVML's power (it changes about every 100 ms) cannot see them,
    # and its reading (the idle board's in run 152) is not shown as the kernel's
    burst = ours.loc[("burst", "random")]
    assert burst.clock_mhz == 1560.0 and burst.watts != burst.watts
    assert burst.power_from.startswith(f"none: a {8 * 2 * 4096 ** 3 / 760e12 * 1e3:.1f} ms batch") and "520 W" in \
        burst.power_from
    assert ours.loc[("sustained", "random")].clock_from == "in-kernel"
    lib = found[found.contender == "cuBLAS"].set_index(["protocol", "inputs"])
    assert lib.loc[("sustained", "random")].clock_from == "NVML" and lib.loc[("sustained", "random")].clock_mhz == 1400
    per_cycle = 660e12 / (132 * 1330e6)
    assert ours.loc[("sustained", "random")].per_cycle == pytest.approx(per_cycle)
    assert protocol.needed_mhz(764.0, per_cycle, 132) == pytest.approx(1330.0 * 764 / 660)


def test_each_published_figure_gets_a_verdict_in_mhz_and_watts():
    figures = {f.label: f for f in protocol.published(_refs())}
    assert {f.value for f in figures.values()} == {_printed("hgemm worklog step 10"), _printed("hgemm worklog step 11"),
                                                   _printed("hgemm worklog cublas")}
    step11 = next(f for f in figures.values() if f.value == _printed("hgemm worklog step 11"))
    cublas = next(f for f in figures.values() if f.contender == "cuBLAS")
    found = protocol.table(_run())
    # ours sustained 660 at 1330 MHz; the burst 760 at 1560: 764 is the burst's clock
    verdict, why = protocol.verdict(step11, found, 1980.0, 0.03)
    assert verdict == EXPLAINED and "1560 MHz" in why and "520 W" not in why and f"{1330 * 764 / 660:.0f} MHz" in why
    # cuBLAS 690 sustained against 716: within 3.6 %; its burst 700 (0.978 of it) explains it
    assert protocol.verdict(cublas, found, 1980.0, 0.03)[0] == EXPLAINED
    assert protocol.verdict(cublas, found, 1980.0, 0.04)[0] == AGREES
    # a burst no faster than the rounds: the clock it needs is one the GPU has, not reached here
    slow = protocol.table(_run(ours_burst=(662.0, 1335.0, 690.0)))
    assert protocol.verdict(step11, slow, 1980.0, 0.03)[0] == CLOCK_NOT_PRINTED
    # ... and one the GPU has not: it did more per cycle
    assert protocol.verdict(step11, slow, 1500.0, 0.03)[0] == DISAGREES
    # ours above it
    assert protocol.verdict(step11, protocol.table(_run(ours_sustained=(820.0, 1500.0, 700.0))), 1980.0, 0.03)[0] \
        == DISAGREES


def test_the_report_section_needs_the_protocol_suites_bursts():
    sections = protocol.sections(_run(), _refs(), 1980.0, 0.03)
    (heading, text, shown), (_, _, judged) = sections
    assert "by their protocol" in heading and "MHz for 764" in shown.columns and "W" in shown.columns
    assert len(judged) == 3 and set(judged.verdict) <= {AGREES, EXPLAINED, CLOCK_NOT_PRINTED, DISAGREES}
    sustained_only = _run()
    sustained_only = sustained_only[~sustained_only.case_id.str.endswith(".burst")]
    assert protocol.sections(sustained_only, _refs(), 1980.0, 0.03) == []


# -- end to end on the simulated GPU ---------------------------------------------------------------------------

def test_the_protocol_suite_runs_on_the_simulated_gpu_into_the_report_and_compare(tmp_path, monkeypatch, shared_cache):
    from harness.analysis import paper_verdicts, run_rows
    from harness.db.store import Store
    from harness.orchestration.run import execute, plan
    from harness.orchestration.worker import Worker

    monkeypatch.setenv("HOPPER_BENCH_BACKEND", "fake")
    db = str(tmp_path / "p.db")
    run_plan = plan("gemm-protocol", None)
    with Worker(0, watchdog_s=120) as worker:
        worker.start()
        outcome = execute(run_plan, db, worker)
    assert outcome.status == "complete" and {r.status for r in outcome.results} == {"valid"}
    store = Store.open(db)
    measured = run_rows.measured(store, 1)
    bursts = measured[measured.case_id.str.endswith(".burst")]
    assert set(bursts.metric) == {"throughput_tflops", "peak_fraction", "power_burst_w"}
    assert set(bursts.launch) == {'{"problem":"measured","protocol":"burst"}'}
    refs = store.query("SELECT source, case_id, m, metric, value, notes FROM reference_figures")
    (_, _, shown), (_, _, judged) = protocol.sections(measured, refs, 1980.0, 0.03)
    assert len(shown) == 12 and len(judged) == 3
    # bench compare, on a run of the worklog's GPU model (the simulated device renamed), sets its step 10 and its
    # cuBLAS beside our default cases at 4096^3, and nothing else
    store.close()
    import sqlite3

    with sqlite3.connect(db) as raw:
        raw.execute("UPDATE devices SET name = 'NVIDIA H100 80GB HBM3'")
        # as on a GPU, the library writes no in-kernel clock: its rounds' NVML clock stands in
        raw.execute("""UPDATE measurement_rows SET sm_clock_mhz = NULL WHERE id IN
                       (SELECT measurement_id FROM results WHERE case_id LIKE 'cublas.%')""")
    store = Store.open(db)
    against = paper_verdicts.against_paper(store, 1)
    worklog = against[against.paper_gpu == "H100 SXM5"]
    assert dict(zip(worklog.case_id, worklog.paper)) == {BEST_4096: _printed("hgemm worklog step 10"),
                                                          CUBLAS_4096: _printed("hgemm worklog cublas")}
    library = worklog[worklog.case_id == CUBLAS_4096].iloc[0]
    assert library.clock_source == "NVML (no in-kernel clock)" and np.isfinite(library.comparable)
    from harness.analysis.figure_gpus import MAX_SM_CLOCK_MHZ

    top = MAX_SM_CLOCK_MHZ["H100 SXM5"]  # the figure's GPU's highest clock (both have 132 SMs)
    assert library.comparable == pytest.approx(library.value * top / library.clock_mhz)


def test_the_sites_finding_judges_each_published_figure_per_gpu_from_its_newest_protocol_run(tmp_path):
    """The site: per GPU model, the newest run holding a burst; each worklog figure's verdict as the report's, and
    the figure drawn. A GPU without a burst gets no line."""
    from types import SimpleNamespace

    import pandas as pd

    from harness.families.gemm.findings import protocol_findings

    refs = _refs()
    h100 = _run().assign(gpu_name="NVIDIA H100 80GB HBM3", run_id=7)
    other = _run()
    other = other[~other.case_id.str.endswith(".burst")].assign(gpu_name="NVIDIA H200", run_id=8)
    latest = pd.concat([h100, other])
    store = SimpleNamespace(query=lambda sql: refs if "reference_figures" in sql else pd.DataFrame({"m": [1980.0]}))
    (head, text, path), = protocol_findings(SimpleNamespace(store=store, latest=latest, directory=tmp_path))
    assert path.exists() and "protocol" in head
    judged = [line for line in text if line.startswith("NVIDIA H100 80GB HBM3 (run 7): the worklog's")]
    assert len(judged) == 3 and not any("H200" in line for line in text)
    step11 = next(f for f in protocol.published(refs) if f.value == _printed("hgemm worklog step 11"))
    verdict, why = protocol.verdict(step11, protocol.table(h100), 1980.0, 0.03)
    assert f"{step11.value:.0f} TFLOPS: {verdict} ({why})." in " ".join(judged)
    assert protocol_findings(SimpleNamespace(store=store, latest=other, directory=tmp_path)) == []
