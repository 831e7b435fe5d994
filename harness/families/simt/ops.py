"""What each SIMT case times: one step of its chain, x <- op(x, c, c2) on 32-bit registers, as PTX; the SASS
it must compile to on sm_90a; its throughput class in the CUDA Programming Guide's table; and its result,
exactly (`step`: bit patterns in, bit patterns out) or as exact mathematics with the error bound the PTX ISA
states for an approximate instruction (`stages`).

Why each chain is the shape it is (a chain must stay finite over millions of steps, and stay a chain):
- ex2 is chained through a negation, 2^-x, and rcp through an absolute value, 1/|x| from x < 0, which ptxas
  folds into the MUFU's operand (MUFU.EX2 R, -R; MUFU.RCP R, |R|): 2^x alone leaves the range in a few steps,
  and rcp(rcp(x)) is folded away by ptxas (it compiled a chain of rcp.approx.ftz to nothing).
- lg2 has no bounded chain of its own (its fixed points repel: the inverse of ex2's attracting one), so its
  step is lg2 then ex2, 2^-log2|x| = 1/|x|: two MUFU results a step, and lg2's latency is the step's less ex2's.
- mul is chained by -(1 + 2^-20); add by a small constant (|x| grows linearly).
- A chain that returns to its start after 16 steps would validate a kernel that did nothing: 1/|x| does so only
  after its first step has turned x positive, prmt rotates three bytes (16 mod 3 = 1); shfl.bfly's swap (period
  2) is the one left, guarded by its SASS check alone.
- The converts feed their packed result back as the next step's f32 bits: deterministic, exact, and a chain.

Errors (PTX ISA 9.2, sections 9.7.3 and 9.7.4; `docs/simt.md` quotes them): ex2.approx.f32 2 ulp; rcp.approx.f32
1 ulp; rsqrt.approx 2^-22.9 relative; sqrt.approx 2^-23 relative; lg2.approx 2^-22 absolute on (0.5, 2);
sin/cos.approx 2^-20.5 absolute on [-2 pi, 2 pi]; tanh.approx.f32 2^-11 relative; tanh.approx.f16 2^-10.987 and
.bf16 2^-8 absolute. Each step's bound also allows the result's rounding to its format (half an ulp).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from harness import dtypes

LANES = 32
LN2 = float(np.log(2.0))
MANTISSA = {"f32": 23, "f16": 10, "bf16": 7}
MIN_EXPONENT = {"f32": -126, "f16": -14, "bf16": -126}


def ulp(fmt: str, magnitude: np.ndarray) -> np.ndarray:
    """One unit in the last place of `fmt` at |value| `magnitude` (subnormals: the smallest step)."""
    exponent = np.floor(np.log2(np.maximum(np.abs(magnitude), 2.0 ** MIN_EXPONENT[fmt])))
    return 2.0 ** (exponent - MANTISSA[fmt])


@dataclass(frozen=True)
class Stage:
    """One instruction of a step as mathematics: f(x, c, c2), its derivative in x, and the absolute error
    bound of the instruction's result (exact value y, in format `fmt`), rounding included."""

    f: Callable
    df: Callable
    error: Callable  # (y exact, fmt) -> bound


def _rounded(y, fmt):
    return 0.5 * ulp(fmt, y)


def _ulps(n):
    return lambda y, fmt: (n + 0.5) * ulp(fmt, y)


def _relative(exponent):
    return lambda y, fmt: 2.0 ** exponent * np.abs(y) + 0.5 * ulp(fmt, y)


def _absolute(exponent):
    return lambda y, fmt: 2.0 ** exponent + 0.5 * ulp(fmt, y)


def _lg2_error(y, fmt):
    """2^-22 absolute for inputs in (0.5, 2), i.e. results in (-1, 1); 2^-22 relative outside."""
    return np.where(np.abs(y) < 1, 2.0 ** -22, 2.0 ** -22 * np.abs(y)) + 0.5 * ulp(fmt, y)


