"""ldmatrix and stmatrix (the fragment loaders of mma.sync): the Family object, its cases and NumPy model.
Its analytical model: model.py; its report section: figures.py.

    ldmatrix.sync.m8n8.x<1|2|4>[.trans].shared.b16      stmatrix.sync.m8n8.x<1|2|4>[.trans].shared.b16
are the PTX instructions without `.aligned`. One warp moves NUM 8x8 matrices of 16-bit elements
between shared memory and registers: lane 8i + r supplies the address of row r of matrix i (16 B,
16-byte aligned); lane l holds, of matrix i, one 32-bit register with two elements (PTX ISA,
"ldmatrix" and "stmatrix"):
    without .trans   row l // 4, columns 2 (l % 4) and 2 (l % 4) + 1
    with .trans      column l // 4, rows 2 (l % 4) and 2 (l % 4) + 1
`positions` (harness/smembanks.py's `ldmatrix_positions`) is that map, the NumPy model every validation uses. Probe template:
ptx/loaders.cu.in. Metrics: latency_cycles (one warp: a pointer chase through ldmatrix, or a
stmatrix -> ld.shared round trip) and sm_throughput in shared-memory bytes per cycle per SM.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import product
from typing import ClassVar

import numpy as np

from harness.errors import IllegalShapeError, SpecError
from harness.families.base import Check, Family, Inputs, KernelExpectation, SassExpectation, Suite, Work
from harness.families.loaders.model import B_BANK as PEAK_BYTES_PER_CYCLE
from harness.measure.methods import ChainSlope, OccupancySweep, SweepPoint
from harness.smembanks import ldmatrix_positions as positions  # ldmatrix's lane map, shared with the banks family
from harness.spec import Case

OPS = ("ldmatrix", "stmatrix")
NUMS = (1, 2, 4)
UNROLL = 16
REGION = 512  # bytes between copies of the matrices (4 x 128 B)
REGIONS = UNROLL  # copies: the stream's loop body addresses each once, so ptxas can merge none of them
IMAGE_WORDS = REGIONS * REGION // 4
OUT_REGS = 4
OUT_WORDS = 32 * OUT_REGS + IMAGE_WORDS
SWEEP_WARPS = (1, 2, 4, 8, 16, 32)
STREAM_CHECK_WARPS = 4

_ID = re.compile(r"^(?P<op>ldmatrix|stmatrix)\.sync\.m8n8\.x(?P<num>\d+)(?P<trans>\.trans)?\.shared\.b16$")


@dataclass(frozen=True)
class LoaderCase(Case):
    family: ClassVar[str] = "loaders"
    op: str  # ldmatrix or stmatrix
    num: int  # matrices per instruction
    trans: bool = False

    @property
    def base_id(self) -> str:
        return f"{self.op}.sync.m8n8.x{self.num}{'.trans' if self.trans else ''}.shared.b16"

    @property
    def ptx(self) -> str:
        return self.base_id.replace(".sync.", ".sync.aligned.", 1)

    @property
    def store(self) -> bool:
        return self.op == "stmatrix"

    def columns(self) -> dict[str, object]:
        return dict(instruction=self.op, m=8, n=8, dtype_a="b16", layout="trans" if self.trans else "row")


def cases() -> list[LoaderCase]:
    return [LoaderCase(op, num, trans) for op, num, trans in product(OPS, NUMS, (False, True))]


def parse(case_id: str) -> LoaderCase:
    match = _ID.match(case_id)
    if not match:
        raise SpecError(f"cannot parse case id {case_id!r}: expected e.g. 'ldmatrix.sync.m8n8.x4.trans.shared.b16' "
                        "(see `bench list --suite loaders`)")
    return LoaderCase(match["op"], int(match["num"]), bool(match["trans"]))


def check(case: LoaderCase) -> None:
    if case.num not in NUMS:
        raise IllegalShapeError(f"{case}: {case.op} moves x1, x2 or x4 matrices, not x{case.num}")


# -- the NumPy model ------------------------------------------------------------------------------

def row_offsets(num: int, region: int = 0) -> np.ndarray:
    """(32,) byte offset each lane supplies: row l % 8 of matrix (l % 8 num) // 8 of the region. Lanes
    past 8 num supply nothing the instruction reads; they repeat the first ones."""
    lane = np.arange(32) % (8 * num)
    return region + 128 * (lane // 8) + 16 * (lane % 8)


def load(image16: np.ndarray, rows: np.ndarray, num: int, trans: bool) -> np.ndarray:
    """(32, num) uint32: what ldmatrix puts in each lane's registers."""
    pos = positions(rows, num, trans)
    halves = image16[pos].astype(np.uint32)
    return halves[..., 0] | (halves[..., 1] << 16)


