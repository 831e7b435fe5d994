"""The layouts family on the GPU (suite layouts-tma): every case's TMA-landed tile, its ldmatrix reads and its wgmma
reads are what the layout library says, section by section; planted faults fail (the buffer giving ldmatrix
another swizzle mode's addresses, a probe built with another swizzle, SBO or, without a swizzle, LBO in wgmma's
descriptor), and where the wrong descriptor still reads inside the tile, D is what the library's canonical layout
predicts for it; the chain measures end to end."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from harness.build.compile import compile_probe
from harness.families.base import Inputs
from harness.families.layouts import FAMILY, output_sections, tile
from harness.families.layouts.cases import cases, parse
from harness.measure.device import open_device
from harness.measure.launch import LoadedProbe
from harness.orchestration.runner import RunSettings, measure_case, validate
from harness.registry import probe_source
from helpers import planted_source

pytestmark = pytest.mark.gpu


def _probe(case, source=None, inputs=None):
    inputs = FAMILY.inputs(case, np.random.default_rng(0)) if inputs is None else inputs
    probe = LoadedProbe(compile_probe(source or probe_source(case)), inputs.buffer, FAMILY.output_words(case))
    probe.attach(FAMILY.attach(case, probe, open_device(0)))
    return probe, inputs


def _sections_of(case, vector):
    out, at = {}, 0
    for name, words in output_sections(case).items():
        out[name], at = vector[at:at + words], at + words
    return out


@pytest.mark.parametrize("case", cases(), ids=str)
def test_landed_bytes_ldmatrix_and_wgmma_are_the_layout_library_s(case):
    probe, inputs = _probe(case)
    (check,) = FAMILY.checks(case, inputs)
    launch = probe.run(check.kernel, check.grid, check.threads, check.iters, check.timing_words)
    got, want = _sections_of(case, FAMILY.decode(case, launch.out)), _sections_of(case, check.expected)
    wrong = {name: int((got[name] != want[name]).sum()) for name in want if len(want[name])}
    assert not any(wrong.values()), f"{case}: words that differ, by section: {wrong}"


@pytest.mark.parametrize("case", cases(), ids=str)
def test_ldmatrix_at_another_swizzle_mode_s_addresses_fails(case):
    other = {0: 32, 32: 64, 64: 128, 128: 64}[case.swizzle]
    good = FAMILY.inputs(case, np.random.default_rng(0))
    addresses = tile.ldmatrix_addresses(case, other).astype("<u4").view(np.uint8).ravel()
    buffer = good.buffer.copy()
    buffer[tile.tile_bytes(case):tile.tile_bytes(case) + addresses.size] = addresses
    probe, inputs = _probe(case, inputs=Inputs(buffer, good.values, good.distribution))
    assert not validate(case, probe, inputs).ok


PLANTED = [("layouts.tma.sw128.b16", {"a_swizzle": "B64"}), ("layouts.tma.sw128.b16", {"a_sbo": 512}),
           ("layouts.tma.sw64.b8", {"a_sbo": 256}), ("layouts.tma.sw64.b16", {"a_swizzle": "B32"}),
           ("layouts.tma.sw32.b8", {"a_swizzle": "None"}), ("layouts.tma.none.b16", {"a_lbo": 512}),
           ("layouts.tma.none.b8", {"a_sbo": 64})]
_FIELDS = {"a_swizzle": "swizzle", "a_lbo": "lbo", "a_sbo": "sbo"}
_MODES = {"None": 0, "B32": 32, "B64": 64, "B128": 128}


@pytest.mark.parametrize("case_id, planted", PLANTED, ids=[f"{c}-{p}" for c, p in PLANTED])
def test_a_wrong_descriptor_fails_and_reads_what_the_library_predicts_for_it(case_id, planted):
    case = parse(case_id)
    probe, inputs = _probe(case, planted_source(case, FAMILY, **planted))
    assert not validate(case, probe, inputs).ok
    (check,) = FAMILY.checks(case, inputs)
    launch = probe.run(check.kernel, check.grid, check.threads, check.iters, check.timing_words)
    fields = {_FIELDS[k]: _MODES[v] if k == "a_swizzle" else v for k, v in planted.items()}
    operand = replace(tile.a_operand(case), **fields)
    predicted = tile.wgmma_result(case, tile.landed(case), operand).ravel()
    assert np.array_equal(_sections_of(case, FAMILY.decode(case, launch.out))["wgmma"], predicted)


@pytest.mark.parametrize("case_id", ["layouts.tma.sw128.b16", "layouts.tma.sw32.b8"])
def test_a_swizzled_k_major_descriptor_does_not_read_its_lbo(case_id):
    """PTX ISA: LBO is not used for a swizzled K-major operand whose K step lies in one swizzle row."""
    case = parse(case_id)
    probe, inputs = _probe(case, planted_source(case, FAMILY, a_lbo=256))
    assert validate(case, probe, inputs).ok


def test_measured_end_to_end():
    case = parse("layouts.tma.sw128.b16")
    result = measure_case(case, compile_probe(probe_source(case)), open_device(0), RunSettings())
    assert result.valid, result.error
    (metric,) = result.metrics
    assert metric.name == "latency_cycles" and np.all(np.isfinite(metric.samples)) and np.all(metric.samples > 0)
