# An investigation (issue 34 item 9), not a probe of the harness: why did a DSMEM store round trip, padded
# 0-63 cycles by a clock loop before each round, take two values 46 cycles apart? Either the pad moved the
# store's arrival by whole periods of the partner's poll (so the phase never changed), or the delivery of a
# store between SMs is slotted, or the sender's own poll sets a grid (so no pad can change it). Each round here: rank 0 pads, reads the clock (c0),
# stores r + 1 into its partner's flag, spins on its own flag until the partner stores r + 1 back, reads the
# clock (c1). It records the round trip c1 - c0 and the gap since the last round's c1 (the realized pad).
# Three pads: none; a clock loop of 0-63 cycles (the withdrawn probe's); a dependent chain of 0-63 IMADs
# (about 4 cycles a step, a finer grid). If the round trip spreads with the chain's pad, the clock loop was
# the cause; if it keeps two values, the grid is not the partner's phase (docs/data-movement.md reads it). Prints per pad: the round trip's distinct values
# and counts, and the round trip against the realized pad modulo the poll's period.
import numpy as np, cupy as cp

SRC = r'''
extern "C" __global__ void __cluster_dims__(2, 1, 1) rt(long long *out, int iters, int mode) {
  __shared__ unsigned flag;
  if (threadIdx.x == 0) flag = 0;
  __syncthreads();
  asm volatile("barrier.cluster.arrive; barrier.cluster.wait;" ::: "memory");
  unsigned rank; asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  unsigned mine = (unsigned)__cvta_generic_to_shared(&flag), theirs;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(theirs) : "r"(mine), "r"(rank ^ 1u));
  unsigned x = threadIdx.x + 7u;
  long long last = clock64();
  for (int r = 0; r < iters; ++r) {
    if (rank == 0) {
      unsigned pad = ((unsigned)r * 1103515245u + 12345u) >> 16 & 63u;
      if (mode == 1) {
        long long until = clock64() + pad;
        while (clock64() < until) {}
      } else if (mode == 2) {
        for (unsigned j = 0; j < pad; ++j) x = x * 3u + 1u;
        if (x == 0xdeadbeefu) out[1 << 20] = x;  // waits for the chain before the clock read
      }
      long long c0 = clock64();
      if (threadIdx.x == 0)
        asm volatile("st.relaxed.cluster.shared::cluster.u32 [%0], %1;" :: "r"(theirs), "r"(r + 1) : "memory");
      unsigned seen;
      do {
        asm volatile("ld.relaxed.cluster.shared::cta.u32 %0, [%1];" : "=r"(seen) : "r"(mine) : "memory");
      } while (seen != (unsigned)(r + 1));
      long long c1 = clock64();
      if (threadIdx.x == 0) {
        out[(blockIdx.x / 2) * 2 * iters + 2 * r] = c1 - c0;
        out[(blockIdx.x / 2) * 2 * iters + 2 * r + 1] = c0 - last;
      }
      last = c1;
    } else {
      unsigned seen;
      do {
        asm volatile("ld.relaxed.cluster.shared::cta.u32 %0, [%1];" : "=r"(seen) : "r"(mine) : "memory");
      } while (seen != (unsigned)(r + 1));
      if (threadIdx.x == 0)
        asm volatile("st.relaxed.cluster.shared::cluster.u32 [%0], %1;" :: "r"(theirs), "r"(r + 1) : "memory");
    }
  }
  asm volatile("barrier.cluster.arrive; barrier.cluster.wait;" ::: "memory");
}
'''
mod = cp.RawModule(code=SRC, options=("-arch=sm_90a",))
k = mod.get_function("rt")
CLUSTERS, ITERS = 16, 512
out = cp.zeros(CLUSTERS * 2 * ITERS + (1 << 20) + 1, dtype=cp.int64)
for mode, name in ((0, "no pad"), (1, "clock loop 0-63"), (2, "IMAD chain 0-63")):
    k((2 * CLUSTERS,), (32,), (out, np.int32(ITERS), np.int32(mode)))
    k((2 * CLUSTERS,), (32,), (out, np.int32(ITERS), np.int32(mode)))
    cp.cuda.Device().synchronize()
    rows = out.get()[:CLUSTERS * 2 * ITERS].reshape(CLUSTERS, ITERS, 2)[:, 16:]  # first rounds warm up
    trip, gap = rows[..., 0].ravel(), rows[..., 1].ravel()
    values, counts = np.unique(trip, return_counts=True)
    top = sorted(zip(counts.tolist(), values.tolist()), reverse=True)[:12]
    print(f"{name}: {trip.size} rounds, round trip min {trip.min()} median {np.median(trip):g} max {trip.max()}, "
          f"{values.size} distinct; most common (count, cycles): {top}")
    gaps = np.unique(gap)
    print(f"   realized gap: {gaps.size} distinct, {gap.min()}-{gap.max()} cycles")
    for period in (23, 46):
        phase = gap % period
        by = {int(p): float(np.median(trip[phase == p])) for p in np.unique(phase)}
        print(f"   median round trip by gap mod {period}: {by}")
