"""The layouts family's report section and site finding (issue 45, section 2): where a TMA load puts each 16-byte
chunk of a tile under each swizzle mode (the layout library's map, tile.py, which every case of a run checks byte
for byte on the GPU), and for each run which cases read back exactly (the landed bytes, ldmatrix at the library's
addresses, wgmma through a descriptor of the same swizzle) with the step of warp 0's ldmatrix chain."""

from __future__ import annotations

import numpy as np
import pandas as pd

import harness.families.layouts.tile as tile
from harness.families.layouts.cases import SWIZZLES, LayoutCase, parse

BANK_GROUP_BYTES = 16  # 4 banks of 4 bytes: a 16-byte chunk's bank group, of 128 / 16 = 8
GROUPS = 128 // BANK_GROUP_BYTES
SHOWN_ROWS = tile.MATRIX_ROWS  # one ldmatrix matrix reads 8 rows of one chunk column

METHOD = ("Each case lands a 64-row tile of 16- or 8-bit elements (each element's value says where it is) by one TMA "
          "load under its swizzle mode, then checks every word the kernel writes against the layout library "
          "(harness/layouts.py through harness/families/layouts/tile.py): the landed bytes, ldmatrix.x4 (and .trans "
          "for 16-bit elements) at the library's addresses, and wgmma's D through a descriptor of the same swizzle. "
          "Timed: warp 0's chain of ldmatrix.x4 through the landed tile (each address plus the last load's register "
          "AND a run-time zero: an AND and an add a step). The map: for the tile's first 8 rows, the bank group "
          "(16 bytes, 4 of the 32 banks) each 16-byte chunk of a row lands in; an ldmatrix matrix reads one column "
          "of it, 8 rows, in one bank cycle when the 8 groups differ (docs/banks.md, 'TMA tiles read back').")


def bank_groups(case: LayoutCase, swizzle: int | None = None) -> np.ndarray:
    """(8, chunks of a row): the bank group (byte offset mod 128, in 16-byte units) that chunk j of row r of the
    tile lands in, by the layout library (`swizzle`: the case's tile under another mode's function)."""
    layout = tile.tile_layout(case, swizzle)
    per_chunk = BANK_GROUP_BYTES // case.element_bytes
    return np.array([[layout(r, j * per_chunk) % 128 // BANK_GROUP_BYTES
                      for j in range(tile.row_bytes(case) // BANK_GROUP_BYTES)] for r in range(SHOWN_ROWS)])


def column_wavefronts(case: LayoutCase, swizzle: int | None = None) -> int:
    """The bank model's cycles for one ldmatrix matrix (8 rows of one chunk column): the most rows sharing a group."""
    groups = bank_groups(case, swizzle)
    return int(max(np.bincount(groups[:, j], minlength=GROUPS).max() for j in range(groups.shape[1])))


def _rows(store, run_id: int) -> pd.DataFrame:
    """Every layouts row of a run, valid or not: case, validity, the chain step and the clock it ran at."""
    return store.query(f"""SELECT run_id, gpu_name, case_id, valid, error, value, sm_clock_mhz FROM results
                           WHERE run_id = {int(run_id)} AND family = 'layouts' AND metric = 'latency_cycles'""")


def run_table(rows: pd.DataFrame) -> pd.DataFrame:
    table = []
    for r in rows.sort_values("case_id").itertuples():
        case = parse(r.case_id)
        table.append({"case_id": r.case_id, "swizzle": case.mode, "element": case.dtype,
                      "read back": "exact" if r.valid else f"failed: {r.error or 'invalid'}",
                      "ldmatrix chain step (cycles)": r.value if r.valid else np.nan, "SM MHz": r.sm_clock_mhz,
                      "matrix read (bank cycles, model)": column_wavefronts(case)})
    return pd.DataFrame(table)


def summary(gpu: str, run_id: int, rows: pd.DataFrame) -> str:
    valid = rows[rows.valid.astype(bool)]
    line = (f"{gpu} (run {run_id}): {len(valid)} of {len(rows)} cases read back exactly (landed bytes, ldmatrix, "
            "wgmma's D)")
    if len(valid):
        steps = valid.value
        line += (f"; an ldmatrix.x4 chain step of {steps.min():.1f}-{steps.max():.1f} cycles in every mode "
                 f"({valid.sm_clock_mhz.min():.0f}-{valid.sm_clock_mhz.max():.0f} MHz)")
    failed = rows[~rows.valid.astype(bool)]
    if len(failed):
        line += "; failed: " + ", ".join(failed.case_id)
    return line + "."


def map_figure(path, title: str):
    """One panel a swizzle mode (16-bit elements): rows 0-7 of the tile against their 16-byte chunks, each cell
    the bank group it lands in."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    widths = [max(2, s // BANK_GROUP_BYTES) for s in SWIZZLES]
    fig, axes = plt.subplots(1, len(SWIZZLES), figsize=(11, 4.2), gridspec_kw={"width_ratios": widths})
    for ax, swizzle in zip(axes, SWIZZLES):
        case = LayoutCase(swizzle, "b16")
        groups, cycles = bank_groups(case), column_wavefronts(case)
        ax.imshow(groups, cmap="tab10", vmin=0, vmax=9, aspect="equal")
        for (r, j), g in np.ndenumerate(groups):
            ax.text(j, r, str(g), ha="center", va="center", fontsize=8, color="white")
        ax.set_xticks(range(groups.shape[1]))
        ax.set_yticks(range(SHOWN_ROWS))
        ax.set_title(f"{case.mode}\n{cycles} bank cycle{'s' * (cycles > 1)} a matrix", fontsize=8)
    fig.supxlabel("16-byte chunk of the row (cell: its bank group, 0-7)", fontsize=9)
    axes[0].set_ylabel("row of the tile")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def figures(ctx) -> list:
    rows = _rows(ctx.store, ctx.run_id)
    if rows.empty:
        return []
    path = map_figure(ctx.directory / "layouts_tma_map.png",
                      "Where a TMA load lands each 16-byte chunk: its bank group (the layout library's map, checked "
                      "byte for byte by every case)")
    return [("Layouts read back: a TMA-landed tile under each swizzle mode",
             [summary(ctx.gpu, ctx.run_id, rows), METHOD], path),
            ("Layouts read back, in numbers", [], run_table(rows).round(2))]


def findings(ctx) -> list:
    """Per GPU model, its newest run of layouts cases: how many read back exactly, and the chain's step."""
    newest = ctx.latest[ctx.latest.family == "layouts"]
    if newest.empty:
        return []
    lines = []
    for gpu, part in sorted(newest.groupby("gpu_name")):
        run_id = int(part.run_id.max())
        lines.append(summary(gpu, run_id, _rows(ctx.store, run_id)))
    path = map_figure(ctx.directory / "layouts_tma_map.png",
                      "Where a TMA load lands each 16-byte chunk: its bank group (the layout library's map)")
    return [("Where does a TMA load put a swizzled tile, and do ldmatrix and wgmma read it back?", lines + [METHOD],
             path)]
