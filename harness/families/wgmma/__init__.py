"""wgmma.mma_async (sm_90a): the Family object (harness/families/base.py) for warpgroup MMA.

Cases, ids and legality: cases.py. Shared-memory descriptors: descriptors.py. Register fragments:
fragments.py. The analytical model and its fit: model.py, fitting.py. Report sections: figures.py (plots.py draws
them); its finding: findings.py.
Probe template: ptx/wgmma.cu.in.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from harness import dtypes, seed_chapter, sparsity
from harness.errors import SpecError
from harness.families.base import Check, Family, Inputs, KernelExpectation, SassExpectation, Suite, Work
import harness.families.wgmma.cases as _cases
from harness.families.wgmma.cases import LAYOUTS, M, PAPER_N, WgmmaCase
from harness.families.wgmma.descriptors import Layout
from harness.families.wgmma.model import DENSE_FLOP_PER_SM_PER_CYCLE
from harness.families.wgmma.fragments import (WARPGROUP_THREADS, a_fragment_words, accumulator_registers,
                                              gather_accumulators)
from harness.measure.methods import BracketedLatency, ChainSlope, OccupancySweep, SweepPoint
from harness.measure.validate import accumulation_tolerance
from harness.spec import PLANTED_FAULTS

# wgmma issued per unrolled loop body of the chain kernel. ptxas places one WARPGROUP.ARRIVE at
# the head of each body (reported by the SASS check); 16 amortises it while keeping compiles quick.
UNROLL = 16
MAX_WARPGROUPS_PER_SM = 4  # 512 threads: what 4 SM sub-partitions issue from
EVERYDAY = ("f16", "bf16")  # the `wgmma` suite's input types (the paper's)
# Input distributions (Family.inputs patterns) and how each is described in the database. "random" is
# what every case validates and is timed on; at N = 256 throughput is measured on the others too.
INPUT_DISTRIBUTIONS = {
    "random": lambda c: (f"uniform over the {c.dtype_a}/{c.dtype_b} values" if c.dtype_a in dtypes.INTEGER_RANGE
                         else f"normal(0,1) rounded to {c.dtype_a}/{c.dtype_b}"),
    "zeros": lambda c: "zeros",
    "uniform01": lambda c: (f"uniform in [0, 1) rounded to {c.dtype_a}/{c.dtype_b} (a C rand()/RAND_MAX fill)"
                            if c.dtype_a not in dtypes.INTEGER_RANGE else "uniform over {0, 1}"),
    "small-int": lambda c: "integers in [-2, 2] (unsigned: [0, 2]; b1: 0/1)",
    "uniform11": lambda c: (f"uniform in [-1, 1) rounded to {c.dtype_a}/{c.dtype_b} (the paper's program's "
                            f"random fill)" if c.dtype_a not in dtypes.INTEGER_RANGE
                            else f"uniform over the {c.dtype_a}/{c.dtype_b} values (the paper's program's random fill)"),
}
DISTRIBUTION_N = 256  # the N whose throughput is measured on every input distribution
# At DISTRIBUTION_N the types of 2501.12084 Table 13 (power and energy efficiency of wgmma at N = 256)
# are also measured for energy on these distributions: ours, all zeros, and the paper program's fill.
ENERGY_TYPES = {("f16", "f16"), ("f16", "f32"), ("tf32", "f32"), ("e4m3", "f16"), ("e4m3", "f32"), ("s8", "s32")}
ENERGY_INPUTS = ("random", "zeros", "uniform11")
# Sustained against burst. Our whole-GPU samples are back-to-back launches of ~9 ms: a sustained load,
# clocked down by the power cap. The paper's program (HPMLL/NVIDIA-Hopper-Benchmark) times one ~7 ms
# launch per process, a burst from an idle GPU. At N = 256 the dense forms are also timed that way,
# on that program's two fills: each sampled launch follows BURST_IDLE_MS of idle. A chosen setting, not a
# measured threshold: runs 39/40 used 100 ms, after which 4 of the H200's burst rows stayed up to 0.12 %
# under the minimum of that program's launches (one process each, so idle for longer); hence 250 ms.
BURST_INPUTS = ("zeros", "uniform11")
BURST_IDLE_MS = 250.0


def stored_k(case: WgmmaCase) -> int:
    """Columns of A as held: sparse A is compressed to K / 2."""
    return case.k // 2 if case.sparse else case.k


def latency_selector(case: WgmmaCase) -> int:
    """The sparsity selector of the latency kernel; the chain uses 0. ptxas accepts 0 or 1 for 16-bit
    and tf32 inputs (metadata in lanes 0-1 or 2-3 of each group of four) and only 0 for 8-bit inputs
    (all four lanes hold metadata), so every sparse probe validates each selector its type allows."""
    return 1 if case.sparse and sparsity.metadata_lanes(case.dtype_a, case.k) < 4 else 0


def warpgroup_metadata(case: WgmmaCase, pattern: np.ndarray) -> np.ndarray:
    """(128, 2) uint32: each thread's metadata word for selector 0 (the chain) and for the latency
    kernel's selector. Warp w holds rows 16w..16w+15 as one warp's mma.sp of the same K does."""
    words = np.zeros((WARPGROUP_THREADS, 2), dtype=np.uint32)
    for warp in range(WARPGROUP_THREADS // 32):
        rows = pattern[16 * warp:16 * (warp + 1)]
        for column, selector in enumerate((0, latency_selector(case))):
            words[32 * warp:32 * (warp + 1), column] = sparsity.metadata(case.dtype_a, rows, selector)
    return words


TILE_ALIGN = 1024  # B starts here after A: the 128-byte swizzle's repeat, so every base offset is 0
DECOY_BYTE = 0x55  # fills the bytes of a swizzled tile that no element uses (finite in every type)


def layouts(case: WgmmaCase) -> tuple[Layout | None, Layout]:
    """Shared-memory layouts of A (None in RS mode; M x K/2 when sparse) and B (N x K), both in the
    case's layout; MN-major tiles pack their blocks along MN first, as the PTX ISA's examples do."""
    bits = dtypes.BITS[case.dtype_a]
    major, swizzle = LAYOUTS[case.layout]
    packing = "mn-first" if major == "MN" else "k-first"
    a = Layout(M, stored_k(case), bits, major, swizzle, packing) if case.operands == "SS" else None
    return a, Layout(case.n, case.k, bits, major, swizzle, packing)


def b_offset(case: WgmmaCase) -> int:
    a, _ = layouts(case)
    return -(-a.size_bytes // TILE_ALIGN) * TILE_ALIGN if a else 0


def descriptors(case: WgmmaCase):
    """(A descriptor or None, B descriptor), start addresses relative to the shared buffer."""
    a, b = layouts(case)
    return (a.descriptor(0) if a else None), b.descriptor(b_offset(case))


def sass_mnemonic(case: WgmmaCase) -> str:
    """What ptxas 13 emits for sm_90a (checked by tests/test_conformance.py on every case):
    HGMMA for 16-bit and tf32 inputs, QGMMA for fp8, IGMMA for s8/u8, BGMMA for b1."""
    shape = ("SP." if case.sparse else "") + f"64x{case.n}x{case.k}"
    a, b = case.dtype_a.upper(), case.dtype_b.upper()
    if case.dtype_a in ("f16", "bf16"):
        return f"HGMMA.{shape}.{case.dtype_acc.upper()}" + (".BF16" if case.dtype_a == "bf16" else "")
    if case.dtype_a == "tf32":
        return f"HGMMA.{shape}.F32.TF32"
    if case.dtype_a in _cases.FP8:
        return f"QGMMA.{shape}.{case.dtype_acc.upper()}.{a}.{b}"
    if case.dtype_a in _cases.INT8:
        return f"IGMMA.{shape}.{a}.{b}" + (".SAT" if case.satfinite else "")
    return f"BGMMA.{shape}.AND.POPC"


def _everyday() -> list[WgmmaCase]:
    """The main job: every dense f16/bf16 form, without the N = 256 energy points (`wgmma-energy`)."""
    return [replace(c, energy=False) for c in _cases.cases() if c.dtype_a in EVERYDAY]


def _energy() -> list[WgmmaCase]:
    """What `wgmma` leaves out: its N = 256 cases with the input-distribution, energy and burst points
    (WgmmaFamily.plan)."""
    return [c for c in _cases.cases() if c.dtype_a in EVERYDAY and c.n == DISTRIBUTION_N]


def _all() -> list[WgmmaCase]:
    """Every wgmma form: dense, sparse, then the dense forms in the other shared-memory layouts."""
    return _cases.cases() + _cases.sparse_cases() + _cases.layout_cases()


def _of(*types: str):
    return lambda: [c for c in _all() if c.dtype_a in types]


def _quick() -> list[WgmmaCase]:
    return [replace(c, energy=False) for c in _cases.cases()
            if c.n in PAPER_N and c.dtype_a == "f16" and c.dtype_acc == "f32"]


def _faults() -> list[WgmmaCase]:
    """wgmma-quick with a faulting copy of every fourth case planted after it: the run must store
    each fault against its case and measure every other case (crash isolation self-test)."""
    cases, faults = [], iter(PLANTED_FAULTS)
    for i, case in enumerate(_quick()):
        cases.append(case)
        if i % 4 == 1 and (fault := next(faults, None)):
            cases.append(replace(case, fault=fault))
    return cases


def reference(case: WgmmaCase, inputs: Inputs) -> np.ndarray:
    """D = A @ B in float64 (B is stored N x K)."""
    return inputs.values["a"] @ inputs.values["b"].T


def tolerance(case: WgmmaCase, inputs: Inputs, chain: int = 1) -> np.ndarray | float:
    """Integer and b1: exact. Float: harness/measure/validate.py accumulation_tolerance (products of
    two 16-bit, tf32 or fp8 values are exact in f32). fp8 into f32 accumulates with fewer bits
    than f32 holds: DeepSeek-V3's technical report (arXiv 2412.19437, section 3.3.2) measured about
    14 bits on H800, so its unit roundoff is taken as 2^-13."""
    if case.dtype_acc == "s32":
        return 0.0
    magnitude = np.abs(inputs.values["a"]) @ np.abs(inputs.values["b"]).T
    if case.dtype_a in _cases.FP8 and case.dtype_acc == "f32":
        # The report describes products aligned to the largest exponent, the running sum included,
        # and cut to ~14 bits: each of the K products of instruction i may lose 2^-13 of a sum of
        # up to i x magnitude. The H100 showed it: all-positive uniform01 inputs broke the per-add
        # bound by 0.2 % in a chain of 16 (run of 2026-11-22, m64n256k32 e4m3 SS and RS).
        u = 2.0 ** -13
        return (2 * case.k * chain + case.k * chain * (chain + 1) / 2) * u * magnitude
    return accumulation_tolerance(dtypes.unit_roundoff(case.dtype_acc), case.k, magnitude, chain)


class WgmmaFamily(Family):
    name = "wgmma"
    description = "wgmma.mma_async: warpgroup MMA from shared memory (SS) or registers (RS)"
    id_prefixes = ("wgmma.",)
    example_id = "wgmma.mma_async.m64n128k16.f32.f16.f16.SS"
    template = "wgmma.cu.in"

    cases = staticmethod(_all)
    parse = staticmethod(_cases.parse)
    check = staticmethod(_cases.check)

    def suites(self) -> dict[str, Suite]:
        return {
            "wgmma": Suite("dense wgmma m64nNk16: f16 (f32 and f16 accumulate) and bf16, N = 8..256, SS and RS "
                           "(the N = 256 input, energy and burst points are `wgmma-energy`)", _everyday),
            "wgmma-energy": Suite("the `wgmma` suite's N = 256 cases with what it leaves out: throughput on every "
                                  "input distribution, mean power and energy per operation over 2-s windows (f16 "
                                  "types), bursts after idle; runs of record run it after `wgmma`", _energy),
            "wgmma-quick": Suite("f16 inputs, f32 accumulate, SS and RS, at the paper's N = 8, 16, 32, 64, 128, 256",
                                 _quick),
            "faults": Suite("self-test: wgmma-quick with planted faulting probes (trap, out-of-bounds store, "
                            "endless loop); expect 3 faults and 12 valid cases", _faults),
            "wgmma-all": Suite("every wgmma: dense in f16, bf16, tf32, e4m3/e5m2 pairs, s8/u8 pairs (with and "
                               "without .satfinite) and b1, and sparse in every type but b1; every legal N; SS and RS; "
                               "and the wgmma-layouts cases",
                               _all, part_of=("tensor",)),
            "wgmma-dense": Suite("every dense wgmma (every type, every legal N, SS and RS)", _cases.cases),
            "wgmma-sparse": Suite("every sparse wgmma.mma_async.sp: every type but b1, every legal N, SS and RS",
                                  _cases.sparse_cases),
            "wgmma-layouts": Suite("shared-memory layouts: K-major with 32, 64 and 128-byte swizzle for one form "
                                   "per type, MN-major with and without swizzle for f16/bf16; N = 8, 64, 128, 256; "
                                   "SS and RS", _cases.layout_cases),
            "wgmma-tf32": Suite("wgmma with tf32 inputs: dense m64nNk8 and sparse m64nNk16", _of("tf32")),
            "wgmma-fp8": Suite("wgmma with e4m3/e5m2 inputs, f32 and f16 accumulate: dense m64nNk32 and sparse "
                               "m64nNk64", _of(*_cases.FP8)),
            "wgmma-int8": Suite("wgmma with s8/u8 inputs, s32, with and without .satfinite: dense m64nNk32 and "
                                "sparse m64nNk64", _of(*_cases.INT8)),
            "wgmma-b1": Suite("dense wgmma m64nNk256 .and.popc with b1 inputs (there is no sparse b1)", _of("b1")),
        }

    # -- the probe -------------------------------------------------------------------------------

    def template_params(self, case: WgmmaCase) -> dict[str, object]:
        self.check(case)
        acc_regs = accumulator_registers(case.n, case.dtype_acc)
        a_layout, b_layout = layouts(case)
        desc_a, desc_b = descriptors(case)
        d_constraints = ", ".join(f'"+r"(d[{i}])' for i in range(acc_regs))
        b_index = acc_regs + (1 if case.operands == "SS" else 4)
        # PTX: 16-bit types take imm-scale-a, imm-scale-b and the transposes (imm-trans-a in SS only);
        # tf32 and fp8 the two scales; integer and b1 types nothing after scale-d.
        scales = case.dtype_a not in _cases.INT8 + ("b1",)
        trans = case.dtype_a in _cases.TRANSPOSABLE
        trans_b = int(LAYOUTS[case.layout][0] == "MN")  # imm-trans: 1 reads the operand MN-major
        trans_a = trans_b if case.operands == "SS" else 0
        if case.operands == "SS":
            a_regs, a_operand, a_constraints = 0, f"%{acc_regs}", '"l"(desc_a)'
            immediates = (", 1, 1" if scales else "") + (f", {trans_a}, {trans_b}" if trans else "")
        else:
            a_regs = 4
            a_operand = "{" + ", ".join(f"%{acc_regs + i}" for i in range(a_regs)) + "}"
            a_constraints = ", ".join(f'"r"(a[{i}])' for i in range(a_regs))
            immediates = (", 1, 1" if scales else "") + (f", {trans_b}" if trans else "")
        return {
            "instruction": f"{case.instruction}.sync.aligned.{case.shape}{case.types}",
            "acc_regs": acc_regs,
            "a_regs": a_regs,
            "smem_a_bytes": b_offset(case),
            "smem_b_bytes": b_layout.size_bytes,
            "unroll": UNROLL,
            "desc_a": f"0x{desc_a.encode():016x}" if desc_a else "0x0",
            "desc_b": f"0x{desc_b.encode():016x}",
            "d_operands": ", ".join(f"%{i}" for i in range(acc_regs)),
            "d_constraints": d_constraints,
            "a_operand": a_operand,
            "a_constraints": a_constraints,
            "b_operand_index": b_index,
            "immediates": immediates,
            "meta_words": 2 if case.sparse else 0,
            "latency_selector": latency_selector(case),
            # sparse: sp-meta (a register) and sp-sel (an immediate) come after b-desc
            "sparse_operands": f"%{b_index + 1}, %{b_index + 2}, " if case.sparse else "",
            "sparse_constraints": ', "r"(e), "n"(SEL)' if case.sparse else "",
        }

    def sass_expectation(self, case: WgmmaCase) -> SassExpectation:
        """HGMMA of the case's shape and types; in the chain, UNROLL of them with no WARPGROUP.DEPBAR
        (a wait) or WARPGROUP.ARRIVE (a fence) between them. wgmma.commit_group compiles to an HGMMA
        into RZ, which does not count. ptxas notes C7510/C7515 say it serialized the chain."""
        mnemonic = sass_mnemonic(case)
        rz = (f"{mnemonic} RZ,",)
        chain = KernelExpectation(mnemonic, UNROLL, ("WARPGROUP.DEPBAR", "WARPGROUP.ARRIVE"), rz)
        return SassExpectation((("probe_chain", chain), ("probe_latency", KernelExpectation(mnemonic, 1, (), rz))),
                               executes=mnemonic, invalidating_notes=("C7510", "C7515"),
                               spill_kernels=("probe_chain", "probe_latency"))

    # -- correctness -----------------------------------------------------------------------------

    def inputs(self, case: WgmmaCase, rng: np.random.Generator, pattern: str = "random") -> Inputs:
        """Inputs laid out as the descriptors and fragments say.

        pattern="random": standard normal values rounded to the dtype (uniform over an integer type's
        values); the validation inputs. The other distributions of INPUT_DISTRIBUTIONS are what the
        throughput at N = 256 is also measured on (power, and so the clock, follow the data).
        pattern="index": small distinct values that make a layout bug readable.
        """
        if pattern in INPUT_DISTRIBUTIONS:
            a = self._values(case.dtype_a, (M, case.k), rng, pattern)
            b = self._values(case.dtype_b, (case.n, case.k), rng, pattern)
            distribution = INPUT_DISTRIBUTIONS[pattern](case)
        elif pattern == "index" and case.dtype_a in EVERYDAY:
            a = np.fromfunction(lambda i, k: (i % 8) + k / 16, (M, case.k))
            b = np.fromfunction(lambda j, k: ((j + k) % 4) / 4, (case.n, case.k))
            distribution = "index pattern"
        else:
            raise SpecError(f"unknown input pattern {pattern!r} for {case.dtype_a}: expected "
                            + ", ".join(INPUT_DISTRIBUTIONS) + (" or index" if case.dtype_a in EVERYDAY else ""))
        stored = a
        if case.sparse:  # zero outside a pattern drawn per chunk; held compressed, with its metadata
            chosen = sparsity.draw(case.dtype_a, M, case.k, rng)
            keep = sparsity.kept(case.dtype_a, chosen, case.k)
            a = np.where(keep, a, 0.0)
            stored = sparsity.compress(a, keep)
            distribution += "; A zero outside a random structured-sparse pattern per chunk"
        a_bits, b_bits = dtypes.encode(case.dtype_a, stored), dtypes.encode(case.dtype_b, b)
        a_layout, b_layout = layouts(case)
        parts = []
        if a_layout:
            a_image = a_layout.image(a_bits, DECOY_BYTE)
            parts.append(np.pad(a_image, (0, b_offset(case) - a_image.size), constant_values=DECOY_BYTE))
        parts.append(b_layout.image(b_bits, DECOY_BYTE))
        if case.operands == "RS":
            parts.append(a_fragment_words(a_bits, dtypes.BITS[case.dtype_a]).view(np.uint8).ravel())
        if case.sparse:
            parts.append(warpgroup_metadata(case, chosen).view(np.uint8).ravel())
        return Inputs(np.concatenate(parts), {"a": a, "b": b}, distribution)

    @staticmethod
    def _values(dtype: str, shape, rng: np.random.Generator, pattern: str = "random") -> np.ndarray:
        """Exactly representable values of `pattern` (INPUT_DISTRIBUTIONS): "random" is uniform over an
        integer type's range (0/1 for b1), else normal(0,1) rounded to the type (fp8 through ml_dtypes,
        tf32 by masking the low mantissa); "uniform01" uniform in [0, 1) rounded (0/1 for integer
        types); "uniform11" uniform in [-1, 1) rounded, as HPMLL/NVIDIA-Hopper-Benchmark's throughput
        program fills A and B (integer types: uniform over the type's values, as it does);
        "small-int" integers in [-2, 2] ([0, 2] unsigned, 0/1 for b1); "zeros" zeros."""
        low, high = dtypes.INTEGER_RANGE.get(dtype, (-2, 2))
        if pattern == "zeros":
            return np.zeros(shape)
        if pattern == "small-int":
            return rng.integers(max(low, -2), min(high, 2) + 1, shape).astype(np.float64)
        if dtype in dtypes.INTEGER_RANGE:
            low, high = (0, 1) if pattern == "uniform01" else (low, high)
            return rng.integers(low, high + 1, shape).astype(np.float64)
        drawn = {"uniform01": lambda: rng.random(shape), "uniform11": lambda: rng.uniform(-1.0, 1.0, shape)}
        return dtypes.round_to(dtype, drawn.get(pattern, lambda: rng.standard_normal(shape))())

    def checks(self, case: WgmmaCase, inputs: Inputs) -> list[Check]:
        """One wgmma (the latency kernel) must give A.B; one chain body must give UNROLL x A.B."""
        ref = reference(case, inputs)
        return [Check("probe_latency", WARPGROUP_THREADS, 1, WARPGROUP_THREADS, ref, tolerance(case, inputs),
                      "D (one wgmma)"),
                Check("probe_chain", WARPGROUP_THREADS, UNROLL, 5, UNROLL * ref, tolerance(case, inputs, UNROLL),
                      f"D (chain of {UNROLL})")]

    def output_words(self, case: WgmmaCase) -> int:
        """32-bit words the kernel writes: every thread's accumulator registers of one warpgroup."""
        return WARPGROUP_THREADS * accumulator_registers(case.n, case.dtype_acc)

    def decode(self, case: WgmmaCase, words: np.ndarray) -> np.ndarray:
        regs = accumulator_registers(case.n, case.dtype_acc)
        bits = gather_accumulators(words.reshape(WARPGROUP_THREADS, regs), case.n, case.dtype_acc)
        return dtypes.decode(case.dtype_acc, bits)

    # -- measurement -----------------------------------------------------------------------------

    def work(self, case: WgmmaCase) -> Work:
        return Work(2 * case.m * case.n * case.k, "OP" if case.dtype_acc == "s32" else "FLOP")

    def peak(self, case: WgmmaCase) -> float | None:
        """The type's dense rate; sparse: twice it. The work is dense-equivalent (2 M N K, K the logical
        K) for both, so peak_fraction is at most 1 either way (metric registry, "peak_fraction")."""
        dense = DENSE_FLOP_PER_SM_PER_CYCLE.get(case.dtype_a)
        return dense * 2 if dense and case.sparse else dense

    def plan(self, case: WgmmaCase, device=None) -> list:
        """The issue interval of one warpgroup's chain; fence+wgmma+commit+wait against the same
        without the wgmma; every SM with 1 warpgroup, then with 4 (or the most the registers allow); at
        N = 256 (default layout) also with one warpgroup on each other input distribution (validated
        first), to show what the data do to power and clock, and (dense) as bursts after idle on
        BURST_INPUTS.

        Work per cycle per SM (clock64) is measured in every case; the whole-GPU rate (CUDA events, ~9 ms
        launches, ~0.2 s a point) only where a published figure compares with it: the paper's N
        (PAPER_N), default layout. Under the power cap its samples swing by 1-2 % as the controller settles, so each point
        takes 14-20 of them; at every N they were 40 % of the `tensor` suite's time.
        Runs 1-19 swept 1, 2, 3 and 4 warpgroups: one warpgroup already issued at the full rate of every
        case (2244 cases, all within 0.04 %), so 2 and 3 added no information, only time; 4 stays, by
        clock64, as the check that one is enough."""
        one = {"warpgroups": 1, "ilp": 1}
        point = lambda w: SweepPoint("probe_chain", w, 1, {"warpgroups": w, "ilp": 1})  # noqa: E731
        full = range(MAX_WARPGROUPS_PER_SM, 1, -1)
        most = replace(point(full[0]), fallback=tuple(point(w) for w in full[1:]))
        compared = case.n in PAPER_N and case.layout == _cases.DEFAULT_LAYOUT  # where the paper has a point
        distributions = case.energy and case.n == DISTRIBUTION_N and case.layout == _cases.DEFAULT_LAYOUT
        energy = distributions and (case.dtype_a, case.dtype_acc) in ENERGY_TYPES and case.dtype_b == case.dtype_a
        others = []
        if distributions:
            others = [OccupancySweep((SweepPoint("probe_chain", 1, 1, {**one, "inputs": name}),), WARPGROUP_THREADS,
                                     UNROLL, inputs=name, energy=energy and name in ENERGY_INPUTS)
                      for name in INPUT_DISTRIBUTIONS if name != "random"]
            if not case.sparse:
                others += [OccupancySweep((SweepPoint("probe_chain", 1, 1,
                                                      {**one, "inputs": name, "idle_ms": BURST_IDLE_MS}),),
                                          WARPGROUP_THREADS, UNROLL, inputs=name, idle_ms=BURST_IDLE_MS)
                           for name in BURST_INPUTS]
        return [ChainSlope("issue_interval_cycles", "probe_chain", WARPGROUP_THREADS, unroll=UNROLL, launch=one),
                # One wgmma's round trip (fence to results usable) is latency_raw_cycles; less the same
                # sequence without it, what it adds (latency_added_cycles): the empty sequence's wait
                # overlaps the wgmma, so that is no latency and can be below the issue interval.
                BracketedLatency("probe_latency", "probe_latency_empty", WARPGROUP_THREADS,
                                 "fence+commit+wait_group 0 without the wgmma", launch=one,
                                 net_metric="latency_added_cycles"),
                OccupancySweep((point(1),), WARPGROUP_THREADS, UNROLL,
                               whole_gpu="every" if compared else "none", energy=energy),
                OccupancySweep((most,), WARPGROUP_THREADS, UNROLL, whole_gpu="none")] + others

    @staticmethod
    def paper_row(row: dict) -> str | None:
        """The seed architecture chapter's count of tensor cores: why it is no figure of ours (its peaks are)."""
        if row["paper"] == seed_chapter.SOURCE and row["metric"] == "tensor_cores_per_sm":
            return "a count of units: the tensor-core peaks it implies are mapped (wgmma throughput_tflops at the boost clock)"
        return None

    @staticmethod
    def paper_case(figure) -> tuple[str, str] | None:
        """A published wgmma figure's case and metric: the papers' wgmma "latency" is a back-to-back
        chain's issue interval (their loop issues the next wgmma without waiting on the previous).
        sm_clock_mhz is the clock a throughput figure was printed with (2501.12084 Table 13): not a
        metric of ours, it is what compare turns that figure into work per cycle per SM with."""
        metric = {"latency_cycles": "issue_interval_cycles", "throughput": "throughput_tflops",
                  "issue_interval_cycles": "issue_interval_cycles", "energy_efficiency": "energy_efficiency",
                  "power": "power_mean_w", "sm_clock": "sm_clock_mhz"}.get(figure.metric)
        if not figure.instruction.startswith("wgmma.mma_async") or metric is None:
            return None
        sp = ".sp" if figure.sparse else ""
        a, acc = figure.dtype_a, figure.dtype_acc
        return f"wgmma.mma_async{sp}.m{figure.m}n{figure.n}k{figure.k}.{acc}.{a}.{a}.{figure.operands}", metric

    def headline(self, metric: str) -> dict | None:
        """The launch whose value stands for the case where a metric has several (the paper's)."""
        return {"warpgroups": 1, "ilp": 1}

    def describe(self, case: WgmmaCase) -> list[str]:
        return [f"{name}: " + (d.describe() if d else "registers (RS mode)")
                for name, d in zip(("A", "B"), descriptors(case))]

    @property
    def model(self):
        from harness.families.wgmma.fitting import WgmmaModel

        return WgmmaModel()

    @property
    def advisors(self) -> tuple:
        from harness.families.wgmma.advice import SWAPAB

        return (SWAPAB,)

    def figures(self, context) -> list:
        from harness.families.wgmma.figures import figures

        return figures(context)

    def findings(self, context) -> list:
        from harness.families.wgmma.findings import findings

        return findings(context)


FAMILY = WgmmaFamily()