def store(image16: np.ndarray, rows: np.ndarray, registers: np.ndarray, trans: bool) -> np.ndarray:
    """The image after stmatrix of `registers` (32, num): a copy."""
    out = image16.copy()
    pos = positions(rows, registers.shape[1], trans)
    out[pos[..., 0]] = registers & 0xFFFF
    out[pos[..., 1]] = registers >> 16
    return out


# -- the family -----------------------------------------------------------------------------------

def _mnemonic(case: LoaderCase) -> str:
    """LDSM.16.M88 / STSM.16.M88, .MT88 with .trans, then .2 or .4 (ptxas 13, sm_90a)."""
    base = ("STSM" if case.store else "LDSM") + (".16.MT88" if case.trans else ".16.M88")
    return base + ("" if case.num == 1 else f".{case.num}")


class LoadersFamily(Family):
    name = "loaders"
    description = "ldmatrix/stmatrix: warp-level fragment loads and stores between shared memory and registers"
    id_prefixes = ("ldmatrix.", "stmatrix.")
    example_id = "ldmatrix.sync.m8n8.x4.shared.b16"
    template = "loaders.cu.in"

    cases = staticmethod(cases)
    parse = staticmethod(parse)
    check = staticmethod(check)

    @staticmethod
    def suites() -> dict[str, Suite]:
        return {
            "loaders": Suite("ldmatrix and stmatrix, x1/x2/x4, with and without .trans: latency and shared-memory "
                             "bytes per cycle per SM", cases),
            "ldmatrix": Suite("ldmatrix only", lambda: [c for c in cases() if not c.store]),
            "stmatrix": Suite("stmatrix only", lambda: [c for c in cases() if c.store]),
        }

    def template_params(self, case: LoaderCase) -> dict[str, object]:
        self.check(case)
        regs = range(case.num)
        return {
            "instruction": case.ptx,
            "num": case.num,
            "store": "true" if case.store else "false",
            "trans": "true" if case.trans else "false",
            "unroll": UNROLL,
            "region": REGION,
            "regions": REGIONS,
            "reg_operands": ", ".join(f"%{i}" for i in regs),
            "address_operand": case.num,
            "reg_outputs": ", ".join(f'"=r"(r[{i}])' for i in regs),
            "store_operands": ", ".join(f"%{i + 1}" for i in regs),
            "reg_inputs": ", ".join(f'"r"(r[{i}])' for i in regs),
        }

    def sass_expectation(self, case: LoaderCase) -> SassExpectation:
        """UNROLL x the instruction in the chain and the stream loop. Nothing else touches memory between
        them, except the stmatrix chain's read-back (LDS), which is what that chain measures."""
        mnemonic = _mnemonic(case)
        others = ("LDG", "LDL", "LD.", "STG", "STL", "ST.", "BAR", "MEMBAR", "BRA", "DEPBAR", "ATOM", "RED",
                  "STS ", "STS.")  # plain shared stores (not STSM)
        plain_loads = ("LDS ", "LDS.")  # plain shared loads (not LDSM)
        if case.store:
            stream_forbidden, chain_forbidden = others + plain_loads + ("LDSM",), others + ("LDSM",)
        else:
            stream_forbidden = chain_forbidden = others + plain_loads + ("STSM",)
        return SassExpectation(
            (("probe_chain", KernelExpectation(mnemonic, UNROLL, chain_forbidden)),
             ("probe_stream", KernelExpectation(mnemonic, UNROLL, stream_forbidden)),
             ("probe_once", KernelExpectation(mnemonic, 1))),
            executes=mnemonic, spill_kernels=("probe_chain", "probe_stream"))

    # -- correctness -----------------------------------------------------------------------------

    def inputs(self, case: LoaderCase, rng: np.random.Generator) -> Inputs:
        """A random image; for ldmatrix, matrix 0 of each region holds, in the word each lane receives,
        the lane's row offset in the other region (the pointer chase), flagged for the kernel to add
        its shared base; for stmatrix, random registers and each lane's read-back offset."""
        image = rng.integers(0, 1 << 16, REGIONS * REGION // 2, dtype=np.uint64)
        patch = np.zeros_like(image)
        registers = rng.integers(0, 1 << 32, (32, OUT_REGS), dtype=np.uint64)
        a, b = row_offsets(case.num), row_offsets(case.num, REGION)
        readback = np.zeros(32, dtype=np.uint64)
        if case.store:
            readback = 2 * positions(a, case.num, case.trans)[:, 0, 0]
        else:
            for here, there in ((a, b), (b, a)):
                pos = positions(here, 1, case.trans)[:, 0, :]
                image[pos[:, 0]], image[pos[:, 1]] = there & 0xFFFF, there >> 16
                patch[pos[:, 0]] = 1
            registers[:] = 0
        zero = np.zeros(1, dtype=np.uint64)  # the stream's runtime zero (ptx/loaders.cu.in)
        words = [_pack16(image), _pack16(patch), registers.ravel(), a, readback, zero]
        buffer = np.concatenate([np.asarray(w, dtype=np.uint64) for w in words]).astype(np.uint32).view(np.uint8)
        values = {"image": image.astype(np.uint32), "registers": registers.astype(np.uint32)}
        return Inputs(buffer, values, "uniform random 16-bit elements and 32-bit registers" +
                      ("" if case.store else "; matrix 0 holds the pointer chase's row addresses"))

    def checks(self, case: LoaderCase, inputs: Inputs) -> list[Check]:
        """One instruction against the model; the chain's end (UNROLL steps, alternating between regions
        0 and 1); the stream's (warp 0 of STREAM_CHECK_WARPS, two loop bodies, each instruction of a body
        in its own region): every word exact."""
        image, registers = inputs.values["image"], inputs.values["registers"][:, :case.num]
        a, b = row_offsets(case.num), row_offsets(case.num, REGION)
        if case.store:
            once = _output(registers, store(image, a, registers, case.trans))
            chained = registers.copy()
            chained[:, 0] &= 0xFFFF if case.trans else 0xFFFFFFFF
            chain = _output(chained, store(image, a, chained, case.trans))
            stream = image
            for region in range(REGIONS):
                stream = store(stream, row_offsets(case.num, region * REGION), registers, case.trans)
            stream = _output(registers, stream)
        else:
            # The image holds offsets where the kernel's shared memory holds addresses; the kernel reports
            # matrix 0's registers less its base, so the model's registers are the expected ones.
            once = _output(load(image, a, case.num, case.trans))
            chain = _output(load(image, b, case.num, case.trans))  # the last of UNROLL steps reads B
            every = sum(load(image, row_offsets(case.num, region * REGION), case.num, case.trans).astype(np.uint64)
                        for region in range(REGIONS))
            stream = _output(2 * every % (1 << 32))  # 2 loop bodies: each region loaded twice
        warps = STREAM_CHECK_WARPS
        return [Check("probe_once", 32, UNROLL, 5, once, 0.0, "registers and image after one instruction"),
                Check("probe_chain", 32, UNROLL, 5, chain, 0.0, f"after a chain of {UNROLL}"),
                Check("probe_stream", 32 * warps, 2 * UNROLL, 5 * warps, stream, 0.0,
                      f"warp 0 of {warps} after {2 * UNROLL} instructions")]

    def output_words(self, case: LoaderCase) -> int:
        return OUT_WORDS

    def decode(self, case: LoaderCase, words: np.ndarray) -> np.ndarray:
        """Every output word as a number: the lanes' registers, then the image (ptx/loaders.cu.in)."""
        return np.asarray(words[:OUT_WORDS], dtype=np.uint32).astype(np.float64)

    # -- measurement -----------------------------------------------------------------------------

    def work(self, case: LoaderCase) -> Work:
        return Work(128 * case.num, "B")  # NUM matrices of 8 rows x 16 B per warp instruction

    def peak(self, case: LoaderCase) -> float | None:
        return PEAK_BYTES_PER_CYCLE

    def plan(self, case: LoaderCase, device=None) -> list:
        chain = ("a pointer chase: each ldmatrix's row address is the register the previous one loaded"
                 if not case.store else
                 "a round trip: stmatrix, then ld.shared of the lane's stored element, the next store's data")
        sweep = tuple(SweepPoint("probe_stream", w, 1, {"warps": w}) for w in SWEEP_WARPS)
        return [ChainSlope("latency_cycles", "probe_chain", 32, unroll=UNROLL, launch={"warps": 1}, notes=chain),
                OccupancySweep(sweep, 32, UNROLL, whole_gpu="none")]

    def headline(self, metric: str) -> dict | None:
        return None  # latency: one launch; throughput: the best warps per SM

    def describe(self, case: LoaderCase) -> list[str]:
        layout = "column l // 4, rows 2 (l % 4) + {0, 1}" if case.trans else "row l // 4, columns 2 (l % 4) + {0, 1}"
        return [f"{case.num} matrices of 8 x 8 b16 per warp ({128 * case.num} B); lanes 0-{8 * case.num - 1} "
                f"supply the row addresses; lane l holds, per matrix, {layout}",
                f"sm_90a runs: {_mnemonic(case)}"]

    @property
    def model(self):
        from harness.families.loaders.model import LoaderModel

        return LoaderModel()

    def figures(self, context) -> list:
        from harness.families.loaders.figures import figures

        return figures(context)


def _pack16(elements: np.ndarray) -> np.ndarray:
    pairs = elements.reshape(-1, 2).astype(np.uint64)
    return pairs[:, 0] | (pairs[:, 1] << 16)


def _output(registers: np.ndarray, image: np.ndarray | None = None) -> np.ndarray:
    out = np.zeros(OUT_WORDS)
    out[:32 * OUT_REGS].reshape(32, OUT_REGS)[:, :registers.shape[1]] = registers
    if image is not None:
        out[32 * OUT_REGS:] = _pack16(image)
    return out


FAMILY = LoadersFamily()
