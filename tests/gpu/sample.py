"""The GPU tests' default sample of cases: every case with `--full-sweep` (or HOPPER_BENCH_FULL_SWEEP=1,
as scripts/device_run.sh runs it for runs of record), otherwise for each family the first and the last
case of every group that differs only in N or in the TMA box (every form, type, operand mode, layout,
sparsity and TMA variant, at its smallest and its largest size), then any case whose kernels hold a
SASS expectation none chosen so far holds (a TMA box small enough for 16 stages in flight, say).
tests/test_gpu_sample.py checks on the CPU that it reaches every kernel, SASS expectation and
measurement method the full sweep does."""

from __future__ import annotations

import dataclasses
import os
import re

SIZE_FIELDS = ("n", "box", "fault")  # what a group's cases may differ in


def full_sweep(config=None) -> bool:
    return bool(config is not None and config.getoption("--full-sweep")) or \
        os.environ.get("HOPPER_BENCH_FULL_SWEEP") == "1"


def sample(cases: list) -> list:
    groups: dict[tuple, list] = {}
    for case in cases:
        sizes = SIZE_FIELDS + getattr(type(case), "size_fields", ())  # a GEMM's problem size: m, n, k
        key = (type(case).__name__,) + tuple((f.name, getattr(case, f.name)) for f in dataclasses.fields(case)
                                             if f.name not in sizes)
        groups.setdefault(key, []).append(case)
    chosen = {id(group[0]) for group in groups.values()} | {id(group[-1]) for group in groups.values()}
    seen = set().union(*(expectations(case) for case in cases if id(case) in chosen))
    for case in cases:
        new = expectations(case) - seen
        if new:
            chosen.add(id(case))
            seen |= new
    return [case for case in cases if id(case) in chosen]


def expectations(case) -> set:
    """(family, kernel, instruction without its size) of the case's SASS expectation: 'HGMMA.64x256x16.F32'
    and 'HGMMA.64x8x16.F32' are one expectation at two sizes. An anchor (a library call) has none."""
    from harness.anchors import has_probe
    from harness.registry import family_of

    if not has_probe(case):
        return set()

    return {(case.family, kernel, re.sub(r"\d+x\d+x\d+", "MxNxK", wanted.mnemonic))
            for kernel, wanted in family_of(case).sass_expectation(case).kernels}