FMA = Stage(lambda x, c, c2: x * c + c2, lambda x, c, c2: c + 0 * x, _rounded)
MUL = Stage(lambda x, c, c2: x * c, lambda x, c, c2: c + 0 * x, _rounded)
ADD = Stage(lambda x, c, c2: x + c, lambda x, c, c2: 1 + 0 * x, _rounded)
EX2_NEG = Stage(lambda x, c, c2: 2.0 ** -x, lambda x, c, c2: -LN2 * 2.0 ** -x, _ulps(2))
RCP_ABS = Stage(lambda x, c, c2: 1.0 / np.abs(x), lambda x, c, c2: 1.0 / x ** 2, _ulps(1))
RSQRT = Stage(lambda x, c, c2: x ** -0.5, lambda x, c, c2: -0.5 * x ** -1.5, _relative(-22.9))
SQRT = Stage(lambda x, c, c2: np.sqrt(x), lambda x, c, c2: 0.5 / np.sqrt(x), _relative(-23))
LG2_ABS = Stage(lambda x, c, c2: np.log2(np.abs(x)), lambda x, c, c2: 1.0 / (np.abs(x) * LN2), _lg2_error)
SIN = Stage(lambda x, c, c2: np.sin(x), lambda x, c, c2: np.cos(x), _absolute(-20.5))
COS = Stage(lambda x, c, c2: np.cos(x), lambda x, c, c2: -np.sin(x), _absolute(-20.5))
TANH = Stage(lambda x, c, c2: np.tanh(x), lambda x, c, c2: 1 - np.tanh(x) ** 2, _relative(-11))
TANH_F16 = Stage(TANH.f, TANH.df, _absolute(-10.987))
TANH_BF16 = Stage(TANH.f, TANH.df, _absolute(-8))


# -- exact steps on bit patterns (uint32 arrays of shape (..., LANES)) -------------------------------------

def _f32(words):
    return words.astype(np.uint32).view(np.float32).astype(np.float64)


def _words(values):
    return np.asarray(values, dtype=np.float64).astype(np.float32).view(np.uint32)


def _halves(words):
    words = words.astype(np.uint32)
    return words & 0xFFFF, words >> 16


def _pack(low, high):
    return (low.astype(np.uint32) & 0xFFFF) | (high.astype(np.uint32) << 16)


def _max_neg_f32(x, c, c2):
    return _words(np.maximum(-_f32(x), _f32(c)))


def _max_x2(fmt):
    def step(x, c, c2):
        out = [dtypes.encode(fmt, np.maximum(-dtypes.decode(fmt, a), dtypes.decode(fmt, b)))
               for a, b in zip(_halves(x), _halves(c))]
        return _pack(*out)
    return step


def _cvt_x2(fmt):
    """cvt.rn.{f16x2,bf16x2}.f32 d, a, b: a (x as f32) to the upper half, b (c) to the lower."""
    def step(x, c, c2):
        with np.errstate(over="ignore"):  # beyond f16's range: infinity, as cvt.rn (not .satfinite) gives
            return _pack(dtypes.encode(fmt, _f32(c)), dtypes.encode(fmt, _f32(x)))
    return step


def fp8_bits(fmt: str, values: np.ndarray) -> np.ndarray:
    """f32 values -> fp8 codes, rounded to nearest even and saturated to the largest finite value (cvt.rn.satfinite)."""
    table = dtypes.fp8_values(fmt)
    codes = np.arange(128)
    finite = np.isfinite(table[:128])
    magnitudes, magnitude_codes = table[:128][finite], codes[finite]
    values = np.asarray(values, dtype=np.float64)
    a = np.minimum(np.abs(values), magnitudes.max())
    above = np.clip(np.searchsorted(magnitudes, a), 0, magnitudes.size - 1)
    below = np.clip(above - 1, 0, magnitudes.size - 1)
    d_below, d_above = a - magnitudes[below], magnitudes[above] - a
    take_above = (d_above < d_below) | ((d_above == d_below) & (magnitude_codes[above] % 2 == 0))
    code = np.where(take_above, magnitude_codes[above], magnitude_codes[below])
    sign = np.signbit(values)  # -0 and values that round to zero keep their sign (0x80), as cvt.rn does
    return (code | (sign.astype(np.int64) << 7)).astype(np.uint32)


def _cvt_fp8x2(fmt):
    """cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32 h, a, b, then x = {h, 0}: a (x) in h's upper byte, b (c) in its lower."""
    def step(x, c, c2):
        return fp8_bits(fmt, _f32(c)) | (fp8_bits(fmt, _f32(x)) << 8)
    return step


def _cvt_f16x2_from_e4m3x2(x, c, c2):
    """cvt.rn.f16x2.e4m3x2 d, h with h the high 16 bits of x: each byte's e4m3 value as f16 (exact)."""
    table = dtypes.fp8_values("e4m3")
    low, high = (x >> 16) & 0xFF, (x >> 24) & 0xFF
    return _pack(dtypes.encode("f16", table[low]), dtypes.encode("f16", table[high]))


def _shfl_bfly(x, c, c2):
    return x[..., np.arange(LANES) ^ 1]


