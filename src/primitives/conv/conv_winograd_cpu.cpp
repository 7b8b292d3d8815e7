// The CPU `winograd` row of the convolution table: F(4x4, 3x3) (conv_winograd.h) over chunks of
// images, each step split over the Handle's threads: the input transform by channel, the 36
// GEMMs by transformed position, the output transform by output channel. Results do not depend
// on the thread count (each value is computed by one thread in a fixed order).
#include <algorithm>
#include <cstdint>
#include <vector>

#include "primitives/blas.h"
#include "primitives/common/dtype_visit.h"
#include "primitives/conv/conv_winograd.h"
#include "primitives/cpu/parallel.h"

namespace crema::prim::cpu {
namespace {

namespace wg = winograd;

// Runs fn(i) for i in [0, count), the range split over the threads.
template <typename Fn>
void split(int threads, int64_t count, const Fn& fn) {
  const int parts = int(std::min<int64_t>(threads, std::max<int64_t>(count, 1)));
  parallel_for(parts, [&](int t) {
    const int64_t begin = count * t / parts, end = count * (t + 1) / parts;
    for (int64_t i = begin; i < end; ++i) fn(i);
  });
}

template <typename T>
class WinogradCpu {
 public:
  WinogradCpu(Handle& h, const ConvProblem& p)
      : h_(h), p_(p), threads_(inside_parallel_for() ? 1 : h.cpu_threads()) {}

  void fwd(const T* x, const T* w, T* y, Blend blend, const ConvEpilogue& ep) {
    forward_like(wg::forward_pass(p_), false, x, w, y, blend, static_cast<const T*>(ep.bias),
                 ep.relu);
  }

  void bwd_data(const T* w, const T* dy, T* dx, Blend blend) {
    forward_like(wg::bwd_data_pass(p_), true, dy, w, dx, blend, nullptr, false);
  }

  // dW = G^T [sum over images and tiles of (A dy A^T) . (B^T d B)] G: the sums M[e] (Kg x Cg) of
  // a group are D[e] V[e]^T, accumulated chunk after chunk.
  void bwd_filter(const T* x, const T* dy, T* dw, Blend blend) {
    const wg::Pass s = wg::bwd_filter_pass(p_);
    const Pieces ws = pieces(s);
    const wg::Plan& pl = ws.plan;
    T *sums = ws.filter, *v = ws.inputs, *d = ws.products;
    const int cg = s.ci, kg = s.co;
    const int64_t group_sums = int64_t(wg::kPoints) * kg * cg;
    for (int n0 = 0; n0 < s.n; n0 += pl.chunk) {
      const int b = std::min(pl.chunk, s.n - n0);
      const int64_t tiles = s.g.tiles() * b;
      for (int gi = 0; gi < s.groups; ++gi) {
        transform_inputs(s, x + n0 * s.in_image, gi, b, v);
        split(threads_, int64_t(kg) * b, [&](int64_t i) {
          const int k = int(i / b), img = int(i % b);
          const T* plane = dy + (n0 + img) * s.out_image + int64_t(gi * kg + k) * s.g.p * s.g.q;
          transform_plane(
              s.g, [&](int th, int tw, T* o) { wg::grad_tile(s.g, plane, th, tw, o); },
              d + k * tiles + img * s.g.tiles(), kg * tiles);
        });
        const double beta = n0 == 0 ? 0.0 : 1.0;
        T* m = sums + gi * group_sums;
        split(threads_, wg::kPoints, [&](int64_t e) {
          gemm(h_, p_.xd.dtype, Trans::kNo, Trans::kYes, kg, cg, int(tiles), 1.0,
               d + e * kg * tiles, v + e * cg * tiles, beta, m + e * kg * cg);
        });
      }
    }
    const T alpha = T(blend.alpha), beta = T(blend.beta);
    split(threads_, int64_t(s.groups) * kg * cg, [&](int64_t i) {
      const int64_t gi = i / (int64_t(kg) * cg), kc = i % (int64_t(kg) * cg);
      T m[wg::kPoints], g[9];
      for (int e = 0; e < wg::kPoints; ++e) m[e] = sums[gi * group_sums + e * kg * cg + kc];
      wg::filter_grad_tile(m, g);
      T* out =
          dw + i * 9;  // filter (k, c) of the group: k = gi * kg + kc / cg, packed K x C x 3 x 3
      for (int j = 0; j < 9; ++j)
        out[j] = beta == T(0) ? alpha * g[j] : alpha * g[j] + beta * out[j];
    });
  }

