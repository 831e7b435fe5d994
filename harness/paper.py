"""The GPU of the papers the harness compares with (Luo et al., arXiv 2402.13499 and 2501.12084: an
H800 PCIe), and how closely a comparison asks figures to agree. Facts the comparison, the reports,
the site and the CLI's help all quote, kept in one place below them all."""

PAPER_GPU = "H800 PCIe"
PAPER_SMS = 114
PAPER_CLOCK_MHZ = 1755.0  # the H800 PCIe's maximum SM clock
PAPER_POWER_LIMIT_W = 350  # its board limit, as both papers state it beside their energy tables
# Every clock printed in 2501.12084 Table 13 is a multiple of 15 MHz, the H800's clock step: an NVML
# reading of the step the GPU was on, while the mean over the run may lie up to a step away. A
# per-cycle comparison at a printed clock allows that step on top of the tolerance.
PAPER_CLOCK_STEP_MHZ = 15.0
DEFAULT_TOLERANCE = 0.03  # relative, on top of the measurement's spread (printed figures are rounded)
