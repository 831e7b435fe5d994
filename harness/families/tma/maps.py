"""The L2 by SM through TMA (cp.async.bulk.shared::cluster.global.128B.map.l2, the `maps-tma` suite).

The probe (ptx/tma.cu.in probe_tmamap) is the plain-load L2 map (ld.global.cg.u32.map.l2) with the load
replaced by one bulk copy of the 128-byte line that holds each of the same 64 lines: the same ring
(harness/l2lines.py ring, drawn first from the run's seed, so the same chunks of the 8 MiB region), the same untimed warm walk with ld.global.cg, one block per SM, 16 launches,
the same row per block (methods.SmMap). The bracket is the tma family's latency probe's: a clock read just
after lane 0 arms the barrier for 128 bytes, the copy, the whole warp's wait on the barrier, a clock read;
less the least of 16 pairs of clock reads back to back.

Analysis: the TMA matrix (SMs x lines, the median over launches) is split into partitions twice: by the L2
map's own inference run on the TMA samples (l2lines.partitions), and by the plain-load map's partition of the
same lines where one of the same GPU is in the frame (an L2 map whose launch names no `copy`). Per SM: near and far TMA latency under
each, and the plain load's beside. The line j of both maps is the j-th line of the walk from word 0: the
same chunk only where both ran with the same seed (RunSettings.seed; every run of record uses the default).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from harness import l2lines as l2

MAP_LAUNCHES = 16
MAP_EMPTY = 16  # pairs of clock reads each block times first; the least is the bracket's cost
MAP_SHARED_BYTES = 120 << 10  # dynamic shared memory (unused): no two blocks on one SM
KERNEL = "probe_tmamap"
OP_CODE = 12  # ptx/tma.cu.in OP_L2MAP


def lines() -> int:
    return l2.LINES


def template_params() -> dict[str, object]:
    from harness.measure.methods import MAP_ROW_HEAD

    return {"map_lines": lines(), "map_empty": MAP_EMPTY, "map_row": MAP_ROW_HEAD + 2 * lines()}


# -- the probe's inputs, check and plan --------------------------------------------------------------------

def inputs(rng: np.random.Generator):
    from harness.families.base import Inputs

    words = l2.ring(rng)  # the first draw from the run's seed, as the plain-load map's: the same lines
    return Inputs(words.view(np.uint8), {"words": words},
                  f"the L2 map's ring: a random cycle through {lines()} 64-byte chunks of an 8 MiB region")


def check_steps() -> int:
    return lines() // 2 + 3  # fewer steps than the cycle, which would end where it began


def expected(words: np.ndarray, steps: int) -> np.ndarray:
    """out after `steps` timed steps from word 0 (block 0, after its warm walk): the 32 words of the last
    line copied (the 128-byte line holding the chunk of step steps - 1), then the word the walk ended on."""
    last = l2.chase(words, 0, steps - 1)
    start = last - last % 32
    return np.concatenate([words[start:start + 32], [l2.chase(words, 0, steps)]]).astype(np.float64)


def plan(case) -> list:
    from harness.measure.methods import SmMap

    return [SmMap("latency_cycles", KERNEL, 32, lines(), lines(), MAP_LAUNCHES,
                  {"map": "l2", "lines": lines(), "copy": f"bulk {case.box_bytes} B"},
                  notes=f"each block (one per SM) walks the L2 map's {lines()} lines of an 8 MiB region (resident "
                        "in the L2) as ld.global.cg.u32.map.l2 does, timing per line one cp.async.bulk of the "
                        "128-byte line that holds it into shared memory (lane 0 arms the barrier; clock; lane 0 "
                        "issues; the warp waits on the barrier; clock) less the least of 16 pairs of clock reads; "
                        "samples: launch by launch, the lines in walk order from word 0")]


def attach(case, probe, device):
    """One block per SM; the family's four extra arguments, none used (the copy reads `in`)."""
    import cupy

    from harness.families.base import Attachment
    from harness.families.tma.gpu import MAP_DTYPE

    placeholder = cupy.zeros(16, dtype=cupy.uint64)
    return Attachment(extra_args=(np.zeros(1, dtype=MAP_DTYPE), placeholder, placeholder, np.int64(0)),
                      dynamic_smem={KERNEL: MAP_SHARED_BYTES}, resources=(placeholder,))