 private:
  // The workspace of a pass, cut as wg::plan says.
  struct Pieces {
    wg::Plan plan;
    T *filter, *inputs, *products;
  };
  Pieces pieces(const wg::Pass& s) const {
    const wg::Plan pl = wg::plan(s, sizeof(T), h_.workspace_budget());
    T* base = static_cast<T*>(h_.workspace(sizeof(T) * size_t(pl.total())));
    return {pl, base, base + pl.filter, base + pl.filter + pl.inputs};
  }

  // A thread's buffer of one plane's transformed tiles, tile-major.
  static std::vector<T>& tile_major() {
    thread_local std::vector<T> buf;
    return buf;
  }

  // dst[e * stride + t] = position e of tile t of a plane, tile(th, tw, out) transforming one
  // tile: the tiles go through the thread's tile-major buffer, so the 36 runs are written one
  // after another rather than as 36 interleaved streams (twice as fast on a 64-channel 56x56
  // layer).
  template <typename Tile>
  static void transform_plane(const wg::Geo& g, const Tile& tile, T* dst, int64_t stride) {
    std::vector<T>& buf = tile_major();
    buf.resize(size_t(g.tiles()) * wg::kPoints);
    for (int th = 0; th < g.tiles_h; ++th)
      for (int tw = 0; tw < g.tiles_w; ++tw)
        tile(th, tw, buf.data() + (int64_t(th) * g.tiles_w + tw) * wg::kPoints);
    for (int e = 0; e < wg::kPoints; ++e)
      for (int64_t t = 0; t < g.tiles(); ++t) dst[e * stride + t] = buf[t * wg::kPoints + e];
  }

  // V[e][c][col] = (B^T d B)[e] of the patches of group gi's input channels, a chunk of b images.
  void transform_inputs(const wg::Pass& s, const T* in, int gi, int b, T* v) const {
    const int64_t tiles = s.g.tiles() * b, plane = int64_t(s.g.h) * s.g.w;
    split(threads_, int64_t(s.ci) * b, [&](int64_t i) {
      const int c = int(i / b), img = int(i % b);
      const T* src = in + img * s.in_image + (int64_t(gi) * s.ci + c) * plane;
      transform_plane(
          s.g, [&](int th, int tw, T* o) { wg::input_tile(s.g, src, th, tw, o); },
          v + c * tiles + img * s.g.tiles(), s.ci * tiles);
    });
  }

