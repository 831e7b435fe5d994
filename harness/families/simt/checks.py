"""The SIMT probe's validation: its inputs (how x, c and c2 are drawn: Op.inputs), each chain's value after its steps
with a tolerance carried along the chain (expected_chain), the output the kernels write and its decoding; the overlap
probes' accumulators, chains and TMA ring."""

from __future__ import annotations

import numpy as np

from harness import dtypes
from harness.families.base import Check, Inputs
import harness.families.simt.overlap as _overlap
import harness.families.simt.ops as _ops
from harness.families.simt.cases import SimtCase
from harness.families.simt.kernels import CHAINS, MAX_ILP
from harness.families.simt.overlap import OverlapCase


# -- inputs: how x, c and c2 are drawn (Op.inputs) -----------------------------------------------------------

def _uniform(rng, low, high, shape, signed=False):
    values = rng.uniform(low, high, shape)
    return values * rng.choice([-1.0, 1.0], shape) if signed else values


def _draw(kind: str, dtype: str, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Start values (MAX_ILP x 32 [x 2 halves]), c and c2 (32 [x 2]) as float64 values, or as words (b32)."""
    halves = (2,) if dtype in ("f16x2", "bf16x2") else ()
    starts, lanes = (MAX_ILP, _ops.LANES) + halves, (_ops.LANES,) + halves
    zeros = np.zeros(lanes)
    if kind == "contracting":  # |c| < 1: x <- x c + c2 converges; max(-x, c) bounces
        return _uniform(rng, -1, 1, starts), _uniform(rng, 0.5, 0.9, lanes, signed=True), _uniform(rng, -0.5, 0.5, lanes)
    if kind == "minus_one":
        return _uniform(rng, 0.5, 2, starts, signed=True), -(1 + 2.0 ** -20) * np.ones(lanes), zeros
    if kind == "small_step":
        return _uniform(rng, -1, 1, starts), _uniform(rng, -1 / 16, 1 / 16, lanes), zeros
    if kind == "ex2":
        return _uniform(rng, 0, 2, starts), zeros, zeros
    if kind == "rcp":  # negative: the first step of 1/|x| turns x positive, so 16 steps are not the identity
        return -_uniform(rng, 0.5, 2, starts), zeros, zeros
    if kind == "positive":
        return _uniform(rng, 0.5, 4, starts), zeros, zeros
    if kind == "angle":
        return _uniform(rng, 0.5, 1.5, starts, signed=True), zeros, zeros
    if kind == "tanh":
        return _uniform(rng, -2, 2, starts), zeros, zeros
    if kind == "finite":
        return _uniform(rng, 1 / 16, 16, starts, signed=True), _uniform(rng, 1 / 16, 16, lanes, signed=True), zeros
    if kind == "fp8_range":  # c: a quarter beyond e5m2's largest (saturated), a quarter at e4m3 ties (1.0625 x 2^e)
        c = _uniform(rng, 2.0 ** -6, 448, lanes, signed=True)
        c[: _ops.LANES // 4] = _uniform(rng, 6e4, 1e6, _ops.LANES // 4, signed=True)
        c[_ops.LANES // 4: _ops.LANES // 2] = 1.0625 * 2.0 ** rng.integers(-6, 8, _ops.LANES // 4)
        return _uniform(rng, 2.0 ** -6, 448, starts, signed=True), c, zeros
    words = rng.integers(0, 2 ** 32, starts, dtype=np.uint64).astype(np.uint32)
    if kind == "bits":
        return words, zeros.astype(np.uint32), zeros.astype(np.uint32)
    if kind == "rotation":
        return words, ((np.arange(_ops.LANES) + 1) % _ops.LANES).astype(np.uint32), zeros.astype(np.uint32)
    if kind == "e4m3_pairs":  # two e4m3 codes in the high 16 bits, none NaN (S.1111.111)
        codes = rng.choice([c for c in range(256) if c & 0x7F != 0x7F], (2,) + starts).astype(np.uint32)
        return (words & 0xFFFF) | (codes[0] << 16) | (codes[1] << 24), zeros.astype(np.uint32), zeros.astype(np.uint32)
    raise ValueError(f"no input distribution {kind!r}")


_DISTRIBUTIONS = {
    "contracting": "x uniform in [-1, 1], c in +-[0.5, 0.9], c2 in [-0.5, 0.5]",
    "minus_one": "x uniform in +-[0.5, 2], c = -(1 + 2^-20)",
    "small_step": "x uniform in [-1, 1], c in [-1/16, 1/16]",
    "ex2": "x uniform in [0, 2]",
    "rcp": "x uniform in [-2, -0.5]",
    "positive": "x uniform in [0.5, 4]",
    "angle": "x uniform in +-[0.5, 1.5]",
    "tanh": "x uniform in [-2, 2]",
    "finite": "x and c uniform in +-[1/16, 16] (f32)",
    "fp8_range": "x and c uniform in +-[2^-6, 448] (f32); a quarter of c beyond 6e4 (saturated), a quarter at e4m3 ties",
    "bits": "x uniform 32-bit words",
    "rotation": "x uniform 32-bit words, c[l] = (l + 1) mod 32",
    "e4m3_pairs": "x uniform 32-bit words whose high 16 bits are two e4m3 codes (no NaN)",
}


def _encode(dtype: str, values: np.ndarray) -> np.ndarray:
    """Values (float64; x2 types: a last axis of 2 halves, low first) or words -> 32-bit words."""
    if dtype == "b32" or values.dtype == np.uint32:
        return values.astype(np.uint32)
    if dtype == "f32":
        return values.astype(np.float32).view(np.uint32)
    fmt = "f16" if dtype == "f16x2" else "bf16"
    bits = dtypes.encode(fmt, values).astype(np.uint32)
    return bits[..., 0] | (bits[..., 1] << 16)


def _decode(dtype: str, words: np.ndarray) -> np.ndarray:
    """32-bit words -> values (float64): f32; x2 types as (..., 2) halves, low first; b32 as the word."""
    words = np.asarray(words, dtype=np.uint32)
    if dtype == "b32":
        return words.astype(np.float64)
    if dtype == "f32":
        return words.view(np.float32).astype(np.float64)
    fmt = "f16" if dtype == "f16x2" else "bf16"
    return np.stack([dtypes.decode(fmt, words & 0xFFFF), dtypes.decode(fmt, words >> 16)], axis=-1)


def expected_chain(case: SimtCase, inputs: Inputs, steps: int) -> tuple[np.ndarray, np.ndarray]:
    """Each chain's value after `steps` steps (MAX_ILP x 32 [x 2]) and its absolute tolerance.

    Exact ops: the step on bit patterns, tolerance 0. Floating-point ops: the step as exact mathematics (float64),
    and a bound carried along the chain: a step maps an error t in x to at most L t, L the largest |f'| over
    [y - t, y + t] (sampled at the ends and the middle: |f'| is monotone there), and adds its own error, the
    PTX ISA's bound for the instruction at the exact result plus its rounding (ops.py)."""
    op = case.op
    x, c, c2 = (inputs.values[name] for name in ("x", "c", "c2"))
    if op.step is not None:
        words = x.astype(np.uint32)
        with np.errstate(over="ignore"):
            for _ in range(steps):
                words = op.step(words, c.astype(np.uint32), c2.astype(np.uint32))
        return _decode(op.dtype, words), np.zeros(words.shape + ((2,) if op.dtype in ("f16x2", "bf16x2") else ()))
    y, t = x.astype(np.float64), np.zeros(x.shape)
    for _ in range(steps):
        for stage in op.stages:
            slope = np.max(np.abs([stage.df(y + d, c, c2) for d in (-t, 0 * t, t)]), axis=0)
            y_next = stage.f(y, c, c2)
            t = slope * t + stage.error(np.abs(y_next) + slope * t, op.fmt) + 2.0 ** -50 * np.abs(y_next)
            y = y_next
    return y, t


def inputs(case, rng: np.random.Generator) -> Inputs:
    if isinstance(case, OverlapCase):
        if case.op is None:  # nothing to read: one zero word
            return Inputs(np.zeros(4, dtype=np.uint8), {}, "A and B all f16 1.0 (made in the kernel)")
        chain = inputs(SimtCase(case.op), rng)
        values, distribution = dict(chain.values), chain.distribution
        if _ops.OPS[case.op].step is not None and case.op.startswith("cvt."):
            # c > 0: bf16(c)'s bits, the low half x is read back with, stay under 0x8000, so bf16(x) rounds down
            # to itself and the chain stands still after a step (with c < 0 it climbs an ulp a step, and the
            # untimed side's unknown count of steps would decide its value)
            values["c"] = values["c"] & np.uint32(0x7FFFFFFF)
            distribution = distribution.replace("x and c uniform in +-", "x uniform in +-") + ", c > 0"
            buffer = np.concatenate([values[k].ravel() for k in ("x", "c", "c2")]).astype(np.uint32).view(np.uint8)
        else:
            buffer = chain.buffer
        return Inputs(buffer, values, distribution + "; A and B all f16 1.0 (made in the kernel)")
    op = case.op
    x, c, c2 = _draw(op.inputs, op.dtype, rng)
    if op.dtype in ("f16x2", "bf16x2", "f32"):  # exactly representable start values and constants
        x, c, c2 = (dtypes.round_to(op.fmt, v) for v in (x, c, c2))
    elif x.dtype != np.uint32:  # a convert's f32 operands, held as words
        x, c, c2 = (_encode("f32", dtypes.round_to("f32", v)) for v in (x, c, c2))
    words = [_encode(op.dtype, v) for v in (x, c, c2)]
    if op.step is not None:  # an exact op: its step reads words
        x, c, c2 = words
    buffer = np.concatenate([w.ravel() for w in words]).astype(np.uint32).view(np.uint8)
    return Inputs(buffer, {"x": x, "c": c, "c2": c2}, _DISTRIBUTIONS[op.inputs])


def checks(case, inputs: Inputs) -> list[Check]:
    """Every timed kernel after one loop body of `unroll` steps: slot s holds chain s mod ILP. Overlap probes:
    D / (K x wgmma count) is 1 everywhere; the timed chains after their steps, the untimed ones (at least 16
    bodies, an unknown number more) at their fixed point, which every overlap instruction's chain reaches within
    256 steps (contracting, or periodic with an even period)."""
    if isinstance(case, OverlapCase):
        return _overlap_checks(case, inputs)
    expected, tolerance = expected_chain(case, inputs, CHAINS.unroll)
    out = []
    for kernel in CHAINS.timed_kernels:
        ilp = int(kernel.split("ilp")[1].split("_")[0])
        slots = np.arange(MAX_ILP) % ilp
        out.append(Check(kernel, 32, CHAINS.unroll, 5, expected[slots], tolerance[slots],
                         f"x ({kernel}, {CHAINS.unroll} steps)"))
    return out


def output_words(case) -> int:
    if isinstance(case, OverlapCase):
        return _overlap.tma_offset(case) + _overlap.tma_words(case)
    return MAX_ILP * _ops.LANES


def decode(case, words: np.ndarray) -> np.ndarray:
    """Chains: MAX_ILP x 32 values. Overlap: D / (K x count) for every accumulator, then warpgroup 1's chains,
    flattened into one vector."""
    if isinstance(case, OverlapCase):
        words = np.asarray(words, dtype=np.uint32)
        split = 128 * _overlap.acc_regs(case)
        count = float(words[split]) if case.n else 1.0  # the wgmma warpgroup 0 issued (poison: 2^32 - 1)
        parts = [words[:split].view(np.float32).astype(np.float64) / (case.k * count)]
        split = _overlap.simt_offset(case)
        if case.op:
            parts.append(_decode(_ops.OPS[case.op].dtype, words[split:split + MAX_ILP * _ops.LANES]).ravel())
        if case.tma:
            parts.append(_ring_matches(words[_overlap.tma_offset(case):]))
        return np.concatenate(parts)
    return _decode(case.op.dtype, np.asarray(words[:MAX_ILP * _ops.LANES]).reshape(MAX_ILP, _ops.LANES))


def _ring_matches(words: np.ndarray) -> np.ndarray:
    """The producer's record decoded: 1.0 for each ring word that holds what its slot's last load brought (the
    count of loads read from the record), 0.0 for one that does not (or where a slot was never loaded)."""
    words = np.asarray(words, dtype=np.uint32)
    ring = words[1:1 + _overlap.TMA_STAGES * _overlap.TMA_TILE_WORDS]
    expected = _overlap.ring_expected(int(words[0]))
    return np.zeros(ring.size) if expected is None else (ring == expected).astype(np.float64)


def _overlap_checks(case: OverlapCase, inputs: Inputs) -> list[Check]:
    ones = np.ones(128 * _overlap.acc_regs(case))  # D / (K x count)
    zero = np.zeros_like(ones)
    out = []
    for role in case.roles:
        iters = {"wgmma": _overlap.CHECK_WGMMAS, "simt": CHAINS.unroll * 4, "tma": _overlap.CHECK_LOADS}[role]
        expected, tolerance = [ones], [zero]
        if case.op:
            chain = SimtCase(case.op)
            steps = iters if role == "simt" else CHAINS.unroll * _overlap.MIN_BODIES
            value, tol = expected_chain(chain, inputs, steps)
            expected.append(value.ravel())
            tolerance.append(np.broadcast_to(tol, value.shape).ravel())
        if case.tma:  # every word of every ring slot as its last load brought it
            ring = np.ones(_overlap.TMA_STAGES * _overlap.TMA_TILE_WORDS)
            expected.append(ring)
            tolerance.append(np.zeros_like(ring))
        out.append(Check(f"probe_overlap_{role}", case.threads, iters, case.units * 5, np.concatenate(expected),
                         np.concatenate(tolerance),
                         f"D / (K x wgmma), the chains" + (" and the TMA ring" if case.tma else "") + f" ({role} timed)"))
    return out
