"""Which probes the CPU conformance sweep compiles and checks in SASS (tests/test_conformance.py).

Compiling all 2,700-odd probes takes NVRTC some 1,400 CPU-seconds on CI's machine, twice the 10 minutes CI may
take. So a CI run compiles
- the GPU tests' sample (tests/gpu/sample.py: every form, type, operand mode, layout and variant at its smallest
  and largest size, and every SASS expectation), and
- every other probe whose build the record below does not vouch for: a source, SASS expectation, NVRTC release
  or option that changed since the last full sweep passed.
The record (tests/fixtures/sweep_record.json) holds, per case id, a hash of what decides its check: the source
text, the SASS expectation, NVRTC's release and options. Only a full sweep that passes writes it:

    python -m pytest -q tests/test_conformance.py -k compiles_and_meets --full-sweep --record-sweep

So every probe of the tree has passed its SASS check under the pinned compiler, in this run or in the recorded
one, and a change to a template is compiled in CI until someone records it again. `--full-sweep` (or
HOPPER_BENCH_FULL_SWEEP=1) compiles every probe, as CI did before."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from gpu.sample import sample

RECORD = Path(__file__).parent / "fixtures" / "sweep_record.json"


def record_key(case) -> str:
    """What decides whether `case` compiles and meets its SASS expectation, hashed."""
    from harness.build.compile import NVRTC_OPTIONS, nvrtc_version
    from harness.registry import family_of, probe_source

    material = "\0".join((nvrtc_version(), *NVRTC_OPTIONS, probe_source(case).text,
                          repr(family_of(case).sass_expectation(case))))
    return hashlib.sha256(material.encode()).hexdigest()[:20]


def recorded(path: Path = RECORD) -> dict[str, str]:
    """case id -> record key of the last full sweep that passed ({} if none was recorded)."""
    families = json.loads(path.read_text())["families"] if path.exists() else {}
    return {case_id: key for cases in families.values() for case_id, key in cases.items()}


def swept(cases: list, full: bool = False, record: dict[str, str] | None = None) -> list:
    """The probes (cases with a template, not anchors) that this run compiles, in `cases`' order."""
    from harness.anchors import has_probe

    probes = [case for case in cases if has_probe(case)]
    if full:
        return probes
    record = recorded() if record is None else record
    chosen = {case.case_id for case in sample(probes)}
    return [case for case in probes if case.case_id in chosen or record.get(case.case_id) != record_key(case)]


def write_record(family: str, cases: list, path: Path = RECORD) -> None:
    """Replace `family`'s part of the record with `cases` (every probe of the family, each checked and passed)."""
    from harness.build.compile import nvrtc_version

    families = json.loads(path.read_text())["families"] if path.exists() else {}
    families[family] = {case.case_id: record_key(case) for case in cases}
    text = json.dumps({"nvrtc": nvrtc_version(), "families": dict(sorted(families.items()))}, indent=1)
    temporary = path.with_suffix(".tmp")
    temporary.write_text(text + "\n")
    os.replace(temporary, path)
