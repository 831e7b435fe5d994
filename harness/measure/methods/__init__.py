"""Measurement methods: named, reusable ways to time a validated probe (docs/architecture.md, "Methods").

A family's plan is a list of specs; `run(spec, context)` turns each into Metrics, and the simulated GPU asks
`simulate(spec, simulation)` for its synthetic answer. No method knows which instruction it times: the spec
names the kernel, the launch and how many instructions each loop iteration issues, and the family says how
much work one instruction is. Every method is one module here, behind the Method contract (base.py): its spec,
how it measures, how the simulated GPU answers it; `run` and `simulate` dispatch on the spec's declared method.

    ChainSlope         chain_slope.py   a chain timed at two lengths: cycles per instruction is the slope
    BracketedLatency   bracketed.py     a sequence timed with and without the instruction, by clock64
    OccupancySweep     occupancy.py     units x ILP per SM: work per cycle per SM, whole-GPU rate, energy
    Bandwidth          bandwidth.py     blocks per SM moving known bytes: whole-GPU bytes per second
    WholeKernel        whole_kernel.py  one launch is the job, in rounds alternating with an anchor
    SmMap              sm_map.py        every block times targets and says its SM: a map of the chip
    HostCall           host_call.py     a host-issued operation (a copy, a library call) in blocks between events
    (energy.py: the energy metrics OccupancySweep and WholeKernel share)

Every kernel has the argument shape of ptx/common.cuh and writes one timing record per unit.
"""

from harness.measure.methods.base import (  # noqa: F401  (the package's names, as before it was split)
    Context,
    Launcher,
    Method,
    MethodSpec,
    Row,
    Simulation,
    declare,
    method_of,
    run,
    simulate,
    throughput_unit,
)
from harness.measure.methods.energy import ENERGY_SECONDS, energy_metrics  # noqa: F401
from harness.measure.methods.chain_slope import ChainSlope  # noqa: F401
from harness.measure.methods.bracketed import FIRST_USE_LAUNCHES, BracketedLatency  # noqa: F401
from harness.measure.methods.occupancy import (  # noqa: F401
    CALIBRATION_ITERATIONS,
    THROUGHPUT_CYCLES,
    WHOLE_GPU_AT,
    WHOLE_GPU_CYCLES,
    OccupancySweep,
    SweepPoint,
)
from harness.measure.methods.bandwidth import CALIBRATION_COPIES, Bandwidth, BandwidthPoint  # noqa: F401
from harness.measure.methods.whole_kernel import (  # noqa: F401
    WHOLE_KERNEL_ROUND_MS,
    WHOLE_KERNEL_ROUNDS,
    WHOLE_KERNEL_WARMUP_S,
    Counter,
    WholeKernel,
)
from harness.measure.methods.host_call import HOST_CALL_ROUND_MS, HostCall  # noqa: F401
from harness.measure.methods.sm_map import MAP_ROW_HEAD, SmMap, map_launches, map_samples  # noqa: F401
