"""SIMT instructions beside the tensor cores: the CUDA cores' f32 and packed-half arithmetic, the special-function
unit (MUFU: ex2, rcp, rsqrt, sqrt, lg2, sin, cos, tanh), shuffles, and the converts and permutes kernels pack
operands with. The Family object.

Each case is one instruction timed by chains of it (harness/families/chains.py): one dependent chain in one warp
(latency), eight independent chains in one warp (issue interval), and every SM with 1-32 warps x 1, 2, 4 chains
(results per cycle per SM, the unit of the CUDA C++ Programming Guide's throughput table). What each chain's
step is, what SASS it must compile to and how its result is known: ops.py. Cases and ids: cases.py. Probe
template: ptx/simt.cu.in. The published rates it is compared with: reference.py.
"""

from __future__ import annotations

import numpy as np

from harness import dtypes, seed_chapter
from harness.families.base import (NOTHING_ATTACHED, Attachment, Check, Family, Inputs, KernelExpectation, SassExpectation,
                                   Suite, Work)
from harness.families.chains import ILPS, Chains
import harness.families.simt.cases as _cases
import harness.families.simt.chapter as _chapter
import harness.families.simt.overlap as _overlap
from harness.families.simt.cases import SimtCase
from harness.families.simt.overlap import OverlapCase
from harness.families.simt import ops as _ops
from harness.families.simt.reference import PEAK_RESULTS_PER_SM
from harness.measure.methods import ChainSlope, OccupancySweep, SweepPoint

MAX_ILP = max(ILPS)
SWEEP_WARPS = (1, 2, 4, 8, 16, 32)  # warps per SM (one block per SM)
SWEEP_ILP = (1, 2, 4)  # independent chains per warp
# Short bodies of 8 steps, not 4: ptxas spaces a fixed-latency chain (FFMA, HFMA2, FMNMX, PRMT, F2FP) by the stall
# counts of its control bits, and lays out a 4-step body's head and tail differently from a 16-step body's (the
# loop counter's update merged into other slots, the last step's spacing before the branch); with 8 and 16 the
# head and tail are the same instructions with the same stall counts, and the two bodies differ only by 8 steps
# in the middle, so the slope is the steps' own spacing (docs/simt.md).
CHAINS = Chains(short=8)


def _suites() -> dict[str, Suite]:
    def kind(*units):
        return lambda: [c for c in _cases.cases() if _unit(c) in units]

    return {
        "simt": Suite("SIMT instructions beside the tensor cores: f32 and packed-half arithmetic, MUFU, shuffles, "
                      "converts and permutes: latency, issue interval, warps x ILP throughput", _cases.cases),
        "simt-overlap": Suite("one SM, wgmma (f16 SS at N 64, 128, 256; f16 RS and e4m3 SS at N 64, 256) in one "
                              "warpgroup beside a SIMT instruction at full rate in another (ex2, FFMA, HFMA2, SHFL, "
                              "F2FP), each side timed while the other runs, and each alone", _overlap.cases),
        "simt-overlap-tma": Suite("simt-overlap's cases with TMA loads in flight: a producer warp keeps 2-D TMA loads "
                                  "(8 KiB boxes, a ring of 4 slots) going beside wgmma (f16 SS and RS, N 64 and 256) "
                                  "and the SIMT instruction; every side timed while the others run, and the loads "
                                  "alone; with the same cases without the loads", _overlap.tma_suite),
        "simt-mufu": Suite("the special-function unit (MUFU) alone", kind("mufu")),
        "simt-quick": Suite("one instruction per unit: FFMA, HFMA2, MUFU.EX2, SHFL, F2FP", lambda: [
            _cases.parse(f"simt.{name}") for name in ("fma.rn.f32", "fma.rn.f16x2", "ex2.approx.ftz.f32",
                                                       "shfl.sync.bfly.b32", "cvt.rn.bf16x2.f32")]),
    }


def _unit(case: SimtCase) -> str:
    """Which unit runs the instruction: mufu, fma (f32 and packed halves), shuffle, convert, alu."""
    first = case.op.sass[0][0]
    return {"MUFU": "mufu", "FFMA": "fma", "FMUL": "fma", "FADD": "fma", "HFMA2": "fma", "SHFL": "shuffle",
            "F2FP": "convert"}.get(first.split(".")[0], "alu")


def interval_metric(case: SimtCase) -> str:
    return "call_interval_cycles" if case.op.emulated else "issue_interval_cycles"


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


