// pipeline.cuh: the warp-specialized pipeline every kernel-level family shares (included by a template's
// `#include "pipeline.cuh"`, inlined by harness/build/render.py with the headers it includes). A kernel is its
// roles plugged into one skeleton:
//
//   warpgroup 0          the producer: one thread walks the CTA's tiles and, for each k-block, acquires a slot of
//                        the ring (waits until its consumers released it) and calls the kernel's `load`
//   warpgroups 1..C      the consumers: each walks its tiles (SCHEDULE below), runs the kernel's `mainloop` over
//                        the ring (consume_kblocks: wait for a slot, issue, retire, release) and its `epilogue`
//
// The ring is STAGES slots of shared memory, each guarded by two mbarriers: full[s] (its bytes landed: one
// arrival with the transaction count, completed by the copies) and empty[s] (its readers are done: one arrival
// per consumer warpgroup of every CTA whose copies fill it). PipelineState is the position in the ring; the
// tile walk is TileScheduler's. Schedules:
//   SCHEDULE_COOPERATIVE  every consumer warpgroup works on every tile (each on its own rows)
//   SCHEDULE_PINGPONG     two consumer warpgroups take the CTA's tiles in turn, each a whole tile; a pair of named
//                        barriers orders their mainloops, so one's epilogue runs under the other's mainloop
//
// The kernel type K supplies (pipeline_kernel() below):
//   constants   STAGES, CONSUMERS, CLUSTER, SCHEDULE, REBALANCE, PRODUCER_REGS, CONSUMER_REGS, BM, BN, PERSISTENT,
//               ORDER, GROUP, COUNTERS, SPLITS (split-K: 1 for none; a run of P.k / BK / SPLITS k-blocks per
//               work item, tile.split and tile.kb0 say which; the kernel's epilogue adds the runs), STREAMK (0 for
//               none; else the tiles past the last whole wave split along K over the CTAs, TileScheduler below: a
//               work item walks tile.kblocks from tile.kb0, and the kernel's epilogue adds a tile's tile.runs)
//   K::prologue(P)                                  thread 0, before the barriers' first use (prefetch maps)
//   VARIABLE_KBLOCKS, K::tile_kblocks(P, tile, kblocks)
//                                                    false: every tile walks kblocks = P.k / BK / SPLITS; true: a
//                                                    tile walks tile_kblocks (causal attention walks its keys up to
//                                                    its last row; ping-pong needs false)
//   K::load(P, ring, state, base, tile, kb, rank)    the producer thread: k-block kb's copies into its slot (kb
//                                                    counts from K's start: tile.kb0 + the run's own k-block)
//   K::Consumer<Waits>(P, base, c, t)                a consumer warpgroup's state (its accumulators), with
//       mainloop(ring, state, tile, kblocks, full_wait), epilogue(tile) and finish() (after its last tile);
//       Waits is the WaitClock its walk waits through (full_wait), counting or not as the kernel was built
// A template's kernel entry instantiates pipeline_kernel<K, COUNT_WAITS> twice: the timed kernel without the wait
// counters (false) and the `_counted` one with them (true), launched apart for its counters (docs/architecture.md).
// where `base` is the dynamic shared memory, aligned to 1024 bytes (the ring's slots, then what K adds); the
// problem P has m, n, k (the walk) and K a BK (its k-blocks).

#include "async.cuh"
#include "warpgroup.cuh"

constexpr int SCHEDULE_COOPERATIVE = 0, SCHEDULE_PINGPONG = 1;
constexpr int ORDER_ROW = 0, ORDER_GROUPED = 1, ORDER_HILBERT = 2;
// Named barriers of a pipeline (0 is __syncthreads()'s): the consumers' own (one each), then the ping-pong turns.
constexpr int BARRIER_CONSUMER = 1;    // + c: consumer warpgroup c alone (its epilogue)
constexpr int BARRIER_TURN = 9;        // + c: consumer warpgroup c may start its mainloop (ping-pong)
constexpr int BARRIER_KERNEL = 11;     // the first a kernel may number its own from (up to 15)

// -- the ring ---------------------------------------------------------------------------------------------

// A position in the ring: k-blocks through it so far; the slot is its index modulo STAGES, the phase of the
// slot's barriers flips each time the ring wraps.
template <int STAGES>
struct PipelineState {
  int count = 0;
  __device__ __forceinline__ int index() const { return count % STAGES; }
  __device__ __forceinline__ u32 phase() const { return (count / STAGES) & 1; }
  __device__ __forceinline__ void advance(int n = 1) { count += n; }
};

template <int STAGES, int CLUSTER>
struct Ring {
  u64* full;   // __shared__ u64[STAGES]
  u64* empty;  // __shared__ u64[STAGES]

