"""The host link (PCIe between the host and the GPU): the Family object. Copies through the copy engines.

A family of anchors alone (harness/anchors): each case is one host call, cudaMemcpyAsync, between host memory and
the GPU's (cases.py), with no template of ours: nothing rendered, compiled or SASS-checked. Its own family, not an
anchor of `memory`: the memory family's cases are loads an SM issues, on its template, and none of its kernels,
checks, maps or models says anything of a copy the host issues to the copy engines; this family imports none of it.

Validation (checks.py): the check launch clears the destinations, makes the copy, and compares what arrived with what
was sent, word for word, in a pattern where no two words are equal (a chunk dropped, repeated or shifted fails).
Measurement (methods.HostCall): blocks of calls back to back between CUDA events on the stream, about 20 ms each,
sampled under the run's timing policy; `bandwidth_gbps` is bytes moved (both directions for bidir) over the time.

The seed architecture chapter's spec box states the host link at 64 GB/s (PCIe 5.0 x16): mapped to the pinned host-
to-device copy of 256 MiB (paper_row), and `explain` says what of the gap the link's own overheads account for.
docs/data-movement.md, "The host link".
"""

from __future__ import annotations

import numpy as np

from harness import seed_chapter
from harness.anchors import KERNEL
from harness.errors import SpecError
from harness.families.base import Attachment, Check, Family, Inputs, Reason, SassExpectation, Suite, Work
import harness.families.hostlink.cases as _cases
import harness.families.hostlink.checks as _checks
from harness.families.hostlink.cases import DIRECTIONS, MEMORIES, HostLinkCase
from harness.measure.methods import HostCall

# PCIe 5.0: 32 GT/s a lane, 128b/130b encoding; a memory write or read completion carries at most the max payload
# (256 B typical of hosts, 512 B of some) behind ~24 B of TLP framing, header and LCRC, and the link's flow-control
# and acknowledgement packets (DLLPs) take a few per cent more. The payload a copy can see is bounded by the first two.
PCIE5_GT_PER_LANE = 32.0
ENCODING = 128 / 130
MAX_PAYLOAD, TLP_OVERHEAD = 256, 24
# The seed figure that maps: the host-to-device copy of the suite's larger size from pinned memory
CHAPTER_CASE = ("h2d", "pinned", _cases.SIZES_MIB[-1])
SIMULATED_GBPS = 50.0  # the simulated GPU's answer per direction (not a measurement)


def payload_ceiling(lanes: int = 16) -> float:
    """GB/s a copy's payload can reach at most on a PCIe 5.0 link of `lanes` lanes, per direction: the raw rate after
    the encoding and each packet's framing at the max payload (flow control and acks left out: lower still)."""
    raw = PCIE5_GT_PER_LANE * lanes / 8  # GB/s on the wire per direction
    return raw * ENCODING * MAX_PAYLOAD / (MAX_PAYLOAD + TLP_OVERHEAD)


def _suites() -> dict[str, Suite]:
    return {
        "hostlink": Suite("the host link: cudaMemcpyAsync from pinned memory host to device, device to host and both at "
                          "once at 64 and 256 MiB; pageable memory one way each at 256 MiB", _cases.everyday),
        "hostlink-full": Suite("every direction and host memory at 64 and 256 MiB", _cases.cases),
    }


