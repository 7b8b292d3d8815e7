// LRN across channels on images of one pixel, the "across_lanes" row: what lrn.cpp makes of a
// packed channels-last tensor (its channel_view, N*H*W images of C x 1 x 1), whose pixels hold
// their channels side by side. The register ring (lrn_cuda.cu) gives a thread a whole pixel and
// walks its channels, so the lanes of a warp read values C apart, a cache line each: CaffeNet's
// two channels-last LRN layers took 1.58 ms a step that way, against 0.22 ms on NCHW tensors
// (ncu, H100). Here a thread takes a pack of V adjacent channels of a pixel (16 bytes where C
// allows), so a warp's loads are whole lines, and reads the packs beside its own that hold its
// windows' other channels (cache hits: each is another thread's own pack).
// Forward: each channel's window sum of squares in channel order (2r + 1 terms, no running sum),
// then y = x * scale^-beta. Bytes: x read, y written.
// Backward: dx_c = dy_c P_c - c2 x_c sum_{j in c's window} R_j, with P = scale^-beta and
// R_j = dy_j x_j P_j / scale_j (lrn.h); the thread finds R for its V channels and the r beyond each
// end (their scales need x up to 2r channels away): (V + 2r) / V scales per output. Bytes: x and
// dy read, dx written; y is recomputed, never read. dx may not be dy: a thread reads the dy of
// its neighbours' channels, which they overwrite.
#include <cstdint>

#include "primitives/common/fast_div.h"
#include "primitives/cuda/cuda_pack.cuh"
#include "primitives/cuda/lrn_cuda.cuh"