  // Thread 0, once: `consumers` warpgroups release each slot in each CTA that fills it.
  __device__ __forceinline__ void init(int consumers) const {
    for (int s = 0; s < STAGES; ++s) {
      mbarrier_init(smem_addr(&full[s]), 1);
      mbarrier_init(smem_addr(&empty[s]), consumers * CLUSTER);
    }
  }
  __device__ __forceinline__ u32 full_bar(int s) const { return smem_addr(&full[s]); }
  // The producer: wait until the slot's readers released it (the first pass finds every slot free).
  __device__ __forceinline__ void producer_acquire(const PipelineState<STAGES>& st) const {
    mbarrier_wait_parity(smem_addr(&empty[st.index()]), st.phase() ^ 1);
  }
  // The producer: arrive on the slot's full barrier, expecting `bytes` from its copies.
  __device__ __forceinline__ void producer_expect(const PipelineState<STAGES>& st, u32 bytes) const {
    mbarrier_arrive_expect_tx(full_bar(st.index()), bytes);
  }
  // A consumer: wait until the slot's bytes landed.
  __device__ __forceinline__ void consumer_wait(const PipelineState<STAGES>& st) const {
    mbarrier_wait_parity(full_bar(st.index()), st.phase());
  }
  // A consumer warpgroup gives slot `s` back: thread 0 to its own CTA, or thread r to the CTA of rank r (a
  // multicast fills the slot in every CTA of the cluster, so each must hear from every consumer).
  __device__ __forceinline__ void consumer_release(int s, int t) const {
    const u32 bar = smem_addr(&empty[s]);
    if (CLUSTER > 1) {
      if (t < CLUSTER) mbarrier_arrive_cluster(mapa_shared_cluster(bar, static_cast<u32>(t)));
    } else if (t == 0) {
      mbarrier_arrive(bar);
    }
  }
};

// What a role spent waiting on the ring. A walk calls its `full_wait(wait)` around each wait: WaitClock<true>
// reads the clock before and after it and adds the cycles (the counting build, launched for its counters),
// WaitClock<false> only waits (the build that is timed). The two reads a k-block, each an asm volatile with a memory
// clobber, fix the order of the code around them: they cost fp8's short k-block 3-5 % of cuBLASLt (docs/gemm.md,
// "What the counters cost"), so the timed kernel does not carry them.
template <bool COUNTED>
struct WaitClock {
  static constexpr bool counted = COUNTED;
  long long cycles = 0;
  template <class Wait>
  __device__ __forceinline__ void operator()(Wait wait) {
    if constexpr (COUNTED) {
      const long long w0 = clock_cycles();
      wait();
      cycles += clock_cycles() - w0;
    } else {
      wait();
    }
  }
};

// A consumer's walk over one tile's k-blocks: wait for each slot, `issue` its (asynchronous) work, `retire`
// until at most LAG k-blocks are in flight, and release a slot once nothing in flight reads it; `drain` retires
// the rest. Cycles spent waiting for slots are added to full_wait.
template <int LAG, int STAGES, int CLUSTER, class Issue, class Retire, class Drain, class Waits>
__device__ __forceinline__ void consume_kblocks(const Ring<STAGES, CLUSTER>& ring, PipelineState<STAGES>& st,
                                                int kblocks, int t, Waits& full_wait, Issue issue, Retire retire,
                                                Drain drain) {
  static_assert(LAG == 0 || LAG == 1, "a consumer keeps at most one k-block in flight past its release");
  int released = -1;
#pragma unroll 1
  for (int kb = 0; kb < kblocks; ++kb, st.advance()) {
    const int s = st.index();
    full_wait([&] { ring.consumer_wait(st); });
    issue(s, kb);
    retire(kb);
    if (LAG == 0) released = s;
    if (released >= 0) ring.consumer_release(released, t);
    released = s;
  }
  if (LAG > 0) {
    drain();
    ring.consumer_release(released, t);
  }
}

// The same walk for a consumer that alternates two register sets by k-block (an fp8 promotion that overlaps the
// k-block's wgmma): two k-blocks an iteration, so the consumer's `issue<P>` and `retire<P>` see the set's parity
// P as a compile-time constant. `retire<P>` may read the other set while this k-block's wgmma run, and must wait
// for them before it returns (ptxas serializes wgmma whose accumulators may be read in flight, C7514: each
// k-block is waited for in its own step, so nothing in flight crosses the loop's back edge). Each slot is released
// once its k-block's wgmma are done; `drain(last_parity)` finishes the tile's last k-block's work. (Member
// templates, not generic lambdas: NVRTC 13.0 takes a generic lambda's call operator for a host function.)
template <int P, int STAGES, int CLUSTER, class Consumer, class Waits>
__device__ __forceinline__ void consume_kblock_of_pair(const Ring<STAGES, CLUSTER>& ring, PipelineState<STAGES>& st,
                                                       int kb, int t, Waits& full_wait, Consumer& consumer) {
  const int s = st.index();
  full_wait([&] { ring.consumer_wait(st); });
  consumer.template issue<P>(s, kb);
  consumer.template retire<P>(kb);
  ring.consumer_release(s, t);
  st.advance();
}
template <int STAGES, int CLUSTER, class Consumer, class Waits>
__device__ __forceinline__ void consume_kblock_pairs(const Ring<STAGES, CLUSTER>& ring, PipelineState<STAGES>& st,
                                                     int kblocks, int t, Waits& full_wait, Consumer& consumer) {
  int kb = 0;
#pragma unroll 1
  for (; kb + 1 < kblocks; kb += 2) {
    consume_kblock_of_pair<0>(ring, st, kb, t, full_wait, consumer);
    consume_kblock_of_pair<1>(ring, st, kb + 1, t, full_wait, consumer);
  }
  if (kb < kblocks) consume_kblock_of_pair<0>(ring, st, kb, t, full_wait, consumer);
  consumer.drain((kblocks - 1) & 1);
}

