"""Shared-memory bank conflicts: one warp access (ld/st.shared of 16, 32, 64 or 128 bits a lane, or
ldmatrix/stmatrix m8n8 x1/x2/x4) at addresses a layout of the layout library gives (patterns.py), timed
at every SM with 1-32 warps; the bank model (harness/smembanks.py: phases of 128 bytes, a phase as many
bank cycles as the most distinct words one bank holds) predicts its shared-memory bytes per cycle per SM.

Ids: banks.<ld|st>.b<16|32|64|128>.<layout> and banks.<ldmatrix|stmatrix>.x<1|2|4>[.trans].<layout>.
Probe template: ptx/banks.cu.in. Its model: model.py; its report section: figures.py.
"""

from __future__ import annotations

import numpy as np

import harness.families.banks.chapter as chapter
import harness.families.banks.patterns as patterns
from harness.families.banks.cases import BankCase, cases, check, parse
from harness.families.base import Check, Family, Inputs, KernelExpectation, SassExpectation, Suite, Work
from harness.measure.methods import OccupancySweep, SweepPoint
from harness.smembanks import BANKS, conflict_free_wavefronts, draw_bank_map, ldmatrix_positions

UNROLL = 8
REGION = 4096  # bytes between copies of the image: every layout fits one, and it is a multiple of 1024
REGIONS = UNROLL
IMAGE_WORDS = REGIONS * REGION // 4
OUT_REGS = 4
OUT_WORDS = 32 * OUT_REGS + IMAGE_WORDS
SWEEP_WARPS = (1, 2, 4, 8, 16, 32)
STREAM_ITERS = 2 * UNROLL  # the stream check: two loop bodies

# -- the NumPy model of what the instruction moves ----------------------------------------------------------

def _image_bytes(image: np.ndarray) -> np.ndarray:
    return image.astype("<u4").view(np.uint8)


