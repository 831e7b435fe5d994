"""TMA (sm_90a): the Family object.

Cases and ids: cases.py. What lands where (the source, boxes, swizzles): model.py. Probe template:
ptx/tma.cu.in. Each copy case validates the bytes that landed (every CTA of a multicast, global
memory for stores) for every kernel it times, then measures:

    latency_cycles   one load from a clock read just before its issue (the barrier armed) to its
                     mbarrier's completion seen, net of two clock reads timed in the same launch; from L2
                     (the same tile again: launch {"source": "L2"}) and from HBM (a fresh tile each
                     time, across a tensor several times the L2: {"source": "HBM"}). Beside it the whole
                     arrive.expect_tx/copy/try_wait sequence (latency_raw_cycles) and what the copy adds to
                     that sequence without it (latency_added_cycles); a store's bulk group completing,
                     net of commit + wait without it, is store_drain_cycles
    bandwidth_gbps   the whole GPU, CUDA events: one warp per block (lane 0 issues) streaming copies with
                     `stages` in flight, `blocks_per_sm` blocks per SM ({"stages", "blocks_per_sm"});
                     a multicast counts the bytes that land in shared memory (each copy lands in
                     every CTA of the cluster: global memory is read once per cluster)

The baselines move 16-byte words with every thread (ld.global, the load roofline; cp.async;
ld.global + st.shared into the same kind of shared ring); the mbarrier case times the barrier
sequence alone. im2col loads validate like tile loads, through model.Im2colGeometry (the pixel walk).
Distributed shared memory is the dsmem family's (harness/families/dsmem/).
"""

from __future__ import annotations


import numpy as np

from harness import seed_chapter
from harness.families.base import (Attachment, Check, Family, Inputs, KernelExpectation, Reason, SassExpectation, Suite,
                                   Work, known_cause)
import harness.families.tma.cases as _cases
import harness.families.tma.maps as _maps
import harness.families.tma.model as model
from harness.families.tma.layout import (BLOCKS_PER_SM, MULTICAST_STAGES, SMEM_PER_BLOCK, SMEM_PER_SM,  # noqa: F401
                                         SOURCE_L2_MULTIPLE, SOURCE_MIN_BYTES, STAGES, dynamic_smem, geometry,
                                         source_tiles, stage_bytes, stream_points, stream_stages)
from harness.families.tma.cases import COPY_OPS, FIXED_IDS, STORE_OPS, TmaCase, _load, _tile
from harness.measure.methods import Bandwidth, BandwidthPoint, BracketedLatency

OP_CODES = {"load": 0, "store": 1, "bulk": 2, "read": 3, "cp.async": 4, "ld+st": 5, "mbarrier": 6,
            "reduce": 8, "bulk-store": 9}  # 7, 10 and 11 were DSMEM's (ptx/dsmem.cu.in)


AUTHORS_SMS = 114  # the H800 PCIe's SMs: the authors' TMA logs launch 114, 228, 342 and 456 blocks (1-4 per SM;
# the streams of the cases they map to run 3 per SM too, one copy in flight: layout.stream_points)


def wall_clock(notes: str) -> float:
    """The clock an authors' log multiplied wall time by ("clock 1755 MHz"): its cycles are nanoseconds x that."""
    import re

    return float(re.search(r"clock (\d+(?:\.\d+)?) MHz", notes).group(1))


COPY_THREADS = 32  # copy kernels: one warp, thread 0 issues
BASELINE_THREADS = 256
BASELINE_BLOCKS_PER_SM = (1, 2, 4, 8)
UNROLL = 4  # 16-byte accesses per thread per iteration (baselines)
LATENCY_REPS = 64
CHECK_REPS = 8  # repetitions of a latency check (the cold one: tiles 0, 97, ... 679)
COLD_STRIDE = 97  # tiles between two cold repetitions: a fresh tile shares no line with the last (another box
# row of a pitched matrix; 97 boxes on in a tensor one box wide)
HOT_TILES = 16  # tiles the L2 latency takes in turn (ptx/tma.cu.in): its samples span both L2 partitions
PREFETCH_FIRST = 50  # ptx/tma.cu.in: the prefetched latency's tiles are 50 + 97 i, fresh like the cold ones
PREFETCH_WAIT = 4000  # cycles from the prefetch to the timed copy (the HBM latency is about 1000)
POISON = 0xFFFFFFFF  # what LoadedProbe fills `out` with: words a kernel did not write