// A consumer with two register sets that keeps a k-block in flight while it waits for the next slot and adds the
// k-block before it (an fp8 promotion pipelined): G k-blocks a group, in straight-line code. Step 0 issues into
// set 0 with nothing in flight; step i issues into set i % 2, waits for k-block i - 1 (wait_group 1: the group
// before, in the same block of code) and adds it (`promote_after<P>`, P = i % 2), then releases its slot; the group
// ends by waiting for its last k-block and adding it (`finish<P>`). Nothing is in flight across the loop's back
// edge: with a k-block in flight on the way back and none on the way in, ptxas cannot tell which group a
// wait_group 1 leaves and serializes every wgmma (C7514). The tensor cores drain once a group, not once a
// k-block. The k-blocks left over (kblocks % G) are walked one at a time, each finished before the next.
// LEAD > 0 and `lead`: a first group of LEAD k-blocks, so that this consumer's groups end LEAD k-blocks after those of
// a consumer without one (two warpgroups' drains apart).
template <int I, int G, int STAGES, int CLUSTER, class Consumer, class Waits>
__device__ __forceinline__ void consume_group_step(const Ring<STAGES, CLUSTER>& ring, PipelineState<STAGES>& st,
                                                   int kb, int t, Waits& full_wait, Consumer& consumer,
                                                   int previous) {
  if constexpr (I < G) {
    const int s = st.index();
    full_wait([&] { ring.consumer_wait(st); });
    consumer.template issue<I % 2>(s, kb + I);
    consumer.template promote_after<I % 2>();
    ring.consumer_release(previous, t);
    st.advance();
    consume_group_step<I + 1, G>(ring, st, kb, t, full_wait, consumer, s);
  } else {
    consumer.template finish<(G - 1) % 2>();
    ring.consumer_release(previous, t);
  }
}
template <int G, int LEAD = 0, int STAGES, int CLUSTER, class Consumer, class Waits>
__device__ __forceinline__ void consume_kblock_groups(const Ring<STAGES, CLUSTER>& ring, PipelineState<STAGES>& st,
                                                      int kblocks, int t, Waits& full_wait, Consumer& consumer,
                                                      bool lead = false) {
  static_assert(G >= 2 && (LEAD == 0 || (LEAD >= 2 && LEAD < G)), "a group overlaps at least two k-blocks");
  int kb = 0;
  if constexpr (LEAD > 0) {
    if (lead && kblocks >= LEAD) {
      const int s = st.index();
      full_wait([&] { ring.consumer_wait(st); });
      consumer.template issue<0>(s, 0);
      st.advance();
      consume_group_step<1, LEAD>(ring, st, 0, t, full_wait, consumer, s);
      kb = LEAD;
    }
  }
#pragma unroll 1
  for (; kb + G <= kblocks; kb += G) {
    const int s = st.index();
    full_wait([&] { ring.consumer_wait(st); });
    consumer.template issue<0>(s, kb);
    st.advance();
    consume_group_step<1, G>(ring, st, kb, t, full_wait, consumer, s);
  }
#pragma unroll 1
  for (; kb < kblocks; ++kb) {
    const int s = st.index();
    full_wait([&] { ring.consumer_wait(st); });
    consumer.template issue<0>(s, kb);
    consumer.template finish<0>();
    ring.consumer_release(s, t);
    st.advance();
  }
}

