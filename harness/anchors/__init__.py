"""Library "anchors": vendor kernels that a benchmark times back to back with its own, on the same buffers."""
