"""The host link on the GPU: the buffers of one case's copy and its host kernels (imported by attach only: CuPy).

KERNEL (anchors.KERNEL) is the call: cudaMemcpyAsync of the case's size on CuPy's current stream, or for bidir one
copy each way on two streams, the second forked from the current stream and joined back to it by events, so that the
events LoadedProbe.run records around the call bracket both. At iters 0 (the check launch) the destinations are
cleared first and, after the call, what arrived is compared with what was sent (checks.py), into the probe's `out`.
"""

from __future__ import annotations

import numpy as np

from harness.anchors import KERNEL
from harness.families.base import Attachment
from harness.families.hostlink.cases import HostLinkCase
from harness.families.hostlink.checks import SEEDS, mismatches, outcome, pattern


def _host(words: int, pinned: bool) -> np.ndarray:
    """`words` 32-bit words of host memory: page-locked (cupyx.empty_pinned) or ordinary."""
    if pinned:
        import cupyx

        return cupyx.empty_pinned((words,), dtype=np.uint32)
    return np.empty(words, dtype=np.uint32)


class Link:
    """The sources and destinations of one case's copies, and the call."""

    def __init__(self, case: HostLinkCase):
        import cupy

        self._cupy = cupy
        self.case = case
        self.words = case.nbytes // 4
        pinned = case.memory == "pinned"
        self.sent = self.arrived = self.source = self.landed = None
        if "h2d" in case.directions:  # the host's source, the device's destination
            self.sent = _host(self.words, pinned)
            self.sent[:] = pattern(self.words, SEEDS["h2d"])
            self.landed = cupy.empty(self.words, dtype=cupy.uint32)
        if "d2h" in case.directions:  # the device's source, the host's destination
            self.source = pattern(self.words, SEEDS["d2h"], cupy)
            self.arrived = _host(self.words, pinned)
            self.arrived[:] = 0
        self.other = cupy.cuda.Stream(non_blocking=True) if case.direction == "bidir" else None
        cupy.cuda.get_current_stream().synchronize()

    def _copy(self, direction: str, stream) -> None:
        runtime = self._cupy.cuda.runtime
        if direction == "h2d":
            runtime.memcpyAsync(self.landed.data.ptr, self.sent.ctypes.data, self.case.nbytes,
                                runtime.memcpyHostToDevice, stream.ptr)
        else:
            runtime.memcpyAsync(self.arrived.ctypes.data, self.source.data.ptr, self.case.nbytes,
                                runtime.memcpyDeviceToHost, stream.ptr)

    def call(self, out, timing, iters: int) -> None:
        """The case's copy (both at once for bidir) on the current stream; at iters 0 the check around it."""
        stream = self._cupy.cuda.get_current_stream()
        if iters == 0:
            self._clear(stream)
        if self.other is None:
            self._copy(self.case.direction, stream)
        else:
            self.other.wait_event(stream.record())
            self._copy("h2d", stream)
            self._copy("d2h", self.other)
            stream.wait_event(self.other.record())
        if iters == 0:
            self._check(out, stream)

    def _clear(self, stream) -> None:
        """Destinations that a copy which does nothing leaves failing the check."""
        stream.synchronize()
        if self.landed is not None:
            self.landed.fill(0xFFFFFFFF)
        if self.arrived is not None:
            self.arrived[:] = 0xFFFFFFFF
        stream.synchronize()

    def _check(self, out, stream) -> None:
        """What arrived against what was sent, word for word (checks.py), written to `out`."""
        stream.synchronize()
        found, compared = {}, 0
        if self.landed is not None:  # the device's destination, copied back
            found["h2d"] = mismatches(self.sent, self.landed.get())
            compared += self.words
        if self.arrived is not None:
            found["d2h"] = mismatches(pattern(self.words, SEEDS["d2h"]), self.arrived)
            compared += self.words
        out[:len(outcome(compared, found))].set(outcome(compared, found))


def attach(case: HostLinkCase, probe, device) -> Attachment:
    link = Link(case)
    return Attachment(resources=(link,), host_kernels={KERNEL: link.call})