// The pipelined walk without its drains (a promotion carried): the tile's first k-block goes into set 1 alone, then
// the k-blocks go two a step of the loop, set 0 then set 1, each issued before the one before it is waited for
// (wait_group 1) and added, so that set 1's k-block is in flight across the loop's back edge as it is on the way in
// (ptxas sees one state at the loop's head, and does not serialize: the drained walk above had none in flight on the
// way in). The tensor cores drain once a tile, after its last k-block. An even count's last k-block goes alone, into
// set 0, after the loop. `under_first_kblock()` runs once the tile's first k-block is issued, before anything waits
// for it.
template <int STAGES, int CLUSTER, class Consumer, class Waits>
__device__ __forceinline__ void consume_kblocks_carried(const Ring<STAGES, CLUSTER>& ring, PipelineState<STAGES>& st,
                                                        int kblocks, int t, Waits& full_wait, Consumer& consumer) {
  int s = st.index();
  full_wait([&] { ring.consumer_wait(st); });
  consumer.template issue<1>(s, 0);
  consumer.under_first_kblock();  // what the consumer does while the tile's first k-block runs (gemm: a tile's store)
  int previous = s;
  st.advance();
  int kb = 1;
#pragma unroll 1
  for (; kb + 1 < kblocks; kb += 2) {
    s = st.index();
    full_wait([&] { ring.consumer_wait(st); });
    consumer.template issue<0>(s, kb);
    consumer.template promote_after<0>();
    ring.consumer_release(previous, t);
    previous = s;
    st.advance();
    s = st.index();
    full_wait([&] { ring.consumer_wait(st); });
    consumer.template issue<1>(s, kb + 1);
    consumer.template promote_after<1>();
    ring.consumer_release(previous, t);
    previous = s;
    st.advance();
  }
  if (kb < kblocks) {
    s = st.index();
    full_wait([&] { ring.consumer_wait(st); });
    consumer.template issue<0>(s, kb);
    consumer.template promote_after<0>();
    ring.consumer_release(previous, t);
    previous = s;
    st.advance();
    consumer.template finish<0>();
  } else {
    consumer.template finish<1>();
  }
  ring.consumer_release(previous, t);
}

// A consumer whose k-block is two wgmma groups, the second run under the next k-block's work (attention: S = Q K^T,
// then P V under the next block's softmax). The order is held by registers and group counts, not by where a
// wait_group stands: ptxas 13.0 schedules a wgmma.wait_group as early as the registers allow, above independent
// work (a wait for the second group written after the work runs before it). So the work of k-block i (in `follow`,
// after k-block i - 1's second group is issued and k-block i's first retired) is followed by k-block i + 1's first
// group (`lead`), which overwrites the registers that work read and so cannot be issued above it; only then does
// wait_group 1 retire k-block i - 1's second group (it cannot rise above the group just issued): `retired(state)`
// frees what it read, and `between()` touches what it wrote (attention: O rescaled). P, the parity of k-block i,
// names the register set its work fills (k-block i - 1's second group reads the other); `open(state)` is k-block 0's
// first group and its work (set 0), `close<P>(state)` the last k-block's second group. The ring guards what the first
// groups read, each slot released once its k-block's work is done; what a second group reads the consumer guards
// itself (a slot's two halves freed apart: attention's K early, its V a block later). k-block i + 1's first group is
// the one in flight at the loop's head, on the way in and on the way back (ptxas sees one state there; a second
// group carried across the back edge instead serializes every wgmma, C7514), and the loop takes two k-blocks a
// step (P a compile-time constant). A tile walks two k-blocks at least (the kernel walks a shorter one otherwise).
template <int P, int STAGES, int CLUSTER, class Consumer, class Waits>
__device__ __forceinline__ void consume_lookahead_step(const Ring<STAGES, CLUSTER>& ring, PipelineState<STAGES>& st,
                                                       int kb, int t, Waits& full_wait, Consumer& consumer,
                                                       PipelineState<STAGES>& previous,
                                                       PipelineState<STAGES>& current) {
  consumer.template follow<P>(previous, kb);  // k-block kb - 1's second group, k-block kb's work
  ring.consumer_release(current.index(), t);
  full_wait([&] { ring.consumer_wait(st); });
  consumer.lead(st);  // k-block kb + 1's first group
  wgmma_wait_group<1>();
  consumer.retired(previous);
  consumer.between();
  previous = current;
  current = st;
  st.advance();
}
// The last k-block (parity P), its first group in flight: its work, then its second group alone.
template <int P, int STAGES, int CLUSTER, class Consumer>
__device__ __forceinline__ void consume_lookahead_last(const Ring<STAGES, CLUSTER>& ring, int kb, int t,
                                                       Consumer& consumer, const PipelineState<STAGES>& previous,
                                                       const PipelineState<STAGES>& current) {
  consumer.template follow<P>(previous, kb);
  ring.consumer_release(current.index(), t);
  wgmma_wait_group<0>();
  consumer.retired(previous);
  consumer.template close<P>(current);
}
template <int STAGES, int CLUSTER, class Consumer, class Waits>
__device__ __forceinline__ void consume_kblocks_lookahead(const Ring<STAGES, CLUSTER>& ring, PipelineState<STAGES>& st,
                                                          int kblocks, int t, Waits& full_wait, Consumer& consumer) {
  PipelineState<STAGES> previous = st;
  full_wait([&] { ring.consumer_wait(st); });
  consumer.open(previous);
  ring.consumer_release(previous.index(), t);  // k-block 0's work is done
  st.advance();
  PipelineState<STAGES> current = st;
  full_wait([&] { ring.consumer_wait(st); });
  consumer.lead(current);
  consumer.between();
  st.advance();
  int kb = 1;
#pragma unroll 1
  for (; kb + 2 < kblocks; kb += 2) {
    consume_lookahead_step<1>(ring, st, kb, t, full_wait, consumer, previous, current);
    consume_lookahead_step<0>(ring, st, kb + 1, t, full_wait, consumer, previous, current);
  }
  if (kb + 1 < kblocks) consume_lookahead_step<1>(ring, st, kb++, t, full_wait, consumer, previous, current);
  // k-block kb = kblocks - 1, its first group in flight: its work, then its second group alone
  if (kb & 1) consume_lookahead_last<1>(ring, kb, t, consumer, previous, current);
  else consume_lookahead_last<0>(ring, kb, t, consumer, previous, current);
}