def _all_cases() -> list:
    return [*_cases.cases(), *_overlap.cases(), *_overlap.tma_cases()]


def _parse(case_id: str):
    return _overlap.parse(case_id) or _cases.parse(case_id)


def _check(case) -> None:
    (_overlap.check if isinstance(case, OverlapCase) else _cases.check)(case)


class SimtFamily(Family):
    name = "simt"
    description = "SIMT instructions beside the tensor cores: f32/f16x2 arithmetic, MUFU, shuffles, converts"
    id_prefixes = ("simt.",)
    example_id = "simt.ex2.approx.ftz.f32"
    template = "simt.cu.in"

    cases = staticmethod(_all_cases)
    parse = staticmethod(_parse)
    check = staticmethod(_check)
    suites = staticmethod(_suites)

    @property
    def model(self):
        """The overlap model: what each side of a simt-overlap case keeps, from the two sides alone (model.py)."""
        from harness.families.simt.model import OverlapModel

        return OverlapModel()

    # -- the probe -------------------------------------------------------------------------------

    def template_params(self, case) -> dict[str, object]:
        self.check(case)
        common = {"unroll": CHAINS.unroll, "short_body": CHAINS.short_unroll, "max_ilp": MAX_ILP,
                  **_tma_render(case if isinstance(case, OverlapCase) else None)}
        if isinstance(case, OverlapCase):
            op = _ops.OPS[case.op] if case.op else None
            return {**common, **_overlap.wgmma_render(case), "instruction": case.op or "nothing",
                    "body": op.body if op else "", "chain_kernels": "", "overlap": 1,
                    "has_simt": "true" if op else "false", "out_simt": _overlap.simt_offset(case),
                    "overlap_kernels": "\n".join(f"PROBE_OVERLAP(probe_overlap_{role}, {_ROLES.index(role)})"
                                                 for role in case.roles)}
        return {**common, **_overlap.wgmma_render(None), "instruction": case.instruction_ptx,
                "body": case.op.body, "chain_kernels": CHAINS.rendered(), "overlap": 0, "has_simt": "false",
                "out_simt": 0, "overlap_kernels": ""}

    def attach(self, case, probe, device) -> Attachment:
        """The .tma overlap cases' source and tensor map (overlap.attach); nothing for the others."""
        return _overlap.attach(case, probe) if isinstance(case, OverlapCase) else NOTHING_ATTACHED

    def sass_expectation(self, case) -> SassExpectation:
        if isinstance(case, OverlapCase):
            return _overlap_expectation(case)
        return self._chain_expectation(case)

    def _chain_expectation(self, case: SimtCase) -> SassExpectation:
        """Per kernel, every step's instructions (ops.py), with nothing of `forbidden` between the first and the
        last of them: no memory access, barrier or branch (an emulated form may branch no more than its own
        sequence does)."""
        op = case.op
        kernels = []
        for kernel, steps in CHAINS.bodies:
            for i, (mnemonic, count) in enumerate(op.sass):
                kernels.append((kernel, KernelExpectation(mnemonic, steps * count, op.forbidden,
                                                          also=op.also if i == 0 else ())))
        return SassExpectation(tuple(kernels), op.executes, op.emulated,
                               spill_kernels=tuple(kernel for kernel, _ in CHAINS.bodies))

    # -- correctness -----------------------------------------------------------------------------

    def inputs(self, case, rng: np.random.Generator) -> Inputs:
        if isinstance(case, OverlapCase):
            if case.op is None:  # nothing to read: one zero word
                return Inputs(np.zeros(4, dtype=np.uint8), {}, "A and B all f16 1.0 (made in the kernel)")
            chain = self.inputs(SimtCase(case.op), rng)
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

    def checks(self, case, inputs: Inputs) -> list[Check]:
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

    def output_words(self, case) -> int:
        if isinstance(case, OverlapCase):
            return _overlap.tma_offset(case) + _overlap.tma_words(case)
        return MAX_ILP * _ops.LANES

    def decode(self, case, words: np.ndarray) -> np.ndarray:
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

    # -- measurement -----------------------------------------------------------------------------

    def work(self, case) -> Work:
        if isinstance(case, OverlapCase):  # what one timed instruction does (its metrics are cycles only)
            if case.n:
                return Work(2 * 64 * case.n * case.k, "FLOP")
            return Work(_ops.LANES * _ops.OPS[case.op].results, "result") if case.op else Work(_overlap.TMA_TILE_BYTES, "B")
        return self._chain_work(case)

    def _chain_work(self, case: SimtCase) -> Work:
        """Results per warp instruction (32 lanes x the instruction's results), as the Programming Guide counts:
        an f16x2 FMA is two results, an f32 FMA one. The unit is "result" (result/cycle/SM, Tresult/s): not FLOP
        (an FMA would be two) and not the tensor cores' OP, so no report adds them to tensor-core rates."""
        return Work(_ops.LANES * case.op.results, "result")

    def peak(self, case) -> float | None:
        if isinstance(case, OverlapCase):
            return None
        """The Programming Guide's results per cycle per SM for compute capability 9.0, where its row was found
        (reference.py); None otherwise."""
        return PEAK_RESULTS_PER_SM.get(case.op.throughput)

    def plan(self, case, device=None) -> list:
        if isinstance(case, OverlapCase):
            return _overlap_plan(case)
        plan = CHAINS
        sweep = tuple(SweepPoint(plan.kernel(ilp), w, ilp, {"warps": w, "ilp": ilp})
                      for w in SWEEP_WARPS for ilp in SWEEP_ILP)
        chain = case.op.chain or "x <- op(x, c, c2)"
        bodies = f"; loop bodies of {plan.unroll} and {plan.short_unroll} steps, so a body's own cost cancels"
        return [ChainSlope("latency_cycles", plan.kernel(1), 32, unroll=plan.unroll, launch={"warps": 1, "ilp": 1},
                           notes=f"one dependent chain, {chain}" + bodies, short_body=plan.short_body(1)),
                ChainSlope(interval_metric(case), plan.kernel(plan.issue_ilp), 32, per_iter=plan.issue_ilp,
                           unroll=plan.unroll, launch={"warps": 1, "ilp": plan.issue_ilp},
                           notes=f"{plan.issue_ilp} independent chains in one warp" + bodies,
                           short_body=plan.short_body(plan.issue_ilp)),
                OccupancySweep(sweep, 32, plan.unroll, whole_gpu="best")]

    def headline(self, metric: str) -> dict | None:
        return None

    @staticmethod
    def paper_row(row: dict) -> dict | str | None:
        """The seed architecture chapter's CUDA-core figures (simt/chapter.py); no other source's rows are ours."""
        return _chapter.chapter_row(row) if row["paper"] == seed_chapter.SOURCE else None

    def describe(self, case) -> list[str]:
        if isinstance(case, OverlapCase):
            return [f"warpgroup 0: {f'wgmma m64n{case.n}k{case.k} {case.form} -> f32, back to back' if case.n else 'idle'}",
                    f"warpgroup 1: {case.op + ', 8 chains a warp, 4 warps' if case.op else 'idle'}",
                    *([f"warp 8: TMA loads of {_overlap.TMA_TILE_BYTES} B boxes into a ring of {_overlap.TMA_STAGES} "
                       "slots, each completed on its mbarrier"] if case.tma else []),
                    "timed: " + " and ".join(f"{role} (while the other side runs)" for role in case.roles)]
        op = case.op
        lines = [f"one step: {op.body}", f"sm_90a runs: {op.executes}" + (" (emulated: a sequence)" if op.emulated else ""),
                 f"results per lane per step: {op.results}; unit: {_unit(case)}"]
        if op.chain:
            lines.append(f"chain: {op.chain}")
        peak = self.peak(case)
        lines.append(f"Programming Guide rate (CC 9.0): {peak:g} results/cycle/SM" if peak else
                     "Programming Guide rate (CC 9.0): no row found for it (docs/simt.md)")
        return lines

    def figures(self, context) -> list:
        from harness.families.simt.figures import figures

        return figures(context)

    def findings(self, context) -> list:
        from harness.families.simt.figures import findings

        return findings(context)


