// Deterministic reductions shared by the CUDA implementations: a block-wide sum of a few
// doubles (warp shuffles, then one warp over the warps' partials: a fixed order for a fixed
// block size, so results repeat bit for bit), and two-stage per-channel and global sums built on
// it. No float atomics anywhere: partial sums go to scratch memory and are added in index order.
#pragma once

#include <cstdint>

#include "primitives/common/fast_div.h"
#include "primitives/cuda/cuda_pack.cuh"
#include "primitives/cuda/cuda_util.cuh"

namespace crema::prim::cuda {

// Sums v[0..N) over the block (blockDim.x a multiple of 32, at most 1024); every thread gets the
// totals. Every thread of the block must call it.
template <int N>
__device__ __forceinline__ void block_sum(double (&v)[N]) {
  __shared__ double part[N][32];
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  for (int k = 0; k < N; ++k)
    for (int off = 16; off > 0; off >>= 1) v[k] += __shfl_down_sync(0xffffffffu, v[k], off);
  __syncthreads();  // an earlier call's readers are done with part
  if (lane == 0)
    for (int k = 0; k < N; ++k) part[k][warp] = v[k];
  __syncthreads();
  if (warp == 0) {
    const unsigned warps = (blockDim.x + 31) / 32;
    for (int k = 0; k < N; ++k) {
      double t = lane < warps ? part[k][lane] : 0.0;
      for (int off = 16; off > 0; off >>= 1) t += __shfl_down_sync(0xffffffffu, t, off);
      if (lane == 0) part[k][0] = t;
    }
  }
  __syncthreads();
  for (int k = 0; k < N; ++k) v[k] = part[k][0];
}

// ---- per-channel sums over a packed (outer, C, inner) layout ---------------------------------
// term(offset, c, v) adds channel c's terms of the element at offset into v[0..N); fin(c, v)
// receives the channel's totals. A term may offer packs instead (cuda_pack.cuh's OffersPacks:
// kPacks, the widest pack it takes, a host pack_width() that its pointers' alignment allows, and
// pack<W>(offset, c, v) over W elements of one channel, and row<P>(offset, c0, v) over channels
// c0 .. c0 + P - 1 of one row where inner is 1); the block path then reads packs as wide as inner
// allows, the column path packs of adjacent channels. Stage 1 splits each channel's outer * inner
// elements into `parts` contiguous pieces, one block each (grid C x parts), and writes one partial
// per piece; stage 2 adds a channel's partials in order. Where inner is short and there are many
// channels, threads take channels instead (adjacent threads read adjacent channels), each walking a
// slice of `parts` slices of the outer index: one slice when C alone fills the GPU, else enough
// slices that a slice's chain of dependent adds stays short (an inner-product bias gradient, 256 x
// 4096 with inner 1, took 125 us as one thread per channel, 16 blocks in all). With inner 1 (a
// matrix of outer rows by C channels) a block takes 32 adjacent channels (or packs) and its warps
// take rows, so that every load is a 128-byte row segment and the warps' sums meet in shared
// memory: one launch, no partials, where the thread path's 32 slices of caffenet:fc6's bias
// gradient wrote and re-read 1 MB of partials in a second launch (15.5 us for a 4 MB sum). A tall
// matrix of fewer channels (a channels-last activation: N*H*W rows) takes that path too, where the
// block path's threads would each read one value of every row, C values apart.

struct ChanPlan {
  int64_t outer, C, inner;
  int parts;        // pieces per channel: blocks (block path) or outer slices (the others)
  bool per_thread;  // thread-per-channel path
  bool columns;     // inner 1: blocks of 32 channels or packs, warps over rows
  // With one piece per channel every path hands the totals to fin directly; an empty
  // reduction (outer * inner == 0) still zeroes scratch for the block path's finish.
  size_t scratch_doubles(int n) const {
    return parts == 1 && (per_thread || columns || outer * inner > 0)
               ? 0
               : size_t(n) * size_t(C) * parts;
  }
};

// Warps of a column block; the rows one part of a column block takes where the grid is full (64
// per warp); the most channels a lane of a column block takes.
constexpr int kColumnWarps = 16;
constexpr int64_t kColumnRows = 64 * kColumnWarps;
constexpr int kColumnPack = 8;

inline ChanPlan plan_channels(int64_t outer, int64_t C, int64_t inner) {
  ChanPlan p{outer, C, inner, 1, false, false};
  const int64_t m = outer * inner;
  if (inner == 1 && (C >= 2048 || outer >= kColumnRows)) {
    // Parts of kColumnRows rows, or more where that leaves fewer than about 1024 blocks (a
    // channels-last ResNet-50 res5 tensor: 6272 rows of 2048 channels), down to 64 rows a part.
    int64_t parts = (outer + kColumnRows - 1) / kColumnRows;
    if (parts > 1) {
      const int64_t widest = 32 * kColumnPack, blocks = (C + widest - 1) / widest;
      const int64_t want = (1024 + blocks - 1) / blocks, most = (outer + 63) / 64;
      if (parts < want) parts = want < most ? want : most;
    }
    p.columns = true;
    p.parts = int(parts < 1 ? 1 : parts > 65535 ? 65535 : parts);
    return p;
  }
  if (inner < 32 && C >= 2048) {
    // About 2^17 threads in all: a few per resident slot of a large GPU.
    const int64_t want = ((int64_t(1) << 17) + C - 1) / C;
    p.per_thread = true;
    p.parts = int(want < outer ? want : outer > 0 ? outer : 1);
    return p;
  }
  // About 2048 blocks (two waves of eight 256-thread blocks on each of a large GPU's SMs), each
  // with >= 16384 elements: a thread's adds form one dependent chain, so the loads in flight
  // come from resident threads. 512 blocks left the bias gradient of caffenet:conv1 (96
  // channels of 774k elements) at 57% of the copy rate; blocks of 4096 elements made small
  // sums slower (googlenet:inception_3a/1x1's, 6.4M elements: 18 -> 25 us).
  int64_t parts = (m + 16383) / 16384;
  const int64_t want = (2048 + C - 1) / C;
  if (parts > want) parts = want;
  // A sum already in parts over fewer than 264 blocks (two per SM of a large GPU) takes more
  // parts, down to 2048 elements: a thread's 48 dependent loads made LeNet's conv1 bias gradient
  // (20 channels of 36864, 60 blocks) 9.9 us. A single part stays one launch.
  if (parts > 1 && parts * C < 264) {
    const int64_t fill = (264 + C - 1) / C, most = (m + 2047) / 2048;
    parts = fill < most ? fill : most;
  }
  if (parts < 1) parts = 1;
  if (parts > 65535) parts = 65535;
  p.parts = int(parts);
  return p;
}

// Adds the terms of W elements of channel c from offset on (a pack where W > 1) into v.
template <int W, typename Term, int N>
__device__ __forceinline__ void add_terms(const Term& term, int64_t off, int64_t c,
                                          double (&v)[N]) {
  if constexpr (OffersPacks<Term>::value) {
    term.template pack<W>(off, c, v);
  } else {
    static_assert(W == 1, "a term without packs takes one element");
    term(off, c, v);
  }
}

// Adds the terms of P adjacent channels c0 .. c0 + P - 1 of one row at offset off into v[e]
// (a pack where P > 1: a term with packs reads them with row<P>).
template <int P, typename Term, int N>
__device__ __forceinline__ void add_row(const Term& term, int64_t off, int64_t c0,
                                        double (&v)[P][N]) {
  if constexpr (P > 1) {
    term.template row<P>(off, c0, v);
  } else {
    add_terms<1>(term, off, c0, v[0]);
  }
}

// With one part per channel the block hands its channel's totals to fin itself: one launch.
// Packs of W elements (W divides inner, so a pack never leaves its row).
template <int N, int W, typename Term, typename Fin>
__global__ void chan_partial_kernel(Term term, Fin fin, int64_t C, int64_t inner, int64_t m,
                                    int parts, double* partial) {
  const int64_t c = blockIdx.x;
  const int p = blockIdx.y;
  const int64_t per = ((m + parts - 1) / parts + W - 1) / W * W;
  const int64_t begin = p * per, end = begin + per < m ? begin + per : m;
  double v[N];
  for (int k = 0; k < N; ++k) v[k] = 0.0;
  // Walk j = begin + W tid, step W blockDim, keeping (o, i) = divmod(j, inner) incrementally.
  // Unrolled, a thread has four loads in flight before their adds: one at a time left the
  // sums latency-bound (a 411 MB channel sum of ResNet-50's res2 at 2 TB/s on an H200).
  const int64_t step = int64_t(W) * blockDim.x;
  int64_t j = begin + int64_t(W) * threadIdx.x;
  int64_t o = j / inner, i = j - o * inner;
  const int64_t step_o = step / inner, step_i = step - step_o * inner;
#pragma unroll 4
  for (; j < end; j += step) {
    add_terms<W>(term, (o * C + c) * inner + i, c, v);
    o += step_o;
    i += step_i;
    if (i >= inner) {
      i -= inner;
      ++o;
    }
  }
  block_sum<N>(v);
  if (threadIdx.x != 0) return;
  if (parts == 1)
    fin(c, v);
  else
    for (int k = 0; k < N; ++k) partial[(k * C + c) * parts + p] = v[k];
}

// A warp per channel: lane l adds partials l, l + 32, ... in order, then the lanes' sums meet
// in a fixed shuffle tree (one thread walking 392 partials of each of 64 channels, a
// channels-last res2 BatchNorm's, took as long as the sums themselves).
template <int N, typename Fin>
__global__ void chan_finish_kernel(Fin fin, int64_t C, int parts, const double* partial) {
  const int lane = int(threadIdx.x & 31u);
  const int64_t warps = int64_t(gridDim.x) * blockDim.x / 32;
  for (int64_t c = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32; c < C; c += warps) {
    double v[N];
    for (int k = 0; k < N; ++k) {
      double t = 0.0;
      for (int p = lane; p < parts; p += 32) t += partial[(k * C + c) * parts + p];
      for (int off = 16; off > 0; off >>= 1) t += __shfl_down_sync(0xffffffffu, t, off);
      v[k] = t;
    }
    if (lane == 0) fin(c, v);
  }
}

// Blocks for chan_finish_kernel over C channels.
inline unsigned finish_grid(int64_t C) { return grid_for(C * 32); }

template <int N, typename Term, typename Fin>
__global__ void chan_thread_kernel(Term term, Fin fin, int64_t outer, int64_t C, int64_t inner) {
  CREMA_CUDA_LOOP(c, C) {
    double v[N];
    for (int k = 0; k < N; ++k) v[k] = 0.0;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) add_terms<1>(term, (o * C + c) * inner + i, c, v);
    fin(c, v);
  }
}