# -- analysis --------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class TmaMap:
    tma: l2.L2Map  # the TMA matrix, partitioned by its own samples
    loads: l2.L2Map | None  # the plain-load map of the same GPU (same lines), if any

    def per_sm(self) -> pd.DataFrame:
        """Per SM: near and far TMA latency by the TMA samples' own partition; where the plain-load map is
        there, by its partition too, beside the plain load's near and far."""
        table = self.tma.per_sm()[["sm", "near", "near cycles", "far cycles", "far - near"]]
        table = table.rename(columns={"near": "near (TMA's partition)", "near cycles": "TMA near",
                                      "far cycles": "TMA far", "far - near": "TMA far - near"})
        if self.loads is None or not self.loads.split:
            return table
        theirs = self.loads.per_sm().set_index("sm")
        rows = []
        for sm, row in zip(self.tma.sms, self.tma.cycles):
            side = int(theirs.near.get(int(sm), -1)) if int(sm) in theirs.index else -1
            near_lines = self.loads.partition == side if side >= 0 else None
            rows.append({"sm": int(sm),
                         "TMA near (loads' partition)": float(np.median(row[near_lines])) if side >= 0 else np.nan,
                         "TMA far (loads' partition)": float(np.median(row[~near_lines])) if side >= 0 else np.nan,
                         "load near": float(theirs["near cycles"].get(int(sm), np.nan)),
                         "load far": float(theirs["far cycles"].get(int(sm), np.nan))})
        out = table.merge(pd.DataFrame(rows), on="sm", how="left")
        out["TMA - load, near"] = out["TMA near (loads' partition)"] - out["load near"]
        return out

    def agreement(self) -> float | None:
        """The share of lines the TMA samples put in the same partition as the plain loads (up to naming)."""
        if self.loads is None or not (self.tma.split and self.loads.split):
            return None
        same = float(np.mean(self.tma.partition == self.loads.partition))
        return max(same, 1.0 - same)


def load(store, frame: pd.DataFrame) -> dict[str, TmaMap]:
    """Every GPU's TMA map among `frame`'s rows, with the plain-load map of the same GPU where the frame
    holds one of the same number of lines (an L2 map of any family whose launch names no `copy`): {gpu: TmaMap}."""
    from harness.db.distributions import map_rows

    found_rows = map_rows(store, frame, None, "l2")
    if found_rows is None:
        return {}
    rows, launches, arrays = found_rows
    copied = np.array(["copy" in l for l in launches], dtype=bool)
    if not copied.any():
        return {}
    kept = [l for l, c in zip(launches, copied) if c]
    tma = l2.by_gpu(rows[copied], kept, arrays)
    plain = l2.by_gpu(rows[~copied], [l for l, c in zip(launches, copied) if not c], arrays)
    return {gpu: TmaMap(found, plain[gpu] if gpu in plain and plain[gpu].cycles.shape[1] == found.cycles.shape[1]
                        else None) for gpu, found in tma.items()}


