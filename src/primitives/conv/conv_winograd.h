// Winograd F(4x4, 3x3) for the `winograd` row of the convolution table: the transforms of Lavin
// and Gray's "Fast Algorithms for Convolutional Neural Networks" with the interpolation points 0,
// 1, -1, 2, -2 and infinity, written for host and device code, the geometry, the support rule
// and the workspace plan.
//
// A 3x3 stride-1 convolution splits its output into 4x4 tiles; each tile is
//   y = A^T [ (G g G^T) . (B^T d B) ] A
// for the 6x6 input patch d that covers it and the 3x3 filter g: 36 multiplies where direct
// convolution takes 144. Over a layer, the elementwise products become 36 GEMMs, one per
// transformed position e (0..35): M[e] (K x tiles) = U[e] (K x C) V[e] (C x tiles), with U the
// transformed filters and V the transformed input patches. Backward data is the same forward on
// dy with the filter turned by 180 degrees and its K and C swapped, padded 2 - pad. Backward filter
// transposes the forward (F(3x3, 4x4)): dW = G^T [ sum over tiles (A dy A^T) . (B^T d B) ] G,
// again 36 GEMMs, of depth tiles.
//
// Error: the transforms grow magnitudes (B^T's rows sum |b| up to 10, A^T's up to 19) and hold
// fractions (1/6, 1/24) that the storage type rounds, so outputs carry more rounding than a plain
// sum of products. The tests hold every output within 2^-14 (fp32) or 2^-43 (fp64) of the
// magnitude it sums (sum |x| |w| over its taps); normal random data reach about 2^-18 in fp32,
// where im2col + GEMM stays within 2^-21.
#pragma once

#include <algorithm>
#include <cstdint>

#include "primitives/common/philox.h"  // CREMA_HOST_DEVICE
#include "primitives/conv/conv_impl.h"

