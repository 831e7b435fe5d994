"""The chain kernels of a register-to-register instruction family (mma.sync, the SIMT family): one
plan, shared below the families that time an instruction by chains of it.

A chain kernel `probe_chain_ilp<ILP>` has each warp run `iters` rounds of ILP independent chains of the
instruction, `unroll` rounds per loop body. ILP 1 is one dependent chain (latency); the largest ILP
measures the issue interval. The `_short` kernels run the same chains in shorter bodies (a quarter of the
rounds by default; simt: half), so that ChainSlope can cancel what a loop body costs once (docs/chains.md).
"""

from __future__ import annotations

from dataclasses import dataclass

UNROLL = 16  # rounds per unrolled loop body
ILPS = (1, 2, 4, 8)  # the kernels a template renders; the largest is the issue-interval chain


@dataclass(frozen=True)
class Chains:
    """The chain kernels one case renders: probe_chain_ilp<ILP> for each of `ilps`, `unroll` rounds
    per loop body. The largest ILP measures the issue interval."""

    unroll: int = UNROLL
    ilps: tuple[int, ...] = ILPS
    short: int | None = None  # rounds per body of the short-body chains (default: a quarter of `unroll`)

    @property
    def issue_ilp(self) -> int:
        return max(self.ilps)

    def kernel(self, ilp: int) -> str:
        return f"probe_chain_ilp{ilp}"

    @property
    def short_unroll(self) -> int | None:
        """Rounds per body of the short-body chains (`short`, else a quarter of `unroll`), which ChainSlope times beside
        the long ones so that a body's own cost cancels (docs/chains.md). Bodies under 4 rounds are
        laid out differently by ptxas, so a plan of fewer than 16 rounds per body has none. A family may
        choose a longer short body (`short`): what matters is that ptxas lays out the loop's head and tail
        of both bodies alike, so that only rounds in the middle differ."""
        if self.short:
            return self.short
        return self.unroll // 4 if self.unroll >= 16 else None

    def short_kernel(self, ilp: int) -> str:
        return f"probe_chain_ilp{ilp}_short"

    @property
    def timed_ilps(self) -> tuple[int, ...]:
        """The ILPs whose chains ChainSlope times: 1 (latency) and the issue interval's."""
        return (1, self.issue_ilp)

    def short_body(self, ilp: int) -> tuple[str, int] | None:
        return (self.short_kernel(ilp), self.short_unroll) if self.short_unroll else None

    @property
    def bodies(self) -> list[tuple[str, int]]:
        """(kernel, rounds of one chain per loop body x its ILP): every kernel the plan renders."""
        out = [(self.kernel(ilp), self.unroll * ilp) for ilp in self.ilps]
        if self.short_unroll:
            out += [(self.short_kernel(ilp), self.short_unroll * ilp) for ilp in self.timed_ilps]
        return out

    @property
    def timed_kernels(self) -> list[str]:
        """The kernels a validation launch checks: every kernel ChainSlope times."""
        kernels = [self.kernel(ilp) for ilp in self.timed_ilps]
        if self.short_unroll:
            kernels += [self.short_kernel(ilp) for ilp in self.timed_ilps]
        return kernels

    def rendered(self) -> str:
        """The template's kernel instantiations (PROBE_CHAIN / PROBE_SHORT_CHAIN macros)."""
        return "\n".join([f"PROBE_CHAIN({ilp})" for ilp in self.ilps]
                         + ([f"PROBE_SHORT_CHAIN({ilp})" for ilp in self.timed_ilps] if self.short_unroll else []))
