"""One conformance test over every registered family (docs/architecture.md, "Families as plug-ins"):
every case id round-trips, renders, compiles for sm_90a through NVRTC, meets its SASS expectation (an
anchor, a library call: has no source and launches only its call), has checks that a correct output passes
and a poisoned one fails, and runs end to end on the simulated GPU into a temporary database."""

import importlib

import numpy as np
import pytest

from harness.anchors import KERNEL, VERIFY, has_probe
from harness.errors import SpecError
from harness.build.compile import compile_many
from harness.build.sass import disassemble_many
from harness.registry import probe_source
from harness.registry import FAMILIES
from harness.orchestration.runner import declared_metrics, sass_check
from harness.measure.validate import compare
from harness.registry import parse_case_id

from gpu.sample import full_sweep
from sweep import swept, write_record

CASES = [case for family in FAMILIES.values() for case in family.cases()]
PROBES = [case for case in CASES if has_probe(case)]  # the rest are anchors: library calls, no template


def every_case(family: str, check, cases: list | None = None) -> None:
    """`check(case)` on every case of `family` (or on `cases`), then one failure naming every case that failed
    and why. One test per family and check, not one per case: some 9,000 items cost pytest minutes of overhead
    on a 2-core CI machine, and the message still names each failing case id (select one with -k FAMILY)."""
    failures, cases = [], FAMILIES[family].cases() if cases is None else cases
    for case in cases:
        try:
            check(case)
        except Exception as error:  # an assertion or anything else a case raises: noted, the rest checked
            text = str(error).strip().splitlines()
            failures.append(f"{case}: {type(error).__name__}: {text[0] if text else ''}")
    assert not failures, f"{len(failures)} of {len(cases)} {family} cases failed:\n" + "\n".join(failures)


def test_a_sweep_names_every_case_that_fails_and_checks_the_rest():
    """every_case goes on past a failing case and its one failure names each failing case id and why."""
    cases = FAMILIES["mma"].cases()
    bad, seen = {str(cases[0]), str(cases[-1])}, []

    def check(case):
        seen.append(str(case))
        assert str(case) not in bad, "planted"
        if str(case) == str(cases[1]):
            raise KeyError("not built")

    with pytest.raises(AssertionError) as failed:
        every_case("mma", check)
    message = str(failed.value)
    assert seen == [str(c) for c in cases] and f"3 of {len(cases)} mma cases failed" in message
    assert all(f"{c}: AssertionError: planted" in message for c in bad) and f"{cases[1]}: KeyError" in message
    every_case("mma", lambda case: None)


def test_every_family_has_cases_suites_and_distinct_ids():
    assert set(FAMILIES) >= {"wgmma", "mma"}
    for family in FAMILIES.values():
        assert family.cases() and family.suites(), family.name
        assert parse_case_id(family.example_id).family == family.name
    assert len({c.case_id for c in CASES}) == len(CASES)


def id_round_trips_and_the_case_is_legal(case):
    assert parse_case_id(case.case_id) == case
    FAMILIES[case.family].check(case)
    assert case.params() and all(k in ("instruction", "m", "n", "k", "dtype_a", "dtype_b", "dtype_acc", "operands",
                                       "sparse", "layout") for k in case.columns())


@pytest.mark.parametrize("family", FAMILIES)
def test_ids_round_trip_and_every_case_is_legal(family):
    every_case(family, id_round_trips_and_the_case_is_legal)


def test_rendered_sources_are_complete_and_distinct():
    sources = [probe_source(c) for c in PROBES]
    assert all("${" not in s.text and s.name in s.text for s in sources)
    assert len({s.source_hash for s in sources}) == len(sources)


@pytest.mark.parametrize("family", FAMILIES)
def test_every_case_compiles_and_meets_its_sass_expectation(family, pytestconfig):
    """Every anchor, and every probe this run compiles for sm_90a and disassembles (tests/sweep.py says which:
    each other probe passed in the recorded full sweep with the same source, expectation and compiler; all of
    them with --full-sweep). With --record-sweep, a family whose every probe passed is written to the record."""
    def compiles_and_meets_its_sass_expectation(case):
        if not has_probe(case):  # an anchor: nothing of ours to compile; its checks and plan launch its call
            with pytest.raises(SpecError, match="library call"):
                probe_source(case)
            family = FAMILIES[case.family]
            inputs = family.inputs(case, np.random.default_rng(0))
            checked = [c.kernel for c in family.checks(case, inputs)]
            kernels = set(checked) | {s.kernel for s in family.plan(case, None)}
            assert checked[0] == KERNEL and kernels <= {KERNEL, VERIFY}, kernels  # its call, then its verification
            return
        check = sass_check(case, builds[case.case_id])
        assert check.ok, check.note
        assert check.executes

    cases = FAMILIES[family].cases()
    compiled = swept(cases, full=full_sweep(pytestconfig))
    builds = compile_many([probe_source(c) for c in compiled])  # into the session's cache (conftest.py)
    disassemble_many(b.cubin_path for b in builds.values())
    chosen = {case.case_id for case in compiled}
    every_case(family, compiles_and_meets_its_sass_expectation,
               [case for case in cases if not has_probe(case) or case.case_id in chosen])
    if pytestconfig.getoption("--record-sweep"):
        probes = [case for case in cases if has_probe(case)]
        assert compiled == probes, "--record-sweep records a full sweep: add --full-sweep"
        write_record(family, probes)


def gemm_check_problem(case) -> tuple:
    """Every field the GEMM family's inputs() and checks.check_words read: the check problem's shape, the types,
    block scales, the input kind and the case's class (a library call's or a kernel's)."""
    from harness.families.gemm.problem import check_problem

    return (type(case).__name__, check_problem(case), case.dtype, case.a_dtype, case.b_dtype, case.out_dtype,
            case.in_bytes, case.block_scaled, getattr(case, "inputs", None))


