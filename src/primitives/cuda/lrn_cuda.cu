// Local Response Normalization on CUDA, with the s^-beta functors of lrn_ops.h (shared with the
// CPU): three rows of LRN's table (lrn_impl.h), "across_ring", "across" and "within" (images of
// one pixel, as channels-last tensors are walked, take "across_lanes": lrn_lanes_cuda.cu).
//
// Across channels ("across_ring"): a thread owns one (n, h, w) column (coalesced over h * w) and
// slides the channel window down it in the CPU's order (add the channel entering, then subtract the
// one leaving). The window's values live in registers (a ring for local_size up to 7, with loads
// issued a few channels ahead so they overlap), so each element is read from memory once. When
// there are too few columns to fill the GPU, the channels are split into chunks, each thread
// starting its window sum afresh (a different but equally exact rounding of the same sums).
//   Forward bytes: x read, y written: 8 per element (f32). caffenet:norm1 256x96x55x55 moves
//   595 MB = 0.20 ms at 3 TB/s; norm2 256x256x27x27 382 MB = 0.13 ms.
//   Backward is one fused pass: at channel j it finishes scale_j from the x window, computes
//   R_j = dy_j * y_j / scale_j with y_j = x_j * scale_j^-beta recomputed exactly as lrn_fwd does
//   (the contract makes y that value, so y itself need not be read), and R enters a second ring
//   whose sliding sum gives dx for channel j - r. Bytes: x and dy read, dx written: 12 per
//   element. norm1 892 MB = 0.30 ms at 3 TB/s; norm2 573 MB = 0.19 ms.
//   The backward's per-element math is one reciprocal square root pair (lrn_ops.h); with IEEE
//   square roots and divisions it was compute-bound (ncu: SM 79%, DRAM 52%).
//   local_size above 7 takes the "across" row's kernels: forward re-reads the leaving channel
//   (cache), backward stores R in the workspace and slides twice (about 28 bytes per element).
// Within a channel ("within"): one thread per pixel sums its clipped n x n window directly (the
// reads overlap in cache); backward is two kernels, R first, then its window sums.
// Tensors stored in bf16 or f16 are computed in fp32 (their math type), each value widened as it
// is loaded and the result rounded once as it is stored: half the bytes above; R stays fp32.
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "primitives/cuda/lrn_cuda.cuh"