  // out = alpha * conv(in, filter) + beta * out, then + bias and ReLU: the transformed filters U
  // (co x ci per group and position; backward data turns them and swaps K and C), then per chunk
  // V, the GEMMs M[e] = U[e] V[e], and the output tiles.
  void forward_like(const wg::Pass& s, bool data_grad, const T* in, const T* w, T* out, Blend blend,
                    const T* bias, bool relu) {
    const Pieces ws = pieces(s);
    const wg::Plan& pl = ws.plan;
    T *u = ws.filter, *v = ws.inputs, *m = ws.products;
    const int ci = s.ci, co = s.co;
    const int64_t group_u = int64_t(wg::kPoints) * co * ci;
    split(threads_, int64_t(s.groups) * co * ci, [&](int64_t i) {
      const int64_t gi = i / (int64_t(co) * ci), oc = i % (int64_t(co) * ci);
      const int o = int(oc / ci), c = int(oc % ci);
      // The filter of output o from input c: forward W[gi*Kg + o][c], backward data W[gi*Kg +
      // c][o] turned.
      const int64_t k = gi * (data_grad ? ci : co) + (data_grad ? c : o);
      const int ch = data_grad ? o : c;
      T tile[wg::kPoints];
      wg::filter_tile(w + (k * p_.wd.c + ch) * 9, data_grad, tile);
      for (int e = 0; e < wg::kPoints; ++e)
        u[gi * group_u + (int64_t(e) * co + o) * ci + c] = tile[e];
    });
    const T alpha = T(blend.alpha), beta = T(blend.beta);
    const int64_t plane = int64_t(s.g.p) * s.g.q;
    for (int n0 = 0; n0 < s.n; n0 += pl.chunk) {
      const int b = std::min(pl.chunk, s.n - n0);
      const int64_t tiles = s.g.tiles() * b;
      for (int gi = 0; gi < s.groups; ++gi) {
        transform_inputs(s, in + n0 * s.in_image, gi, b, v);
        split(threads_, wg::kPoints, [&](int64_t e) {
          gemm(h_, p_.xd.dtype, Trans::kNo, Trans::kNo, co, int(tiles), ci, 1.0,
               u + gi * group_u + e * co * ci, v + e * ci * tiles, 0.0, m + e * co * tiles);
        });
        split(threads_, int64_t(co) * b, [&](int64_t i) {
          const int o = int(i / b), img = int(i % b);
          const int ch = gi * co + o;
          T* dst = out + (n0 + img) * s.out_image + ch * plane;
          const T add = bias ? bias[ch] : T(0);
          // This plane's products, tile-major: the 36 runs read one after another.
          std::vector<T>& buf = tile_major();
          buf.resize(size_t(s.g.tiles()) * wg::kPoints);
          for (int e = 0; e < wg::kPoints; ++e) {
            const T* run = m + e * co * tiles + o * tiles + img * s.g.tiles();
            for (int64_t t = 0; t < s.g.tiles(); ++t) buf[t * wg::kPoints + e] = run[t];
          }
          T tile[wg::kTile * wg::kTile];
          for (int th = 0; th < s.g.tiles_h; ++th)
            for (int tw = 0; tw < s.g.tiles_w; ++tw) {
              wg::output_tile(buf.data() + (int64_t(th) * s.g.tiles_w + tw) * wg::kPoints, tile);
              for (int r = 0; r < wg::kTile && th * wg::kTile + r < s.g.p; ++r)
                for (int q = 0; q < wg::kTile && tw * wg::kTile + q < s.g.q; ++q) {
                  T& y = dst[int64_t(th * wg::kTile + r) * s.g.q + tw * wg::kTile + q];
                  T val = alpha * tile[r * wg::kTile + q];
                  if (beta != T(0)) val += beta * y;
                  if (bias) val += add;
                  y = relu && !(val > T(0)) ? T(0) : val;
                }
            }
        });
      }
    }
  }

  Handle& h_;
  const ConvProblem& p_;
  int threads_;
};

void fwd(Handle& h, const ConvProblem& p, const void* x, const void* w, void* y, Blend blend,
         const ConvEpilogue& ep) {
  visit_dtype(kFloatTypes, p.xd.dtype, "conv_fwd", Device::kCPU, [&](auto tag) {
    using T = typename decltype(tag)::type;
    WinogradCpu<T>(h, p).fwd(static_cast<const T*>(x), static_cast<const T*>(w), static_cast<T*>(y),
                             blend, ep);
  });
}

void bwd_data(Handle& h, const ConvProblem& p, const void* w, const void* dy, void* dx,
              Blend blend) {
  visit_dtype(kFloatTypes, p.xd.dtype, "conv_bwd_data", Device::kCPU, [&](auto tag) {
    using T = typename decltype(tag)::type;
    WinogradCpu<T>(h, p).bwd_data(static_cast<const T*>(w), static_cast<const T*>(dy),
                                  static_cast<T*>(dx), blend);
  });
}

void bwd_filter(Handle& h, const ConvProblem& p, const void* x, const void* dy, void* dw,
                Blend blend) {
  visit_dtype(kFloatTypes, p.xd.dtype, "conv_bwd_filter", Device::kCPU, [&](auto tag) {
    using T = typename decltype(tag)::type;
    WinogradCpu<T>(h, p).bwd_filter(static_cast<const T*>(x), static_cast<const T*>(dy),
                                    static_cast<T*>(dw), blend);
  });
}

size_t workspace(Handle& h, const ConvProblem& p) {
  return wg::workspace_bytes(p, h.workspace_budget());
}

}  // namespace

const ConvImpl kConvWinograd{
    ConvAlgo::kWinograd, Device::kCPU, wg::unsupported, workspace, fwd, bwd_data, bwd_filter};

}  // namespace crema::prim::cpu
