"""The distributed shared memory family: its ids (the same strings the tma family gave these cases), its
checks against a replay of its kernels, its place in the `tma` suite, and the stored parameters of before."""

from pathlib import Path

import numpy as np
import pytest

from harness.errors import IllegalShapeError, SpecError
from harness.families import dsmem, tma
from harness.families.dsmem import cases
from harness.registry import FAMILIES, overlapping_prefixes, parse_case_id

ROOT = Path(__file__).resolve().parent.parent
# Every DSMEM id the tma family listed before the split (its `tma` suite, in order): stored rows key on them.
IDS = ["ld.shared::cluster.u32.cluster2", "ld.shared::cluster.u32.cluster4", "ld.shared::cluster.u32.cluster8",
       "ld.shared::cluster.u32.cluster16", "ld.shared::cluster.u32.cluster4.spread",
       "ld.shared::cluster.u32.cluster8.spread", "ld.shared::cluster.u32.cluster16.spread",
       "st.shared::cluster.u32.cluster2", "st.shared::cluster.u32.cluster4", "st.shared::cluster.u32.cluster8",
       "st.shared::cluster.u32.cluster16", "st.shared::cluster.u32.cluster4.spread",
       "st.shared::cluster.u32.cluster8.spread", "st.shared::cluster.u32.cluster16.spread",
       "ld.shared::cluster.u32.cluster2.chase.ring", "ld.shared::cluster.u32.cluster4.chase.ring",
       "ld.shared::cluster.u32.cluster8.chase.ring", "ld.shared::cluster.u32.cluster16.chase.ring",
       "ld.shared::cluster.u32.cluster4.chase.pair", "ld.shared::cluster.u32.cluster4.chase.broadcast",
       "ld.shared::cluster.u32.cluster16.chase.broadcast", "ld.shared::cluster.u32.cluster2.chase.local"]


def test_the_family_owns_the_ids_the_tma_family_had():
    # the tma family's, in order, then the SM-to-SM maps (the `maps` suite's), which the `dsmem` suite leaves out
    assert [c.case_id for c in dsmem.FAMILY.cases()] == IDS + [f"ld.shared::cluster.u32.cluster{c}.map"
                                                                 for c in cases.CLUSTERS]
    assert [c.case_id for c in cases.cases()] == IDS
    for case_id in IDS:
        case = parse_case_id(case_id)
        assert case.family == "dsmem" and case.case_id == case_id
    assert not any(c.case_id.startswith(dsmem.FAMILY.id_prefixes) for c in tma.FAMILY.cases())
    assert not overlapping_prefixes([tma.FAMILY, dsmem.FAMILY])
    assert not overlapping_prefixes(FAMILIES.values())


def test_the_tma_suite_is_the_copies_then_dsmem_as_before():
    from harness.suites import SUITES, suite_cases

    ids = [c.case_id for c in suite_cases("tma")]
    copies = [c.case_id for c in tma.FAMILY.cases() if not c.l2map]  # the TMA map is the `maps` suite's
    assert ids == copies + IDS and len(ids) == len(copies) + 22
    assert [c.case_id for c in suite_cases("dsmem")] == IDS
    assert "tma-copies" in SUITES and "dsmem" in SUITES["tma"].description


@pytest.mark.parametrize("case_id,error,message", [
    ("ld.shared::cluster.u32.cluster3", IllegalShapeError, "clusters of 2, 4, 8, 16"),
    ("ld.shared::cluster.u32.cluster2.spread", IllegalShapeError, "4 CTAs or more"),
    ("ld.shared::cluster.u32.cluster4.chase.ring2", IllegalShapeError, "chase patterns are"),
    ("st.shared::cluster.u32.cluster4.chase.ring", SpecError, "a chase pattern is written"),
    ("ld.shared::cluster.u32.cluster4.spread.chase.ring", SpecError, "a chase pattern is written"),
    ("ld.shared::cluster.u64.cluster4", SpecError, "cannot parse"),
])
def test_illegal_ids_are_one_line_errors(case_id, error, message):
    with pytest.raises(error, match=message):
        cases.parse(case_id)


def test_the_stored_parameters_of_before_still_make_the_case():
    """Rows stored before schema 11 keep the params the tma family wrote (its eleven keys); the four this
    family has are among them with the same names and values (docs/database.md)."""
    before = {"op": "dsmem-chase", "rank": 1, "elem": 1, "box": [], "swizzle": 0, "gmap": False, "cluster": 4,
              "spread": False, "im2col": False, "pattern": "pair", "promotion": 128}
    case = cases.from_params(before)
    assert case == parse_case_id("ld.shared::cluster.u32.cluster4.chase.pair")
    assert set(case.params()) == {"op", "cluster", "spread", "pattern"} < set(before)
    assert all(case.params()[key] == before[key] for key in case.params())
    for case in dsmem.FAMILY.cases():
        assert cases.from_params(case.params()) == case