// Thread c of slice blockIdx.y: channel c's terms over outer indices [o0, o1) of that slice.
template <int N, typename Term>
__global__ void chan_thread_partial_kernel(Term term, int64_t outer, int64_t C, int64_t inner,
                                           int parts, double* partial) {
  const int p = blockIdx.y;
  const int64_t per = (outer + parts - 1) / parts;
  const int64_t o0 = p * per, o1 = o0 + per < outer ? o0 + per : outer;
  for (int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; c < C;
       c += int64_t(blockDim.x) * gridDim.x) {
    double v[N];
    for (int k = 0; k < N; ++k) v[k] = 0.0;
    for (int64_t o = o0; o < o1; ++o)
      for (int64_t i = 0; i < inner; ++i) add_terms<1>(term, (o * C + c) * inner + i, c, v);
    for (int k = 0; k < N; ++k) partial[(k * C + c) * parts + p] = v[k];
  }
}

// Lane l of block (x, p): channels P (32 x + l) .. P (32 x + l) + P - 1 (P dividing C) over
// rows [o0, o1) of part p, warp w taking rows o0 + w, o0 + w + kColumnWarps, ...; the warps' sums
// are added in warp order, then handed to fin (one part) or written as partials. With P > 1 a
// warp reads 32 P adjacent values of a row in one load: with P 1 a bf16 row of 64 channels is
// read 64 bytes a load.
template <int N, int P, typename Term, typename Fin>
__global__ void __launch_bounds__(32 * kColumnWarps)
    chan_column_kernel(Term term, Fin fin, int64_t outer, int64_t C, int parts, double* partial) {
  const int lane = int(threadIdx.x & 31u), warp = int(threadIdx.x >> 5);
  const int64_t c0 = (int64_t(blockIdx.x) * 32 + lane) * P;
  const int p = blockIdx.y;
  const int64_t per = (outer + parts - 1) / parts;
  const int64_t o0 = p * per, o1 = o0 + per < outer ? o0 + per : outer;
  double v[P][N];
  for (int e = 0; e < P; ++e)
    for (int k = 0; k < N; ++k) v[e][k] = 0.0;
  if (c0 < C) {
    // Unrolled, a thread has four row loads in flight before their adds.
#pragma unroll 4
    for (int64_t o = o0 + warp; o < o1; o += kColumnWarps) add_row<P>(term, o * C + c0, c0, v);
  }
  __shared__ double part[N][kColumnWarps][32];
  for (int e = 0; e < P; ++e) {
    for (int k = 0; k < N; ++k) part[k][warp][lane] = v[e][k];
    __syncthreads();
    if (warp == 0 && c0 < C) {
      double t[N];
      for (int k = 0; k < N; ++k) {
        t[k] = 0.0;
        for (int w = 0; w < kColumnWarps; ++w) t[k] += part[k][w][lane];
      }
      if (parts == 1) {
        fin(c0 + e, t);
      } else {
        for (int k = 0; k < N; ++k) partial[(k * C + c0 + e) * parts + p] = t[k];
      }
    }
    __syncthreads();
  }
}