// -- the tile walk ----------------------------------------------------------------------------------------

struct Tile {
  int row, col;       // first row and column of C
  int split = 0;      // split-K: which run of the tile's k-blocks (0 without)
  int kb0 = 0;        // ... and its first k-block
  int kblocks = 0;    // stream-K: the run's k-blocks (0: the kernel's kblocks)
  int runs = 1;       // ... the tile's runs (1: the tile whole, no fix-up)
  int unit = 0;       // ... the workspace slot of the tile's first run (its runs' slots follow it)
};

struct GridCell {
  int row, col;
};

// Cell q of a generalized Hilbert curve over a rows x cols grid of any sizes (ORDER_HILBERT; the host's
// harness/families/pipeline.py hilbert_cell is the same arithmetic, and says how the grid is cut). From (0, 0)
// along the longer side (columns on a tie) to its far corner; a rectangle is a line (a side of 1), two halves along
// a long major side (longer than 1.5 x the minor), or a U of three parts; the index goes down the parts to its cell
// in a loop (about 2 log2(side) levels). Unit steps between grid neighbours, but one diagonal where the shorter side
// is even (above 2) and the longer odd.
__host__ __device__ constexpr GridCell hilbert_cell(int rows, int cols, int q) {
  int x = 0, y = 0;  // the part's corner (row, col)
  const bool wide = cols >= rows;
  int ax = wide ? 0 : 1, ay = wide ? 1 : 0, bx = ay, by = ax;  // unit vectors of its major and minor sides
  int w = wide ? cols : rows, h = wide ? rows : cols;           // ... and their lengths
  while (h > 1 && w > 1) {
    if (2 * w > 3 * h) {  // two halves along the major side
      const int w2 = w / 2 + ((w / 2) % 2 && w > 2 ? 1 : 0);
      if (q < w2 * h) {
        w = w2;
      } else {
        q -= w2 * h;
        x += ax * w2, y += ay * w2, w -= w2;
      }
    } else {  // out along the minor side, across, and back
      const int h2 = h / 2 + ((h / 2) % 2 && h > 2 ? 1 : 0), w2 = w / 2;
      if (q < h2 * w2) {
        const int tx = ax, ty = ay;
        ax = bx, ay = by, bx = tx, by = ty, w = h2, h = w2;
      } else if (q < h2 * w2 + w * (h - h2)) {
        q -= h2 * w2;
        x += bx * h2, y += by * h2, h -= h2;
      } else {
        q -= h2 * w2 + w * (h - h2);
        x += ax * (w - 1) + bx * (h2 - 1), y += ay * (w - 1) + by * (h2 - 1);
        const int tx = ax, ty = ay;
        ax = -bx, ay = -by, bx = -tx, by = -ty;
        const int nw = h2, nh = w - w2;
        w = nw, h = nh;
      }
    }
  }
  return h == 1 ? GridCell{x + ax * q, y + ay * q} : GridCell{x + bx * q, y + by * q};
}

