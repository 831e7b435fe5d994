"""Compile and disassemble every probe of every family into the cache that HOPPER_BENCH_CACHE names: the
conformance sweep's builds (tests/test_conformance.py, fixture `builds`), which tests/conftest.py starts in
this process of its own as the session starts, at a lower priority, so that they compile on the CPU the
other tests leave idle. The sweep then takes them from the cache (and compiles itself whatever is missing,
as it would without this)."""

import os

from harness.anchors import has_probe
from harness.build.compile import compile_many
from harness.build.sass import disassemble_many
from harness.registry import FAMILIES, probe_source

if __name__ == "__main__":
    os.nice(10)  # the compile and nvdisasm processes inherit it: the tests that run meanwhile come first
    builds = compile_many([probe_source(case) for family in FAMILIES.values() for case in family.cases()
                           if has_probe(case)])  # an anchor (a library call) has nothing to compile
    disassemble_many(build.cubin_path for build in builds.values())
