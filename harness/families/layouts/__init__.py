"""Layouts read back: a tile that TMA lands under one swizzle mode (none, 32, 64, 128 bytes), with 16- or 8-bit
elements whose values say where they are, read back three ways in one kernel and checked against the layout
library (harness/layouts.py, through tile.py): the landed bytes, ldmatrix.x4 (and .trans for 16-bit elements) at
the addresses the library computes, and a wgmma whose descriptor (ptx/warpgroup.cuh smem_descriptor) has the
same swizzle, multiplying the tile by a permutation so that D shows what it read. Timed: warp 0's chain of
ldmatrix.x4 through the landed tile (latency_cycles).

Ids: layouts.tma.<none|sw32|sw64|sw128>.<b16|b8>. Probe template: ptx/layouts.cu.in; the map: gpu.py; the report
section and the site's finding: figures.py.
"""

from __future__ import annotations

import numpy as np

import harness.families.layouts.tile as tile
from harness.families.base import Check, Family, Inputs, KernelExpectation, SassExpectation, Suite, Work
from harness.families.layouts.cases import LayoutCase, cases, check, parse
from harness.measure.methods import ChainSlope
from harness.measure.timing import RECORD_WORDS
from harness.smembanks import draw_bank_map

UNROLL = 16  # chained ldmatrix per loop body: a multiple of every case's instruction count
THREADS = 128  # one warpgroup: wgmma's; warp 0 also runs the ldmatrix reads and the chain
SWIZZLE_NAMES = {0: "None", 32: "B32", 64: "B64", 128: "B128"}  # warpgroup.cuh's enum class Swizzle
WGMMA = {"f16": ("m64n16k16.f32.f16.f16", ", 1, 1, 0, 0", "HGMMA.64x16x16.F32"),
         "e4m3": ("m64n32k32.f32.e4m3.e4m3", ", 1, 1", "QGMMA.64x32x32.F32.E4M3.E4M3")}  # shape, immediates, SASS


def output_sections(case: LayoutCase) -> dict[str, int]:
    """Output words of each section, in order (ptx/layouts.cu.in)."""
    regs = tile.ldmatrix_count(case) * 32 * 4
    return {"landed": tile.tile_bytes(case) // 4, "ldmatrix": regs, "ldmatrix.trans": regs if case.trans else 0,
            "wgmma": tile.steps(case) * tile.ROWS * tile.n(case), "chain": 32 * 4}


def _expected(case: LayoutCase) -> np.ndarray:
    """Every output word the layout library predicts: the landed stage, ldmatrix's registers at the library's
    addresses, wgmma's D through the case's descriptor, and the chain's last registers after one loop body."""
    image, addresses = tile.landed(case), tile.ldmatrix_addresses(case)
    plain = tile.ldmatrix_registers(case, image, addresses, False)
    parts = [image.view("<u4"), plain.ravel()]
    if case.trans:
        parts.append(tile.ldmatrix_registers(case, image, addresses, True).ravel())
    parts += [tile.wgmma_result(case, image, tile.a_operand(case)).ravel(), plain[(UNROLL - 1) % len(plain)].ravel()]
    return np.concatenate([np.asarray(p, dtype=np.float64) for p in parts])


