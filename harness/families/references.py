"""A family's words about the published figures (harness/families/base.py, the Family contract): the figure
`paper_case` is asked about (PaperFigure), and why a measurement differs from its figure (`explain` -> Reason,
known_cause)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PaperFigure:
    """A published figure as the papers describe it (harness/published.py reads them), for a
    family's optional `paper_case(figure) -> (case_id, metric) | None` to name our counterpart."""

    instruction: str  # as the paper writes it: "wgmma.mma_async", "mma", "mma.sp", ...
    m: int
    n: int
    k: int
    dtype_a: str  # PTX names (f16, e4m3, s8, ...)
    dtype_acc: str
    operands: str | None  # SS or RS (wgmma)
    sparse: bool
    metric: str  # the source's: "latency_cycles" or "throughput" as the papers mean them, or one of ours


@dataclass(frozen=True)
class Reason:
    """Why a measurement differs from its published figure (Family.explain), shown where the row is.
    `accounts`: the cause accounts for the difference (the verdict is "explained"); False: a known
    cause that does not close the gap by itself (the row stays DISAGREES, with this as its reason)."""

    text: str
    accounts: bool = True


def known_cause(causes: dict[tuple[str, str], str], case_id: str, metric: str) -> Reason | None:
    """The cause in `causes` ({(case-id prefix, metric): text}) of the longest prefix that starts
    `case_id`, for `metric`: a Reason that does not close the gap by itself (accounts=False)."""
    found = [(len(prefix), text) for (prefix, m), text in causes.items() if m == metric and case_id.startswith(prefix)]
    return Reason(max(found)[1], accounts=False) if found else None
