// common.cuh: helpers shared by every probe template (prepended by harness/build/render.py).
// NVRTC-safe: no host headers. Every probe kernel has the same argument shape:
//   (const uint4* in, u32* out, long long* timing, int iters)

#if !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "hopper-bench probes use sm_90a features: compile with -arch=sm_90a"
#endif

typedef unsigned int u32;
typedef unsigned long long u64;

// Per-warpgroup timing record written by throughput/chain kernels (harness/measure/timing.py reads it).
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

// Self-test faults (suite `faults`, harness/spec.py PLANTED_FAULTS). Every probe calls this first
// with its PLANTED_FAULT constant; 0 in every measured probe, so the call compiles to nothing.
// The faults depend on `iters` (never negative at run time, unknown to the compiler), so the
// code after them stays reachable and the probe's SASS is the normal one.
constexpr int FAULT_NONE = 0, FAULT_TRAP = 1, FAULT_OOB = 2, FAULT_HANG = 3;

template <int FAULT>
__device__ __forceinline__ void planted_fault(int iters, u32* out) {
  if (FAULT == FAULT_NONE || iters < 0) return;
  if (FAULT == FAULT_TRAP) asm volatile("trap;");
  if (FAULT == FAULT_OOB)  // 16 TiB past the output buffer: unmapped
    *reinterpret_cast<volatile u32*>(reinterpret_cast<u64>(out) + (1ull << 44)) = 1u;
  if (FAULT == FAULT_HANG)
    while (clock_cycles() >= 0) {
    }
}