FAMILY = SimtFamily()
_ROLES = ("wgmma", "simt", "tma")  # the template's Role, the side a kernel times


def _tma_render(case: OverlapCase | None) -> dict[str, object]:
    tma = case is not None and case.tma
    return {"has_tma": "true" if tma else "false", "tma_stages": _overlap.TMA_STAGES,
            "tma_box_rows": _overlap.TMA_BOX_ROWS, "tma_box_cols": _overlap.TMA_BOX_COLS,
            "tma_tiles": _overlap.TMA_TILES, "tma_unroll": _overlap.TMA_UNROLL,
            "out_tma": _overlap.tma_offset(case) if tma else 0,
            "overlap_map_param": ", const __grid_constant__ TmaMap map" if tma else "",
            "overlap_map_ref": "&map" if tma else "nullptr"}


def _ring_matches(words: np.ndarray) -> np.ndarray:
    """The producer's record decoded: 1.0 for each ring word that holds what its slot's last load brought (the
    count of loads read from the record), 0.0 for one that does not (or where a slot was never loaded)."""
    words = np.asarray(words, dtype=np.uint32)
    ring = words[1:1 + _overlap.TMA_STAGES * _overlap.TMA_TILE_WORDS]
    expected = _overlap.ring_expected(int(words[0]))
    return np.zeros(ring.size) if expected is None else (ring == expected).astype(np.float64)


