"""Distributed shared memory (sm_90a clusters): the Family object.

Cases and ids: cases.py. Probe template: ptx/dsmem.cu.in. Every CTA of a cluster holds a ring of
RING_WORDS words in its shared memory; the probes reach another CTA's through mapa and
ld.shared::cluster / st.shared::cluster:

    latency_cycles   loads: a pointer chase by rank 0 through each other CTA's ring in turn (every partner,
                     as the authors' OneToAll log; .spread: the last rank alone), in CHAIN_CLUSTERS clusters
                     at once, one sample per cluster and partner (a distribution over SM placements and
                     partners); the local chase: rank 0 through its own ring, by ld.shared::cluster
    pingpong_hop_cycles  stores: one hop of a flag passed between two CTAs, each hop a store into the
                     other's shared memory that its spin sees. Not a latency: a hop is the store's
                     visibility, the receiver's detection and its next store, one value hop after hop
                     (on the grid of the pollers' loops; docs/data-movement.md)
    roundtrip_cycles stores: rank 0 stores a flag into the partner's shared memory and spins until the
                     partner, spinning on its own, stores it back, net of the two clock reads: two stores'
                     latencies to visibility and two detections. Each round is padded by a dependent chain of
                     0-63 multiply-adds, so the stores reach the partner at varying phases of its poll; the
                     rounds take the unpadded rounds' few values, on the grid of the sender's own poll loop
                     (it sees the reply only at its polls): an upper bound within one poll period
    bandwidth_gbps   the whole GPU, CUDA events: every thread of every CTA streaming 16-byte loads from (or
                     stores into) the next CTA's ring (.spread: each warp another CTA's); the papers' chase
                     patterns (ring, pair, broadcast, local): every thread following `ilp` dependent chains
                     through its target CTA, 256 to 1024 threads per block
    latency_cycles   the map (.map): every CTA of every cluster (one per SM) chases each other CTA of its cluster
    (map)            in turn, MAP_STEPS dependent loads each, and records its own and the other's %smid: one
                     measurement per pair of SMs ({"map": "dsmem", "cluster": C, "sm": a, "peer": b}), samples
                     over MAP_LAUNCHES launches; maps.py infers GPCs and TPCs from them

These cases were the tma family's until schema 11 (harness/migrations/versions/0011_dsmem_family.py):
their ids, parameters and kernels are unchanged. The `tma` suite is composed of tma-copies and this
family's `dsmem` suite (harness/suites.py COMPOSED).

Beside this wiring: the kernels' launch shapes, the chains' partners and the template's parameters,
kernels.py; the SASS expected, sass.py; the ring and the checks, checks.py; what is measured, plan.py; the
suites, suites.py. The published figures' mapping (paper_row, paper_statistic, explain) stays here: the
references' digest hashes it with the family package's functions it calls.
"""

from __future__ import annotations

import harness.families.dsmem.cases as _cases
import harness.families.dsmem.checks as _checks
import harness.families.dsmem.kernels as _kernels
import harness.families.dsmem.plan as _plan
import harness.families.dsmem.sass as _sass
import harness.families.dsmem.suites as _suites
from harness import seed_chapter
from harness.families.base import Attachment, Family, Reason, Work, known_cause
from harness.families.dsmem.cases import PORTABLE_CLUSTER, DsmemCase
from harness.families.dsmem.checks import POISON  # noqa: F401 (the family's names, as before the split)
from harness.families.dsmem.kernels import (  # noqa: F401
    CHAIN_CLUSTERS,
    CHASE_CHECK_THREADS,
    CHASE_ILP,
    CHASE_STRIDE,
    CHASE_TARGETS,
    CHASE_THREADS,
    COPY_THREADS,
    DSMEM_THREADS,
    MAP_LAUNCHES,
    MAP_SHARED_BYTES,
    MAP_STEPS,
    OP_CODES,
    RING_WORDS,
    ROUNDTRIP_REPS,
    ROUNDTRIP_UNPADDED,
    UNROLL,
    chain_partners,
    chain_units,
    chase_target,
)


