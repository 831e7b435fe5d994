// async.cuh: the asynchronous-copy layer every probe shares (included by a template's
// `#include "async.cuh"`, inlined by harness/build/render.py). One named wrapper per PTX
// instruction, each with one `asm`: fences, mbarrier operations, bulk and tensor copies, their
// commit/wait groups, cp.async, cluster barriers and addresses. A wrapper names the instruction it
// issues; a template never types these instructions inline.
//
// Conventions: shared-memory addresses are 32-bit `.shared` addresses (smem_addr() of
// common.cuh); a tensor map is the generic address of a 64-byte aligned, 128-byte CUtensorMap (a
// `const __grid_constant__` kernel parameter or a global buffer); coordinates are in elements,
// innermost first. Every asm clobbers "memory": the compiler keeps them in program order with the
// loads and stores around them.

// -- fences ----------------------------------------------------------------------------------------

// Generic-proxy writes to shared memory made visible to the async proxy (TMA, wgmma) of this CTA.
__device__ __forceinline__ void fence_proxy_async_shared_cta() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
// The same for global memory (a TMA store's bytes read back by ordinary loads, or the reverse).
__device__ __forceinline__ void fence_proxy_async_global() {
  asm volatile("fence.proxy.async.global;" ::: "memory");
}
// mbarrier.init made visible to the cluster (and to the async proxy's complete-tx).
__device__ __forceinline__ void fence_mbarrier_init_cluster() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
// A tensor map in global memory written by the host: acquire it once per CTA before its first use.
__device__ __forceinline__ void fence_tensormap_acquire_sys(const void* map) {
  asm volatile("fence.proxy.tensormap::generic.acquire.sys [%0], 128;" ::"l"(map) : "memory");
}
// Bring a tensor map into the TMA unit's descriptor cache ahead of its first copy.
__device__ __forceinline__ void prefetch_tensormap(const void* map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(map) : "memory");
}

// -- mbarrier --------------------------------------------------------------------------------------

__device__ __forceinline__ void mbarrier_init(u32 bar, u32 count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
// Arrive once and add `bytes` to the transaction count the phase waits for.
__device__ __forceinline__ void mbarrier_arrive_expect_tx(u32 bar, u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbarrier_arrive(u32 bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
// Arrive on a barrier in another CTA of the cluster, by its shared::cluster address
// (mapa_shared_cluster below): a consumer releasing a slot that a multicast fills. Release at CTA
// scope (the default), as CUTLASS's ClusterBarrier does: what it orders are this CTA's reads of the
// slot, complete before the arrive; a cluster-scope release cost a GEMM half its rate on an H100.
__device__ __forceinline__ void mbarrier_arrive_cluster(u32 remote_bar) {
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" ::"r"(remote_bar) : "memory");
}
// Has the phase of parity `phase` completed? try_wait may suspend the thread for a while first.
__device__ __forceinline__ bool mbarrier_try_wait_parity(u32 bar, u32 phase) {
  u32 done;
  asm volatile(
      "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
      : "=r"(done)
      : "r"(bar), "r"(phase)
      : "memory");
  return done;
}
// The same question without suspending (a poll).
__device__ __forceinline__ bool mbarrier_test_wait_parity(u32 bar, u32 phase) {
  u32 done;
  asm volatile(
      "{ .reg .pred p; mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
      : "=r"(done)
      : "r"(bar), "r"(phase)
      : "memory");
  return done;
}
__device__ __forceinline__ void mbarrier_wait_parity(u32 bar, u32 phase) {
  while (!mbarrier_try_wait_parity(bar, phase)) {
  }
}

// -- tensor copies (TMA) ---------------------------------------------------------------------------
// The rank is part of the instruction: one wrapper per rank, tma_<copy>_<rank>d. Coordinates c0 ..
// are in elements, innermost first; im2col's offsets o0 .. (one per spatial dimension, rank - 2 of
// them) are the filter position, 16-bit.

// A box from global memory into this CTA's shared memory at `dst`, completing its bytes on `bar`.
__device__ __forceinline__ void tma_load_1d(u32 dst, const void* map, int c0, u32 bar) {
  asm volatile(
      "cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
      "[%0], [%1, {%2}], [%3];"
      ::"r"(dst), "l"(map), "r"(c0), "r"(bar)
      : "memory");
}
__device__ __forceinline__ void tma_load_2d(u32 dst, const void* map, int c0, int c1, u32 bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::"r"(
          dst),
      "l"(map), "r"(c0), "r"(c1), "r"(bar)
      : "memory");
}
__device__ __forceinline__ void tma_load_3d(u32 dst, const void* map, int c0, int c1, int c2, u32 bar) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
      "[%0], [%1, {%2, %3, %4}], [%5];"
      ::"r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
      : "memory");
}
__device__ __forceinline__ void tma_load_4d(u32 dst, const void* map, int c0, int c1, int c2, int c3, u32 bar) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
      "[%0], [%1, {%2, %3, %4, %5}], [%6];"
      ::"r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar)
      : "memory");
}
__device__ __forceinline__ void tma_load_5d(u32 dst, const void* map, int c0, int c1, int c2, int c3, int c4, u32 bar) {
  asm volatile(
      "cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
      "[%0], [%1, {%2, %3, %4, %5, %6}], [%7];"
      ::"r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4), "r"(bar)
      : "memory");
}