namespace crema::prim::cuda {
namespace {

struct Geo {
  int64_t columns;  // n * h * w
  int64_t hw;
  int C, H, W, r;
};

// Channels loaded ahead of their use by the register kernels, so a column has several loads in
// flight instead of one.
constexpr int kAhead = 4;

// Channel c of a column (stride hw), 0 outside [0, C). The backward passes a 32-bit hw (an
// image spans less than 2^31 elements, the ring kernels' launch condition: one 32-bit product
// per offset). The forward keeps 64-bit offsets: 32-bit ones measured 5% slower on
// caffenet:norm1 (0.2846 against 0.2697 ms) though 4-5% faster on GoogLeNet's two layers.
template <typename T, typename S, typename I>
__device__ __forceinline__ T channel(const S* col, I hw, int C, int c) {
  return unsigned(c) < unsigned(C) ? ld<T>(col + c * hw) : T(0);
}

// Moves every ring value down one slot; the last slot is refilled by the caller.
template <int N, typename T>
__device__ __forceinline__ void shift(T (&ring)[N]) {
#pragma unroll
  for (int t = 0; t + 1 < N; ++t) ring[t] = ring[t + 1];
}

// Work item idx of the across kernels: column (n, pos) and the channel chunk [c0, c1).
struct ColumnChunk {
  int64_t base;  // offset of (n, channel 0, pos)
  int c0, c1;
};

__device__ __forceinline__ ColumnChunk column_chunk(const Geo& g, int chunk, int64_t idx) {
  const int64_t ch = idx / g.columns, col = idx - ch * g.columns;
  const int64_t n = col / g.hw, pos = col - n * g.hw;
  const int c0 = int(ch) * chunk;
  return ColumnChunk{n * g.C * g.hw + pos, c0, min(c0 + chunk, g.C)};
}

// Forward for r = kR. win[t] holds channel c - r + t: the window of c, then kAhead more.
template <int kR, typename S, typename NegPow, typename T = MathOf<S>>
__global__ void across_fwd_ring_kernel(Geo g, int chunk, int64_t work, NegPow neg_pow, T k, T a,
                                       const S* __restrict__ x, S* __restrict__ y, T alpha,
                                       T beta) {
  constexpr int kN = 2 * kR + 2 + kAhead;
  CREMA_CUDA_LOOP(idx, work) {
    const ColumnChunk cc = column_chunk(g, chunk, idx);
    const int64_t hw = g.hw;
    const S* xc = x + cc.base;
    S* yc = y + cc.base;
    T win[kN];
    T acc = T(0);
#pragma unroll
    for (int t = 0; t < kN; ++t) win[t] = channel<T>(xc, hw, g.C, cc.c0 - kR + t);
      // The window sum of c0, in increasing channel order (zeros outside add nothing).
#pragma unroll
    for (int t = 0; t <= 2 * kR; ++t) acc += mul_rn(win[t], win[t]);
    for (int c = cc.c0; c < cc.c1; ++c) {
      blend_store(yc + c * hw, win[kR] * neg_pow(lrn_ops::scale_of(k, a, acc)), alpha, beta);
      acc += mul_rn(win[2 * kR + 1], win[2 * kR + 1]);
      acc -= mul_rn(win[0], win[0]);
      shift(win);
      win[kN - 1] = channel<T>(xc, hw, g.C, c + 1 - kR + kN - 1);
    }
  }
}

// Fused backward for r = kR over channels [c0, c1) of a column. Step j produces channel j
// (scale, P = scale^-beta, R) and then finishes channel c = j - r, whose R window [c - r, c + r]
// is complete. Rings, each indexed from its oldest channel:
//   xw[t] = x(j - r + t)        window of j, x(j + r + 1) entering, then kAhead more
//   dw[t] = dy(j - r + t)       dy of c up to j, then kAhead more
//   pw[t] = P(j - r + t)        P of c up to j
//   rw[t] = R(j - 2r - 1 + t)   the R leaving c's window, then c's window
// Channels outside [0, C) are zeros and produce R = 0, so the sums match the CPU's, which skips
// them.
// The channel loop is unrolled by four, so the rings rotate by renaming registers instead of
// moving every slot each channel (ncu on caffenet:norm1: 263M instructions with no unrolling,
// 176M by four). Against cuDNN on the four reference layers (bench_prim, H100): 1.04-1.07x on
// three of them with the compiler's default unrolling, 0.94-1.03x by four; by three, by six, or
// by eight at three blocks per SM measured no better. f32 with local_size 5 (CaffeNet's and
// GoogLeNet's) is bounded to four blocks per SM (64 registers; no spill, except 8 bytes for the
// exponent 1); f64 and wider windows would spill under that bound.
template <int kR, typename S, typename NegPow, typename T = MathOf<S>>
__global__ void __launch_bounds__(kBlock, sizeof(T) == 4 && kR == 2 ? 4 : 1)
    across_bwd_ring_kernel(Geo g, int chunk, int64_t work, NegPow neg_pow, T k, T a, T cc2,
                           const S* dy, const S* __restrict__ x, S* dx, T alpha, T beta) {
  constexpr int kNX = 2 * kR + 2 + kAhead, kND = kR + 1 + kAhead, kNP = kR + 1, kNR = 2 * kR + 2;
  CREMA_CUDA_LOOP(idx, work) {
    const ColumnChunk cc = column_chunk(g, chunk, idx);
    const int hw = int(g.hw);
    const S* xc = x + cc.base;
    const S* gc = dy + cc.base;  // may be dx itself: every dy is read before its dx is written
    S* oc = dx + cc.base;
    const int j0 = cc.c0 - kR;
    T xw[kNX], dw[kND], pw[kNP], rw[kNR];
#pragma unroll
    for (int t = 0; t < kNX; ++t) xw[t] = channel<T>(xc, hw, g.C, j0 - kR + t);
#pragma unroll
    for (int t = 0; t < kND; ++t) dw[t] = t >= kR ? channel<T>(gc, hw, g.C, j0 - kR + t) : T(0);
#pragma unroll
    for (int t = 0; t < kNP; ++t) pw[t] = T(0);
#pragma unroll
    for (int t = 0; t < kNR; ++t) rw[t] = T(0);
    T acc = T(0), sr = T(0);
#pragma unroll
    for (int t = 0; t <= 2 * kR; ++t) acc += mul_rn(xw[t], xw[t]);
#pragma unroll 4
    for (int j = j0; j < cc.c1 + kR; ++j) {
      const T s = lrn_ops::scale_of(k, a, acc);
      pw[kR] = neg_pow(s);
      rw[2 * kR + 1] =
          unsigned(j) < unsigned(g.C) ? dw[kR] * (xw[kR] * pw[kR]) * neg_pow.inv(s) : T(0);
      sr += rw[2 * kR + 1];
      sr -= rw[0];
      const int c = j - kR;
      if (c >= cc.c0) blend_store(oc + c * hw, dw[0] * pw[0] - cc2 * xw[0] * sr, alpha, beta);
      acc += mul_rn(xw[2 * kR + 1], xw[2 * kR + 1]);
      acc -= mul_rn(xw[0], xw[0]);
      shift(xw);
      shift(dw);
      shift(pw);
      shift(rw);
      xw[kNX - 1] = channel<T>(xc, hw, g.C, j + 1 - kR + kNX - 1);
      dw[kND - 1] = channel<T>(gc, hw, g.C, j + 1 - kR + kND - 1);
    }
  }
}

// Generic forward (any local_size): the leaving channel is re-read (from cache).
template <typename S, typename NegPow, typename T = MathOf<S>>
__global__ void across_fwd_kernel(Geo g, NegPow neg_pow, T k, T a, const S* __restrict__ x, S* y,
                                  T alpha, T beta) {
  CREMA_CUDA_LOOP(col, g.columns) {
    const int64_t n = col / g.hw, pos = col - n * g.hw;
    const S* xc = x + n * g.C * g.hw + pos;
    S* yc = y + n * g.C * g.hw + pos;
    T acc = T(0);
    for (int c = 0; c <= min(g.r, g.C - 1); ++c) {
      const T v = ld<T>(xc + c * g.hw);
      acc += v * v;
    }
    for (int c = 0; c < g.C; ++c) {
      const T v = ld<T>(xc + c * g.hw);
      blend_store(yc + c * g.hw, v * neg_pow(lrn_ops::scale_of(k, a, acc)), alpha, beta);
      if (c + g.r + 1 < g.C) {
        const T e = ld<T>(xc + (c + g.r + 1) * g.hw);
        acc += e * e;
      }
      if (c - g.r >= 0) {
        const T l = ld<T>(xc + (c - g.r) * g.hw);
        acc -= l * l;
      }
    }
  }
}

// Generic backward (any local_size): R = dy * y / scale goes to the workspace, a second slide
// sums it.
template <typename S, typename NegPow, typename T = MathOf<S>>
__global__ void across_bwd_kernel(Geo g, NegPow neg_pow, T k, T a, T cc, const S* __restrict__ y,
                                  const S* dy, const S* __restrict__ x, S* dx, T* R, T alpha,
                                  T beta) {
  CREMA_CUDA_LOOP(col, g.columns) {
    const int64_t n = col / g.hw, pos = col - n * g.hw;
    const int64_t base = n * g.C * g.hw + pos;
    const S* xc = x + base;
    const S* yc = y + base;
    const S* gc = dy + base;  // may be dx itself: each element is read before it is written
    T* rc = R + base;
    S* oc = dx + base;
    const int first = min(g.r, g.C - 1);
    auto xsq = [&](int c) {
      const T v = ld<T>(xc + c * g.hw);
      return v * v;
    };
    // Pass 1: R_c = dy_c * y_c / scale_c.
    T acc = T(0);
    for (int c = 0; c <= first; ++c) acc += xsq(c);
    for (int c = 0; c < g.C; ++c) {
      rc[c * g.hw] = ld<T>(gc + c * g.hw) * ld<T>(yc + c * g.hw) / lrn_ops::scale_of(k, a, acc);
      if (c + g.r + 1 < g.C) acc += xsq(c + g.r + 1);
      if (c - g.r >= 0) acc -= xsq(c - g.r);
    }
    // Pass 2: the same slide over x^2 recovers each scale; a second one over R gives the sum.
    acc = T(0);
    T sr = T(0);
    for (int c = 0; c <= first; ++c) {
      acc += xsq(c);
      sr += rc[c * g.hw];
    }
    for (int c = 0; c < g.C; ++c) {
      const T xv = ld<T>(xc + c * g.hw);
      const T v = ld<T>(gc + c * g.hw) * neg_pow(lrn_ops::scale_of(k, a, acc)) - cc * xv * sr;
      blend_store(oc + c * g.hw, v, alpha, beta);
      if (c + g.r + 1 < g.C) {
        acc += xsq(c + g.r + 1);
        sr += rc[(c + g.r + 1) * g.hw];
      }
      if (c - g.r >= 0) {
        acc -= xsq(c - g.r);
        sr -= rc[(c - g.r) * g.hw];
      }
    }
  }
}

// Sum of f(in) over pixel (i, j)'s window of radius r, clipped to the H x W plane.
template <bool kSquare, typename T, typename In>
__device__ __forceinline__ T window_sum(const In* plane, int H, int W, int r, int i, int j) {
  const int i0 = max(i - r, 0), i1 = min(i + r, H - 1);
  const int j0 = max(j - r, 0), j1 = min(j + r, W - 1);
  T s = T(0);
  for (int ii = i0; ii <= i1; ++ii)
    for (int jj = j0; jj <= j1; ++jj) {
      const T v = ld<T>(plane + int64_t(ii) * W + jj);
      s += kSquare ? v * v : v;
    }
  return s;
}

// Row i and column j of offset e within an H x W plane: 32-bit division unless the plane spans
// 2^31 elements or more.
__device__ __forceinline__ void plane_pos(const Geo& g, int64_t e, int* i, int* j) {
  if (g.hw < (int64_t(1) << 31)) {
    const uint32_t u = uint32_t(e), w = uint32_t(g.W), q = u / w;
    *i = int(q);
    *j = int(u - q * w);
  } else {
    *i = int(e / g.W);
    *j = int(e - int64_t(*i) * g.W);
  }
}

template <typename S, typename NegPow, typename T = MathOf<S>>
__global__ void within_fwd_kernel(Geo g, int64_t total, NegPow neg_pow, T k, T a,
                                  const S* __restrict__ x, S* y, T alpha, T beta) {
  CREMA_CUDA_LOOP(idx, total) {
    const int64_t plane = idx / g.hw;
    int i, j;
    plane_pos(g, idx - plane * g.hw, &i, &j);
    const T s = k + a * window_sum<true, T>(x + plane * g.hw, g.H, g.W, g.r, i, j);
    blend_store(y + idx, ld<T>(x + idx) * neg_pow(s), alpha, beta);
  }
}

template <typename S, typename T = MathOf<S>>
__global__ void within_r_kernel(Geo g, int64_t total, T k, T a, const S* __restrict__ y,
                                const S* __restrict__ dy, const S* __restrict__ x, T* R) {
  CREMA_CUDA_LOOP(idx, total) {
    const int64_t plane = idx / g.hw;
    int i, j;
    plane_pos(g, idx - plane * g.hw, &i, &j);
    const T s = k + a * window_sum<true, T>(x + plane * g.hw, g.H, g.W, g.r, i, j);
    R[idx] = ld<T>(dy + idx) * ld<T>(y + idx) / s;
  }
}

// dy may be dx: each thread reads its own dy element only, before writing it.
template <typename S, typename NegPow, typename T = MathOf<S>>
__global__ void within_dx_kernel(Geo g, int64_t total, NegPow neg_pow, T k, T a, T cc, const S* dy,
                                 const S* __restrict__ x, const T* __restrict__ R, S* dx, T alpha,
                                 T beta) {
  CREMA_CUDA_LOOP(idx, total) {
    const int64_t plane = idx / g.hw;
    int i, j;
    plane_pos(g, idx - plane * g.hw, &i, &j);
    const T s = k + a * window_sum<true, T>(x + plane * g.hw, g.H, g.W, g.r, i, j);
    const T sr = window_sum<false, T>(R + plane * g.hw, g.H, g.W, g.r, i, j);
    blend_store(dx + idx, ld<T>(dy + idx) * neg_pow(s) - cc * ld<T>(x + idx) * sr, alpha, beta);
  }
}

Geo geo_of(const LrnDesc& ld, const TensorDesc& d) {
  const int64_t hw = int64_t(d.h) * d.w;
  return Geo{d.n * hw, hw, d.c, d.h, d.w, ld.local_size / 2};
}

// Threads the across kernels aim for: about two per resident slot of an H100, so the loads in
// flight cover memory latency; columns beyond this are not split. Each chunk pays the window's
// warm-up (2r channels of x, in backward also r of dy and r more steps): at 2^18 caffenet:norm2
// (186624 columns) runs two chunks of 128 channels, at 2^19 three of 86, which measured 6%
// slower in backward (0.2579 against 0.2425 ms) and 3% slower in forward (0.1896 against 0.1833).
constexpr int64_t kAcrossThreads = int64_t(1) << 18;

// Channels per chunk: all of them when the columns alone reach kAcrossThreads, else chunks of
// at least 16 channels (the window's warm-up is then a small overhead).
int chunk_of(const Geo& g) {
  if (g.columns <= 0) return std::max(g.C, 1);
  const int64_t want = (kAcrossThreads + g.columns - 1) / g.columns;
  const int64_t chunks = std::max<int64_t>(1, std::min<int64_t>(want, g.C / 16));
  return int((g.C + chunks - 1) / chunks);
}

// The radius the register-ring kernels take g with: g.r, or -1 (none) when an image spans 2^31
// elements or more (their channel offsets are 32-bit).
int ring_radius(const Geo& g) { return int64_t(g.C) * g.hw < (int64_t(1) << 31) ? g.r : -1; }

const char* ring_unsupported(const LrnArgs& a) {
  if (const char* why = lrn_across_only(a)) return why;
  const int r = ring_radius(geo_of(a.ld, a.xd));
  if (r < 0) return "an image of 2^31 elements or more";
  return r > 3 ? "local_size above 7" : nullptr;
}

void run_ring(Handle& h, const LrnArgs& a) {
  const Geo g = geo_of(a.ld, a.xd);
  // In place (dx == dy), a chunk's warm-up would read dy its neighbour has overwritten, so a
  // column stays whole.
  const int chunk = !a.forward && a.out == a.dy ? g.C : chunk_of(g);
  const int64_t work = g.columns * ((g.C + chunk - 1) / chunk);
  cudaStream_t s = stream_of(h);
  typed(a, [&](const auto& t, auto neg_pow) {
    visit_radius(g.r, [&](auto r) {
      constexpr int R = decltype(r)::value;
      if (a.forward)
        across_fwd_ring_kernel<R><<<grid_for(work), kBlock, 0, s>>>(
            g, chunk, work, neg_pow, t.k, t.a, t.x, t.out, t.alpha, t.beta);
      else
        across_bwd_ring_kernel<R><<<grid_for(work), kBlock, 0, s>>>(
            g, chunk, work, neg_pow, t.k, t.a, t.c, t.dy, t.x, t.out, t.alpha, t.beta);
    });
  });
}

void run_across(Handle& h, const LrnArgs& a) {
  const Geo g = geo_of(a.ld, a.xd);
  cudaStream_t s = stream_of(h);
  typed(a, [&](const auto& t, auto neg_pow) {
    using T = typename std::decay_t<decltype(t)>::Math;
    if (a.forward) {
      across_fwd_kernel<<<grid_for(g.columns), kBlock, 0, s>>>(g, neg_pow, t.k, t.a, t.x, t.out,
                                                               t.alpha, t.beta);
    } else {
      T* R = static_cast<T*>(h.workspace(size_t(a.xd.count()) * sizeof(T)));
      across_bwd_kernel<<<grid_for(g.columns), kBlock, 0, s>>>(g, neg_pow, t.k, t.a, t.c, t.y, t.dy,
                                                               t.x, t.out, R, t.alpha, t.beta);
    }
  });
}

void run_within(Handle& h, const LrnArgs& a) {
  const Geo g = geo_of(a.ld, a.xd);
  const int64_t total = a.xd.count();
  cudaStream_t s = stream_of(h);
  typed(a, [&](const auto& t, auto neg_pow) {
    using T = typename std::decay_t<decltype(t)>::Math;
    if (a.forward) {
      within_fwd_kernel<<<grid_for(total), kBlock, 0, s>>>(g, total, neg_pow, t.k, t.a, t.x, t.out,
                                                           t.alpha, t.beta);
    } else {
      T* R = static_cast<T*>(h.workspace(size_t(total) * sizeof(T)));
      within_r_kernel<<<grid_for(total), kBlock, 0, s>>>(g, total, t.k, t.a, t.y, t.dy, t.x, R);
      within_dx_kernel<<<grid_for(total), kBlock, 0, s>>>(g, total, neg_pow, t.k, t.a, t.c, t.dy,
                                                          t.x, R, t.out, t.alpha, t.beta);
    }
  });
}

}  // namespace

const LrnImpl kLrnAcrossRing{LrnAlgo::kAcrossRing, Device::kCUDA, ring_unsupported, nullptr,
                             run_ring};
const LrnImpl kLrnAcross{LrnAlgo::kAcross, Device::kCUDA, lrn_across_only, nullptr, run_across};
const LrnImpl kLrnWithin{LrnAlgo::kWithin, Device::kCUDA, lrn_within_only, nullptr, run_within};

}  // namespace crema::prim::cuda
