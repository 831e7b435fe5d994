"""Distributed shared memory on the GPU: a store's round trip between two CTAs does not move with the phase at
which it is sent, so its value is no phase of the polls (issue 34 item 9)."""

from __future__ import annotations

import numpy as np
import pytest

from harness.build.compile import compile_probe
from harness.families import dsmem
from harness.measure.device import open_device
from harness.measure.launch import LoadedProbe
from harness.orchestration.runner import RunSettings, measure_case
from harness.registry import parse_case_id, probe_source

pytestmark = pytest.mark.gpu

REPS = dsmem.ROUNDTRIP_REPS
SKIP = 4  # BracketedLatency drops the first rounds (warm-up)


def _rounds(case_id: str, padded: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(round trips, gaps since the last round) of one launch of the round trip, rank 0 of the first cluster;
    unpadded: the same kernel with the flag that leaves out its pad (so the timed window is the same code)."""
    case = parse_case_id(case_id)
    family = dsmem.FAMILY
    inputs = family.inputs(case, np.random.default_rng(1))
    probe = LoadedProbe(compile_probe(probe_source(case)), inputs.buffer, family.output_words(case))
    probe.attach(family.attach(case, probe, open_device(0)))
    threads = dsmem.COPY_THREADS
    iters = REPS if padded else REPS | dsmem.ROUNDTRIP_UNPADDED
    probe.run("probe_dsmem_roundtrip", case.cluster, threads, iters, REPS * threads)  # warm-up
    launch = probe.run("probe_dsmem_roundtrip", case.cluster, threads, iters, REPS * threads)
    assert (launch.out[:2] == REPS).all(), launch.out[:2]  # both flags at the last round
    rows = launch.timing.reshape(REPS, threads)[SKIP:]
    return rows[:, 0].astype(float), rows[:, 1].astype(float)


@pytest.mark.parametrize("case_id", ["st.shared::cluster.u32.cluster2", "st.shared::cluster.u32.cluster16.spread"])
def test_a_stores_round_trip_takes_the_same_values_whatever_the_phase_it_leaves_at(case_id):
    """The ping-pong's hop read 263.5 cycles in 15 of 16 cases with no spread, and moved in steps when the
    receiver's poll was padded. The round trip is read on the sender's clock, whose polls start at its store, so
    its values lie on the grid of the sender's poll loop whatever the partner's phase. The padded round trip leaves at
    many phases (its gaps since the last round take at least 16 values, a dependent chain of 0-63 steps; a clock
    loop had left three), the unpadded one at one. A value that were a phase of the polls would move with the
    pad: so the padded rounds must take the values the unpadded ones take (each within 3 cycles of one of
    them, 99 % of rounds at least) and the same fastest round."""
    padded, gaps = _rounds(case_id)
    unpadded, unpadded_gaps = _rounds(case_id, padded=False)
    assert len(np.unique(gaps)) >= 16, np.unique(gaps)
    assert len(np.unique(unpadded_gaps)) <= 4, np.unique(unpadded_gaps)
    seen = np.unique(unpadded)
    near = np.abs(padded[:, None] - seen[None, :]).min(axis=1) <= 3
    assert near.mean() >= 0.99, (np.unique(padded, return_counts=True), seen)
    assert abs(padded.min() - unpadded.min()) <= 3, (padded.min(), unpadded.min())


def test_the_round_trip_is_measured_and_the_ping_pong_is_not_called_a_latency():
    """The family's measurement of the store case: roundtrip_cycles from the padded kernel, net of the two clock
    reads timed in the same way (a few cycles: below the raw rounds by at most 20), and the ping-pong named
    pingpong_hop_cycles, never latency_cycles."""
    case_id = "st.shared::cluster.u32.cluster2"
    case = parse_case_id(case_id)
    result = measure_case(case, compile_probe(probe_source(case)), open_device(0), RunSettings())
    assert result.valid, result.error
    names = {m.name for m in result.metrics}
    assert {"roundtrip_cycles", "pingpong_hop_cycles"} <= names and "latency_cycles" not in names
    rounds = next(m.samples for m in result.metrics if m.name == "roundtrip_cycles")
    raw, _ = _rounds(case_id)
    assert 0 < np.median(raw) - np.median(rounds) <= 20, (np.median(raw), np.median(rounds))
