"""What a probe reads and must show, the values every family's correctness and SASS members return
(harness/families/base.py, the Family contract): `inputs` -> Inputs, `checks` -> Check, `sass_expectation` ->
SassExpectation of KernelExpectations (and InFlight: what must issue under a wgmma)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Inputs:
    """What a probe reads (`buffer`, copied to the GPU) and what its reference needs (`values`)."""

    buffer: np.ndarray  # uint8
    values: dict[str, np.ndarray]  # the operands as exact float64/int64 arrays (A, B, a tile, ...)
    distribution: str  # how the values were drawn, stored with every measurement


@dataclass(frozen=True)
class Check:
    """One validation launch: kernel `kernel`, one block of `threads` threads, `iters`, a timing buffer
    of `timing_words`; its decoded output must equal `expected` within `tolerance` (absolute)."""

    kernel: str
    threads: int
    iters: int
    timing_words: int
    expected: np.ndarray
    tolerance: np.ndarray | float
    label: str
    grid: int = 1  # blocks (a cluster kernel's cluster size)


@dataclass(frozen=True)
class KernelExpectation:
    """What one kernel's SASS must hold: `count` x an instruction starting with `mnemonic`, and none of
    `forbidden` (prefixes) between the first and the last of them."""

    mnemonic: str
    count: int
    forbidden: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()  # instruction prefixes that share the mnemonic but do not count
    contains: str = ""  # text a counted instruction must also hold (e.g. a call's target routine)
    also: tuple[str, ...] = ()  # other opcodes that count as this instruction (HFMA2.MMA: an HFMA2 on another pipe)


@dataclass(frozen=True)
class InFlight:
    """What one kernel's SASS must issue under a wgmma: at least `count` instructions starting with `mnemonic` between
    the closing instruction (`gsb0`) of a wgmma group that holds `group` (e.g. '.tnspB') and the WARPGROUP.DEPBAR that
    retires it, in the kernel's instruction order (an overlap that ptxas may undo by moving a wait)."""

    mnemonic: str
    group: str
    count: int


@dataclass(frozen=True)
class SassExpectation:
    kernels: tuple[tuple[str, KernelExpectation], ...]  # (kernel, what it must hold); a kernel may recur
    executes: str  # what really runs per PTX instruction, e.g. "HMMA.16816.F32" or "F2FP + 2x HMMA.16816.F32"
    emulated: bool = False  # no native instruction: the rate is not a tensor-core rate
    invalidating_notes: tuple[str, ...] = ()  # ptxas note codes (e.g. C7510) that invalidate the case
    spill_kernels: tuple[str, ...] = ()  # kernels that must not spill
    in_flight: tuple[tuple[str, InFlight], ...] = ()  # (kernel, what it must issue under a wgmma)