# Why a DSMEM figure of ours differs from the papers' (arXiv 2501.12084 and the authors' logs): causes that
# do not close the gap by themselves (explain; bench compare shows them on the row). docs/data-movement.md.
CAUSES = {
    ("ld.shared::cluster.u32.cluster2.chase.local", "latency_cycles"):
        "ours adds the loaded word to the window's base each step (address arithmetic between the loads, as the "
        "shared-memory index chase ld.shared.u32.pchase does, which the memory family measures beside the pointer "
        "chase ld.shared.u32.ptrchase); a DSMEM pointer chase is not measured yet",
}

# Causes of one case alone (not its variants: .spread chases the last rank, .map every pair).
EXACT_CAUSES = {
    ("ld.shared::cluster.u32.cluster16", "latency_cycles"):
        "every chase of this case starts from rank 0, and in a cluster of 16 the hardware places rank 0 on the "
        "first SM of a GPC (reports/investigation/dsmem-rank0-h100.txt); the maps suite's SM-to-SM map "
        "(ld.shared::cluster.u32.cluster16.map) finds those SMs' fastest partner in a cluster of 16 slower than "
        "the other SMs' (its report's DSMEM section), so the fastest pair here is bounded by where rank 0 lands; "
        "the paper's rank 0 had a nearer partner on the H800's floorplan",
}

# A chain latency stored before rank 0 chased every partner (its launch has no `partners`).
ONE_PARTNER = ("this run chased rank 1 alone (runs before 82; before 47, in a single cluster), where the paper's figure "
               "is rank 0's fastest pair over every partner; which two SMs a pair lands on moves its latency by tens "
               "of cycles (the maps suite's SM-to-SM map), and from run 82 on rank 0 chases every partner in 16 "
               "clusters")


