"""The compile stage: the cache, the SASS check's verdicts, compile errors (every case of every family
compiles in tests/test_conformance.py)."""

import dataclasses

import pytest

from harness.build.compile import compile_probe
from harness.build.render import ProbeSource, render, render_calibration
from harness.errors import CompileError
from harness.measure.runner import sass_check
from harness.spec import parse_case_id

CASE = parse_case_id("wgmma.mma_async.m64n64k16.f32.f16.f16.SS")


def test_the_cache_returns_the_same_build(cache_dir):
    first = compile_probe(render(CASE))
    again = compile_probe(render(CASE))
    assert not first.cached and again.cached and again.build_hash == first.build_hash


def test_a_serialized_chain_fails_the_sass_check(cache_dir):
    build = compile_probe(render(CASE))
    assert sass_check(CASE, build).ok
    log = build.log + "\nptxas info    : (C7515) Potential Performance Loss: wgmma.mma_async instructions are serialized\n"
    assert not sass_check(CASE, dataclasses.replace(build, log=log)).ok


def test_a_probe_that_misses_its_instruction_fails_the_sass_check(cache_dir):
    """The wgmma probe checked against the expectation of another N: the count is wrong."""
    build = compile_probe(render(CASE))
    other = parse_case_id("wgmma.mma_async.m64n72k16.f32.f16.f16.SS")
    check = sass_check(other, build)
    assert not check.ok and "expected 16 x HGMMA.64x72x16.F32, found 0" in check.note


def test_calibration_kernels_compile(cache_dir):
    build = compile_probe(render_calibration())
    assert build.registers("calibrate_ffma_768") is not None


def test_compile_errors_carry_the_log(cache_dir):
    with pytest.raises(CompileError) as info:
        compile_probe(ProbeSource("broken", "extern \"C\" __global__ void k() { undeclared(); }"))
    assert "undeclared" in info.value.log and "source:" in str(info.value)