def load(case: BankCase, image: np.ndarray, offset: int = 0) -> np.ndarray:
    """(32, OUT_REGS) uint64: each lane's registers after the load from region `offset` (bytes)."""
    out = np.zeros((32, OUT_REGS), dtype=np.uint64)
    addresses = case.addresses() + offset
    if case.matrix:
        halves = image.astype("<u4").view("<u2").astype(np.uint64)
        pos = ldmatrix_positions(addresses, case.num, case.trans)
        out[:, :case.num] = halves[pos[..., 0]] | (halves[pos[..., 1]] << 16)
        return out
    raw = _image_bytes(image)
    nbytes = case.access_bytes
    for lane, a in enumerate(addresses):
        chunk = raw[a:a + nbytes]
        if nbytes == 2:
            out[lane, 0] = int(chunk.view("<u2")[0])
        else:
            out[lane, :nbytes // 4] = chunk.view("<u4")
    return out


def store(case: BankCase, image: np.ndarray, registers: np.ndarray, offset: int = 0) -> np.ndarray:
    """The image (uint32 words) after each lane stores `registers` (32, OUT_REGS) at region `offset`."""
    out = image.astype("<u4").copy()
    addresses = case.addresses() + offset
    if case.matrix:
        halves = out.view("<u2")
        pos = ldmatrix_positions(addresses, case.num, case.trans)
        regs = registers[:, :case.num]
        halves[pos[..., 0]] = regs & 0xFFFF
        halves[pos[..., 1]] = regs >> 16
        return out
    raw = out.view(np.uint8)
    for lane, a in enumerate(addresses):
        if case.access_bytes == 2:
            raw[a:a + 2] = np.array([registers[lane, 0] & 0xFFFF], dtype="<u2").view(np.uint8)
        else:
            raw[a:a + case.access_bytes] = registers[lane, :case.access_bytes // 4].astype("<u4").view(np.uint8)
    return out


def _output(registers: np.ndarray, image: np.ndarray | None = None) -> np.ndarray:
    out = np.zeros(OUT_WORDS)
    out[:32 * OUT_REGS] = registers.ravel()
    if image is not None:
        out[32 * OUT_REGS:] = image
    return out


def _mnemonic(case: BankCase) -> str:
    """What ptxas 13 emits for sm_90a: LDS/STS with .U16, (none), .64, .128; LDSM/STSM .16.M88[.2|.4],
    .MT88 with .trans."""
    if case.matrix:
        base = ("STSM" if case.store else "LDSM") + (".16.MT88" if case.trans else ".16.M88")
        return base + ("" if case.num == 1 else f".{case.num}")
    suffix = {16: ".U16", 32: "", 64: ".64", 128: ".128"}[case.width]
    return ("STS" if case.store else "LDS") + suffix


class BanksFamily(Family):
    name = "banks"
    description = ("shared-memory bank conflicts: ld/st.shared (16-128 bits) and ldmatrix/stmatrix at addresses "
                   "of the layout library (conflict-free, swizzled, n-way), against the bank model")
    id_prefixes = ("banks.",)
    example_id = "banks.ld.b128.sw128"
    template = "banks.cu.in"

    cases = staticmethod(cases)
    parse = staticmethod(parse)
    check = staticmethod(check)

    @staticmethod
    def suites() -> dict[str, Suite]:
        return {
            "banks": Suite("shared-memory bank conflicts: ld/st.shared 16-128 bits and ldmatrix/stmatrix x1/x2/x4 "
                           "(.trans at x4), each under every layout (linear, 2..32-way, columns of 32/64/128-byte "
                           "rows plain and swizzled, an epilogue's fragment store, the seed chapter's f16 "
                           "swizzle): bytes per cycle per SM "
                           "against the bank model", cases),
            "banks-quick": Suite("LDS.32 and LDS.128 and ldmatrix.x4 under linear, col128, sw128 and the "
                                 "chapter's swizzle, and LDS.32 at 2..32 ways", lambda: [
                                     c for c in cases() if (c.op, c.width, c.num, c.trans) in (
                                         ("ld", 32, 1, False), ("ld", 128, 1, False), ("ldmatrix", 128, 4, False))
                                     and (c.layout in ("linear", "col128", "sw128", patterns.CHAPTER)
                                          or (c.width == 32 and c.layout.startswith("way")))]),
        }

    def template_params(self, case: BankCase) -> dict[str, object]:
        self.check(case)
        regs = range(case.regs)
        operands = ", ".join(f"%{i}" for i in regs)
        braced = "{" + operands + "}" if case.regs > 1 or case.matrix else operands
        store_ops = ", ".join(f"%{i + 1}" for i in regs)
        return {
            "instruction": case.ptx,
            "regs": case.regs,
            "store": "true" if case.store else "false",
            "unroll": UNROLL,
            "region": REGION,
            "regions": REGIONS,
            "load_operands": braced,
            "address_operand": case.regs,
            "reg_outputs": ", ".join(f'"=r"(r[{i}])' for i in regs),
            "store_operands": "{" + store_ops + "}" if case.regs > 1 or case.matrix else store_ops,
            "reg_inputs": ", ".join(f'"r"(r[{i}])' for i in regs),
            "fill_type": "u32" if (case.op, case.width) == ("st", 128) else "uint4",
        }

    def sass_expectation(self, case: BankCase) -> SassExpectation:
        """UNROLL x the instruction in the stream's loop body, no other memory access between them; one in
        probe_once."""
        mnemonic = _mnemonic(case)
        forbidden = ("LDG", "LDL", "STG", "STL", "BAR", "MEMBAR", "DEPBAR", "ATOM", "RED", "BRA")
        others = tuple(m for m in ("LDS", "STS", "LDSM", "STSM") if not mnemonic.startswith(m))
        return SassExpectation(
            (("probe_stream", KernelExpectation(mnemonic, UNROLL, forbidden + others)),
             ("probe_once", KernelExpectation(mnemonic, 1))),
            executes=mnemonic, spill_kernels=("probe_stream",))

    # -- correctness -----------------------------------------------------------------------------------

    def inputs(self, case: BankCase, rng: np.random.Generator) -> Inputs:
        image = rng.integers(0, 1 << 32, IMAGE_WORDS, dtype=np.uint64)
        registers = rng.integers(0, 1 << 32, (32, OUT_REGS), dtype=np.uint64)
        registers[:, case.regs:] = 0
        addr = case.addresses().astype(np.uint64)
        words = np.concatenate([image, registers.ravel(), addr, np.zeros(1, dtype=np.uint64)])
        buffer = words.astype(np.uint32).view(np.uint8)
        return Inputs(buffer, {"image": image.astype(np.uint32), "registers": registers}, "uniform random 32-bit words")

    def checks(self, case: BankCase, inputs: Inputs) -> list[Check]:
        """One instruction against the model, every word exact; the stream's warp 0 after two loop bodies
        (loads: each region's registers summed twice, mod 2^32; stores: every region written)."""
        image, registers = inputs.values["image"], inputs.values["registers"]
        if case.store:
            once = _output(registers, store(case, image, registers))
            streamed = image
            for region in range(REGIONS):
                streamed = store(case, streamed, registers, region * REGION)
            stream = _output(registers, streamed)
        else:
            once = _output(load(case, image))
            every = sum(load(case, image, region * REGION) for region in range(REGIONS))
            stream = _output(2 * every % (1 << 32))
        return [Check("probe_once", 32, UNROLL, 5, once, 0.0, "registers and image after one instruction"),
                Check("probe_stream", 128, STREAM_ITERS, 5 * 4, stream, 0.0,
                      f"warp 0 of 4 after {STREAM_ITERS} instructions")]

    def output_words(self, case: BankCase) -> int:
        return OUT_WORDS

    def decode(self, case: BankCase, words: np.ndarray) -> np.ndarray:
        return np.asarray(words[:OUT_WORDS], dtype=np.uint32).astype(np.float64)

    # -- measurement -----------------------------------------------------------------------------------

    def work(self, case: BankCase) -> Work:
        return Work(case.lanes * case.access_bytes, "B")  # the bytes the warp moves, not the bank cycles

    def peak(self, case: BankCase) -> float | None:
        """The instruction's bytes over its fewest bank cycles (one a 128-byte phase)."""
        return self.work(case).amount / conflict_free_wavefronts(case.lanes, case.access_bytes)

    def plan(self, case: BankCase, device=None) -> list:
        sweep = tuple(SweepPoint("probe_stream", w, 1, {"warps": w}) for w in SWEEP_WARPS)
        return [OccupancySweep(sweep, 32, UNROLL, whole_gpu="none")]

    def headline(self, metric: str) -> dict | None:
        return None  # the best of the warp sweep

    @staticmethod
    def within_sm(case) -> bool:
        """Bank conflicts are the SM's shared memory's: a GPU with the same SM has the same banks (figure_gpus)."""
        return True

    @staticmethod
    def paper_row(row: dict) -> dict | str | None:
        """The seed CuTe chapter's claims (chapter.py): a bank check's case and metric, or the layout library's verdict
        on a claim of layout algebra; None for every other source's figure."""
        return chapter.counterpart(row) if row["paper"] == chapter.SOURCE else None

    def describe(self, case: BankCase) -> list[str]:
        addresses = case.addresses()[:case.lanes]
        waves = case.wavefronts()
        best = conflict_free_wavefronts(case.lanes, case.access_bytes)
        who = "row r of matrix i from lane 8i + r" if case.matrix else "lane l"
        lines = [f"{case.ptx}: {case.lanes} {'rows' if case.matrix else 'lanes'} x {case.access_bytes} B "
                 f"({who}); sm_90a runs {_mnemonic(case)}",
                 f"layout {case.layout}: {patterns.explain(case.layout, case.access_bytes)}",
                 "byte offsets: " + " ".join(str(int(a)) for a in addresses),
                 f"bank model: {waves} wavefront{'s' * (waves != 1)} (conflict-free: {best}); predicted "
                 f"{self.work(case).amount / waves:g} B/cycle/SM of {BANKS * 4} B per bank cycle"]
        return lines + draw_bank_map(addresses, case.access_bytes)

    @property
    def model(self):
        from harness.families.banks.model import BankModel

        return BankModel()

    def figures(self, context) -> list:
        from harness.families.banks.figures import figures

        return figures(context)

    def findings(self, context) -> list:
        """Does shared memory keep to the 32-bank model (each GPU model's newest measurements)?"""
        from harness.families.banks.figures import findings

        return findings(context)


FAMILY = BanksFamily()