@pytest.mark.parametrize("case_id", ["st.shared::cluster.u32.cluster2", "st.shared::cluster.u32.cluster8.spread"])
def test_dsmem_store_check_is_what_the_stores_leave_in_rank_0(case_id):
    """Replays the store kernel as ptx/dsmem.cu.in spells it (every rank, thread, iteration and store in
    program order, each to its target's ring) and reads rank 0's ring: the check must expect exactly that."""
    from harness.families.dsmem import DSMEM_THREADS, RING_WORDS, UNROLL

    case = cases.parse(case_id)
    iters, c = 3, case.cluster
    rings = np.zeros((c, RING_WORDS // 4, 4), dtype=np.int64)
    for i in range(iters):
        for rank in range(c):
            for x in range(DSMEM_THREADS):
                hop = 1 + (x // 32) % (c - 1) if case.spread else 1
                for u in range(UNROLL):
                    rings[(rank + hop) % c, x + u * DSMEM_THREADS] = (i, rank, x, u)
    check = next(k for k in dsmem.FAMILY.checks(case, dsmem.FAMILY.inputs(case, np.random.default_rng(0)))
                 if k.kernel == "probe_dsmem_store_stream")
    assert check.iters == iters
    np.testing.assert_array_equal(check.expected, rings[0].ravel().astype(np.float64))


def test_each_operation_compiles_the_kernels_it_launches(shared_cache):
    """The template's sections test the rendered operation number (the preprocessor cannot see a
    constexpr): a build holds the kernels its plan and checks name, the local chase its chain too."""
    from harness.build.compile import compile_probe
    from harness.build.sass import disassemble
    from harness.registry import probe_source

    for case_id in ("ld.shared::cluster.u32.cluster4", "st.shared::cluster.u32.cluster16.spread",
                    "ld.shared::cluster.u32.cluster4.chase.ring", "ld.shared::cluster.u32.cluster2.chase.local"):
        case = parse_case_id(case_id)
        kernels = set(disassemble(compile_probe(probe_source(case)).cubin_path))
        launched = {check.kernel for check in dsmem.FAMILY.checks(case, dsmem.FAMILY.inputs(case, np.random.default_rng(0)))}
        for spec in dsmem.FAMILY.plan(case, None):  # and what the plan times without checking (an empty bracket)
            launched |= {k for k in (getattr(spec, "kernel", None), getattr(spec, "empty_kernel", None)) if k}
            launched |= {point.kernel for point in getattr(spec, "points", ())}
        assert kernels == launched, (case_id, kernels ^ launched)


def test_nothing_of_dsmem_is_left_in_tma():
    template = (ROOT / "ptx" / "tma.cu.in").read_text()
    assert not any(code in template for code in ("shared::cluster.u32", "probe_dsmem", "OP_DSMEM", "fill_ring", "chase"))
    code = "".join(p.read_text() for p in (ROOT / "harness" / "families" / "tma").glob("*.py"))
    assert "ld.shared::cluster" not in code and "dsmem-" not in code and "CHASE" not in code


def test_a_cluster_above_the_portable_eight_is_set_at_launch():
    for case_id, runtime in (("ld.shared::cluster.u32.cluster16", 16), ("ld.shared::cluster.u32.cluster8", 0)):
        attached = dsmem.FAMILY.attach(parse_case_id(case_id), None, None)
        assert attached.runtime_cluster == runtime
        attribute = dsmem.FAMILY.template_params(parse_case_id(case_id))["cluster_attr"]
        assert bool(attribute) == (runtime == 0)


def test_the_remote_chain_chases_every_partner_of_rank_0():
    """Issue 34 item 4: at cluster C rank 0 chases through each of ranks 1..C-1 in turn (the authors'
    OneToAll log is rank 0 to every other rank), one timing record per cluster and partner; .spread keeps
    the last rank alone and the local chase its own ring."""
    from harness.families.dsmem import CHAIN_CLUSTERS, FAMILY, chain_partners
    from harness.registry import parse_case_id, probe_source

    for case_id, partners in (("ld.shared::cluster.u32.cluster2", (1, 1)), ("ld.shared::cluster.u32.cluster16", (1, 15)),
                              ("ld.shared::cluster.u32.cluster8.spread", (7, 7)),
                              ("ld.shared::cluster.u32.cluster2.chase.local", (0, 0))):
        case = parse_case_id(case_id)
        assert chain_partners(case) == partners
        chain = [m for m in FAMILY.plan(case) if getattr(m, "kernel", "") == "probe_dsmem_chain"]
        assert len(chain) == 1
        count = partners[1] - partners[0] + 1
        assert chain[0].units == CHAIN_CLUSTERS * count
        assert chain[0].launch.get("partners") == (count if count > 1 else None)
        text = probe_source(case).text
        assert f"first = {partners[0]}u, last = {partners[1]}u" in text


def test_the_store_ping_pong_is_not_called_a_latency():
    """Issue 34 item 9: the ping-pong's hop (263.5 cycles in 15 of 16 cases on both GPUs; a padded poll moves it
    in steps) holds the receiver's detection and its next store: it is stored as pingpong_hop_cycles, never as
    latency_cycles, and the store cases measure the round trip beside it."""
    from harness import metrics
    from harness.families.dsmem import FAMILY
    from harness.registry import parse_case_id

    for case_id in ("st.shared::cluster.u32.cluster2", "st.shared::cluster.u32.cluster16.spread"):
        case = parse_case_id(case_id)
        declared = {m for spec in FAMILY.plan(case) for m, _ in spec.declares(FAMILY.work(case))}
        assert {"pingpong_hop_cycles", "roundtrip_cycles"} <= declared and "latency_cycles" not in declared
    assert "not the store's latency" in metrics.info("pingpong_hop_cycles").description


def test_the_ring_against_the_papers_per_cycle_takes_their_highest_clock(tmp_path):
    """Numbers chosen here: ours 4000 GB/s on 100 SMs at 2000 MHz is 20 B/cycle/SM; the papers' 3420 GB/s on the
    H800 PCIe's 114 SMs is at least 3420e3 / (114 x 1755) B a cycle an SM (at its highest clock), so ours is at most
    their ratio. Rows of another GPU's figures, or not a ring, are left out; the site's finding draws the rest."""
    from types import SimpleNamespace

    import pandas as pd

    from harness.analysis import figure_gpus
    from harness.families.dsmem.figures import ring_findings, ring_rows

    ring = "ld.shared::cluster.u32.cluster2.chase.ring"
    against = pd.DataFrame([
        {"case_id": ring, "metric": "bandwidth_gbps", "paper": 3420.0, "paper_gpu": "H800 PCIe", "value": 4000.0,
         "clock_mhz": 2000.0, "launch": "{}", "comparable": 4560.0, "paper_table": "Fig. X", "paper_ratio": 4560 / 3420,
         "verdict": "DISAGREES"},
        {"case_id": ring, "metric": "bandwidth_gbps", "paper": 3000.0, "paper_gpu": "H100 SXM5", "value": 4000.0,
         "clock_mhz": 2000.0, "launch": "{}", "comparable": 4000.0, "paper_table": "elsewhere", "paper_ratio": 1.33,
         "verdict": "DISAGREES"},
        {"case_id": "ld.shared::cluster.u32.cluster2", "metric": "latency_cycles", "paper": 181.0,
         "paper_gpu": "H800 PCIe", "value": 184.0, "clock_mhz": 2000.0, "launch": "{}", "comparable": 184.0,
         "paper_table": "Sec. 7.1", "paper_ratio": 184 / 181, "verdict": "agrees"}])
    (row,) = ring_rows(against, 100.0, "GPU X", 5).to_dict("records")
    theirs = 3420e3 / (114 * 1755)
    assert row["ours B/cycle/SM"] == pytest.approx(20.0) and row["theirs B/cycle/SM (at least)"] == pytest.approx(theirs)
    assert row["per cycle (at most)"] == pytest.approx(20.0 / theirs) and row["cluster"] == 2
    latest = pd.DataFrame([{"family": "dsmem", "case_id": ring, "metric": "bandwidth_gbps", "gpu_name": "GPU X",
                            "run_id": 5, "sm_count": 100}])
    ctx = SimpleNamespace(store=None, latest=latest, directory=tmp_path, against=lambda run: against)
    (head, lines, path), (_, _, table) = ring_findings(ctx)
    assert path.exists() and len(table) == 1
    assert lines[0].startswith("GPU X (run 5), cluster 2: 4560 GB/s on 114 SMs against 3420 (Fig. X): 1.333 x in wall "
                               f"time at 2000 MHz; per cycle per SM at most {20.0 / theirs:.3f} x (DISAGREES)")
    assert ring_findings(SimpleNamespace(latest=latest, directory=tmp_path)) == []  # no verdicts given: nothing said
    note = figure_gpus.wall_note(SimpleNamespace(value=4000.0, sm_count=100, clock_mhz=2000.0, clock_source="in-kernel",
                                                 comparable=4560.0, paper_sms=114, paper=3420.0, paper_top_mhz=1755.0))
    assert note.endswith(f"ours 20.00 B, the figure's at least {theirs:.2f} (at its GPU's highest clock, 1755 MHz): "
                         f"ours at most {20.0 / theirs:.3f} x")