// The same in im2col mode: a column of pixels (c0: the first channel; c1 ..: the pixel's corner, then
// the image) with the filter offsets o0 ...
__device__ __forceinline__ void tma_load_im2col_3d(u32 dst, const void* map, int c0, int c1, int c2, u32 bar,
                                                   unsigned short o0) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes "
      "[%0], [%1, {%2, %3, %4}], [%5], {%6};"
      ::"r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(bar), "h"(o0)
      : "memory");
}
__device__ __forceinline__ void tma_load_im2col_4d(u32 dst, const void* map, int c0, int c1, int c2, int c3, u32 bar,
                                                   unsigned short o0, unsigned short o1) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes "
      "[%0], [%1, {%2, %3, %4, %5}], [%6], {%7, %8};"
      ::"r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar), "h"(o0), "h"(o1)
      : "memory");
}
__device__ __forceinline__ void tma_load_im2col_5d(u32 dst, const void* map, int c0, int c1, int c2, int c3, int c4,
                                                   u32 bar, unsigned short o0, unsigned short o1, unsigned short o2) {
  asm volatile(
      "cp.async.bulk.tensor.5d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes "
      "[%0], [%1, {%2, %3, %4, %5, %6}], [%7], {%8, %9, %10};"
      ::"r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4), "r"(bar), "h"(o0), "h"(o1), "h"(o2)
      : "memory");
}

// A box into the shared memory of every CTA of the cluster whose rank bit is set in `mask`, at the
// same offset, each completing on its barrier at `bar`'s offset.
__device__ __forceinline__ void tma_load_1d_multicast(u32 dst, const void* map, int c0, u32 bar, unsigned short mask) {
  asm volatile(
      "cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster "
      "[%0], [%1, {%2}], [%3], %4;"
      ::"r"(dst), "l"(map), "r"(c0), "r"(bar), "h"(mask)
      : "memory");
}
__device__ __forceinline__ void tma_load_2d_multicast(u32 dst, const void* map, int c0, int c1, u32 bar,
                                                      unsigned short mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster "
      "[%0], [%1, {%2, %3}], [%4], %5;" ::"r"(dst),
      "l"(map), "r"(c0), "r"(c1), "r"(bar), "h"(mask)
      : "memory");
}
__device__ __forceinline__ void tma_load_3d_multicast(u32 dst, const void* map, int c0, int c1, int c2, u32 bar,
                                                      unsigned short mask) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster "
      "[%0], [%1, {%2, %3, %4}], [%5], %6;"
      ::"r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(bar), "h"(mask)
      : "memory");
}
__device__ __forceinline__ void tma_load_4d_multicast(u32 dst, const void* map, int c0, int c1, int c2, int c3, u32 bar,
                                                      unsigned short mask) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster "
      "[%0], [%1, {%2, %3, %4, %5}], [%6], %7;"
      ::"r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar), "h"(mask)
      : "memory");
}
__device__ __forceinline__ void tma_load_5d_multicast(u32 dst, const void* map, int c0, int c1, int c2, int c3, int c4,
                                                      u32 bar, unsigned short mask) {
  asm volatile(
      "cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster "
      "[%0], [%1, {%2, %3, %4, %5, %6}], [%7], %8;"
      ::"r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4), "r"(bar), "h"(mask)
      : "memory");
}

