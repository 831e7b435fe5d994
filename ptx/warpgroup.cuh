// warpgroup.cuh: what the 128 threads of a warpgroup do together on sm_90a (included by a template's
// `#include "warpgroup.cuh"`, inlined by harness/build/render.py). One named wrapper per PTX instruction,
// each with one `asm`: the wgmma fence / commit / wait, register reallocation (setmaxnreg), named barriers,
// and the shared-memory matrix descriptor that wgmma reads, built from its named fields. The wgmma itself
// stays in its template: its shape, types and operand lists are rendered per case.
//
// Every wrapper that orders memory clobbers "memory"; the compile-time arguments (a wait's depth, a register
// count) are template parameters checked by static_assert, so an illegal one is a compile error, not a hang.

constexpr int WARPGROUP_THREADS = 128;

// -- wgmma's asynchronous groups ------------------------------------------------------------------------

// Registers and shared memory written before this are visible to the wgmma issued after it.
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
// The wgmma issued since the last commit form one group.
__device__ __forceinline__ void wgmma_commit_group() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
// Wait until at most N committed groups are pending (their accumulators may be read after a fence of them).
template <int N>
__device__ __forceinline__ void wgmma_wait_group() {
  static_assert(0 <= N && N <= 7, "wgmma.wait_group: 0..7 groups may stay pending");
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}

// An empty asm that "writes" every register of an accumulator array: the compiler may not move ordinary
// instructions that read or define them across it, so ptxas need not serialize a wgmma chain (C7515).
template <int N>
__device__ __forceinline__ void fence_registers(u32 (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+r"(d[i])::"memory");
}
template <int N>
__device__ __forceinline__ void fence_registers(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
template <int M, int N>
__device__ __forceinline__ void fence_registers(float (&d)[M][N]) {
#pragma unroll
  for (int i = 0; i < M; ++i)
#pragma unroll
    for (int j = 0; j < N; ++j) asm volatile("" : "+f"(d[i][j])::"memory");
}

// -- register reallocation ------------------------------------------------------------------------------

// A warpgroup's registers per thread, raised to or lowered to REGS (every warp of the warpgroup executes it).
template <int REGS>
__device__ __forceinline__ void setmaxnreg_inc() {
  static_assert(24 <= REGS && REGS <= 256 && REGS % 8 == 0, "setmaxnreg: 24..256 registers, a multiple of 8");
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(REGS));
}
template <int REGS>
__device__ __forceinline__ void setmaxnreg_dec() {
  static_assert(24 <= REGS && REGS <= 256 && REGS % 8 == 0, "setmaxnreg: 24..256 registers, a multiple of 8");
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(REGS));
}

// -- named barriers -------------------------------------------------------------------------------------
// Barrier 0 is __syncthreads()'s; a pipeline numbers its own from 1 (pipeline.cuh). `threads` counts every
// thread that takes part, arriving or waiting: a multiple of 32.

// Arrive and wait for `threads` threads on barrier `id`.
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
// Arrive on barrier `id` without waiting (the other side of a bar.sync by the rest of `threads`).
__device__ __forceinline__ void named_barrier_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// -- the shared-memory matrix descriptor ------------------------------------------------------------------
// PTX ISA, "Matrix Descriptor Format" for wgmma; harness/families/wgmma/descriptors.py encodes the same fields
// on the host (tests/test_pipeline_layer.py compiles one against the other):
//   bits 0-13   start address >> 4          bits 16-29  leading byte offset >> 4 (LBO)
//   bits 32-45  stride byte offset >> 4 (SBO)  bits 49-51  matrix base offset   bits 62-63  swizzle mode

enum class Swizzle : u32 { None = 0, B128 = 1, B64 = 2, B32 = 3 };

__host__ __device__ constexpr u64 smem_descriptor_fields(u32 start_address, u32 leading_byte_offset,
                                                         u32 stride_byte_offset, u32 base_offset, Swizzle swizzle) {
  return static_cast<u64>((start_address & 0x3FFFF) >> 4) | (static_cast<u64>(leading_byte_offset >> 4) << 16) |
         (static_cast<u64>(stride_byte_offset >> 4) << 32) | (static_cast<u64>(base_offset & 7) << 49) |
         (static_cast<u64>(swizzle) << 62);
}

// The address of the 2-byte element (row, col) from `base`, in boxes of 64 columns ROWS rows apart, laid out as a TMA
// box with the 128-byte swizzle writes it (a row 128 bytes, its 16-byte chunks permuted by the row's index mod 8):
// where a tile's epilogue stores from registers for a TMA store to read.
template <int ROWS>
__device__ __forceinline__ u32 swizzle128_address(u32 base, int row, int col) {
  const int chunk = ((col % 64) / 8) ^ (row % 8);
  return base + (col / 64) * ROWS * 128 + row * 128 + chunk * 16 + (col % 8) * 2;
}

// A descriptor whose offsets and swizzle are fixed at compile time, for an operand at `start_address`.
template <Swizzle SWIZZLE, u32 LEADING_BYTES, u32 STRIDE_BYTES, u32 BASE_OFFSET = 0>
__device__ __forceinline__ u64 smem_descriptor(u32 start_address) {
  static_assert(LEADING_BYTES % 16 == 0 && LEADING_BYTES < (1u << 18), "LBO: a multiple of 16 below 2^18");
  static_assert(STRIDE_BYTES % 16 == 0 && STRIDE_BYTES < (1u << 18), "SBO: a multiple of 16 below 2^18");
  static_assert(BASE_OFFSET < 8, "matrix base offset: 0..7");
  return smem_descriptor_fields(start_address, LEADING_BYTES, STRIDE_BYTES, BASE_OFFSET, SWIZZLE);
}
