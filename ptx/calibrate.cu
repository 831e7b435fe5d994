// calibrate.cu: kernels of known cycle cost that check the timing pipeline itself.
// calibrate_ffma_<COUNT>: one thread runs `iters` times a straight-line block of COUNT dependent
// fma.rn.f32. Between the two COUNTs the loop overhead cancels: the slope of cycles against
// COUNT x iters is the FFMA dependent-issue latency (4 cycles on Volta through Hopper).

template <int COUNT>
__device__ __forceinline__ void ffma_chain(const uint4* __restrict__ in, u32* __restrict__ out,
                                           long long* __restrict__ timing, int iters) {
  float x = __uint_as_float(in[0].x), y = __uint_as_float(in[0].y), z = __uint_as_float(in[0].z);
  const long long clk0 = clock_cycles();
  const u64 ns0 = globaltimer_ns();
#pragma unroll 1
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int u = 0; u < COUNT; ++u) asm volatile("fma.rn.f32 %0, %0, %1, %2;" : "+f"(x) : "f"(y), "f"(z));
  }
  asm volatile("" : "+f"(x)::"memory");
  const long long clk1 = clock_cycles();
  const u64 ns1 = globaltimer_ns();
  out[threadIdx.x] = __float_as_uint(x);
  if (threadIdx.x == 0) write_timing_record(timing, blockIdx.x, clk0, clk1, ns0, ns1);
}

extern "C" __global__ void calibrate_ffma_256(const uint4* __restrict__ in, u32* __restrict__ out,
                                              long long* __restrict__ timing, int iters) {
  ffma_chain<256>(in, out, timing, iters);
}

extern "C" __global__ void calibrate_ffma_768(const uint4* __restrict__ in, u32* __restrict__ out,
                                              long long* __restrict__ timing, int iters) {
  ffma_chain<768>(in, out, timing, iters);
}