def _mnemonic(case: TmaCase) -> str:
    """SASS of the copy on sm_90a (ptxas 13): UTMALDG/UTMASTG.<rank>D, UBLKCP.S.G."""
    if case.op == "load":
        return f"UTMALDG.{case.rank}D" + (".IM2COL" if case.im2col else "") + (".MULTICAST" if case.multicast else "")
    if case.op == "store":
        return f"UTMASTG.{case.rank}D"
    if case.op == "reduce":
        return f"UTMAREDG.{case.rank}D.ADD"
    return "UBLKCP.G.S" if case.op == "bulk-store" else "UBLKCP.S.G"


def hot_tile(case: TmaCase, rep: int) -> int:
    """The tile repetition `rep` of the L2 latency copies (ptx/tma.cu.in latency, HOT)."""
    return check_tile(case) + (rep % HOT_TILES) * COLD_STRIDE


def check_tile(case: TmaCase) -> int:
    """The tile a case's single-copy check loads (model.check_tile of its tensor)."""
    if not case.tensor:
        return model.check_tile(1)
    return model.check_tile(case.rank, case.row_boxes, case.plane_boxes)


def prefetches(case: TmaCase) -> bool:
    """Loads that also measure a copy of a tile prefetched to the L2 (tensor or bulk prefetch)."""
    return case.op == "bulk" or (case.op == "load" and case.cluster == 1)


def _suites() -> dict[str, Suite]:
    return {
        "tma-copies": Suite("tensor loads (box size, element size, swizzle, rank 1-5, the map in global memory, "
                            "im2col rank 3-5, multicast to 2/4/8/16 CTAs, L2 prefetch), tensor stores and a reduction, "
                            "bulk copies both ways, the baselines (ld.global, cp.async, ld+st.shared), the mbarrier "
                            "sequence", _cases.cases, part_of=("tma",)),
        "tma-authors": Suite("the authors' TMA bandwidth geometries (their logs, 2501.12084 Fig. 3) that "
                             "tma-copies lacks: bulk copies of 1, 4, 12 and 16 KB, 1-D b64 boxes of 768 B to 2 KB, "
                             "their 2-D FP32 boxes of a matrix 128 KiB a row (96 x 32 included), their 3-D FP32 boxes "
                             "of a 1024^3 tensor (rows 4 KiB, planes 4 MiB apart); streams also at 3 blocks per SM",
                             _cases.authors_cases, part_of=("tma",)),
        "tma-quick": Suite("one tensor load, one store, the read baseline and the barrier",
                           lambda: [c for c in _cases.cases() if c.case_id in QUICK]),
        "maps-tma": Suite("the L2 by SM through TMA: every SM's latency of one 128-byte bulk copy of each of the L2 "
                          "map's 64 lines", _cases.map_cases, part_of=("maps",)),
    }


QUICK = ("cp.async.bulk.tensor.2d.shared::cluster.global.tile.b16.box64x64.sw128.pitch8192",
         "cp.async.bulk.tensor.2d.global.shared::cta.tile.b16.box64x64.sw128.pitch8192", "ld.global.v4.u32",
         "mbarrier.arrive.expect_tx.then.try_wait")


# Why a TMA figure of ours differs from the papers' (arXiv 2402.13499, 2501.12084 and the authors' logs), by
# the start of our case id and the metric: causes that do not close the gap by themselves (explain; bench
# compare shows them on the row). Each is measured, not assumed: docs/data-movement.md.
CAUSES = {
    ("cp.async.bulk.tensor.1d", "latency_raw_cycles"):
        "theirs is a step of a chase (copy, wait, read the next index from shared memory, compute the coordinate); "
        "ours the copy and its wait alone",
    ("cp.async.bulk", "roofline_fraction"):
        "one copy in flight per block at 1 to 4 blocks per SM is latency-bound: Little's law (see the models) gives "
        "bytes in flight / latency, which is a smaller part of a faster roofline (the read roofline of this run "
        "against the H800 PCIe's)",
}