// Work items are a cluster's tiles (CLUSTER vertically adjacent tiles, one per CTA); a persistent grid's cluster
// takes every (clusters)-th item from its own, else each cluster has one. Split-K (SPLITS > 1, no cluster): a tile's
// k-blocks are SPLITS runs of `run` k-blocks, each run a work item; a tile's runs are consecutive items, so that
// they run at once and its last run to finish (the kernel's epilogue adds them) waits on none.
// Stream-K (STREAMK > 0, persistent, no cluster): the tiles fill whole waves of the grid's CTAs, each CTA taking
// every (grid)-th tile, and the `tail` tiles past the last whole wave are split along K: their T = tail x kblocks
// k-blocks, in tile order, are cut into `parts` ranges, CTA i walking [i T / parts, (i + 1) T / parts), a work item
// for each tile its range touches (at most two: a range is at most a tile long). parts is the grid, or fewer where
// a tile would be cut in more than STREAMK runs or a range would be empty. Each run writes its f32 sums to the
// workspace and the tile's last run to finish adds them (the kernel's epilogue, as split-K's): no CTA waits for one.
// Items: the whole tiles 0 .. whole - 1, then 2 per range (its first and second tile).
template <int BM, int BN, int CLUSTER, bool PERSISTENT, int ORDER, int GROUP, int SPLITS = 1, int STREAMK = 0>
struct TileScheduler {
  int tiles_n, pairs_m, items, first, step;
  int whole = 0, parts = 0;  // stream-K: the tiles walked whole, the ranges of the others' k-blocks
  static_assert(SPLITS == 1 || CLUSTER == 1, "split-K runs with no cluster");
  static_assert(STREAMK == 0 || (PERSISTENT && CLUSTER == 1 && SPLITS == 1), "stream-K: persistent, no cluster");

  // kblocks: a tile's (stream-K's arguments below take it too: a scheduler keeps no more registers than it needs)
  __device__ __forceinline__ TileScheduler(int m, int n, int kblocks = 0)
      : tiles_n(n / BN), pairs_m(m / BM / CLUSTER), items(pairs_m * tiles_n * SPLITS), first(blockIdx.x / CLUSTER),
        step(PERSISTENT ? gridDim.x / CLUSTER : items) {
    if constexpr (STREAMK > 0) {
      const int tail = items % step;
      whole = items - tail;
      parts = min(step, min(tail * kblocks, tail * STREAMK));
      items = whole + 2 * parts;
    }
  }

  // The CTA's first work item, and the one after q (items: none left).
  __device__ __forceinline__ int begin() const {
    if constexpr (STREAMK > 0) return first < whole ? first : (first < parts ? whole + 2 * first : items);
    else return first;
  }
  __device__ __forceinline__ int next(int q, int kblocks) const {
    if constexpr (STREAMK > 0) {
      if (q < whole) return q + step < whole ? q + step : (first < parts ? whole + 2 * first : items);
      const bool second = range_start(first, kblocks) / kblocks != (range_start(first + 1, kblocks) - 1) / kblocks;
      return (q - whole) % 2 == 0 && second ? q + 1 : items;  // the range's second tile, if it has one
    } else {
      return q + step;
    }
  }
  // k-blocks of the split tiles, the first of range i, and the range holding split k-block g (the last i whose
  // range starts at or before it)
  __device__ __forceinline__ int total(int kblocks) const { return (pairs_m * tiles_n - whole) * kblocks; }
  // (32-bit: grid x total < 2^31, harness/families/gemm/refusals.py refuses beyond. A 64-bit division is a call,
  // whose result ptxas no longer knows to be warp-uniform: the walk's descriptors then go through vector registers)
  __device__ __forceinline__ int range_start(int i, int kblocks) const { return i * total(kblocks) / parts; }
  __device__ __forceinline__ int range_of(int g, int kblocks) const { return ((g + 1) * parts - 1) / total(kblocks); }
  // Runs a split tile may have (its workspace slots): ranges are at least total / parts long.
  __device__ __forceinline__ int streamk_stride(int kblocks) const {
    return (kblocks - 1) / (total(kblocks) / parts) + 2;
  }

  // Work item q -> this CTA's tile (and its run of k-blocks: split-K's of `run`; stream-K's, of a tile's `run`).
  __device__ __forceinline__ Tile tile(int q, u32 rank, int run = 0) const {
    if constexpr (STREAMK > 0) {
      if (q < whole) return place(q, rank);
      const int kblocks = run, i = (q - whole) / 2;
      int b = range_start(i, kblocks);
      const int e = range_start(i + 1, kblocks);
      if ((q - whole) % 2) b = (b / kblocks + 1) * kblocks;  // the range's second tile
      const int split = b / kblocks;                          // of the split tiles
      const int opener = range_of(split * kblocks, kblocks);
      Tile t = place(whole + split, rank);
      t.kb0 = b - split * kblocks;
      t.kblocks = min(e, (split + 1) * kblocks) - b;
      t.runs = range_of((split + 1) * kblocks - 1, kblocks) - opener + 1;
      t.split = i - opener;
      t.unit = split * streamk_stride(kblocks);
      return t;
    } else {
      const int split = q % SPLITS;
      Tile t = place(q / SPLITS, rank);
      t.split = split;
      t.kb0 = split * run;
      return t;
    }
  }