class DsmemFamily(Family):
    name = "dsmem"
    description = "distributed shared memory: ld/st.shared::cluster between the CTAs of a cluster"
    id_prefixes = ("ld.shared::cluster", "st.shared::cluster")
    example_id = "ld.shared::cluster.u32.cluster4"
    template = "dsmem.cu.in"

    @property
    def model(self):
        """The DSMEM hop (a constant) and the chases' bandwidth from requests in flight (fitting.py)."""
        from harness.families.dsmem.fitting import DsmemModel

        return DsmemModel()

    cases = staticmethod(_cases.all_cases)
    parse = staticmethod(_cases.parse)
    check = staticmethod(_cases.check)
    suites = staticmethod(_suites.suites)

    # -- the probe (kernels.py), what its SASS must show (sass.py) -------------------------------------

    template_params = staticmethod(_kernels.template_params)
    sass_expectation = staticmethod(_sass.expectation)

    # -- correctness (checks.py) -------------------------------------------------------------------

    inputs = staticmethod(_checks.inputs)
    output_words = staticmethod(_kernels.output_words)
    decode = staticmethod(_checks.decode)
    checks = staticmethod(_checks.checks)

    # -- on the GPU ----------------------------------------------------------------------------------

    def attach(self, case: DsmemCase, probe, device) -> Attachment:
        """A cluster of more CTAs than the portable 8 is launched with its size as an attribute. The map's CTAs
        take MAP_SHARED_BYTES more shared memory: one per SM, so that a CTA's partners are other SMs."""
        return Attachment(runtime_cluster=case.cluster if case.cluster > PORTABLE_CLUSTER else 0,
                          dynamic_smem={"probe_dsmem_map": MAP_SHARED_BYTES} if case.op == "dsmem-map" else {})

    # -- measurement ---------------------------------------------------------------------------------

    def work(self, case: DsmemCase) -> Work:
        return Work(16, "B")

    def peak(self, case: DsmemCase) -> float | None:
        return None

    plan = staticmethod(_plan.plan)

    @staticmethod
    def paper_row(row: dict) -> dict | str | None:
        """Our counterpart of the authors' DSM latency logs (HPMLL/NVIDIA-Hopper-Benchmark); a string says
        why one has none; None: not ours. The seed architecture chapter's count of TPCs: why it is no figure."""
        if row["paper"] == seed_chapter.SOURCE:
            return ("a count of units: the DSMEM map (suite maps-dsmem) looks for TPCs as pairs of SMs each other's "
                    "nearest by a few cycles and says whether latency shows them (its report and the site's finding), "
                    "a finding, not a metric to compare") if row["metric"] == "tpc_count" else None
        table, metric = row["table_or_figure"], row["metric"]
        if table.startswith(("Sec. III-D ", "Sec. IV-E ", "Sec. 7.1 ", "Sec. 7.2 ", "Sec. 7.3 ")) and (
                "DSM" in row["instruction"] or "global store" in row["instruction"]):
            return _dsm_text(row)
        if "NewFeatures/DSM/Latency" not in table:
            return None
        gpu = row["gpu"].replace(" (inferred)", "")
        cluster = int(row["shape"].split()[-1])
        if metric == "latency_dsm_remote_max":
            return "the slowest rank pair of the log; compared: the fastest (latency_dsm_remote_min)"
        if metric == "latency_dsm_local" and cluster != 2:
            return "the same local chase at every cluster size (33 cycles); compared at cluster 2"
        if metric == "latency_dsm_remote_min" and cluster not in _cases.CLUSTERS:
            return f"a cluster of {cluster}: ours are {', '.join(map(str, _cases.CLUSTERS))}"
        case = (DsmemCase("dsmem-chase", cluster=2, pattern="local") if metric == "latency_dsm_local"
                else DsmemCase("dsmem", cluster=cluster))
        return {"case_id": case.case_id, "metric": "latency_cycles", "gpu": gpu}

    def paper_statistic(self, case_id: str, metric: str, launch: dict | None = None) -> tuple | None:
        """The chases' latency is CHAIN_CLUSTERS placements measured at once, each with every partner of
        rank 0 in turn (one sample per cluster, partner and launch, repeated): n is the placements x
        partners. The remote chase (ld.shared::cluster.u32.clusterN) compares the minimum over them, as
        the authors' figure is the fastest rank pair of their OneToAll log; the local chase (one value in
        their log at every cluster size) the median over the placements. A launch without `partners` (runs
        before every partner was chased, and clusters of 2) chased rank 1 alone: n is the placements."""
        if metric != "latency_cycles" or not case_id.startswith("ld.shared::cluster."):
            return None
        case = _cases.parse(case_id)
        if case.op == "dsmem" and not case.spread:
            partners = (launch or {}).get("partners", 1)
            return (("minimum", CHAIN_CLUSTERS, "placements") if partners == 1
                    else ("minimum", CHAIN_CLUSTERS * partners, "placements x partners", partners))
        return ("median", CHAIN_CLUSTERS) if case.op == "dsmem-chase" and case.pattern == "local" else None

    @staticmethod
    def explain(case_id: str, metric: str, value: float, paper: float, launch: dict) -> Reason | None:
        """CAUSES: the local chase's address arithmetic; where rank 0 lands in a cluster of 16. A chain latency
        whose launch has no `partners` chased rank 1 alone (runs before every partner was): ONE_PARTNER."""
        if metric == "latency_cycles" and case_id.startswith("ld.shared::cluster."):
            case = _cases.parse(case_id)
            if case.op == "dsmem" and not case.spread and "partners" not in (launch or {}):
                return Reason(ONE_PARTNER, accounts=False)
        if (case_id, metric) in EXACT_CAUSES:
            return Reason(EXACT_CAUSES[case_id, metric], accounts=False)
        return known_cause(CAUSES, case_id, metric)

    def headline(self, metric: str) -> dict | None:
        return None  # the best over launches (clusters, blocks per SM, threads and chains)

    def describe(self, case: DsmemCase) -> list[str]:
        where = f"a cluster of {case.cluster} CTAs" + (" (launched with its size as an attribute: above the portable 8)"
                                                        if case.cluster > PORTABLE_CLUSTER else "")
        if case.op == "dsmem-chase":
            what = f"the papers' {case.pattern} chase: every thread's dependent loads through its target CTA"
        elif case.op == "dsmem-map":
            what = "the SM-to-SM map: every CTA chases every other CTA of its cluster in turn, by %smid"
        elif case.op == "dsmem-store":
            what = ("stores into another CTA's shared memory" + (", each warp another CTA" if case.spread else
                                                                  ", the next CTA"))
        else:
            what = ("loads from another CTA's shared memory" + (", each warp another CTA" if case.spread else
                                                               ", the next CTA"))
        return [case.instruction, where, what]

    def figures(self, context) -> list:
        from harness.families.dsmem.figures import figures

        return figures(context)

    def findings(self, context) -> list:
        """Which SMs are far from which through DSMEM, and the GPCs and TPCs it implies (the .map cases)."""
        from harness.families.dsmem.figures import findings

        return findings(context)