// A box from this CTA's shared memory at `src` to global memory, in the current bulk group.
__device__ __forceinline__ void tma_store_1d(const void* map, int c0, u32 src) {
  asm volatile(
      "cp.async.bulk.tensor.1d.global.shared::cta.tile.bulk_group "
      "[%0, {%1}], [%2];"
      ::"l"(map), "r"(c0), "r"(src)
      : "memory");
}
__device__ __forceinline__ void tma_store_2d(const void* map, int c0, int c1, u32 src) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];" ::"l"(map),
               "r"(c0), "r"(c1), "r"(src)
               : "memory");
}
__device__ __forceinline__ void tma_store_3d(const void* map, int c0, int c1, int c2, u32 src) {
  asm volatile(
      "cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group "
      "[%0, {%1, %2, %3}], [%4];"
      ::"l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(src)
      : "memory");
}
__device__ __forceinline__ void tma_store_4d(const void* map, int c0, int c1, int c2, int c3, u32 src) {
  asm volatile(
      "cp.async.bulk.tensor.4d.global.shared::cta.tile.bulk_group "
      "[%0, {%1, %2, %3, %4}], [%5];"
      ::"l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(src)
      : "memory");
}
__device__ __forceinline__ void tma_store_5d(const void* map, int c0, int c1, int c2, int c3, int c4, u32 src) {
  asm volatile(
      "cp.async.bulk.tensor.5d.global.shared::cta.tile.bulk_group "
      "[%0, {%1, %2, %3, %4, %5}], [%6];"
      ::"l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4), "r"(src)
      : "memory");
}

// The same, added element-wise into global memory (the reduction's .add), in the current bulk group.
__device__ __forceinline__ void tma_reduce_add_1d(const void* map, int c0, u32 src) {
  asm volatile(
      "cp.reduce.async.bulk.tensor.1d.global.shared::cta.add.tile.bulk_group "
      "[%0, {%1}], [%2];"
      ::"l"(map), "r"(c0), "r"(src)
      : "memory");
}
__device__ __forceinline__ void tma_reduce_add_2d(const void* map, int c0, int c1, u32 src) {
  asm volatile(
      "cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group "
      "[%0, {%1, %2}], [%3];"
      ::"l"(map), "r"(c0), "r"(c1), "r"(src)
      : "memory");
}
__device__ __forceinline__ void tma_reduce_add_3d(const void* map, int c0, int c1, int c2, u32 src) {
  asm volatile(
      "cp.reduce.async.bulk.tensor.3d.global.shared::cta.add.tile.bulk_group "
      "[%0, {%1, %2, %3}], [%4];"
      ::"l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(src)
      : "memory");
}
__device__ __forceinline__ void tma_reduce_add_4d(const void* map, int c0, int c1, int c2, int c3, u32 src) {
  asm volatile(
      "cp.reduce.async.bulk.tensor.4d.global.shared::cta.add.tile.bulk_group "
      "[%0, {%1, %2, %3, %4}], [%5];"
      ::"l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(src)
      : "memory");
}
__device__ __forceinline__ void tma_reduce_add_5d(const void* map, int c0, int c1, int c2, int c3, int c4, u32 src) {
  asm volatile(
      "cp.reduce.async.bulk.tensor.5d.global.shared::cta.add.tile.bulk_group "
      "[%0, {%1, %2, %3, %4, %5}], [%6];"
      ::"l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4), "r"(src)
      : "memory");
}