  // The q-th tile (cluster of tiles) in ORDER -> this CTA's.
  __device__ __forceinline__ Tile place(int q, u32 rank) const {
    int pm, tn;
    if (ORDER == ORDER_ROW) {
      pm = q / tiles_n;
      tn = q % tiles_n;
    } else if (ORDER == ORDER_HILBERT) {  // along a Hilbert curve over the pairs_m x tiles_n grid
      const GridCell cell = hilbert_cell(pairs_m, tiles_n, q);
      pm = cell.row;
      tn = cell.col;
    } else {  // GROUP rows of pairs at a time, column by column within the group
      const int per_group = GROUP * tiles_n;
      const int first_row = (q / per_group) * GROUP;
      const int rows = min(pairs_m - first_row, GROUP);
      const int r = q % per_group;
      pm = first_row + r % rows;
      tn = r / rows;
    }
    return Tile{(pm * CLUSTER + static_cast<int>(rank)) * BM, tn * BN};
  }
};

// -- the skeleton -----------------------------------------------------------------------------------------

// The counters every pipeline keeps, per CTA after its timing record, are the enum PipelineCounter (FULL_WAIT,
// EMPTY_WAIT, EPILOGUE, MAINLOOP, TILES, KBLOCKS, PIPELINE_COUNTERS): harness/families/pipeline.py declares them
// once and the template renders them (its counters parameter) before it includes this header.

// The k-blocks work item `tile` walks: a stream-K run's, the kernel's own choice (VARIABLE_KBLOCKS), or kblocks.
template <class K>
__device__ __forceinline__ int item_kblocks(const typename K::Problem& P, Tile tile, int kblocks) {
  if constexpr (K::STREAMK > 0) return tile.kblocks ? tile.kblocks : kblocks;
  else if constexpr (K::VARIABLE_KBLOCKS) return K::tile_kblocks(P, tile, kblocks);
  else return kblocks;
}