// scratch: plan.scratch_doubles(N) doubles of device memory.
template <int N, typename Term, typename Fin>
void channel_sums(Handle& h, const ChanPlan& plan, double* scratch, Term term, Fin fin,
                  const char* name) {
  if (plan.C == 0) return;
  cudaStream_t s = stream_of(h);
  if (plan.columns) {
    // P: the widest pack the term's pointers allow that divides C and leaves no lane idle.
    int width = 1;
    if constexpr (OffersPacks<Term>::value) width = term.pack_width();
    while (width > 1 && (plan.C % width || 32 * width > plan.C)) width /= 2;
    auto launch = [&](auto w) {
      constexpr int P = decltype(w)::value;
      const dim3 grid(unsigned((plan.C + 32 * P - 1) / (32 * P)), unsigned(plan.parts));
      chan_column_kernel<N, P>
          <<<grid, 32 * kColumnWarps, 0, s>>>(term, fin, plan.outer, plan.C, plan.parts, scratch);
    };
    if constexpr (OffersPacks<Term>::value) {
      with_width<(Term::kPacks < kColumnPack ? Term::kPacks : kColumnPack)>(width, launch);
    } else {
      launch(std::integral_constant<int, 1>{});
    }
    check_launch(name);
    if (plan.parts > 1) {
      chan_finish_kernel<N>
          <<<finish_grid(plan.C), kBlock, 0, s>>>(fin, plan.C, plan.parts, scratch);
      check_launch(name);
    }
    return;
  }
  if (plan.per_thread && plan.parts == 1) {
    chan_thread_kernel<N>
        <<<grid_for(plan.C), kBlock, 0, s>>>(term, fin, plan.outer, plan.C, plan.inner);
    check_launch(name);
    return;
  }
  if (plan.per_thread) {
    const dim3 grid(grid_for(plan.C), unsigned(plan.parts));
    chan_thread_partial_kernel<N>
        <<<grid, kBlock, 0, s>>>(term, plan.outer, plan.C, plan.inner, plan.parts, scratch);
    check_launch(name);
    chan_finish_kernel<N><<<finish_grid(plan.C), kBlock, 0, s>>>(fin, plan.C, plan.parts, scratch);
    check_launch(name);
    return;
  }
  const int64_t m = plan.outer * plan.inner;
  if (m == 0) {  // empty channels: every total is 0
    check_cuda(cudaMemsetAsync(scratch, 0, sizeof(double) * N * plan.C, s), name);
    chan_finish_kernel<N><<<finish_grid(plan.C), kBlock, 0, s>>>(fin, plan.C, 1, scratch);
    check_launch(name);
    return;
  }
  const dim3 grid(unsigned(plan.C), unsigned(plan.parts));
  int width = 1;  // the widest pack the term's pointers allow that divides inner
  if constexpr (OffersPacks<Term>::value) width = term.pack_width();
  while (plan.inner % width) width /= 2;
  auto launch = [&](auto w) {
    constexpr int W = decltype(w)::value;
    chan_partial_kernel<N, W>
        <<<grid, kBlock, 0, s>>>(term, fin, plan.C, plan.inner, m, plan.parts, scratch);
  };
  if constexpr (OffersPacks<Term>::value) {
    constexpr int kMost = Term::kPacks;
    if (width >= kMost)
      launch(std::integral_constant<int, kMost>{});
    else if (kMost >= 4 && width >= kMost / 2)
      launch(std::integral_constant<int, kMost / 2>{});
    else
      launch(std::integral_constant<int, 1>{});
  } else {
    launch(std::integral_constant<int, 1>{});
  }
  check_launch(name);
  if (plan.parts == 1) return;
  chan_finish_kernel<N><<<finish_grid(plan.C), kBlock, 0, s>>>(fin, plan.C, plan.parts, scratch);
  check_launch(name);
}

