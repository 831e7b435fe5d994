"""GPU datasheet figures (harness/db/data/references/gpu_specs.csv): SMs, tensor cores, clocks, peaks,
bandwidth per GPU, and the names CUDA gives our GPUs. Plain data at the bottom of the house: the
families' models read it for their priors.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import cache
from pathlib import Path

DATA = Path(__file__).resolve().parent / "db" / "data" / "references"


def _read(name: str) -> list[dict]:
    with (DATA / name).open(newline="") as f:
        return list(csv.DictReader(f))


@dataclass(frozen=True)
class GpuSpec:
    gpu: str
    sm_count: int | None
    tensor_cores_per_sm: int
    tc_boost_clock_mhz: float | None
    peak_dense_fp16_tflops: float | None
    flops_per_tc_per_clk_fp16: float
    source: str
    notes: str
    memory_bandwidth_gbps: float | None = None  # the datasheet's DRAM bandwidth
    sm_of: str | None = None  # the GPU (a row) whose SM this one's is, on another board (H200 SXM: H100 SXM5)


@cache
def gpu_specs() -> dict[str, GpuSpec]:
    specs = {}
    for row in _read("gpu_specs.csv"):
        number = lambda key: float(row[key]) if row[key] else None  # noqa: E731
        specs[row["gpu"]] = GpuSpec(row["gpu"], int(row["sm_count"]) if row["sm_count"] else None,
                                    int(row["tensor_cores_per_sm"]), number("tc_boost_clock_mhz"),
                                    number("peak_dense_fp16_tflops"), float(row["flops_per_tc_per_clk_fp16"]),
                                    row["source"], row["notes"], number("memory_bandwidth_gbps"),
                                    row.get("sm_of") or None)
    return specs


def same_sm(gpu: str) -> tuple[str, ...]:
    """The other gpu_specs.csv rows whose SM is `gpu`'s (a row name) on another board: one names the other in its
    sm_of column, or both name the same GPU (the H200 SXM's SM is the H100 SXM5's, and the H100 SXM5's the H200
    SXM's); () for a GPU with none or no row."""
    specs = gpu_specs()
    if gpu not in specs:
        return ()
    root = specs[gpu].sm_of or gpu
    return tuple(name for name, spec in specs.items() if name != gpu and (spec.sm_of or name) == root)


# Our GPU names (as CUDA reports them) -> rows of gpu_specs.csv
GPU_ALIASES = {"NVIDIA H100 80GB HBM3": "H100 SXM5", "H100": "H100 SXM5", "H800": "H800 PCIe",
               "NVIDIA H800 PCIe": "H800 PCIe", "NVIDIA H100 PCIe": "H100 PCIe", "NVIDIA H20": "H20",
               "NVIDIA H200": "H200 SXM", "H200": "H200 SXM"}


def spec_name(gpu: str, specs: dict) -> str | None:
    """The gpu_specs.csv row of `gpu`: an alias, else the same name up to case, spaces and 'NVIDIA'."""
    if gpu in GPU_ALIASES:
        return GPU_ALIASES[gpu]

    def plain(name: str) -> str:
        return "".join(name.lower().replace("nvidia", "").split())

    return next((row for row in specs if plain(row) == plain(gpu)), None)


def pin_rate_gbps(gpu: str) -> float:
    """The datasheet's DRAM bandwidth of `gpu` (gpu_specs.csv memory_bandwidth_gbps: H100 SXM 3352, H200 4800
    GB/s), NaN where it has none."""
    specs = gpu_specs()
    name = spec_name(gpu or "", specs)
    value = specs[name].memory_bandwidth_gbps if name in specs else None
    return float(value) if value else float("nan")
