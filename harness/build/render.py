"""Fill a ptx/ template for one case: the rendered CUDA source is self-contained and hashed."""

from __future__ import annotations

import hashlib
import re
import string
from dataclasses import dataclass
from pathlib import Path

from harness.spec import Case

COMMON_HEADER = "common.cuh"
CALIBRATION_SOURCE = "calibrate.cu"
# ptx/common.cuh planted_fault: the constant each planted fault (harness/spec.py) renders to.
FAULT_CONSTANTS = {None: "FAULT_NONE", "trap": "FAULT_TRAP", "oob": "FAULT_OOB", "hang": "FAULT_HANG"}


def template_dir() -> Path:
    """ptx/ in a source checkout, harness/ptx in an installed wheel."""
    here = Path(__file__).resolve().parent.parent
    for candidate in (here / "ptx", here.parent / "ptx"):
        if (candidate / COMMON_HEADER).is_file():
            return candidate
    raise FileNotFoundError(f"probe templates not found next to {here}")


@dataclass(frozen=True)
class ProbeSource:
    name: str  # case id, or the calibration source's name
    text: str

    @property
    def source_hash(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()


# A template's `#include "name.cuh"` of a header in ptx/ (async.cuh, the asynchronous-copy layer):
# inlined, so the rendered source stays self-contained (it is what is hashed and compiled).
INCLUDE = re.compile(r'^#include "([A-Za-z0-9_]+\.cuh)"[ \t]*$', re.MULTILINE)


def _inline_includes(body: str, seen: set[str] | None = None) -> str:
    """Each header once, where it is first included, with the headers it includes in turn."""
    seen = set() if seen is None else seen

    def header(match: re.Match) -> str:
        name = match.group(1)
        if name == COMMON_HEADER:
            raise ValueError(f"{COMMON_HEADER} is prepended to every probe: a template does not include it")
        if name in seen:
            return f"// ---- {name}: included above ----"
        seen.add(name)
        text = _inline_includes((template_dir() / name).read_text(), seen)
        return f"// ---- {name} ----\n{text}// ---- end of {name} ----"

    return INCLUDE.sub(header, body)


def _with_common(body: str) -> str:
    common = (template_dir() / COMMON_HEADER).read_text()
    return f"{common}\n{_inline_includes(body)}"


def render(case: Case, family) -> ProbeSource:
    """`family`'s template (Family.template, Family.template_params) filled for `case`, and the planted
    fault if any. The caller hands the family down: the build stage looks nothing up."""
    template = string.Template((template_dir() / family.template).read_text())
    params = {"case_id": case.case_id, "planted_fault": FAULT_CONSTANTS[case.fault], **family.template_params(case)}
    return ProbeSource(case.case_id, _with_common(template.substitute(params)))


def render_calibration() -> ProbeSource:
    return ProbeSource("calibrate", _with_common((template_dir() / CALIBRATION_SOURCE).read_text()))
