// common.cuh: helpers shared by every probe template (prepended by harness/render.py).
// NVRTC-safe: no host headers. Every probe kernel has the same argument shape:
//   (const uint4* in, u32* out, long long* timing, int iters)

#if !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "hopper-bench probes use sm_90a features: compile with -arch=sm_90a"
#endif

typedef unsigned int u32;
typedef unsigned long long u64;

// Per-warpgroup timing record written by throughput/chain kernels (harness/timing.py reads it).
constexpr int TIMING_RECORD_WORDS = 5;  // clk_start, clk_stop, ns_start, ns_stop, smid

__device__ __forceinline__ u32 smem_addr(const void* p) {
  return static_cast<u32>(__cvta_generic_to_shared(p));
}

// %clock64 counts SM cycles; "memory" keeps the read in program order with the probe's asm.
__device__ __forceinline__ long long clock_cycles() {
  long long c;
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(c) :: "memory");
  return c;
}

// %globaltimer counts nanoseconds; paired with clock_cycles() it measures the SM clock in flight.
__device__ __forceinline__ u64 globaltimer_ns() {
  u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t) :: "memory");
  return t;
}

__device__ __forceinline__ u32 sm_id() {
  u32 s;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
  return s;
}

__device__ __forceinline__ void write_timing_record(long long* timing, int slot, long long clk0,
                                                    long long clk1, u64 ns0, u64 ns1) {
  long long* rec = timing + slot * TIMING_RECORD_WORDS;
  rec[0] = clk0;
  rec[1] = clk1;
  rec[2] = static_cast<long long>(ns0);
  rec[3] = static_cast<long long>(ns1);
  rec[4] = sm_id();
}
