"""mma.sync / mma.sp (warp-level MMA) and the ldmatrix/stmatrix fragment loaders."""
FAMILY = None
LOADERS = None
