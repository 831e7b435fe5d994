# An investigation (issue 35 item 4, the DSMEM row at cluster 16), not a probe of the harness: on which SMs does
# rank 0 of a cluster land? The dsmem latency cases chase from rank 0 of each of 16 clusters (32-thread CTAs,
# grid = 16 x the cluster size), and at cluster 16 their fastest pair is 200.5 cycles where the paper's is 180.
# The maps suite (runs 94/95) finds that in clusters of 16 SMs 2-15 reach no partner under 195 cycles while
# the other SMs' fastest partner is 190 at the median. This launches the latency cases' grid at clusters of
# 2, 4, 8 and 16 with a kernel that records each CTA's %cluster_ctarank and %smid, five times, and prints the
# SMs rank 0 landed on. Output: reports/investigation/dsmem-rank0-<gpu>.txt
import cupy as cp
from harness.measure.launch import _launch_cluster

SRC = r'''
extern "C" __global__ void where(unsigned *out) {
  unsigned rank, sm;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  if (threadIdx.x == 0) out[blockIdx.x] = rank << 16 | sm;
}
'''
function = cp.RawModule(code=SRC, options=("-arch=sm_90a",)).get_function("where")
print(cp.cuda.runtime.getDeviceProperties(0)["name"].decode())
for cluster in (2, 4, 8, 16):
    grid = 16 * cluster
    seen = []
    for _ in range(5):
        out = cp.zeros(grid, dtype=cp.uint32)
        _launch_cluster(function, grid, 32, 0, cluster, (out,))
        cp.cuda.Device().synchronize()
        words = out.get()
        ranks, sms = words >> 16, words & 0xFFFF
        seen.append(sorted(sms[ranks == 0].tolist()))
    print(f"cluster {cluster}: rank 0 on SMs {seen[0]}" + ("" if all(s == seen[0] for s in seen) else f"; other launches {seen[1:]}"))