class LayoutsFamily(Family):
    name = "layouts"
    description = ("a TMA-landed tile under each swizzle mode (none/32/64/128 B, 16- and 8-bit elements) read back "
                   "by ldmatrix and by wgmma's descriptor, checked against the layout library")
    id_prefixes = ("layouts.",)
    example_id = "layouts.tma.sw128.b16"
    template = "layouts.cu.in"

    cases = staticmethod(cases)
    parse = staticmethod(parse)
    check = staticmethod(check)

    @staticmethod
    def suites() -> dict[str, Suite]:
        return {"layouts-tma": Suite("a tile TMA lands under each swizzle mode (none, 32, 64, 128 B), 16- and 8-bit "
                                     "elements: its bytes, ldmatrix.x4 (.trans for 16-bit) at the layout library's "
                                     "addresses and wgmma through a descriptor of the same swizzle, all checked "
                                     "against the layout library; ldmatrix's latency from the tile", cases)}

    def template_params(self, case: LayoutCase) -> dict[str, object]:
        self.check(case)
        a = tile.a_operand(case)
        shape, immediates, _ = WGMMA[case.dtype]
        acc = tile.n(case) // 2
        return {
            "row_bytes": tile.row_bytes(case), "box_elems": tile.chunk_bytes(case) // case.element_bytes,
            "box_chunks": tile.chunks(case), "ldsm": tile.ldmatrix_count(case),
            "trans": "true" if case.trans else "false", "steps": tile.steps(case), "n": tile.n(case),
            "unroll": UNROLL, "a_swizzle": SWIZZLE_NAMES[a.swizzle], "a_lbo": a.lbo, "a_sbo": a.sbo,
            "a_step": a.step, "b_lbo": tile.B_LBO, "b_sbo": tile.B_SBO,
            "instruction": f"wgmma.mma_async.sync.aligned.{shape}",
            "d_operands": ", ".join(f"%{i}" for i in range(acc)), "a_index": acc, "b_index": acc + 1,
            "immediates": immediates, "d_constraints": ", ".join(f'"+f"(d[{i}])' for i in range(acc)),
        }

    def sass_expectation(self, case: LayoutCase) -> SassExpectation:
        """The loads (one UTMALDG a box), ldmatrix.x4 once per block of the tile and UNROLL times in the chain's
        body, .trans once per block (16-bit), one wgmma per K step."""
        ldsm = tile.ldmatrix_count(case)
        kernels = [("probe_readback", KernelExpectation("UTMALDG.2D", tile.chunks(case))),
                   ("probe_readback", KernelExpectation("LDSM.16.M88.4", ldsm + UNROLL))]
        if case.trans:
            kernels.append(("probe_readback", KernelExpectation("LDSM.16.MT88.4", ldsm)))
        kernels.append(("probe_readback", KernelExpectation(WGMMA[case.dtype][2], tile.steps(case))))
        return SassExpectation(tuple(kernels), executes="LDSM.16.M88.4", spill_kernels=("probe_readback",))

    # -- correctness -----------------------------------------------------------------------------------

    def inputs(self, case: LayoutCase, rng: np.random.Generator) -> Inputs:
        """Deterministic: the tile's codes say where each element is (tile.py); `rng` is not drawn from."""
        addresses = tile.ldmatrix_addresses(case)
        zero = np.zeros(16, dtype=np.uint8)  # the run-time zero word, padded to 16 bytes
        buffer = np.concatenate([tile.logical_bytes(case).ravel(), addresses.astype("<u4").view(np.uint8).ravel(),
                                 tile.b_image(case), zero])
        return Inputs(buffer, {"codes": tile.codes(case).astype(np.int64)},
                      "each element's code its (row, col) (layouts/tile.py)")

    def checks(self, case: LayoutCase, inputs: Inputs) -> list[Check]:
        """The case's own layout, whatever addresses the buffer holds: a buffer with another layout's fails."""
        sections = ", ".join(f"{name} ({words} words)" for name, words in output_sections(case).items() if words)
        return [Check("probe_readback", THREADS, UNROLL, RECORD_WORDS, _expected(case), 0.0,
                      f"the layout library's {sections}")]

    def output_words(self, case: LayoutCase) -> int:
        return sum(output_sections(case).values())

    def decode(self, case: LayoutCase, words: np.ndarray) -> np.ndarray:
        """Registers and bytes as unsigned words, D as the f32 values it holds."""
        words = np.asarray(words[:self.output_words(case)], dtype=np.uint32)
        sizes = output_sections(case)
        start = sizes["landed"] + sizes["ldmatrix"] + sizes["ldmatrix.trans"]
        out = words.astype(np.float64)
        d = slice(start, start + sizes["wgmma"])
        out[d] = words[d].view(np.float32).astype(np.float64)
        return out

    # -- measurement -----------------------------------------------------------------------------------

    def work(self, case: LayoutCase) -> Work:
        return Work(tile.LDSM_MATRICES * tile.MATRIX_ROWS * tile.MATRIX_ROW_BYTES, "B")  # one ldmatrix.x4

    def peak(self, case: LayoutCase) -> float | None:
        return None

    def plan(self, case: LayoutCase, device=None) -> list:
        chain = ("one warp: ldmatrix.x4 through the TMA-landed tile's blocks in turn at the layout library's addresses, "
                 "each address plus (the last load's register 0 AND a run-time zero): an AND and an add per load")
        return [ChainSlope("latency_cycles", "probe_readback", THREADS, unroll=UNROLL, launch={"warps": 1},
                           notes=chain)]

    def headline(self, metric: str) -> dict | None:
        return None

    def describe(self, case: LayoutCase) -> list[str]:
        a = tile.a_operand(case)
        boxes = tile.chunks(case)
        addresses = tile.ldmatrix_addresses(case)
        lines = [f"tile: {tile.ROWS} rows x {tile.row_bytes(case)} B of {case.elem} ({case.dtype}); TMA: {boxes} box"
                 f"{'es' * (boxes > 1)} of {tile.chunk_bytes(case)} B x {tile.ROWS} rows, swizzle {case.mode}",
                 f"landed at {tile.tile_layout(case)} (bytes; (row, col) in elements)",
                 f"ldmatrix.x4{' and .x4.trans' if case.trans else ''}: {len(addresses)} instructions read the tile; "
                 "instruction 0's row offsets: " + " ".join(str(int(x)) for x in addresses[0]),
                 f"wgmma.mma_async.{WGMMA[case.dtype][0]}: A = the tile, K-major, descriptor swizzle {case.mode}, "
                 f"LBO {a.lbo} B, SBO {a.sbo} B, start +{a.step} B a K step ({tile.steps(case)} steps); B = a "
                 f"{tile.n(case)} x {tile.n(case)} permutation (no swizzle, LBO {tile.B_LBO}, SBO {tile.B_SBO})"]
        return lines + ["bank map of instruction 0's first matrix:"] + draw_bank_map(addresses[0][:8], 16)

    def attach(self, case: LayoutCase, probe, device):
        from harness.families.layouts.gpu import attach

        return attach(case, probe, device)

    def figures(self, context) -> list:
        from harness.families.layouts.figures import figures

        return figures(context)

    def findings(self, context) -> list:
        """Where a TMA load puts a swizzled tile, and whether ldmatrix and wgmma read it back (the newest runs)."""
        from harness.families.layouts.figures import findings

        return findings(context)


FAMILY = LayoutsFamily()