def _shfl_idx(x, c, c2):
    return x[..., c.astype(np.int64) & (LANES - 1)]


def _prmt(x, c, c2):
    """prmt.b32 d, a, b, 0x3021: d's bytes 0, 1, 2, 3 are a's bytes 1, 2, 0, 3 (b unused): a 3-cycle of the low
    three bytes, so 16 steps are not the identity (16 mod 3 = 1)."""
    byte = [(x >> (8 * i)) & 0xFF for i in range(4)]
    return (byte[1] | (byte[2] << 8) | (byte[0] << 16) | (byte[3] << 24)).astype(np.uint32)


# -- the operations -----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Op:
    """One SIMT case: its chain step in PTX (on %0 = x, read and written, %1 = c, %2 = c2), the SASS one step
    compiles to, and how its result is known."""

    body: str
    sass: tuple[tuple[str, int], ...]  # (SASS opcode, count per step)
    executes: str  # what runs per step, for people
    throughput: str  # the CUDA Programming Guide row (harness/families/simt/reference.py), or "" where no row
    #                  describes the instruction (MUFU: the 9.0 column was not found; the packed converts and
    #                  packed min/max: the guide's rows count single conversions and 32-bit compares)
    results: int  # results per lane per step, as the guide counts them (an x2 instruction makes two)
    dtype: str  # what x holds: f32, f16x2, bf16x2, or b32 (bits compared exactly)
    inputs: str  # how x, c and c2 are drawn (harness/families/simt/__init__.py)
    stages: tuple[Stage, ...] = ()  # floating-point ops: the step as mathematics, with its error
    step: Callable | None = None  # exact ops: the step on bit patterns
    emulated: bool = False  # no single instruction: ptxas runs a sequence (its issue interval is a call interval)
    also: tuple[str, ...] = ()  # opcodes that count as the first of `sass` (the same operation on another pipe)
    chain: str = ""  # what the chain is, where it is not the instruction alone
    forbidden: tuple[str, ...] = field(default=("LDG", "LDS", "LDL", "LD.", "ST", "BAR", "MEMBAR", "BRA", "DEPBAR",
                                                "CALL"))

    @property
    def fmt(self) -> str:
        """The format one result is rounded to."""
        return {"f16x2": "f16", "bf16x2": "bf16"}.get(self.dtype, self.dtype)


NEG = "{.reg .f32 t; neg.f32 t, %0; "
ABS = "{.reg .f32 t; abs.f32 t, %0; "
MEMORY_ONLY = ("LDG", "LDS", "LDL", "LD.", "ST", "BAR", "MEMBAR", "DEPBAR")