// ---- global sums over n items ----------------------------------------------------------------
// term(j, v) adds item j's terms into v; fin(v) runs once (one thread) with the totals.

inline int global_parts(int64_t n) {
  const int64_t p = (n + 8191) / 8192;
  return int(p < 1 ? 1 : p > 1024 ? 1024 : p);
}

template <int N, typename Term>
__global__ void global_partial_kernel(Term term, int64_t n, int parts, double* partial) {
  const int64_t per = (n + parts - 1) / parts;
  const int64_t begin = int64_t(blockIdx.x) * per;
  const int64_t end = begin + per < n ? begin + per : n;
  double v[N];
  for (int k = 0; k < N; ++k) v[k] = 0.0;
  for (int64_t j = begin + threadIdx.x; j < end; j += blockDim.x) term(j, v);
  block_sum<N>(v);
  if (threadIdx.x == 0)
    for (int k = 0; k < N; ++k) partial[k * parts + blockIdx.x] = v[k];
}

template <int N, typename Fin>
__global__ void global_finish_kernel(Fin fin, int parts, const double* partial) {
  double v[N];
  for (int k = 0; k < N; ++k) v[k] = 0.0;
  for (int p = threadIdx.x; p < parts; p += blockDim.x)
    for (int k = 0; k < N; ++k) v[k] += partial[k * parts + p];
  block_sum<N>(v);
  if (threadIdx.x == 0) fin(v);
}

