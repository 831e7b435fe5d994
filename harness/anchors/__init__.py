"""Library anchors: a vendor library's call on the same inputs as a family's kernels, timed by the same method
(measure/methods/whole_kernel.py WholeKernel, rounds alternating with the kernel), with no template: nothing is rendered, compiled or
SASS-checked for it (docs/architecture.md, "Anchors").

    Anchor        what a library call is: its library and entry point (the `instruction` column), what it runs in
                  words (a measurement's notes), the Python package it needs and how to install it. The modules
                  beside this one make the calls on device pointers: cublas.py (cublasGemmEx, f16 and bf16),
                  cublaslt.py (cublasLtMatmul, fp8), cudnn.py (fused attention).
    AnchorCase    a case that is an anchor alone (`cublas.f16.8192x8192x8192`): a family's problem with no probe. The
                  shared stages build nothing for it (`has_probe`); the family's `attach` gives its call as the
                  probe's host kernel KERNEL, which its checks and plan launch.
    KERNEL        the host kernel that is the anchor's call, on a kernel case's probe too (WholeKernel's `anchor`).
    VERIFY        the host kernel that checks the measured problem (the call's output against the family's
                  reference): an anchor case's checks may launch it beside KERNEL, and nothing else.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass

from harness.spec import Case

KERNEL = "library"  # the probe's host kernel that makes the anchor's call (its name is in stored notes)
VERIFY = "probe_verify"  # the host kernel that checks the measured problem's output (kernel cases' checks name it too)


@dataclass(frozen=True)
class Anchor:
    """One library call, as a measurement names it: `library` ("cuBLAS"), `call` (its entry point, stored as an anchor
    case's `instruction`), `description` (what it computes and how, in words), and the package it needs beyond CuPy
    (`requires`, a module name; None: CuPy's own) with `missing`, what a measurement says without it."""

    library: str
    call: str
    description: str
    requires: str | None = None
    missing: str = ""  # e.g. "cuBLASLt's fp8 matmul needs nvmath-python (pip install 'hopper-bench[fp8]')"

    def available(self) -> bool:
        """Whether the call can be made here (its package can be imported; the library loads on first use)."""
        return self.requires is None or importlib.util.find_spec(self.requires) is not None

    def note(self) -> str:
        """What a kernel's measurement says of its anchor: the call, or why there is none."""
        if self.available():
            return f"the anchor: {self.description}"
        return f"no anchor: {self.missing}"


@dataclass(frozen=True)
class AnchorCase(Case):
    """Base of a family's anchor cases: a library call on the family's problem (a frozen dataclass of the problem's
    fields and the call's options). It has no template, so no build and no SASS expectation; its family answers
    inputs, checks, plan and attach for it as for its kernels, the checks and the plan launching KERNEL."""

    @property
    def anchor(self) -> Anchor:
        """The call this case is."""
        raise NotImplementedError


def has_probe(case: Case) -> bool:
    """Whether the case is a probe of its family's template (rendered, compiled, SASS-checked), not an anchor."""
    return not isinstance(case, AnchorCase)
