"""The shared-memory bank model the probes are judged by, and ldmatrix/stmatrix's lane map.

The bank model (bank_map, wavefronts): shared memory has 32 banks of 4-byte words; a bank serves one word
a cycle, and lanes that read the same word share it (the CUDA C++ Programming Guide, "Shared Memory",
compute capability 5.x and later, which 9.0 keeps). One cycle of all 32 banks returns at most 128 bytes
(NVIDIA's answer on the developer forum, "Unexpected shared memory bank conflict", 2019: "the return
bandwidth of L1 and shared memory is 128 bytes/cycle ... LDS.128 requires 4 requests per instruction"),
so a warp's access of W bytes a lane is served in phases of 128 / W lanes (W >= 4: 32 lanes for 32-bit,
16 for 64-bit, 8 for 128-bit), and an 8x8 ldmatrix/stmatrix matrix (8 rows of 16 B) is one phase. A
phase takes as many wavefronts as the most distinct words any one bank holds among its lanes' words; an
instruction takes the sum over its phases. The rule this module states is the model under test: the
bank-conflict family (harness/families/banks) measures it. Not modelled: the pairing of equal
addresses in neighbouring lanes the forum answer describes for compute capability 7.x.
"""

from __future__ import annotations

import numpy as np

BANKS = 32
BANK_BYTES = 4
WAVEFRONT_BYTES = BANKS * BANK_BYTES  # 128 bytes per cycle of all banks


# -- ldmatrix/stmatrix's lane map -------------------------------------------------------------------

def ldmatrix_positions(rows: np.ndarray, num: int, trans: bool) -> np.ndarray:
    """(32, num, 2): the 16-bit element index in shared memory of the low and high half of each lane's
    register for each matrix, `rows` being the byte addresses of the rows the 32 lanes supply (lane 8i + r:
    row r of matrix i). PTX ISA, "ldmatrix": lane l holds row l // 4, columns 2 (l % 4) + {0, 1};
    with .trans column l // 4, rows 2 (l % 4) + {0, 1}."""
    lane = np.arange(32)[:, None, None]
    matrix = np.arange(num)[None, :, None]
    half = np.arange(2)[None, None, :]
    group, member = lane // 4, lane % 4
    rows = np.asarray(rows, dtype=np.int64)
    if trans:
        return rows[8 * matrix + 2 * member + half] // 2 + group
    return rows[8 * matrix + group] // 2 + 2 * member + half


# -- the bank model ---------------------------------------------------------------------------------

def phases(lanes: int, width: int) -> list[range]:
    """The lanes each phase of one warp access serves: 128 / width lanes a phase for width >= 4 bytes."""
    per = max(1, WAVEFRONT_BYTES // max(width, BANK_BYTES))
    return [range(i, min(i + per, lanes)) for i in range(0, lanes, per)]


def bank_map(addresses, width: int) -> list[dict[int, set[int]]]:
    """Per phase, {bank: the distinct 4-byte words (word index) its lanes touch there}. `addresses`: the
    byte address of each active lane, in lane order (one warp: at most 32); `width`: bytes a lane."""
    addresses = [int(a) for a in addresses]
    out = []
    for lanes in phases(len(addresses), width):
        banks: dict[int, set[int]] = {}
        for lane in lanes:
            first, last = addresses[lane] // BANK_BYTES, (addresses[lane] + width - 1) // BANK_BYTES
            for word in range(first, last + 1):
                banks.setdefault(word % BANKS, set()).add(word)
        out.append(banks)
    return out


def wavefronts(addresses, width: int) -> int:
    """Bank cycles of one warp access (module docstring): per phase, the most distinct words one bank
    holds; summed over the phases."""
    return sum(max((len(w) for w in banks.values()), default=0) for banks in bank_map(addresses, width))


def conflict_free_wavefronts(lanes: int, width: int) -> int:
    """The fewest cycles `lanes` lanes of `width` bytes can take: one a phase."""
    return len(phases(lanes, width))


def draw_bank_map(addresses, width: int) -> list[str]:
    """Text lines: for each phase, each bank's word count and the lanes that use it (`bench show`)."""
    addresses = [int(a) for a in addresses]
    lines = []
    for p, (lanes, banks) in enumerate(zip(phases(len(addresses), width), bank_map(addresses, width))):
        worst = max((len(w) for w in banks.values()), default=0)
        counts = "".join(str(len(banks.get(b, ()))) if len(banks.get(b, ())) < 10 else "+" for b in range(BANKS))
        lines.append(f"phase {p} (lanes {lanes.start}-{lanes.stop - 1}): {worst} wavefront{'s' * (worst != 1)}; "
                     f"words per bank 0-31: {counts.replace('0', '.')}")
    return lines