def describe(gpu: str, found: TmaMap) -> list[str]:
    """Sentences: the TMA map's own split, and against the plain loads' partition."""
    tma = found.tma
    table = tma.per_sm()
    if tma.split:
        shares = np.bincount(tma.partition, minlength=2)
        text = [f"{gpu}: by the TMA copies alone, the {tma.partition.size} lines fall into two groups ({shares[0]} and "
                f"{shares[1]}): one 128-byte bulk copy takes {table['near cycles'].median():.0f} cycles from the "
                f"near partition and {table['far cycles'].median():.0f} from the far one (median SM; far - near "
                f"{table['far - near'].median():.0f})."]
    else:
        text = [f"{gpu}: the TMA copies show no near/far split of the {tma.partition.size} lines: one 128-byte bulk "
                f"copy takes {table['near cycles'].median():.0f} cycles (median SM; far - near under "
                f"{l2.MIN_SPLIT_CYCLES:g} cycles)."]
    if found.loads is None:
        text.append("No plain-load map of the L2 (ld.global.cg.u32.map.l2) of this GPU beside it: no comparison "
                    "by its partitions.")
        return text
    if not found.loads.split:
        text.append("The plain-load map of this GPU shows no split to compare with.")
        return text
    both = found.per_sm()
    agree = found.agreement()
    near, far = both["TMA near (loads' partition)"].median(), both["TMA far (loads' partition)"].median()
    text.append(f"By the plain loads' partition of the same lines: TMA near {near:.0f}, far {far:.0f} cycles; plain load near "
                f"{both['load near'].median():.0f}, far {both['load far'].median():.0f} (median SM); TMA - load at the "
                f"near partition: {float(np.round(both['TMA - load, near'].median())) + 0.0:+.0f} cycles (median SM)."
                + (f" The TMA samples' own split puts {agree:.0%} of the lines where the plain loads do." if agree is not None
                   else ""))
    return text


def near_far_plot(ax, found: TmaMap, title: str) -> None:
    """Per SM (by %smid): TMA near and far (the TMA samples' own partition), and the plain load's if any."""
    table = found.per_sm()
    ax.plot(table.sm, table["TMA near"], "o", ms=3, label="TMA near")
    ax.plot(table.sm, table["TMA far"], "o", ms=3, label="TMA far")
    if "load near" in table:
        ax.plot(table.sm, table["load near"], "x", ms=3, label="ld.global.cg near")
        ax.plot(table.sm, table["load far"], "x", ms=3, label="ld.global.cg far")
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("SM (%smid)")
    ax.set_ylabel("cycles (median over the partition's lines)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)


METHOD = ("Every SM (one block each) walks the L2 map's 64 lines (ld.global.cg.u32.map.l2: the same chunks of an 8 MiB "
          "region, warmed into the L2 by the same untimed walk), and times per line one cp.async.bulk of the 128-byte "
          "line that holds it: a clock read just after lane 0 arms the barrier, the copy, the warp's wait on the "
          "barrier, a clock read, less two clock reads back to back; 16 launches, a cell the median over them. The "
          "lines are split by the L2 map's inference run on the TMA samples, and by the plain-load map's own split "
          "of the same lines. docs/data-movement.md, 'Maps of the chip'.")


def _figure(maps: dict[str, TmaMap], directory, name: str):
    from harness.plotting import gpu_panels

    def draw(axes, gpu: str, found: TmaMap):
        near_far_plot(axes[1], found, f"{gpu}: per SM, near and far partition")
        return l2.heatmap(axes[0], found.tma, f"{gpu}: TMA copy (128 B) by SM and line, cycles")

    return gpu_panels(maps, draw, directory / name, size=(6.5, 9.5), rows=2)


def sections(ctx) -> list:
    """The report's TMA map: the heat map and per-SM plot, the sentences, the table."""
    maps = load(ctx.store, ctx.measured)
    if not maps:
        return []
    path = _figure(maps, ctx.directory, "tma_l2_map.png")
    tables = pd.concat([found.per_sm().assign(gpu=gpu) for gpu, found in maps.items()]).round(1)
    return [("TMA: the L2 by SM (one 128-byte copy)", [s for gpu, found in maps.items() for s in describe(gpu, found)]
             + [METHOD], path),
            ("TMA: the L2 by SM, in numbers", ["Per SM: TMA near and far by the TMA samples' partition; by the plain "
                                               "loads' partition, with the plain load's near and far beside."], tables)]


def findings(ctx) -> list:
    """The site's question, per GPU model (the newest map of each)."""
    maps = load(ctx.store, ctx.latest)
    if not maps:
        return []
    path = _figure(maps, ctx.directory, "tma_l2_map.png")
    return [("What does a TMA copy take from each L2 partition, from every SM?",
             [s for gpu, found in maps.items() for s in describe(gpu, found)] + [METHOD], path)]