template <class K, bool COUNT_WAITS>
__device__ __forceinline__ void pipeline_kernel(const typename K::Problem& P, long long* timing) {
  extern __shared__ unsigned char dynamic_smem[];
  const u32 base = (smem_addr(dynamic_smem) + 1023u) & ~1023u;  // the 128-byte swizzle repeats every 1024 bytes
  static_assert(K::SCHEDULE == SCHEDULE_COOPERATIVE || (K::SCHEDULE == SCHEDULE_PINGPONG && K::CONSUMERS == 2),
                "ping-pong alternates two consumer warpgroups");
  static_assert(!(K::SCHEDULE == SCHEDULE_PINGPONG && K::VARIABLE_KBLOCKS), "ping-pong walks kblocks for every tile");
  __shared__ __align__(8) u64 full[K::STAGES], empty[K::STAGES];
  const Ring<K::STAGES, K::CLUSTER> ring{full, empty};
  const int wg = threadIdx.x / WARPGROUP_THREADS;
  const int t = threadIdx.x % WARPGROUP_THREADS;
  const u32 rank = K::CLUSTER > 1 ? cluster_ctarank() : 0u;
  const TileScheduler<K::BM, K::BN, K::CLUSTER, K::PERSISTENT, K::ORDER, K::GROUP, K::SPLITS, K::STREAMK> sched(
      P.m, P.n, P.k / K::BK);
  const int kblocks = P.k / K::BK / K::SPLITS;  // a tile's (split-K: a run's)
  constexpr bool WALKS_VARY = K::VARIABLE_KBLOCKS || K::STREAMK > 0;  // work items of other k-blocks than kblocks
  // The tiles' mainloop and epilogue clocked: by the timed build, and by the counting one unless K reads them from the
  // timed one (WAITS_APART: its counting build is launched for the wait counters alone)
  constexpr bool CLOCK_TILES = !COUNT_WAITS || !K::WAITS_APART;

  if (threadIdx.x == 0) {
    // Cooperative: every consumer warpgroup reads every slot; ping-pong: only the one whose tile it holds.
    ring.init(K::SCHEDULE == SCHEDULE_PINGPONG ? 1 : K::CONSUMERS);
    fence_mbarrier_init_cluster();
    K::prologue(P);
  }
  if (K::CLUSTER > 1) cluster_sync(); else __syncthreads();
  const long long clk0 = clock_cycles();
  const u64 ns0 = globaltimer_ns();
  // Stream-K: the record's start stored now by the thread that stores the rest, and read back at the end (kept in
  // registers through the walk, these two spill: 8 bytes)
  if (K::STREAMK > 0 && threadIdx.x == WARPGROUP_THREADS) {
    volatile long long* record = timing + blockIdx.x * TIMING_RECORD_WORDS;
    record[0] = clk0;
    record[2] = static_cast<long long>(ns0);
  }

  if (wg == 0) {  // ---- the producer ----
    if (K::REBALANCE) setmaxnreg_dec<K::PRODUCER_REGS>();
    if (t == 0) {
      WaitClock<COUNT_WAITS> empty_wait;
      PipelineState<K::STAGES> st;
      // Ping-pong: the wait counted over the first consumer warpgroup's tiles only (every other one), as the
      // consumer's counters are, so that a counter per tile divides like by like
      int j = 0;
      for (int q = sched.begin(); q < sched.items; q = sched.next(q, kblocks), ++j) {
        const Tile tile = sched.tile(q, rank, kblocks);
        const bool counted = K::SCHEDULE != SCHEDULE_PINGPONG || (j & 1) == 0;
        const int tile_kblocks = item_kblocks<K>(P, tile, kblocks);
#pragma unroll 1
        for (int kb = 0; kb < tile_kblocks; ++kb, st.advance()) {
          if (COUNT_WAITS && counted) empty_wait([&] { ring.producer_acquire(st); });
          else ring.producer_acquire(st);
          K::load(P, ring, st, base, tile, tile.kb0 + kb, rank);
        }
      }
      timing[gridDim.x * TIMING_RECORD_WORDS + blockIdx.x * K::COUNTERS + EMPTY_WAIT] = empty_wait.cycles;
    }
    __syncwarp();
  } else {  // ---- a consumer ----
    if (K::REBALANCE) setmaxnreg_inc<K::CONSUMER_REGS>();
    const int c = wg - 1;
    typename K::template Consumer<WaitClock<COUNT_WAITS>> consumer(P, base, c, t);
    WaitClock<COUNT_WAITS> full_wait;
    long long epilogue = 0, mainloop = 0, walked = 0;
    int tiles = 0;
    PipelineState<K::STAGES> st;
    constexpr bool PINGPONG = K::SCHEDULE == SCHEDULE_PINGPONG;
    // Ping-pong: this warpgroup's tiles are every other one of the CTA's, and their k-blocks every other run of
    // kblocks slots: it starts past the first tile's if it is the second, and skips the other's after each.
    if (PINGPONG) st.advance(c * kblocks);
    static_assert(!PINGPONG || K::STREAMK == 0, "ping-pong walks whole tiles");
    const int first = PINGPONG ? sched.first + c * sched.step : sched.begin();
    for (int q = first; q < sched.items; q = PINGPONG ? q + 2 * sched.step : sched.next(q, kblocks), ++tiles) {
      const Tile tile = sched.tile(q, rank, kblocks);
      // Ping-pong: wait for this warpgroup's turn (the other's mainloop issued), except on the first tile of all.
      if (PINGPONG && q != sched.first) named_barrier_sync(BARRIER_TURN + c, 2 * WARPGROUP_THREADS);
      // (stream-K: through a shuffle from lane 0, which ptxas knows to be the same in every lane, as the trip count of
      // a walk of wgmma must be; computed with divisions it would not know it, and guards the walk for divergence)
      const int tile_kblocks = K::STREAMK > 0 ? __shfl_sync(0xffffffffu, item_kblocks<K>(P, tile, kblocks), 0)
                                              : item_kblocks<K>(P, tile, kblocks);
      if (WALKS_VARY) walked += tile_kblocks;
      const long long m0 = CLOCK_TILES ? clock_cycles() : 0;
      consumer.mainloop(ring, st, tile, tile_kblocks, full_wait);
      const long long e0 = CLOCK_TILES ? clock_cycles() : 0;
      mainloop += e0 - m0;
      // ... and hand the turn to the other, if it has a tile after this one.
      if (PINGPONG && q + sched.step < sched.items) named_barrier_arrive(BARRIER_TURN + (c ^ 1), 2 * WARPGROUP_THREADS);
      if (PINGPONG) st.advance(kblocks);
      // (stream-K: the tile again, rather than its fields kept in registers through the mainloop)
      consumer.epilogue(K::STREAMK > 0 ? sched.tile(q, rank, kblocks) : tile);
      if (CLOCK_TILES) epilogue += clock_cycles() - e0;
    }
    consumer.finish();
    if (c == 0 && t == 0) {
      long long* out = timing + gridDim.x * TIMING_RECORD_WORDS + blockIdx.x * K::COUNTERS;
      out[FULL_WAIT] = full_wait.cycles;
      out[EPILOGUE] = epilogue;
      out[MAINLOOP] = mainloop;
      out[TILES] = tiles;
      out[KBLOCKS] = WALKS_VARY ? walked : static_cast<long long>(tiles) * kblocks;
      if constexpr (K::STREAMK > 0) {
        volatile long long* record = timing + blockIdx.x * TIMING_RECORD_WORDS;
        const long long clk1 = clock_cycles();
        const u64 ns1 = globaltimer_ns();
        write_timing_record(timing, blockIdx.x, record[0], clk1, static_cast<u64>(record[2]), ns1);
      } else {
        write_timing_record(timing, blockIdx.x, clk0, clock_cycles(), ns0, globaltimer_ns());
      }
    }
  }
  if (K::CLUSTER > 1) cluster_sync();  // no CTA leaves while a peer may still arrive on its barriers
}