def attention_check_problem(case) -> tuple:
    """Every field the attention family's inputs() and problem.check_reference read: the check problem's shape,
    the type, causality, the scale and the key block its bound takes."""
    from harness.families.attention.cases import check_case
    from harness.families.attention.problem import key_block

    small = check_case(case)
    return (type(case).__name__, small.batch, small.seq, small.heads, small.head_dim, case.dtype, case.causal,
            case.scale, key_block(case))


# The families whose cases share a few check problems (GEMM: 281 cases, 77 problems; attention: 204, 18), by what
# determines a problem, and the function that computes its reference (module, name).
SHARED = {"gemm": (gemm_check_problem, "harness.families.gemm.checks", "check_words"),
          "attention": (attention_check_problem, "harness.families.attention", "check_reference")}


@pytest.mark.parametrize("family", FAMILIES)
def test_checks_pass_a_correct_output_and_fail_a_poisoned_one(family, monkeypatch):
    """The decoded poison (every word 0xFFFFFFFF, what the launcher writes first) never validates, and
    each check expects the family's reference, scaled by the chain it runs: for every case. Where cases share a
    check problem (SHARED), its inputs and reference are made once, for the first case of it, and every case's
    checks are built on them (the cases are taken a problem at a time: one problem's arrays held at once)."""
    if family not in SHARED:
        return every_case(family, checks_pass_a_correct_output_and_fail_a_poisoned_one)
    key, module, name = SHARED[family]
    module = importlib.import_module(module)
    computed, held = getattr(module, name), {}

    def reference(case, inputs):
        if held.get("reference", (None,))[0] != (key(case), id(inputs)):
            held["reference"] = ((key(case), id(inputs)), computed(case, inputs))
        return held["reference"][1]

    def shared_inputs(case):
        if held.get("inputs", (None,))[0] != key(case):
            held.pop("reference", None)
            held["inputs"] = (key(case), FAMILIES[family].inputs(case, np.random.default_rng(0)))
        return held["inputs"][1]

    monkeypatch.setattr(module, name, reference)
    problems = {}
    for case in FAMILIES[family].cases():
        problems.setdefault(key(case), []).append(case)
    every_case(family, lambda case: checks_pass_a_correct_output_and_fail_a_poisoned_one(case, shared_inputs(case)),
               [case for cases in problems.values() for case in cases])


def checks_pass_a_correct_output_and_fail_a_poisoned_one(case, inputs=None):
    family = FAMILIES[case.family]
    inputs = family.inputs(case, np.random.default_rng(0)) if inputs is None else inputs
    assert inputs.buffer.dtype == np.uint8 and inputs.buffer.size > 0 and inputs.distribution
    poison = family.decode(case, np.full(family.output_words(case), 0xFFFFFFFF, dtype=np.uint32))
    for check in family.checks(case, inputs):
        assert np.isfinite(check.expected).all() and np.all(np.asarray(check.tolerance) >= 0)
        assert compare(check.expected, check.expected, np.broadcast_to(check.tolerance, check.expected.shape)).ok
        assert not compare(poison, check.expected, np.broadcast_to(check.tolerance, check.expected.shape)).ok


def test_every_family_runs_end_to_end_on_the_simulated_gpu(tmp_path, monkeypatch, shared_cache):
    from harness.db.store import Store
    from harness.orchestration.fakegpu import simulated_device
    from harness.orchestration.run import RunPlan, execute
    from harness.orchestration.worker import Worker

    monkeypatch.setenv("HOPPER_BENCH_BACKEND", "fake")
    chosen = [family.cases()[0] for family in FAMILIES.values()]
    anchors = {}
    for case in CASES:  # and each family's first anchor: stored with no build
        if not has_probe(case):
            anchors.setdefault(case.family, case)
    assert {"gemm", "ladder", "attention"} <= set(anchors)
    chosen += [case for case in anchors.values() if case not in chosen]  # a family of anchors alone: its first
    db = str(tmp_path / "r.db")
    with Worker(0) as worker:
        worker.start()
        outcome = execute(RunPlan("conformance", None, chosen), db, worker)
    assert outcome.status == "complete" and all(r.valid for r in outcome.results)
    stored = Store.open(db).query("SELECT family, case_id, metric, unit, launch, params FROM results")
    built = Store.open(db).query("SELECT c.case_id, m.build_id FROM measurement_rows m JOIN cases c ON c.id = m.case_pk")
    assert set(stored.family) == set(FAMILIES)
    for case in chosen:
        rows = stored[stored.case_id == case.case_id]
        assert set(zip(rows.metric, rows.unit)) == set(declared_metrics(case, simulated_device()))
        assert rows.params.iloc[0].startswith("{") and len(set(rows.launch)) >= 1
        assert built[built.case_id == case.case_id].build_id.isna().all() != has_probe(case), case.case_id


def test_every_published_figure_that_maps_names_a_legal_case():
    """Family.paper_case: each mapped figure of the papers is a case the PTX ISA allows (a form a family
    has not implemented yet, such as sparse or tf32 wgmma, may say so; an illegal one fails)."""
    from harness import published as references
    from harness.errors import IllegalShapeError, SpecError

    mapped = references.mapped()
    assert any(r.case_id.startswith("mma.sp.") for r in mapped) and any(r.case_id.startswith("wgmma") for r in mapped)
    implemented = 0
    for ref in mapped:
        case = parse_case_id(ref.case_id)
        try:
            FAMILIES[case.family].check(case)
            implemented += 1
        except IllegalShapeError:
            raise
        except SpecError as error:
            assert "not implemented" in str(error)
    assert implemented > 100