def _overlap_expectation(case: OverlapCase) -> SassExpectation:
    """probe_overlap_wgmma: WGMMA_UNROLL HGMMA in its timed loop body, and the instruction's 16 x 8 steps in warpgroup
    1's body; probe_overlap_simt the same two loops, timed the other way round. Nothing of `forbidden` inside a body
    (the untimed side polls its flag between bodies)."""
    kernels = []
    op = _ops.OPS[case.op] if case.op else None
    for kernel in _overlap.kernels(case):
        if case.n:
            kernels.append((kernel, KernelExpectation(_overlap.mnemonic(case), _overlap.WGMMA_UNROLL,
                                                      _ops.MEMORY_ONLY + ("BRA",))))
        if op:
            for i, (mnemonic, count) in enumerate(op.sass):
                kernels.append((kernel, KernelExpectation(mnemonic, CHAINS.unroll * MAX_ILP * count, op.forbidden,
                                                          also=op.also if i == 0 else ())))
        if case.tma:  # one body of loads, each a 2-D tile load completed on an mbarrier
            kernels.append((kernel, KernelExpectation("UTMALDG.2D", _overlap.TMA_UNROLL)))
    return SassExpectation(tuple(kernels), (_overlap.mnemonic(case) if case.n else "nothing") + " beside "
                           + (op.executes if op else "nothing") + (" and UTMALDG.2D" if case.tma else ""), False,
                           invalidating_notes=("C7510", "C7511", "C7515", "C7519"),
                           spill_kernels=tuple(_overlap.kernels(case)))


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


def _overlap_plan(case: OverlapCase) -> list:
    specs = []
    wgmma = f"wgmma m64n{case.n}k{case.k} {case.form}" if case.n else None
    tma = f"TMA loads ({_overlap.TMA_TILE_BYTES} B boxes)" if case.tma else None
    beside = {"wgmma": " and ".join(filter(None, (case.op, tma))) or "nothing",
              "simt": " and ".join(filter(None, (wgmma, tma))) or "nothing",
              "tma": " and ".join(filter(None, (wgmma, case.op))) or "nothing"}
    for role in case.roles:
        if role == "wgmma":
            specs.append(ChainSlope("issue_interval_cycles", "probe_overlap_wgmma", case.threads, units=case.units, per_iter=1,
                                    unroll=_overlap.WGMMA_UNROLL, launch={"role": "wgmma", "beside": beside[role]},
                                    notes=f"one SM: warpgroup 0's wgmma back to back while warpgroup 1 runs "
                                          f"{beside[role]}; cycles per wgmma"))
        elif role == "tma":
            specs.append(ChainSlope("issue_interval_cycles", "probe_overlap_tma", case.threads, units=case.units,
                                    per_iter=1, unroll=_overlap.TMA_UNROLL,
                                    launch={"role": "tma", "beside": beside[role], "bytes": _overlap.TMA_TILE_BYTES},
                                    notes=f"one SM: the producer warp's TMA loads ({_overlap.TMA_TILE_BYTES} B each, "
                                          f"{_overlap.TMA_STAGES} in flight, from an L2-resident source) while the "
                                          f"others run {beside[role]}; cycles per load"))
        else:
            specs.append(ChainSlope("issue_interval_cycles", "probe_overlap_simt", case.threads, units=case.units, per_iter=MAX_ILP,
                                    unroll=CHAINS.unroll, launch={"role": "simt", "beside": beside[role]},
                                    notes=f"one SM: warp 0 of warpgroup 1 (4 warps, 8 chains each) while warpgroup 0 "
                                          f"runs {beside[role]}; cycles per instruction of one warp"))
    return specs