class TmaFamily(Family):
    name = "tma"
    description = "TMA: cp.async.bulk(.tensor) copies, multicast, mbarrier, the global-memory baselines"
    id_prefixes = ("cp.async.bulk", "cp.reduce.async.bulk", "cp.async.cg", "ld.global.v4.",
                   "mbarrier.")  # ld.global.v4.: the baselines (memory owns .ca/.cg)
    example_id = "cp.async.bulk.tensor.2d.shared::cluster.global.tile.b16.box64x64.sw128.pitch8192"
    template = "tma.cu.in"
    # bandwidths compare as a fraction of the best of these plain HBM readers in the same run (compare); the
    # memory family's streams read L1 and L2, not HBM, and are no roofline of it
    roofline_cases = (FIXED_IDS["read"], FIXED_IDS["cp.async"], FIXED_IDS["ld+st"])

    @property
    def model(self):
        """Copy latency by source, copies in flight as a queueing network (fitting.py): fitted to a run."""
        from harness.families.tma.fitting import TmaModel

        return TmaModel()

    cases = staticmethod(_cases.all_cases)
    parse = staticmethod(_cases.parse)
    check = staticmethod(_cases.check)
    suites = staticmethod(_suites)

    # -- the probe ---------------------------------------------------------------------------------

    def template_params(self, case: TmaCase) -> dict[str, object]:
        self.check(case)
        if case.l2map:  # the L2 by SM (maps.py): its own kernel, nothing else
            return {**self._template_params(case), "op": _maps.OP_CODE, "stream_kernels": "", **_maps.template_params()}
        return {**self._template_params(case), **_maps.template_params()}

    def _template_params(self, case: TmaCase) -> dict[str, object]:
        rank = case.rank if case.tensor else 1
        box = (list(case.box if case.tensor else (case.box_bytes or 16,)) + [1] * 5)[:5]
        mode = "im2col_" if case.im2col else ""  # ptx/async.cuh: tma_load_3d, tma_load_im2col_3d, ...
        kernels = "\n".join(f"KERNEL probe_stream_k{k}(ARGS) {{\n  planted_fault<PLANTED_FAULT>(iters, out);\n"
                            f"  stream<{k}>(in, out, timing, iters, map, gmap, src, tiles);\n}}"
                            for k in stream_stages(case)) if case.op in COPY_OPS else ""
        return {
            "op": OP_CODES[case.op],
            "rank": rank,
            "box": ", ".join(map(str, box)),
            "tiles": ", ".join(map(str, (*(model.inner_tiles(rank, case.row_boxes, case.plane_boxes) if case.tensor
                                           else model.inner_tiles(rank)),
                                         1, 1, 1, 1, 1)[:5])),
            "box_bytes": case.box_bytes or 16,
            "stage_bytes": stage_bytes(case) if case.box_bytes else model.STAGE_ALIGN,
            "cluster": case.cluster,
            # a non-portable size is given at launch time (Attachment.runtime_cluster), not in the source
            "cluster_attr": (f"__cluster_dims__({case.cluster}, 1, 1)"
                             if 1 < case.cluster <= _cases.PORTABLE_CLUSTER else ""),
            "gmap": "true" if case.gmap else "false",
            "cold_stride": COLD_STRIDE,
            "hot_tiles": HOT_TILES,
            "threads": BASELINE_THREADS,
            "unroll": UNROLL,
            "elem": case.elem if case.tensor else 1,
            "check_tile": check_tile(case),
            # the copy's wrappers (ptx/async.cuh) and their arguments: tile t's coordinates, im2col's offsets
            "tensor_load": f"tma_load_{mode}{rank}d",
            "tensor_prefetch": f"tma_prefetch_{mode}{rank}d",
            "coords": ", ".join(f"k.c[{d}]" for d in range(rank)),
            "offsets": "".join(f", k.o[{s}]" for s in range(rank - 2)) if case.im2col else "",
            "im2col": "true" if case.im2col else "false",
            "spatial": ", ".join(map(str, (*model.IM2COL_EXTENTS.get(rank, ()), 1, 1, 1)[:3])),
            "im2col_channel_tiles": model.IM2COL_CHANNEL_TILES,
            "im2col_corner": model.IM2COL_CORNER,
            "im2col_filter": model.IM2COL_FILTER,
            "stream_kernels": kernels,
        }

    def sass_expectation(self, case: TmaCase) -> SassExpectation:
        """The copy once in each copy kernel (nothing else may issue one); the baselines' UNROLL
        16-byte accesses per loop body; the barrier's arrive."""
        if case.l2map:  # the timed copy alone (the warm walk is ld.global.cg); local memory would be a spill
            return SassExpectation(((_maps.KERNEL, KernelExpectation(_mnemonic(case), 1)),
                                    (_maps.KERNEL, KernelExpectation("LDG.E.STRONG.GPU", 1))),
                                   executes=_mnemonic(case), spill_kernels=(_maps.KERNEL,))
        if case.op in COPY_OPS:
            copy = KernelExpectation(_mnemonic(case), 1)
            kernels = [("probe_check", copy), ("probe_latency", copy)]
            kernels += [("probe_latency_cold", copy)] if case.op not in STORE_OPS else []
            if prefetches(case):
                prefetch = "UBLKPF.L2" if case.op == "bulk" else f"UTMAPF.L2.{case.rank}D" + (".IM2COL" if case.im2col else "")
                kernels += [("probe_latency_prefetched", copy),
                            ("probe_latency_prefetched", KernelExpectation(prefetch, 1))]
            kernels += [(f"probe_stream_k{k}", copy) for k in stream_stages(case)]
            return SassExpectation(tuple(kernels), executes=_mnemonic(case))
        if case.op == "read":
            return SassExpectation((("probe_stream_baseline", KernelExpectation("LDG.E.128", UNROLL)),),
                                   executes="LDG.E.128")
        if case.op == "cp.async":
            return SassExpectation((("probe_stream_baseline", KernelExpectation("LDGSTS.E.BYPASS.128", UNROLL)),),
                                   executes="LDGSTS.E.BYPASS.128")
        if case.op == "ld+st":
            return SassExpectation((("probe_stream_baseline", KernelExpectation("LDG.E.128", UNROLL)),
                                    ("probe_stream_baseline", KernelExpectation("STS.128", UNROLL))),
                                   executes="LDG.E.128 + STS.128")
        return SassExpectation((("probe_barrier", KernelExpectation("SYNCS.ARRIVE.TRANS64", 1)),),
                               executes="SYNCS.ARRIVE.TRANS64 + SYNCS.PHASECHK.TRANS64.TRYWAIT")

    # -- correctness -------------------------------------------------------------------------------

    def inputs(self, case: TmaCase, rng: np.random.Generator) -> Inputs:
        """Stores: random box bytes for shared memory. Copies and baselines read the source tensor, which
        attach() fills on the GPU. The map: the memory family's L2 map ring (maps.py)."""
        if case.l2map:
            return _maps.inputs(rng)
        if case.op in STORE_OPS:
            pattern = rng.integers(0, 256, case.box_bytes, dtype=np.uint8)
            return Inputs(pattern, {"pattern": pattern}, "source word w = mix(w); random box bytes to store")
        return Inputs(np.zeros(16, dtype=np.uint8), {}, "source word w = mix(w) (harness/families/tma/model.py)")

    def output_words(self, case: TmaCase) -> int:
        if case.l2map:
            return case.box_bytes // 4 + 1
        if case.op in COPY_OPS:
            per_stage = (case.box_bytes * (case.cluster if case.multicast else 1)) // 4
            return case.cluster * max(stream_stages(case)) * per_stage
        if case.op in ("cp.async", "ld+st"):
            return 2 * UNROLL * BASELINE_THREADS * 4
        return 2 * BASELINE_THREADS  # the read check's sums, then words no kernel may write (512, as before)

    def decode(self, case: TmaCase, words: np.ndarray) -> np.ndarray:
        return np.asarray(words[:self.output_words(case)], dtype=np.uint32).astype(np.float64)

    def _expected(self, case: TmaCase, *parts: np.ndarray) -> np.ndarray:
        """The output: `parts` (uint32 words) from word 0 on, every other word still poison."""
        out = np.full(self.output_words(case), POISON, dtype=np.float64)
        data = np.concatenate([np.asarray(p, dtype=np.uint32) for p in parts]) if parts else np.zeros(0)
        out[:data.size] = data
        return out

    def _stage(self, case: TmaCase, geom: model.Geometry, first_tile: int) -> np.ndarray:
        """A stage's bytes after a copy round: slot r holds tile first_tile + r (one slot unless multicast)."""
        slots = case.cluster if case.multicast else 1
        span = case.swizzle if case.tensor else 0
        return np.concatenate([model.landed(geom.logical_box(first_tile + r), span) for r in range(slots)])

    def checks(self, case: TmaCase, inputs: Inputs) -> list[Check]:
        if case.l2map:
            steps = _maps.check_steps()
            return [Check(_maps.KERNEL, COPY_THREADS, steps, _maps.template_params()["map_row"],
                          _maps.expected(inputs.values["words"], steps), 0.0,
                          f"the 128-byte line of the last of {steps} copies (NumPy's), then the word the walk ended on",
                          grid=1)]
        if case.op in ("load", "bulk"):
            return self._copy_checks(case)
        if case.op in STORE_OPS:
            return self._store_checks(case, inputs.values["pattern"])
        if case.op in ("read", "cp.async", "ld+st"):
            return [self._baseline_check(case)]
        return [Check("probe_barrier", COPY_THREADS, CHECK_REPS, CHECK_REPS * COPY_THREADS,
                      self._expected(case, [CHECK_REPS]), 0.0,
                      f"{CHECK_REPS} rounds, each completing exactly one phase (test_wait.parity)")]

    def _copy_checks(self, case: TmaCase) -> list[Check]:
        # Tiles below 1000 only: every tensor has more, so no tile number wraps in a check.
        geom = geometry(case, tiles=1 << 20)
        tile, c = check_tile(case), case.cluster
        one = model.words(self._stage(case, geom, tile))
        checks = [Check("probe_check", COPY_THREADS, 1, 1, self._expected(case, *[one] * c), 0.0,
                        "one copy: the box, swizzled, in shared memory" + (f" of all {c} CTAs" if c > 1 else ""),
                        grid=c),
                  Check("probe_latency", COPY_THREADS, CHECK_REPS, CHECK_REPS * COPY_THREADS,
                        self._expected(case, model.words(self._stage(case, geom, hot_tile(case, CHECK_REPS - 1)))),
                        0.0, f"after {CHECK_REPS} copies of the L2 tiles in turn (the last: tile "
                             f"{hot_tile(case, CHECK_REPS - 1)})", grid=c)]
        cold = (CHECK_REPS - 1) * COLD_STRIDE
        checks.append(Check("probe_latency_cold", COPY_THREADS, CHECK_REPS, CHECK_REPS * COPY_THREADS,
                            self._expected(case, model.words(self._stage(case, geom, cold))), 0.0,
                            f"after {CHECK_REPS} copies of fresh tiles (the last: tile {cold})", grid=c))
        if prefetches(case):
            last = PREFETCH_FIRST + cold
            checks.append(Check("probe_latency_prefetched", COPY_THREADS, CHECK_REPS, CHECK_REPS * COPY_THREADS,
                                self._expected(case, model.words(self._stage(case, geom, last))), 0.0,
                                f"after {CHECK_REPS} copies of prefetched tiles (the last: tile {last})"))
        for k in stream_stages(case):
            n = 2 * k + 1
            last = {i % k: i for i in range(n)}  # the copy each stage holds last
            parts = [model.words(self._stage(case, geom, last[s] * c)) for _ in range(c) for s in range(k)]
            checks.append(Check(f"probe_stream_k{k}", COPY_THREADS, n, c * 5, self._expected(case, *parts), 0.0,
                                f"{k} stages after {n} copies" + (f", every CTA of {c}" if c > 1 else ""), grid=c))
        return checks

    def _store_checks(self, case: TmaCase, pattern: np.ndarray) -> list[Check]:
        """Stores: the tile read back is the shared box, unswizzled. The reduction adds it to the tile as
        32-bit words (wrapping), once per copy: each check's expectation counts every add to its tile
        by the checks before it (they run in order, on the same tensor)."""
        span = case.swizzle if case.tensor else 0
        geom = geometry(case, tiles=1 << 20)
        box = model.words(model.stored(pattern, span)).astype(np.uint64)
        adds: dict[int, int] = {}

        def back(tile: int, copies: dict[int, int]) -> np.ndarray:
            for t, n in copies.items():
                adds[t] = adds.get(t, 0) + n
            if case.op != "reduce":
                return box
            source = model.words(geom.logical_box(tile)).astype(np.uint64)
            return ((source + adds[tile] * box) % (1 << 32)).astype(np.uint32)

        tile = check_tile(case)
        checks = [Check("probe_check", COPY_THREADS, 1, 1, self._expected(case, back(tile, {tile: 1})), 0.0,
                        "one copy: the box in global memory, unswizzled"),
                  Check("probe_latency", COPY_THREADS, CHECK_REPS, CHECK_REPS * COPY_THREADS,
                        self._expected(case, back(hot_tile(case, CHECK_REPS - 1),
                                                  {hot_tile(case, i): 1 for i in range(CHECK_REPS)})), 0.0,
                        f"after {CHECK_REPS} copies to the L2 tiles in turn, the last read back")]
        for k in stream_stages(case):
            n = 2 * k + 1
            checks.append(Check(f"probe_stream_k{k}", COPY_THREADS, n, 5,
                                self._expected(case, back(n - 1, {t: 1 for t in range(n)})), 0.0,
                                f"the last of {n} copies with {k} in flight, read back"))
        return checks

    def _baseline_check(self, case: TmaCase, iters: int = 3) -> Check:
        """One block of BASELINE_THREADS: thread x reads 16-byte word x + (i UNROLL + u) THREADS."""
        x = np.arange(BASELINE_THREADS)
        index = x[None, :] + (np.arange(iters * UNROLL)[:, None]) * BASELINE_THREADS  # (iters*UNROLL, threads)
        quads = model.source_words(4 * index[..., None] + np.arange(4)).astype(np.uint64)  # (.., threads, 4)
        if case.op == "read":
            sums = (quads.sum(axis=(0, 2)) % (1 << 32)).astype(np.uint32)
            return Check("probe_stream_baseline", BASELINE_THREADS, iters, 5, self._expected(case, sums), 0.0,
                         f"each thread's sum of {iters * UNROLL} 16-byte words")
        ring = np.zeros((2, UNROLL, BASELINE_THREADS, 4), dtype=np.uint32)
        for i in range(iters):
            ring[i % 2] = quads[i * UNROLL:(i + 1) * UNROLL]
        return Check("probe_stream_baseline", BASELINE_THREADS, iters, 5, self._expected(case, ring.ravel()), 0.0,
                     f"the shared ring after {iters} iterations")

    # -- on the GPU: the source tensor, the maps, shared memory --------------------------------------

    def attach(self, case: TmaCase, probe, device) -> Attachment:
        """Allocate and fill the source (SOURCE_L2_MULTIPLE x the device's L2), encode the tensor map,
        set each kernel's dynamic shared memory, and append the family's kernel arguments."""
        import harness.families.tma.gpu as gpu

        if case.l2map:
            return _maps.attach(case, probe, device)
        return gpu.attach(case, probe, device)

    # -- measurement ---------------------------------------------------------------------------------

    def work(self, case: TmaCase) -> Work:
        return Work(case.box_bytes or 16, "B")

    def peak(self, case: TmaCase) -> float | None:
        return None  # bandwidth is compared with the read baseline measured in the same run

    def plan(self, case: TmaCase, device=None) -> list:
        if case.l2map:
            return _maps.plan(case)
        c = case.cluster
        if case.op in COPY_OPS:
            stores = case.op in STORE_OPS
            what = "the bulk group's wait_group 0" if stores else "its mbarrier's completion"
            empty = ("commit_group + wait_group 0 without a store" if stores else
                     "arrive.expect_tx of 0 bytes + try_wait without a copy")
            # the map's first use in a launch against later ones: in global memory, and by value beside it
            first_use = case.gmap or case == _tile(2, (64, 64))
            # A store's bulk group completes once the SM has sent the tile out: 29 + bytes / 32 cycles on an H100
            # and an H200 alike, the SM draining 32 B/cycle, not a round trip to the L2 (issue 34 item 8): named so.
            # A load's latency_cycles runs from a clock read just before the copy issues (the barrier armed,
            # the cluster synchronised) to its completion seen, less two clock reads timed in the same launch;
            # the whole sequence less the same sequence without the copy (another launch) is what the copy
            # adds to it, latency_added_cycles: the empty sequence's wait overlaps the copy (issue 34 item 11).
            loads = dict(net_metric="latency_added_cycles", issue_stamps=True)
            latency = [BracketedLatency("probe_latency", "probe_latency_empty", COPY_THREADS, empty,
                                        launch={"source": "L2"}, reps=LATENCY_REPS, grid=c, first_use=first_use,
                                        **(dict(net_metric="store_drain_cycles") if stores else loads))]
            if not stores:
                latency.append(BracketedLatency("probe_latency_cold", "probe_latency_empty", COPY_THREADS, empty,
                                                launch={"source": "HBM"}, reps=LATENCY_REPS, grid=c, **loads))
            if prefetches(case):
                latency.append(BracketedLatency("probe_latency_prefetched", "probe_latency_empty", COPY_THREADS,
                                                empty + f"; the tile prefetched to the L2 {PREFETCH_WAIT} cycles before",
                                                launch={"source": "prefetched"}, reps=LATENCY_REPS, **loads))
            delivered = case.box_bytes * (c if case.multicast else 1)
            points = tuple(BandwidthPoint(f"probe_stream_k{k}", b, COPY_THREADS, delivered,
                                          {"stages": k, "blocks_per_sm": b}) for k, b in stream_points(case))
            note = (f"one warp per block, lane 0 issuing; {what}" + (f"; bytes landed in shared memory, {c} per byte read"
                                                       if case.multicast else ""))
            return latency + [Bandwidth(points, grid_multiple=c, notes=note)]
        if case.op in ("read", "cp.async", "ld+st"):
            points = tuple(BandwidthPoint("probe_stream_baseline", b, BASELINE_THREADS,
                                          BASELINE_THREADS * UNROLL * 16, {"blocks_per_sm": b})
                           for b in BASELINE_BLOCKS_PER_SM)
            return [Bandwidth(points, notes=f"{BASELINE_THREADS} threads per block, {UNROLL} x 16 B each per "
                                            "iteration")]
        return [BracketedLatency("probe_barrier", "probe_barrier_empty", COPY_THREADS, "the two clock reads",
                                 launch={}, reps=LATENCY_REPS)]

    @staticmethod
    def paper_row(row: dict) -> dict | str | None:
        """Our counterpart of the authors' TMA logs (HPMLL/NVIDIA-Hopper-Benchmark) and of 2501.12084 Sec. 5.1;
        a string says why one has none; None: not ours (their DSM logs: the dsmem family's). Of the seed
        architecture chapter, its HBM bandwidth: our plain reader from HBM (the read roofline), in wall time."""
        if row["paper"] == seed_chapter.SOURCE:
            return dict(case_id=FIXED_IDS["read"], metric="bandwidth_gbps") if row["metric"] == "bandwidth_hbm" else None
        table = row["table_or_figure"]
        gpu = row["gpu"].replace(" (inferred)", "")
        if "NewFeatures/TMA/Latency" in table:  # a chase: each step a TMA load, its wait and the index read
            size_kb = float(row["shape"].split()[1])
            source = "HBM" if size_kb > (64 << 10) else "L2"  # TMA loads bypass L1: 2 KB and 4 MB chains hit L2
            return dict(case_id=str(_load(1, 2, (256,), 0)), metric="latency_raw_cycles", gpu=gpu,
                        launch={"source": source}, wall_clock_mhz=wall_clock(row["notes"]))
        if "NewFeatures/TMA/Throughput" in table:
            case = _cases.authors_case(table.split("/")[-2], row["shape"])
            if isinstance(case, str):
                return case
            blocks = int(row["shape"].split()[0])
            per_sm, rest = divmod(blocks, AUTHORS_SMS)
            if rest or (1, per_sm) not in stream_points(case):
                return (f"{blocks} blocks ({blocks / AUTHORS_SMS:g} per SM of the H800 PCIe's {AUTHORS_SMS}): our "
                        f"stream of {case} runs no such point with one copy in flight")
            return dict(case_id=str(case), metric="roofline_fraction", gpu=gpu, of_paper_roofline=True,
                        launch={"blocks_per_sm": per_sm, "stages": 1})
        if table.startswith("Sec. 5.1"):
            if row["metric"] == "min_tma_load_size":
                return ("a documented limit (a bulk copy moves a multiple of 16 bytes, PTX ISA), not a measurement: "
                        "the tma family's check refuses anything else")
            return ("a difference of two chase steps (a TMA load's against a plain load's; the logs give about "
                    "105): no metric of ours is one case less another; both terms are mapped apart "
                    "(latency_raw_cycles of the 1-D 512-byte box, latency_cycles of ld.global.cg.u32.pchase.l2)")
        if table.startswith("Sec. 5.2"):
            if row["metric"] == "data_loaded_per_test":
                return "a test parameter (4 GB loaded per point), not a measurement"
            return ("a bound stated in the text ('over 1800 GB/s', Fig. 3 not read numerically): the authors' "
                    "logs behind Fig. 3 are mapped point by point")
        if table.startswith(("Table XIII ", "Table XIV ")) or "AsyncPipe" in row["instruction"]:
            return ("GFLOPS of the CUDA sample globalToShmemAsyncCopy (a tiled FP32 matmul, 2048 wide, synchronous or "
                    "with a 2-stage cuda::memcpy_async pipeline) or their ratio: a whole kernel's rate; our cp.async "
                    "case (cp.async.cg.shared.global.16) streams bytes, with no matmul")
        return None

    @staticmethod
    def explain(case_id: str, metric: str, value: float, paper: float, launch: dict) -> Reason | None:
        """CAUSES: the chase step the authors time; Little's law where one copy is in flight per block."""
        if metric == "roofline_fraction" and launch.get("stages") != 1:
            return None
        return known_cause(CAUSES, case_id, metric)

    def headline(self, metric: str) -> dict | None:
        # None: the best over launches. One launch key cannot stand for every case (copies have a source,
        # the baselines blocks per SM, the barrier none), and a key a case lacks would drop its rows.
        return None

    def describe(self, case: TmaCase) -> list[str]:
        if case.im2col:
            names = "C, " + ", ".join("WHD"[:case.rank - 2]) + ", N"
            geometry_text = (f"im2col, rank {case.rank} ({names}; spatial extents "
                             f"{' x '.join(map(str, model.IM2COL_EXTENTS[case.rank]))}, pixel box corners "
                             f"{model.IM2COL_CORNER}): {case.box[1]} pixels x {case.box[0]} channels of {case.elem}-byte "
                             f"elements ({case.box_bytes} B), swizzle {case.swizzle or 'none'}; offsets (filter "
                             f"position) 0..{model.IM2COL_FILTER - 1} per spatial dimension by tile")
        elif case.tensor:
            geometry_text = (f"rank {case.rank}, box {' x '.join(map(str, case.box))} of {case.elem}-byte elements "
                             f"({case.box_bytes} B), swizzle {case.swizzle or 'none'}")
            where = ("map in global memory (acquire fence per block)" if case.gmap else "map by value (__grid_constant__)")
            where += f", L2 promotion {f'{case.promotion} B' if case.promotion else 'none'}"
            extra = [f"multicast to the {case.cluster} CTAs of a cluster"] if case.multicast else []
            return [geometry_text, where, *extra, f"sm_90a runs: {_mnemonic(case)}"]
        if case.l2map:
            return [f"{case.instruction}, one {case.box_bytes}-byte L2 line per copy, from every SM (the L2 map's lines)"]
        return [f"{case.instruction}" + (f", {case.box_bytes} B per copy" if case.op == "bulk" else "")]

    def figures(self, context) -> list:
        from harness.families.tma.figures import figures

        return figures(context) + _maps.sections(context)

    def findings(self, context) -> list:
        from harness.families.tma.findings import findings

        return findings(context) + _maps.findings(context)


FAMILY = TmaFamily()
