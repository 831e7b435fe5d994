# An investigation (issue 34 item 9), not a probe of the harness: how does the DSMEM store ping-pong's hop
# (263.5 cycles in 15 of 16 cases on both GPUs, no spread) move when the receiver pads each poll of its flag?
# A latency plus a free-running poll would grow with the pad (each hop pays at least the pad after the
# poll that sees the flag) and spread by placement; a poll locked to one phase of the sender gives the same
# value to a thousandth of a cycle in every cluster and moves in steps (pads 15 and 30 alike). Prints the
# per-hop cycles by pad. Output: reports/investigation/dsmem-pingpong-h100.txt.
import numpy as np, cupy as cp
SRC = r'''
extern "C" __global__ void __cluster_dims__(2, 1, 1) pp(long long *out, int iters, int pad, int store_kind) {
  __shared__ unsigned flag;
  if (threadIdx.x == 0) flag = 0;
  __syncthreads();
  asm volatile("barrier.cluster.arrive; barrier.cluster.wait;" ::: "memory");
  unsigned rank; asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  unsigned mine = (unsigned)__cvta_generic_to_shared(&flag), theirs;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(theirs) : "r"(mine), "r"(rank ^ 1u));
  long long c0 = clock64();
  for (int i = 0; i < iters; ++i) {
    if ((unsigned)(i & 1) == rank) {
      if (threadIdx.x == 0) {
        if (store_kind == 0) asm volatile("st.relaxed.cluster.shared::cluster.u32 [%0], %1;" :: "r"(theirs), "r"(i + 1) : "memory");
        else asm volatile("st.shared::cluster.u32 [%0], %1;" :: "r"(theirs), "r"(i + 1) : "memory");
      }
    } else {
      unsigned seen;
      do {
        asm volatile("ld.relaxed.cluster.shared::cta.u32 %0, [%1];" : "=r"(seen) : "r"(mine) : "memory");
        if (pad) { long long t = clock64(); while (clock64() - t < pad) {} }
      } while (seen != (unsigned)(i + 1));
    }
  }
  long long c1 = clock64();
  if (threadIdx.x == 0) out[blockIdx.x] = c1 - c0;
  asm volatile("barrier.cluster.arrive; barrier.cluster.wait;" ::: "memory");
}
'''
mod = cp.RawModule(code=SRC, options=("-arch=sm_90a",))
k = mod.get_function("pp")
out = cp.zeros(32, dtype=cp.int64)
def run(iters, pad, kind):
    k((32,), (32,), (out, np.int32(iters), np.int32(pad), np.int32(kind))); cp.cuda.Device().synchronize()
    return out.get()[0::2].astype(float)
for kind in (0, 1):
    for pad in (0, 7, 15, 30, 60, 120, 250):
        slopes = []
        for rep in range(7):
            a, b = run(64, pad, kind), run(1088, pad, kind)
            slopes.append((b - a) / 1024)
        s = np.array(slopes)
        med = np.median(s, axis=0)
        print(f"store {'relaxed' if kind == 0 else 'weak'} pad {pad:4d}: per hop median {np.median(s):8.3f}  "
              f"by cluster {med.min():.3f}-{med.max():.3f}  all {s.min():.3f}-{s.max():.3f}", flush=True)
