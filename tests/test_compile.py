"""Every case renders and compiles for sm_90a through NVRTC (no GPU), with the intended SASS."""

import dataclasses

import pytest

from harness.build.compile import compile_many, compile_probe
from harness.errors import CompileError
from harness.build.render import ProbeSource, render, render_calibration
from harness.measure.runner import sass_check
from harness.suites import suite_cases

CASES = suite_cases("wgmma")


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    import os

    os.environ["HOPPER_BENCH_CACHE"] = str(tmp_path_factory.mktemp("cache"))
    return compile_many([render(c) for c in CASES])


def test_rendered_sources_are_complete_and_distinct():
    sources = [render(c) for c in CASES]
    assert all("${" not in s.text and s.name in s.text for s in sources)
    assert len({s.source_hash for s in sources}) == len(sources)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_case_compiles_with_an_unbroken_hgmma_chain(case, builds):
    build = builds[case.case_id]
    assert build.cubin_path.stat().st_size > 0
    check = sass_check(case, build)
    assert check.ok, check.note
    assert build.spill_bytes("probe_chain") == 0


def test_the_cache_returns_the_same_build(builds):
    source = render(CASES[0])
    again = compile_probe(source)
    assert again.cached and again.build_hash == builds[CASES[0].case_id].build_hash


def test_a_serialized_chain_fails_the_sass_check(builds):
    build = builds[CASES[0].case_id]
    log = build.log + "\nptxas info    : (C7515) Potential Performance Loss: wgmma.mma_async instructions are serialized\n"
    assert not sass_check(CASES[0], dataclasses.replace(build, log=log)).ok


def test_calibration_kernels_compile(builds):
    build = compile_probe(render_calibration())
    assert build.registers("calibrate_ffma_768") is not None


def test_compile_errors_carry_the_log(builds):
    with pytest.raises(CompileError) as info:
        compile_probe(ProbeSource("broken", "extern \"C\" __global__ void k() { undeclared(); }"))
    assert "undeclared" in info.value.log and "source:" in str(info.value)