// scratch: N * global_parts(n) doubles of device memory.
template <int N, typename Term, typename Fin>
void global_sums(Handle& h, int64_t n, double* scratch, Term term, Fin fin, const char* name) {
  cudaStream_t s = stream_of(h);
  const int parts = global_parts(n);
  global_partial_kernel<N><<<parts, kBlock, 0, s>>>(term, n, parts, scratch);
  check_launch(name);
  global_finish_kernel<N><<<1, kBlock, 0, s>>>(fin, parts, scratch);
  check_launch(name);
}

// ---- per-channel element-wise maps over a packed (outer, C, inner) layout --------------------
// out[i] = alpha * f(i, c) + beta * out[i] with c = (i / inner) % C; 32-bit index math where the
// count allows (i + grid stride stays below 2^32), 64-bit beyond. A functor that offers packs
// (pack<W>(i, c, v): v[e] for element i + e of channel c[e], c a ChanSpread or ChanRun of
// cuda_pack.cuh) is read and written W elements at a time where its pointers, out and the count
// allow; a channels-last tensor (inner 1) whose channel count W divides hands it runs.

template <int W, typename F, typename Ch, typename M>
__device__ __forceinline__ void map_pack(const F& f, int64_t i, const Ch& c, M (&v)[W]) {
  if constexpr (OffersPacks<F>::value) {
    f.template pack<W>(i, c, v);
  } else {
    static_assert(W == 1, "a functor without packs maps one element");
    v[0] = M(f(i, c[0]));
  }
}

template <typename T, typename F, typename M = MathOf<T>>
__global__ void chan_map_kernel(F f, uint64_t n, uint64_t C, uint64_t inner, T* out, M alpha,
                                M beta) {
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += uint64_t(blockDim.x) * gridDim.x) {
    const ChanSpread<1> c{{int64_t((i / inner) % C)}};
    M v[1];
    map_pack<1>(f, int64_t(i), c, v);
    blend_store_pack<1>(out + i, v, alpha, beta);
  }
}

