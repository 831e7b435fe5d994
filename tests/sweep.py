"""Which probes the CPU conformance sweep compiles and checks in SASS (tests/test_conformance.py).

Compiling all 2,700-odd probes takes NVRTC some 1,400 CPU-seconds on CI's 2-core machine, more than the 10 minutes
CI may take. A probe's check is decided by its source, its SASS expectation, the compiler (NVRTC's release and
options) and the checker (harness/build/sass.py and nvdisasm): the record (tests/fixtures/sweep_record.json) holds,
per case id, a hash of those, written only by a full sweep that passed:

    python -m pytest -n auto tests/test_conformance.py -k compiles_and_meets --full-sweep --record-sweep

A CI run then compiles and checks
- every probe the record does not vouch for: a source, expectation, compiler or checker that changed since the
  recorded sweep (a change to the checker or to NVRTC's release puts every probe back), and
- a probe for every SASS expectation (an instruction at any size, in a kernel of a family: 203 probes), so that the
  compiler and the checker in this environment are seen to work on each.
So every probe of the tree has passed its SASS check as it stands, in this run or in the recorded one.
`--full-sweep` (or HOPPER_BENCH_FULL_SWEEP=1) compiles every probe."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import subprocess
from pathlib import Path

from gpu.sample import expectations

RECORD = Path(__file__).parent / "fixtures" / "sweep_record.json"


@functools.cache
def checker() -> str:
    """The SASS checker's code and the disassembler's version, hashed."""
    from harness.build import sass

    version = subprocess.run([sass.find_nvdisasm(), "--version"], capture_output=True, text=True).stdout
    return hashlib.sha256((Path(sass.__file__).read_text() + version).encode()).hexdigest()


def record_key(case) -> str:
    """What decides whether `case` compiles and meets its SASS expectation, hashed."""
    from harness.build.compile import NVRTC_OPTIONS, nvrtc_version
    from harness.registry import family_of, probe_source

    material = "\0".join((nvrtc_version(), *NVRTC_OPTIONS, checker(), probe_source(case).text,
                          repr(family_of(case).sass_expectation(case))))
    return hashlib.sha256(material.encode()).hexdigest()[:20]


def recorded(path: Path = RECORD) -> dict[str, str]:
    """case id -> record key of the last full sweep that passed ({} if none was recorded)."""
    families = json.loads(path.read_text())["families"] if path.exists() else {}
    return {case_id: key for cases in families.values() for case_id, key in cases.items()}


def covering(probes: list) -> list:
    """The first probe of `probes` to hold each SASS expectation (tests/gpu/sample.py expectations: an
    instruction up to its size, in a kernel of a family)."""
    seen, chosen = set(), []
    for case in probes:
        if new := expectations(case) - seen:
            chosen.append(case)
            seen |= new
    return chosen


def swept(cases: list, full: bool = False, record: dict[str, str] | None = None) -> list:
    """The probes (cases with a template, not anchors) that this run compiles, in `cases`' order."""
    from harness.anchors import has_probe

    probes = [case for case in cases if has_probe(case)]
    if full:
        return probes
    record = recorded() if record is None else record
    chosen = {case.case_id for case in covering(probes)}
    return [case for case in probes if case.case_id in chosen or record.get(case.case_id) != record_key(case)]


def write_record(family: str, cases: list, path: Path = RECORD) -> None:
    """Replace `family`'s part of the record with `cases` (every probe of the family, each checked and passed)."""
    import fcntl

    from harness.build.compile import nvrtc_version

    entries = {case.case_id: record_key(case) for case in cases}
    folder = os.open(path.parent, os.O_RDONLY)  # pytest-xdist's workers record their families at once: one at a time
    try:
        fcntl.flock(folder, fcntl.LOCK_EX)  # (a lock on the record's folder: no lock file to leave behind)
        families = json.loads(path.read_text())["families"] if path.exists() else {}
        families[family] = entries
        text = json.dumps({"nvrtc": nvrtc_version(), "families": dict(sorted(families.items()))}, indent=1)
        temporary = path.with_suffix(".tmp")
        temporary.write_text(text + "\n")
        os.replace(temporary, path)
    finally:
        os.close(folder)  # closing the descriptor releases the lock
