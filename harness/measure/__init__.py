"""measure stage (docs/architecture.md, "Layers"): what a measurement is and how one is taken on a GPU
(methods, timing records, launches, validation, the device, NVML telemetry); families name these in
their plans, harness/orchestration/ runs them."""
