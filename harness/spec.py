"""Case: one probed instruction configuration, and its canonical id (docs/architecture.md, "Names").

A case id spells the PTX instruction as written, plus what the instruction alone does not say
(operand mode, layout, ...); each family owns its grammar (`Family.parse`, and an example in
`Family.example_id`; `bench list --suite NAME` prints them). The id is the database key, the report
label and what `bench show` takes.

A self-test probe that faults on purpose (suite `faults`) adds the fault: `...f16.SS+trap`.
Every family's case type derives from `Case`; the shared stages use only what `Case` declares.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from harness.errors import SpecError

# Faults a self-test probe can plant (ptx/common.cuh planted_fault): a trap instruction, a store
# to an unmapped address, and an endless loop.
PLANTED_FAULTS = ("trap", "oob", "hang")
# The columns of the `cases` table (and the `results` view) that several families fill; a family
# leaves those that mean nothing for it as None and keeps the rest of its parameters in `params`.
COLUMNS = ("instruction", "m", "n", "k", "dtype_a", "dtype_b", "dtype_acc", "operands", "sparse", "layout")


@dataclass(frozen=True)
class Case:
    """Base of every family's case type: a frozen dataclass whose fields are its parameters."""

    family: ClassVar[str]
    fault: str | None = field(default=None, kw_only=True)  # a planted fault (self-test only)

    @property
    def base_id(self) -> str:
        """The id without a planted fault; each family spells its own."""
        raise NotImplementedError

    @property
    def case_id(self) -> str:
        return self.base_id + (f"+{self.fault}" if self.fault else "")

    def columns(self) -> dict[str, object]:
        """Values for the shared COLUMNS (absent ones are stored as NULL)."""
        return {}

    def params(self) -> dict[str, object]:
        """Every parameter, as JSON-ready values (stored in cases.params)."""
        from dataclasses import asdict

        values = asdict(self)
        values.pop("fault")
        return values

    def __str__(self) -> str:
        return self.case_id


def split_fault(case_id: str) -> tuple[str, str | None]:
    """'id+trap' -> ('id', 'trap'); SpecError for an unknown fault."""
    base, plus, fault = case_id.strip().partition("+")
    if not plus:
        return base, None
    if fault not in PLANTED_FAULTS:
        raise SpecError(f"unknown planted fault {fault!r} in {case_id!r}: expected one of {', '.join(PLANTED_FAULTS)}")
    return base, fault


MAX_CASE_ID = 128  # characters: the database's cases.case_id column