namespace crema::prim::winograd {

constexpr int kTile = 4;     // output tile edge
constexpr int kPatch = 6;    // input patch edge
constexpr int kPoints = 36;  // transformed positions per tile

// The 1-D transforms, strided in and out (in[i * is], out[i * os]), as types for transform_2d.

// B^T d: 6 -> 6.
struct Input {
  template <typename T>
  CREMA_HOST_DEVICE static void run(const T* d, int is, T* o, int os) {
    const T d0 = d[0], d1 = d[is], d2 = d[2 * is], d3 = d[3 * is], d4 = d[4 * is], d5 = d[5 * is];
    o[0] = T(4) * d0 - T(5) * d2 + d4;
    o[os] = -T(4) * (d1 + d2) + d3 + d4;
    o[2 * os] = T(4) * (d1 - d2) - d3 + d4;
    o[3 * os] = T(2) * (d3 - d1) - d2 + d4;
    o[4 * os] = T(2) * (d1 - d3) - d2 + d4;
    o[5 * os] = T(4) * d1 - T(5) * d3 + d5;
  }
};

// G g: 3 -> 6.
struct Filter {
  template <typename T>
  CREMA_HOST_DEVICE static void run(const T* g, int is, T* o, int os) {
    const T g0 = g[0], g1 = g[is], g2 = g[2 * is];
    o[0] = g0 / T(4);
    o[os] = -(g0 + g1 + g2) / T(6);
    o[2 * os] = -(g0 - g1 + g2) / T(6);
    o[3 * os] = g0 / T(24) + g1 / T(12) + g2 / T(6);
    o[4 * os] = g0 / T(24) - g1 / T(12) + g2 / T(6);
    o[5 * os] = g2;
  }
};

// A^T m: 6 -> 4.
struct Output {
  template <typename T>
  CREMA_HOST_DEVICE static void run(const T* m, int is, T* o, int os) {
    const T m0 = m[0], m1 = m[is], m2 = m[2 * is], m3 = m[3 * is], m4 = m[4 * is], m5 = m[5 * is];
    const T a = m1 + m2, b = m1 - m2, c = m3 + m4, d = m3 - m4;
    o[0] = m0 + a + c;
    o[os] = b + T(2) * d;
    o[2 * os] = a + T(4) * c;
    o[3 * os] = b + T(8) * d + m5;
  }
};

// A v: 4 -> 6 (a gradient tile into the transformed space of backward filter).
struct Grad {
  template <typename T>
  CREMA_HOST_DEVICE static void run(const T* v, int is, T* o, int os) {
    const T v0 = v[0], v1 = v[is], v2 = v[2 * is], v3 = v[3 * is];
    o[0] = v0;
    o[os] = v0 + v1 + v2 + v3;
    o[2 * os] = v0 - v1 + v2 - v3;
    o[3 * os] = v0 + T(2) * v1 + T(4) * v2 + T(8) * v3;
    o[4 * os] = v0 - T(2) * v1 + T(4) * v2 - T(8) * v3;
    o[5 * os] = v3;
  }
};

// G^T m: 6 -> 3 (the transformed filter gradient back to 3x3).
struct FilterGrad {
  template <typename T>
  CREMA_HOST_DEVICE static void run(const T* m, int is, T* o, int os) {
    const T m0 = m[0], m1 = m[is], m2 = m[2 * is], m3 = m[3 * is], m4 = m[4 * is], m5 = m[5 * is];
    o[0] = m0 / T(4) - (m1 + m2) / T(6) + (m3 + m4) / T(24);
    o[os] = (m2 - m1) / T(6) + (m3 - m4) / T(12);
    o[2 * os] = (m3 + m4 - m1 - m2) / T(6) + m5;
  }
};

// out (O x O) = F in F^T for the 1-D transform F (I -> O), in I x I row-major.
template <int I, int O, typename F, typename T>
CREMA_HOST_DEVICE inline void transform_2d(const T* in, T* out) {
  T rows[O * I];  // F applied down each column: O x I
  for (int j = 0; j < I; ++j) F::run(in + j, I, rows + j, I);
  for (int i = 0; i < O; ++i) F::run(rows + i * I, 1, out + i * O, 1);
}

// Where the layer's tiles lie: an output plane of p x q in tiles_h x tiles_w tiles of 4x4, the
// last ones clipped; each tile's input patch starts at (4 * tile row - pad_h, 4 * tile col -
// pad_w) of an h x w input plane, zero outside it.
struct Geo {
  int h, w, p, q, pad_h, pad_w;
  int tiles_h, tiles_w;
  CREMA_HOST_DEVICE int64_t tiles() const { return int64_t(tiles_h) * tiles_w; }
};

inline Geo geo(int h, int w, int p, int q, int pad_h, int pad_w) {
  return Geo{h, w, p, q, pad_h, pad_w, (p + kTile - 1) / kTile, (q + kTile - 1) / kTile};
}

// The 6x6 patch of plane (row stride w) for tile (th, tw), zeros outside, transformed: B^T d B.
template <typename T>
CREMA_HOST_DEVICE inline void input_tile(const Geo& g, const T* plane, int th, int tw, T* out) {
  T d[kPoints];
  const int y0 = th * kTile - g.pad_h, x0 = tw * kTile - g.pad_w;
  for (int i = 0; i < kPatch; ++i)
    for (int j = 0; j < kPatch; ++j) {
      const int y = y0 + i, x = x0 + j;
      d[i * kPatch + j] =
          y >= 0 && y < g.h && x >= 0 && x < g.w ? plane[int64_t(y) * g.w + x] : T(0);
    }
  transform_2d<kPatch, kPatch, Input>(d, out);
}

// The 4x4 tile of a p x q gradient plane, zeros past its edges, transformed: A dy A^T.
template <typename T>
CREMA_HOST_DEVICE inline void grad_tile(const Geo& g, const T* plane, int th, int tw, T* out) {
  T v[kTile * kTile];
  for (int i = 0; i < kTile; ++i)
    for (int j = 0; j < kTile; ++j) {
      const int y = th * kTile + i, x = tw * kTile + j;
      v[i * kTile + j] = y < g.p && x < g.q ? plane[int64_t(y) * g.q + x] : T(0);
    }
  transform_2d<kTile, kPatch, Grad>(v, out);
}

// G g G^T of a 3x3 filter (row-major), turned by 180 degrees first where `flip` (backward data).
template <typename T>
CREMA_HOST_DEVICE inline void filter_tile(const T* g, bool flip, T* out) {
  T f[9];
  for (int i = 0; i < 9; ++i) f[i] = g[flip ? 8 - i : i];
  transform_2d<3, kPatch, Filter>(f, out);
}

// A^T m A: the 4x4 output tile of its 36 products.
template <typename T>
CREMA_HOST_DEVICE inline void output_tile(const T* m, T* out) {
  transform_2d<kPatch, kTile, Output>(m, out);
}

// G^T m G: the 3x3 filter gradient of its 36 sums.
template <typename T>
CREMA_HOST_DEVICE inline void filter_grad_tile(const T* m, T* out) {
  transform_2d<kPatch, 3, FilterGrad>(m, out);
}

// The rows' support rule: 3x3, stride 1, no dilation, padding up to 2 (backward data pads dy by
// 2 - pad), packed images.
inline const char* unsupported(const ConvProblem& p) {
  if (p.wd.r != 3 || p.wd.s != 3) return "the filter is not 3x3";
  if (p.cd.stride_h != 1 || p.cd.stride_w != 1) return "the stride is not 1";
  if (p.cd.dilation_h != 1 || p.cd.dilation_w != 1) return "the filter is dilated";
  if (p.cd.pad_h > 2 || p.cd.pad_w > 2) return "the padding is over 2";
  if (p.yd.h < 1 || p.yd.w < 1) return "the output plane is empty";
  return conv_unsupported_gemm(p);
}

// One forward-like pass: `in` (ci channels a group, h x w planes) into `out` (co a group, p x q),
// padded by pad_h, pad_w. Forward reads x into y; backward data reads dy into dx.
struct Pass {
  int n, groups, ci, co;
  Geo g;
  int64_t in_image, out_image;  // batch strides
};

inline Pass forward_pass(const ConvProblem& p) {
  const int groups = p.cd.groups;
  return Pass{p.xd.n,
              groups,
              p.wd.c,
              p.wd.k / groups,
              geo(p.xd.h, p.xd.w, p.yd.h, p.yd.w, p.cd.pad_h, p.cd.pad_w),
              p.xd.stride_n,
              p.yd.stride_n};
}
inline Pass bwd_data_pass(const ConvProblem& p) {
  const int groups = p.cd.groups;
  return Pass{p.xd.n,
              groups,
              p.wd.k / groups,
              p.wd.c,
              geo(p.yd.h, p.yd.w, p.xd.h, p.xd.w, 2 - p.cd.pad_h, 2 - p.cd.pad_w),
              p.yd.stride_n,
              p.xd.stride_n};
}
// Backward filter's tiles cover y: its patches are forward's.
inline Pass bwd_filter_pass(const ConvProblem& p) { return forward_pass(p); }

// Workspace in elements: the transformed filters of every group (forward and backward data: U;
// backward filter: the sums M), then for a chunk of images the transformed inputs and the
// products (V and M; backward filter: V and the transformed gradient), as many images a chunk as
// the budget holds.
struct Plan {
  int chunk = 1;
  int64_t filter = 0, inputs = 0, products = 0;  // elements of each piece
  int64_t total() const { return filter + inputs + products; }
};

inline Plan plan(const Pass& s, size_t elem, size_t budget) {
  Plan pl;
  const int64_t per_image = int64_t(kPoints) * (s.ci + s.co) * s.g.tiles();
  const int64_t fit = per_image > 0 ? int64_t(budget / elem) / per_image : s.n;
  pl.chunk = int(std::clamp<int64_t>(fit, 1, std::max(s.n, 1)));
  pl.filter = int64_t(kPoints) * s.ci * s.co * s.groups;
  pl.inputs = int64_t(kPoints) * s.ci * s.g.tiles() * pl.chunk;
  pl.products = int64_t(kPoints) * s.co * s.g.tiles() * pl.chunk;
  return pl;
}

// The most a problem's three passes take, in bytes.
inline size_t workspace_bytes(const ConvProblem& p, size_t budget) {
  const size_t elem = dtype_size(p.xd.dtype);
  int64_t most = 0;
  for (const Pass& s : {forward_pass(p), bwd_data_pass(p), bwd_filter_pass(p)})
    most = std::max(most, plan(s, elem, budget).total());
  return size_t(most) * elem;
}

}  // namespace crema::prim::winograd