class HostLinkFamily(Family):
    name = "hostlink"
    description = "the host link: copies between host memory and the GPU's through the copy engines (cudaMemcpyAsync)"
    id_prefixes = (_cases.PREFIX,)
    example_id = "memcpy.h2d.pinned.256MiB"
    template = None  # a family of anchors alone: no case has a probe source

    cases = staticmethod(_cases.cases)
    parse = staticmethod(_cases.parse)
    check = staticmethod(_cases.check)
    suites = staticmethod(_suites)

    # -- no probe: every case is a host call --------------------------------------------------------

    def template_params(self, case: HostLinkCase) -> dict[str, object]:
        raise SpecError(f"{case.case_id} is a library call ({case.anchor.description}): it has no probe source")

    def sass_expectation(self, case: HostLinkCase) -> SassExpectation:
        raise SpecError(f"{case.case_id} is a library call ({case.anchor.description}): it has no SASS of ours")

    # -- correctness (checks.py) --------------------------------------------------------------------

    def inputs(self, case: HostLinkCase, rng: np.random.Generator) -> Inputs:
        """The pattern is made where the copy's buffers are (gpu.py); the probe's input buffer is a token."""
        return Inputs(np.zeros(16, dtype=np.uint8), {},
                      f"word i = i x {_checks.PATTERN_MULTIPLIER:#x} + seed (mod 2^32), no two words equal, "
                      f"one seed per direction")

    def output_words(self, case: HostLinkCase) -> int:
        return _checks.OUT_WORDS

    def decode(self, case: HostLinkCase, words: np.ndarray) -> np.ndarray:
        return np.asarray(words[:_checks.OUT_WORDS], dtype=np.uint32).astype(np.float64)

    def checks(self, case: HostLinkCase, inputs: Inputs) -> list[Check]:
        compared = case.nbytes // 4 * len(case.directions)
        return [Check(KERNEL, 1, 0, 1, _checks.expected(compared), 0.0,
                      f"the {case.mib} MiB copied ({case.direction}) back against the bytes sent, word for word: "
                      f"[words compared, h2d differing, first + 1, d2h differing, first + 1]")]

    def attach(self, case: HostLinkCase, probe, device) -> Attachment:
        import harness.families.hostlink.gpu as gpu

        return gpu.attach(case, probe, device)

    # -- measurement ----------------------------------------------------------------------------------

    def work(self, case: HostLinkCase) -> Work:
        return Work(float(case.moved), "B")

    def peak(self, case: HostLinkCase) -> float | None:
        return None  # not a rate of the SM

    def plan(self, case: HostLinkCase, device=None) -> list:
        return [HostCall(KERNEL, launch={"direction": case.direction, "memory": case.memory},
                         notes=f"{case.mib} MiB per direction, {MEMORIES[case.memory]}",
                         simulated=SIMULATED_GBPS * len(case.directions))]

    def headline(self, metric: str) -> dict | None:
        return None

    def describe(self, case: HostLinkCase) -> list[str]:
        return [f"cudaMemcpyAsync of {case.mib} MiB {DIRECTIONS[case.direction]}, {MEMORIES[case.memory]}"
                + (", one copy each way on two streams" if case.direction == "bidir" else ""),
                "bandwidth_gbps: bytes moved (every direction) over the CUDA-event time of a block of copies"]

    # -- the seed chapter's figure --------------------------------------------------------------------

    @staticmethod
    def paper_row(row: dict) -> dict | None:
        """The seed chapter's host link (bandwidth_pcie, 64 GB/s, PCIe 5.0 x16): our pinned host-to-device copy."""
        if row["paper"] != seed_chapter.SOURCE or row["metric"] != "bandwidth_pcie":
            return None
        ceiling = payload_ceiling()
        return {"case_id": str(_cases.case(*CHAPTER_CASE)), "metric": "bandwidth_gbps",
                "notes": f"the link's raw rate per direction (32 GT/s x 16 lanes / 8 bits); after 128b/130b encoding "
                         f"and packet framing at a {MAX_PAYLOAD} B payload a copy can carry at most "
                         f"{ceiling:.1f} GB/s. {row['notes']}"}

    @staticmethod
    def explain(case_id: str, metric: str, value: float, paper: float, launch: dict) -> Reason | None:
        """Below the stated 64 GB/s: the link's encoding and framing account for a copy up to payload_ceiling() and
        down to half the figure (flow control, the host's memory and root complex); further below, a narrower or
        slower link than the spec box's, which they do not account for."""
        if not case_id.startswith(_cases.PREFIX) or metric != "bandwidth_gbps" or value >= paper:
            return None
        ceiling = payload_ceiling()
        if paper / 2 <= value <= ceiling:
            return Reason(f"the figure is the link's raw signalling rate; a copy's payload on PCIe 5.0 x16 is at most "
                          f"{ceiling:.1f} GB/s after 128b/130b encoding and {TLP_OVERHEAD} B of framing per "
                          f"{MAX_PAYLOAD} B packet, less flow control and the host's side")
        if value < paper / 2:
            return Reason("under half the link's rate: not the protocol's overheads; a narrower or older link than "
                          "PCIe 5.0 x16, a virtualised host, or (pageable) the driver's staging "
                          "(nvidia-smi -q: PCIe generation and width)", accounts=False)
        return None


FAMILY = HostLinkFamily()