namespace crema::prim::cuda {
namespace {

struct LanesGeo {
  int64_t packs;     // pixels * per_pixel
  int per_pixel;     // packs of a pixel: C / V
  FastDiv by_pixel;  // division by per_pixel, when packs < 2^31
};

// Which pack of its pixel pack i is.
template <bool kNarrow>
__device__ __forceinline__ int pack_in_pixel(const LanesGeo& g, int64_t i) {
  if constexpr (kNarrow) {
    const uint32_t u = uint32_t(i);
    return int(u - g.by_pixel.div(u) * uint32_t(g.per_pixel));
  } else {
    return int(i % g.per_pixel);
  }
}

// Pack i and the B packs on each side of it within its pixel (pack p of per_pixel), in the math
// type: v[t] is channel V * (p - B) + t; channels outside the pixel are zeros.
template <int B, int V, typename S, typename T>
__device__ __forceinline__ void load_around(const S* base, int64_t i, int p, int per_pixel,
                                            T (&v)[(2 * B + 1) * V]) {
#pragma unroll
  for (int d = -B; d <= B; ++d) {
    T u[V];
    if (unsigned(p + d) < unsigned(per_pixel)) {
      load_pack<V>(base + (i + d) * V, u);
    } else {
#pragma unroll
      for (int e = 0; e < V; ++e) u[e] = T(0);
    }
#pragma unroll
    for (int e = 0; e < V; ++e) v[(d + B) * V + e] = u[e];
  }
}

// The window sum of squares of channel t of v (the 2R + 1 channels centred on it), in channel
// order.
template <int R, int N, typename T>
__device__ __forceinline__ T window_squares(const T (&v)[N], int t) {
  T s = T(0);
#pragma unroll
  for (int u = -R; u <= R; ++u) s += mul_rn(v[t + u], v[t + u]);
  return s;
}

template <int V, int R, bool kNarrow, typename S, typename NegPow, typename T = MathOf<S>>
__global__ void lanes_fwd_kernel(LanesGeo g, NegPow neg_pow, T k, T a, const S* __restrict__ x,
                                 S* __restrict__ y, T alpha, T beta) {
  constexpr int B = (R + V - 1) / V;  // neighbour packs on each side
  CREMA_CUDA_LOOP(i, g.packs) {
    const int p = pack_in_pixel<kNarrow>(g, i);
    T xv[(2 * B + 1) * V];
    load_around<B, V>(x, i, p, g.per_pixel, xv);
    T out[V];
#pragma unroll
    for (int e = 0; e < V; ++e) {
      const int t = B * V + e;
      out[e] = xv[t] * neg_pow(lrn_ops::scale_of(k, a, window_squares<R>(xv, t)));
    }
    blend_store_pack<V>(y + i * V, out, alpha, beta);
  }
}

template <int V, int R, bool kNarrow, typename S, typename NegPow, typename T = MathOf<S>>
__global__ void lanes_bwd_kernel(LanesGeo g, NegPow neg_pow, T k, T a, T c2,
                                 const S* __restrict__ dy, const S* __restrict__ x,
                                 S* __restrict__ dx, T alpha, T beta) {
  constexpr int BX = (2 * R + V - 1) / V;  // x packs on each side: scales of the R beyond
  constexpr int BD = (R + V - 1) / V;      // dy packs on each side: R of the R beyond
  constexpr int NR = V + 2 * R;            // channels whose R the pack's sums take
  CREMA_CUDA_LOOP(i, g.packs) {
    const int p = pack_in_pixel<kNarrow>(g, i);
    T xv[(2 * BX + 1) * V], dv[(2 * BD + 1) * V];
    load_around<BX, V>(x, i, p, g.per_pixel, xv);
    load_around<BD, V>(dy, i, p, g.per_pixel, dv);
    // rv[u] and pv[u]: channel V p - R + u. R is 0 outside the pixel (as the CPU skips those
    // channels); xv and dv are zeros there, which makes it so.
    T rv[NR], pv[NR];
#pragma unroll
    for (int u = 0; u < NR; ++u) {
      const int tx = BX * V - R + u, td = BD * V - R + u;
      const T s = lrn_ops::scale_of(k, a, window_squares<R>(xv, tx));
      pv[u] = neg_pow(s);
      rv[u] = dv[td] * (xv[tx] * pv[u]) * neg_pow.inv(s);
    }
    T out[V];
#pragma unroll
    for (int e = 0; e < V; ++e) {
      T sr = T(0);
#pragma unroll
      for (int u = e; u <= e + 2 * R; ++u) sr += rv[u];
      out[e] = dv[BD * V + e] * pv[R + e] - c2 * xv[BX * V + e] * sr;
    }
    blend_store_pack<V>(dx + i * V, out, alpha, beta);
  }
}

const char* lanes_unsupported(const LrnArgs& a) {
  if (const char* why = lrn_across_only(a)) return why;
  if (a.xd.h != 1 || a.xd.w != 1) return "images of more than one pixel";
  if (a.ld.local_size > 7) return "local_size above 7";
  if (!a.forward && a.out == a.dy) return "dx is dy (a thread reads its neighbours' dy)";
  return nullptr;
}

void run_lanes(Handle& h, const LrnArgs& a) {
  const int C = a.xd.c, r = a.ld.local_size / 2;
  const int64_t pixels = a.xd.n;
  cudaStream_t s = stream_of(h);
  typed(a, [&](const auto& t, auto neg_pow) {
    using S = std::remove_const_t<std::remove_pointer_t<decltype(t.x)>>;
    const int widest = a.forward ? widest_pack_dividing<S>(C, {t.x, t.out})
                                 : widest_pack_dividing<S>(C, {t.x, t.dy, t.out});
    with_width<kVecWidth<S>>(widest, [&](auto w) {
      constexpr int V = decltype(w)::value;
      const int per_pixel = C / V;
      const LanesGeo g{pixels * per_pixel, per_pixel, FastDiv(uint32_t(per_pixel))};
      const bool narrow = g.packs < (int64_t(1) << 31);
      visit_radius(r, [&](auto rc) {
        constexpr int R = decltype(rc)::value;
        auto launch = [&](auto kernel, auto... args) {
          kernel<<<grid_for(g.packs), kBlock, 0, s>>>(g, neg_pow, t.k, t.a, args...);
        };
        using NP = decltype(neg_pow);
        if (a.forward) {
          if (narrow)
            launch(lanes_fwd_kernel<V, R, true, S, NP>, t.x, t.out, t.alpha, t.beta);
          else
            launch(lanes_fwd_kernel<V, R, false, S, NP>, t.x, t.out, t.alpha, t.beta);
        } else {
          if (narrow)
            launch(lanes_bwd_kernel<V, R, true, S, NP>, t.c, t.dy, t.x, t.out, t.alpha, t.beta);
          else
            launch(lanes_bwd_kernel<V, R, false, S, NP>, t.c, t.dy, t.x, t.out, t.alpha, t.beta);
        }
      });
    });
  });
}

}  // namespace

const LrnImpl kLrnAcrossLanes{LrnAlgo::kAcrossLanes, Device::kCUDA, lanes_unsupported, nullptr,
                              run_lanes};

}  // namespace crema::prim::cuda
