"""TMA (sm_90a): the Family object.

Cases: cases.py (ids.py reads an id back, refusals.py refuses, suite_cases.py lists them). What lands where
(the source, boxes, swizzles): model.py. Probe template:
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

Beside this wiring: the kernels' launch shapes and the template's parameters, kernels.py; the SASS expected,
sass.py; inputs and checks, checks.py; what is measured, plan.py; the suites, suites.py; the source tensor and the
map on the GPU, gpu.py and layout.py; the L2 map through TMA, maps.py. The published figures' mapping (paper_row,
explain) stays here: the references' digest hashes it with the family package's functions it calls.
"""

from __future__ import annotations

from harness import seed_chapter
from harness.families.base import Attachment, Family, Reason, Work, known_cause
import harness.families.tma.checks as _checks
import harness.families.tma.ids as _ids
import harness.families.tma.kernels as _kernels
import harness.families.tma.maps as _maps
import harness.families.tma.model as model
import harness.families.tma.plan as _plan
import harness.families.tma.refusals as _refusals
import harness.families.tma.sass as _sass
import harness.families.tma.suite_cases as _suite_cases
import harness.families.tma.suites as _suites
from harness.families.tma.cases import FIXED_IDS, TmaCase, _load
from harness.families.tma.layout import stream_points


AUTHORS_SMS = 114  # the H800 PCIe's SMs: the authors' TMA logs launch 114, 228, 342 and 456 blocks (1-4 per SM;
# the streams of the cases they map to run 3 per SM too, one copy in flight: layout.stream_points)


def wall_clock(notes: str) -> float:
    """The clock an authors' log multiplied wall time by ("clock 1755 MHz"): its cycles are nanoseconds x that."""
    import re

    return float(re.search(r"clock (\d+(?:\.\d+)?) MHz", notes).group(1))


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

    cases = staticmethod(_suite_cases.all_cases)
    parse = staticmethod(_ids.parse)
    check = staticmethod(_refusals.check)
    suites = staticmethod(_suites.suites)

    # -- the probe (kernels.py), what its SASS must show (sass.py) -------------------------------------

    template_params = staticmethod(_kernels.template_params)
    sass_expectation = staticmethod(_sass.expectation)

    # -- correctness (checks.py) --------------------------------------------------------------------

    inputs = staticmethod(_checks.inputs)
    output_words = staticmethod(_checks.output_words)
    decode = staticmethod(_checks.decode)
    checks = staticmethod(_checks.checks)

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

    plan = staticmethod(_plan.plan)

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
            case = _suite_cases.authors_case(table.split("/")[-2], row["shape"])
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
            return [geometry_text, where, *extra, f"sm_90a runs: {_sass.mnemonic(case)}"]
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
