"""The seed architecture chapter's memory-hierarchy figures (harness/seed_chapter.py) mapped to the memory
family's cases: each level's latency to its chase, the shared-memory and L2 bandwidths to the level's stream,
per SM and cycle (our streams' unit), the L2's capacity to the footprint sweep's knee (capacity.py), the L1 and
shared memory's 256 KB to the L1's footprint sweep's knee (the L1's part of it: l1_capacity_kib)."""

from __future__ import annotations

from harness import seed_chapter

LATENCIES = {"latency_shared": "shared", "latency_l1": "l1", "latency_l2": "l2", "latency_hbm": "hbm"}
SHARED = ("bandwidth_shared", "bandwidth_shared_per_sm", "shared_memory_bank_width")


def chapter_row(row: dict, latency_case, stream_case) -> dict | None:
    """Our case, metric and value of one of the chapter's rows, or None: not a memory figure. `latency_case(level)`
    and `stream_case(level)` name the family's chase and stream at a level."""
    metric, value, unit = row["metric"], float(row["value"]), row["unit"]
    if metric in LATENCIES:
        return {"case_id": latency_case(LATENCIES[metric]), "metric": "latency_cycles"}
    if metric in SHARED:
        if metric == "bandwidth_shared_per_sm":  # TB/s per SM at the 1.8 GHz of its own arithmetic
            per_cycle = value * 1e12 / (seed_chapter.CHAPTER_CLOCK_MHZ * 1e6)
            why = f"printed {value:g} {unit} per SM = {per_cycle:.0f} B/cycle at its {seed_chapter.CHAPTER_CLOCK_MHZ:g} MHz. "
        elif metric == "shared_memory_bank_width":  # bits a bank a cycle x 32 banks
            per_cycle = value / 8 * 32
            why = f"printed {value:g} bits a bank a cycle x 32 banks = {per_cycle:.0f} B/cycle/SM. "
        else:
            per_cycle, why = value, ""
        return {"case_id": stream_case("shared"), "metric": "sm_throughput", "value": per_cycle, "unit": "B/cycle/SM",
                "notes": why + row["notes"]}
    if metric == "l2_capacity":  # the footprint sweep's knee (capacity.py), in MiB as the device reports its L2
        from harness.families.memory.capacity import METRIC, capacity_case

        return {"case_id": capacity_case(), "metric": METRIC, "value": value, "unit": "MiB",
                "notes": f"printed {value:g} {unit}: NVIDIA's MB of cache are MiB (an H100 SXM5 reports an L2 of "
                         f"{value:g} x 2^20 bytes); compared with the footprint at which one SM's chase leaves the L2 "
                         f"(the memory-l2-capacity suite). {row['notes']}".strip()}
    if metric == "l1_shared_per_sm":  # the L1's footprint sweep's knee, at the carve-out that leaves the L1 most
        from harness.families.memory.kernels import L1_CARVEOUT
        from harness.families.memory.capacity import L1_METRIC, capacity_case

        return {"case_id": capacity_case("l1"), "metric": L1_METRIC, "value": value, "unit": "KiB",
                "notes": f"printed {value:g} {unit}, L1 and shared memory together: the L1 is what the shared-memory "
                         f"carve-out leaves of it, so our figure is the L1's part only (the chase launched at carve-out "
                         f"preference {L1_CARVEOUT} %, the largest L1; at least 8 KiB stays shared memory, a block's "
                         f"1 KiB reserved); compared with the footprint at which one SM's L1 chase leaves the L1 (the "
                         f"memory-l1-capacity suite). {row['notes']}".strip()}
    if metric == "bandwidth_l2":  # the whole GPU's TB/s: per SM and cycle at the spec box's SMs and boost clock
        sms, clock = seed_chapter.SMS, seed_chapter.BOOST_CLOCK_MHZ
        per_cycle = value * 1e12 / (sms * clock * 1e6)
        return {"case_id": stream_case("l2"), "metric": "sm_throughput", "value": per_cycle, "unit": "B/cycle/SM",
                "notes": f"printed {value:g} {unit} = {per_cycle:.1f} B/cycle/SM over {sms} SMs at the "
                         f"{clock:g} MHz boost clock (our L2 stream stores per cycle). {row['notes']}"}
    return None