OPS: dict[str, Op] = {
    # CUDA cores, f32
    "fma.rn.f32": Op("fma.rn.f32 %0, %0, %1, %2;", (("FFMA", 1),), "FFMA", "fp32", 1, "f32", "contracting",
                     stages=(FMA,)),
    "mul.rn.f32": Op("mul.rn.f32 %0, %0, %1;", (("FMUL", 1),), "FMUL", "fp32", 1, "f32", "minus_one",
                     stages=(MUL,), chain="x <- x * c with c = -(1 + 2^-20): 16 steps are not the identity, and "
                                          "|x| grows by e only every million steps"),
    "add.rn.f32": Op("add.rn.f32 %0, %0, %1;", (("FADD", 1),), "FADD", "fp32", 1, "f32", "small_step",
                     stages=(ADD,)),
    "max.f32": Op(NEG + "max.f32 %0, t, %1;}", (("FMNMX", 1),), "FMNMX (the negation folded into its operand)",
                  "minmax", 1, "f32", "contracting", step=_max_neg_f32, chain="x <- max(-x, c)"),
    # CUDA cores, packed halves
    "fma.rn.f16x2": Op("fma.rn.f16x2 %0, %0, %1, %2;", (("HFMA2", 1),),
                       "HFMA2 or HFMA2.MMA (ptxas alternates the FMA pipe and the FMA-heavy pipe)", "fp16", 2,
                       "f16x2", "contracting", stages=(FMA,), also=("HFMA2.MMA",)),
    "fma.rn.bf16x2": Op("fma.rn.bf16x2 %0, %0, %1, %2;", (("HFMA2.BF16_V2", 1),),
                        "HFMA2.BF16_V2 or HFMA2.MMA.BF16_V2 (alternated, as f16x2)", "fp16", 2, "bf16x2",
                        "contracting", stages=(FMA,), also=("HFMA2.MMA.BF16_V2",)),
    "max.f16x2": Op("{.reg .b32 t; neg.f16x2 t, %0; max.f16x2 %0, t, %1;}", (("HMNMX2", 1),), "HMNMX2 (the negation folded into its operand)", "", 2,
                    "f16x2", "contracting", step=_max_x2("f16"),
                    chain="x <- max(-x, c) (max(x, c) repeated is folded by ptxas, max being idempotent: it kept one "
                          "VHMNMX of two)"),
    "max.bf16x2": Op("{.reg .b32 t; neg.bf16x2 t, %0; max.bf16x2 %0, t, %1;}", (("HMNMX2.BF16_V2", 1),), "HMNMX2.BF16_V2 (the negation folded into its operand)",
                     "", 2, "bf16x2", "contracting", step=_max_x2("bf16"), chain="x <- max(-x, c)"),
    # MUFU
    "ex2.approx.ftz.f32": Op(NEG + "ex2.approx.ftz.f32 %0, t;}", (("MUFU.EX2", 1),), "MUFU.EX2", "", 1, "f32",
                             "ex2", stages=(EX2_NEG,), chain="x <- 2^-x (the negation folded into the MUFU operand)"),
    "ex2.approx.f32": Op(NEG + "ex2.approx.f32 %0, t;}", (("MUFU.EX2", 1),),
                         "FSETP + FMUL + FSEL + MUFU.EX2 + FMUL (subnormal results kept: scaled around the MUFU)", "",
                         1, "f32", "ex2", stages=(EX2_NEG,), emulated=True, forbidden=MEMORY_ONLY,
                         chain="x <- 2^-x"),
    "rcp.approx.ftz.f32": Op(ABS + "rcp.approx.ftz.f32 %0, t;}", (("MUFU.RCP", 1),), "MUFU.RCP", "", 1, "f32",
                             "rcp", stages=(RCP_ABS,),
                             chain="x <- 1/|x| from x < 0 (rcp of rcp is folded away by ptxas; 1/|x| repeats every "
                                   "2 steps, but only after the first has turned x positive)"),
    "rcp.approx.f32": Op(ABS + "rcp.approx.f32 %0, t;}", (("MUFU.RCP", 1),),
                         "FSETP x2 + FSEL x2 + FMUL + MUFU.RCP + FMUL (subnormals kept: scaled around the MUFU)", "", 1,
                         "f32", "rcp", stages=(RCP_ABS,), emulated=True, forbidden=MEMORY_ONLY,
                         chain="x <- 1/|x| from x < 0"),
    "rsqrt.approx.ftz.f32": Op("rsqrt.approx.ftz.f32 %0, %0;", (("MUFU.RSQ", 1),), "MUFU.RSQ", "", 1, "f32",
                               "positive", stages=(RSQRT,)),
    "sqrt.approx.ftz.f32": Op("sqrt.approx.ftz.f32 %0, %0;", (("MUFU.SQRT", 1),), "MUFU.SQRT", "", 1, "f32",
                              "positive", stages=(SQRT,)),
    "lg2.approx.ftz.f32": Op("{.reg .f32 t; abs.f32 t, %0; lg2.approx.ftz.f32 t, t; neg.f32 t, t; "
                             "ex2.approx.ftz.f32 %0, t;}",
                             (("MUFU.LG2", 1), ("MUFU.EX2", 1)), "MUFU.LG2 + MUFU.EX2 (a step of two)", "", 2, "f32",
                             "rcp", stages=(LG2_ABS, EX2_NEG),
                             chain="x <- 2^-log2|x| = 1/|x| from x < 0: lg2 then ex2, the abs and the negation folded "
                                   "into the MUFUs (a chain of lg2 alone diverges); its latency is the step's less "
                                   "ex2.approx.ftz.f32's"),
    "sin.approx.ftz.f32": Op("sin.approx.ftz.f32 %0, %0;", (("MUFU.SIN", 1), ("FMUL.RZ", 1)),
                             "FMUL.RZ (x / 2 pi) + MUFU.SIN", "", 1, "f32", "angle", stages=(SIN,)),
    "cos.approx.ftz.f32": Op("cos.approx.ftz.f32 %0, %0;", (("MUFU.COS", 1), ("FMUL.RZ", 1)),
                             "FMUL.RZ (x / 2 pi) + MUFU.COS", "", 1, "f32", "angle", stages=(COS,)),
    "tanh.approx.f32": Op("tanh.approx.f32 %0, %0;", (("MUFU.TANH", 1),), "MUFU.TANH", "", 1, "f32", "tanh",
                          stages=(TANH,)),
    "tanh.approx.f16x2": Op("tanh.approx.f16x2 %0, %0;", (("MUFU.TANH.F16", 2),),
                            "2x MUFU.TANH.F16 (one per half: no packed MUFU)", "", 2, "f16x2", "tanh",
                            stages=(TANH_F16,)),
    "tanh.approx.bf16x2": Op("tanh.approx.bf16x2 %0, %0;", (("MUFU.TANH.BF16", 2),),
                             "2x MUFU.TANH.BF16 (one per half)", "", 2, "bf16x2", "tanh", stages=(TANH_BF16,)),
    # shuffles
    "shfl.sync.bfly.b32": Op("shfl.sync.bfly.b32 %0, %0, 1, 0x1f, 0xffffffff;", (("SHFL.BFLY", 1),), "SHFL.BFLY",
                             "shuffle", 1, "b32", "bits", step=_shfl_bfly, chain="lanes l and l^1 swap x"),
    "shfl.sync.idx.b32": Op("shfl.sync.idx.b32 %0, %0, %1, 0x1f, 0xffffffff;", (("SHFL.IDX", 1),), "SHFL.IDX",
                            "shuffle", 1, "b32", "rotation", step=_shfl_idx, chain="lane l reads lane c[l] = (l + 1) mod 32"),
    # converts and byte permutes
    "cvt.rn.bf16x2.f32": Op("cvt.rn.bf16x2.f32 %0, %0, %1;", (("F2FP.BF16.F32.PACK_AB", 1),), "F2FP.BF16.F32.PACK_AB",
                            "", 2, "b32", "finite", step=_cvt_x2("bf16"),
                            chain="x <- {bf16(x), bf16(c)}, read back as f32 bits"),
    "cvt.rn.f16x2.f32": Op("cvt.rn.f16x2.f32 %0, %0, %1;", (("F2FP.F16.F32.PACK_AB", 1),), "F2FP.F16.F32.PACK_AB",
                           "", 2, "b32", "finite", step=_cvt_x2("f16"),
                           chain="x <- {f16(x), f16(c)}, read back as f32 bits"),
    "cvt.rn.satfinite.e4m3x2.f32": Op(
        "{.reg .b16 h, z; mov.b16 z, 0; cvt.rn.satfinite.e4m3x2.f32 h, %0, %1; mov.b32 %0, {h, z};}",
        (("F2FP.SATFINITE.E4M3.F32.PACK_AB_MERGE_C", 1),),
        "F2FP.SATFINITE.E4M3.F32.PACK_AB_MERGE_C (NVRTC 13.5 adds a PRMT a step to place the 16-bit pair; 13.0 does not)", "", 2, "b32",
        "fp8_range", step=_cvt_fp8x2("e4m3"), chain="x <- {0, e4m3(x), e4m3(c)} (16 bits, zero-extended), read back "
                                                     "as f32 bits"),
    "cvt.rn.satfinite.e5m2x2.f32": Op(
        "{.reg .b16 h, z; mov.b16 z, 0; cvt.rn.satfinite.e5m2x2.f32 h, %0, %1; mov.b32 %0, {h, z};}",
        (("F2FP.SATFINITE.E5M2.F32.PACK_AB_MERGE_C", 1),),
        "F2FP.SATFINITE.E5M2.F32.PACK_AB_MERGE_C (NVRTC 13.5 adds a PRMT a step to place the 16-bit pair; 13.0 does not)", "", 2, "b32",
        "fp8_range", step=_cvt_fp8x2("e5m2"), chain="x <- {0, e5m2(x), e5m2(c)}, read back as f32 bits"),
    "cvt.rn.f16x2.e4m3x2": Op("{.reg .b16 h, u; mov.b32 {u, h}, %0; cvt.rn.f16x2.e4m3x2 %0, h;}",
                              (("F2FP.F16.E4M3.UNPACK_B", 1),),
                              "F2FP.F16.E4M3.UNPACK_B + PRMT (the high half moved down, every step but a body's first, "
                              "which reads .H1: the slope between bodies is F2FP + PRMT)", "", 2, "b32",
                              "e4m3_pairs", step=_cvt_f16x2_from_e4m3x2,
                              chain="x <- f16x2 of the two e4m3 in x's high 16 bits (fp8 operands widened for a "
                                    "kernel's CUDA cores; fed back through the low half the chain would be 0 after "
                                    "two steps: an e4m3 value's f16 has no bits in its low byte but the sign)"),
    "prmt.b32": Op("prmt.b32 %0, %0, %1, 0x3021;", (("PRMT", 1),), "PRMT", "", 1, "b32", "bits", step=_prmt,
                   chain="x <- its low three bytes rotated (selector 0x3021)"),
}