// Below 2^31 elements the channel comes from two multiply-high divisions (fast_div.h): the two
// integer divisions of the general kernel cost about as much as its memory traffic. Pack p holds
// elements W p .. W p + W - 1, whose channels step on at each row end.
template <int W, typename T, typename F, typename M = MathOf<T>>
__global__ void chan_map_kernel32(F f, uint32_t packs, FastDiv C, FastDiv inner, T* out, M alpha,
                                  M beta) {
  for (uint32_t p = blockIdx.x * blockDim.x + threadIdx.x; p < packs; p += blockDim.x * gridDim.x) {
    const uint32_t i = p * W, q = inner.div(i);
    uint32_t r = i - q * inner.d, ch = q - C.div(q) * C.d;
    ChanSpread<W> c;
#pragma unroll
    for (int e = 0; e < W; ++e) {
      c.c[e] = ch;
      if (++r == inner.d) {
        r = 0;
        if (++ch == C.d) ch = 0;
      }
    }
    M v[W];
    map_pack<W>(f, int64_t(i), c, v);
    blend_store_pack<W>(out + i, v, alpha, beta);
  }
}

// Channels last, W dividing C: pack p is the run of channels W (p mod C / W) onward.
template <int W, typename T, typename F, typename M = MathOf<T>>
__global__ void chan_run_kernel(F f, uint32_t packs, FastDiv runs, T* out, M alpha, M beta) {
  for (uint32_t p = blockIdx.x * blockDim.x + threadIdx.x; p < packs; p += blockDim.x * gridDim.x) {
    const ChanRun<W> c{int64_t(p - runs.div(p) * runs.d) * W};
    M v[W];
    map_pack<W>(f, int64_t(p) * W, c, v);
    blend_store_pack<W>(out + int64_t(p) * W, v, alpha, beta);
  }
}

template <typename T, typename F>
void chan_map(Handle& h, int64_t outer, int64_t C, int64_t inner, F f, T* out, Blend b,
              const char* name) {
  using M = MathOf<T>;
  const int64_t n = outer * C * inner;
  if (n == 0) return;
  cudaStream_t s = stream_of(h);
  if (n >= (int64_t(1) << 31)) {
    chan_map_kernel<T><<<grid_for(n), kBlock, 0, s>>>(f, uint64_t(n), uint64_t(C), uint64_t(inner),
                                                      out, M(b.alpha), M(b.beta));
    check_launch(name);
    return;
  }
  auto launch = [&](auto w) {
    constexpr int W = decltype(w)::value;
    const int64_t packs = n / W;
    if constexpr (W > 1) {
      if (inner == 1 && C % W == 0) {
        chan_run_kernel<W, T><<<grid_for(packs), kBlock, 0, s>>>(
            f, uint32_t(packs), FastDiv(uint32_t(C / W)), out, M(b.alpha), M(b.beta));
        return;
      }
    }
    chan_map_kernel32<W, T>
        <<<grid_for(packs), kBlock, 0, s>>>(f, uint32_t(packs), FastDiv(uint32_t(C)),
                                            FastDiv(uint32_t(inner)), out, M(b.alpha), M(b.beta));
  };
  if constexpr (OffersPacks<F>::value) {
    constexpr int kW = F::kPacks;
    if (n % kW == 0 && f.pack_width() >= kW && aligned(out, kW * sizeof(T)))
      launch(std::integral_constant<int, kW>{});
    else
      launch(std::integral_constant<int, 1>{});
  } else {
    launch(std::integral_constant<int, 1>{});
  }
  check_launch(name);
}

// Carves aligned pieces out of one workspace allocation (a primitive asks for its workspace
// once: a second workspace() call may move the first).
class Carver {
 public:
  explicit Carver(void* base) : base_(static_cast<char*>(base)) {}
  template <typename T>
  T* take(size_t count) {
    T* p = reinterpret_cast<T*>(base_ + used_);
    used_ += (count * sizeof(T) + 255) / 256 * 256;
    return p;
  }
  template <typename T>
  static size_t bytes(size_t count) {
    return (count * sizeof(T) + 255) / 256 * 256;
  }

 private:
  char* base_;
  size_t used_ = 0;
};

}  // namespace crema::prim::cuda