def _dsm_text(row: dict) -> dict | str:
    """Distributed shared memory as the papers' text states it (2402.13499 Secs. III-D, IV-E; 2501.12084 Secs.
    7.1-7.3): the cluster-2 and local chases map like the authors' log; the rest, and why."""
    metric, gpu = row["metric"], row["gpu"]
    if metric == "latency_dsm_local":  # the log's local chase (33 at every cluster size)
        return {"case_id": DsmemCase("dsmem-chase", cluster=2, pattern="local").case_id, "metric": "latency_cycles",
                "gpu": gpu}
    if metric == "latency_dsm_remote_cluster2":  # the log's fastest pair at cluster 2
        return {"case_id": DsmemCase("dsmem", cluster=2).case_id, "metric": "latency_cycles", "gpu": gpu}
    if metric == "latency_dsm_remote":
        return ("a rounded statement with no cluster size (\"180 cycles\"): the log's fastest pair per cluster size "
                "is mapped one by one")
    if metric.startswith("latency_dsm_remote_cluster2to16"):
        return "the range of the log's per-cluster figures (clusters 2-16), which are mapped one by one"
    if metric == "latency_sm_to_sm_via_global":
        return ("one SM's store read by another SM through global memory: no case of ours times a store in one SM "
                "seen by a load in another (docs/data-movement.md, \"Not done\")")
    if metric.startswith("latency_reduction_vs"):
        return ("a ratio of two figures (the DSM hop against the L2 latency or the SM-to-SM round trip through "
                "global memory)")
    if metric == "bandwidth_dsm_local_per_sm":
        return ("GB/s per SM through the DSM interface to the block's own shared memory, at a clock not printed, from "
                "50160 blocks of 16 KB of shared memory each: our local chase gives the whole GPU's bandwidth_gbps "
                "with one block of 256-1024 threads per SM, and no per-SM rate at a known clock")
    if metric.startswith("bandwidth_dsm_peak_cluster"):  # the whole GPU's TB/s of a ring copy: wall time, as ours
        # bandwidth_gbps is; compare scales ours to the paper's SMs and states the SM clock ours ran at beside it
        ring = DsmemCase("dsmem-chase", cluster=int(metric.rsplit("cluster", 1)[1]), pattern="ring")
        return {"case_id": ring.case_id, "metric": "bandwidth_gbps", "gpu": gpu}
    if metric == "blocks_launched":
        return "a test parameter (blocks launched), not a measurement"
    if metric.startswith("best_cluster_size"):
        return "an application's (a histogram kernel's) best cluster size: no case of ours runs that kernel"
    return "quoted from NVIDIA's documentation, not measured" if "vendor" in metric else (
        f"a DSM figure ({metric}) with no case of ours")


FAMILY = DsmemFamily()