// A box from global memory into the L2 only (nothing lands in shared memory, nothing to wait for).
__device__ __forceinline__ void tma_prefetch_1d(const void* map, int c0) {
  asm volatile("cp.async.bulk.prefetch.tensor.1d.L2.global.tile [%0, {%1}];" ::"l"(map), "r"(c0) : "memory");
}
__device__ __forceinline__ void tma_prefetch_2d(const void* map, int c0, int c1) {
  asm volatile(
      "cp.async.bulk.prefetch.tensor.2d.L2.global.tile "
      "[%0, {%1, %2}];"
      ::"l"(map), "r"(c0), "r"(c1)
      : "memory");
}
__device__ __forceinline__ void tma_prefetch_3d(const void* map, int c0, int c1, int c2) {
  asm volatile(
      "cp.async.bulk.prefetch.tensor.3d.L2.global.tile "
      "[%0, {%1, %2, %3}];"
      ::"l"(map), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}
__device__ __forceinline__ void tma_prefetch_4d(const void* map, int c0, int c1, int c2, int c3) {
  asm volatile(
      "cp.async.bulk.prefetch.tensor.4d.L2.global.tile "
      "[%0, {%1, %2, %3, %4}];"
      ::"l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
      : "memory");
}
__device__ __forceinline__ void tma_prefetch_5d(const void* map, int c0, int c1, int c2, int c3, int c4) {
  asm volatile(
      "cp.async.bulk.prefetch.tensor.5d.L2.global.tile "
      "[%0, {%1, %2, %3, %4, %5}];"
      ::"l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4)
      : "memory");
}
__device__ __forceinline__ void tma_prefetch_im2col_3d(const void* map, int c0, int c1, int c2, unsigned short o0) {
  asm volatile(
      "cp.async.bulk.prefetch.tensor.3d.L2.global.im2col "
      "[%0, {%1, %2, %3}], {%4};"
      ::"l"(map), "r"(c0), "r"(c1), "r"(c2), "h"(o0)
      : "memory");
}
__device__ __forceinline__ void tma_prefetch_im2col_4d(const void* map, int c0, int c1, int c2, int c3,
                                                       unsigned short o0, unsigned short o1) {
  asm volatile(
      "cp.async.bulk.prefetch.tensor.4d.L2.global.im2col "
      "[%0, {%1, %2, %3, %4}], {%5, %6};"
      ::"l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "h"(o0), "h"(o1)
      : "memory");
}
__device__ __forceinline__ void tma_prefetch_im2col_5d(const void* map, int c0, int c1, int c2, int c3, int c4,
                                                       unsigned short o0, unsigned short o1, unsigned short o2) {
  asm volatile(
      "cp.async.bulk.prefetch.tensor.5d.L2.global.im2col "
      "[%0, {%1, %2, %3, %4, %5}], {%6, %7, %8};"
      ::"l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4), "h"(o0), "h"(o1), "h"(o2)
      : "memory");
}

// -- bulk copies (contiguous bytes, no tensor map) --------------------------------------------------

// `bytes` (a multiple of 16, both addresses 16-byte aligned) from global memory into this CTA's shared
// memory at `dst`, completing them on `bar`.
__device__ __forceinline__ void bulk_load(u32 dst, const void* src, u32 bytes, u32 bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
}
// `bytes` from this CTA's shared memory at `src` to global memory, in the current bulk group.
__device__ __forceinline__ void bulk_store(void* dst, u32 src, u32 bytes) {
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst), "r"(src), "r"(bytes)
               : "memory");
}
// `bytes` of global memory into the L2 only.
__device__ __forceinline__ void bulk_prefetch_l2(const void* src, u32 bytes) {
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(src), "r"(bytes) : "memory");
}

// -- bulk groups (stores, shared -> global) ---------------------------------------------------------

__device__ __forceinline__ void bulk_commit_group() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
// Wait until at most N bulk groups are pending (their writes complete and visible).
template <int N>
__device__ __forceinline__ void bulk_wait_group() {
  asm volatile("cp.async.bulk.wait_group %0;" ::"n"(N) : "memory");
}
// Wait until at most N bulk groups still read their shared-memory source (the source may be reused).
template <int N>
__device__ __forceinline__ void bulk_wait_group_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}

// -- cp.async (16-byte copies, one thread each) -----------------------------------------------------

__device__ __forceinline__ void cp_async_cg_16(u32 dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async_commit_group() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait_group() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

// One lane of the (converged) warp, the same every call: the lane that issues a warp's copy. Unlike a test of
// threadIdx.x, ptxas knows the lane it picks is alone and issues the copy from uniform registers: a latency
// kernel's issue window held moves of the map's address into them under `if (lane 0)` (docs/data-movement.md).
__device__ __forceinline__ bool elect_one_sync() {
  u32 elected;
  asm volatile("{ .reg .pred p; elect.sync _|p, 0xffffffff; selp.u32 %0, 1, 0, p; }" : "=r"(elected));
  return elected != 0;
}

// -- clusters --------------------------------------------------------------------------------------

__device__ __forceinline__ u32 cluster_ctarank() {
  u32 r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
// Every thread of every CTA of the cluster arrives (release) and waits (acquire).
__device__ __forceinline__ void cluster_arrive() {
  asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
}
__device__ __forceinline__ void cluster_wait() {
  asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
}
__device__ __forceinline__ void cluster_sync() {
  cluster_arrive();
  cluster_wait();
}
// This CTA's shared address `local` as the cluster's CTA `cta` holds it (its shared::cluster address).
__device__ __forceinline__ u32 mapa_shared_cluster(u32 local, u32 cta) {
  u32 remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(cta));
  return remote;
}
