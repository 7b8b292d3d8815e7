// CPU pooling, max and average, with Caffe's window rules. Outputs whose window lies fully
// inside the input (the interior) are computed a row at a time, tap by tap, so the inner loop
// runs over output columns without bounds checks; border outputs take the clipped-window path.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "primitives/common/dtype_visit.h"
#include "primitives/cpu/parallel.h"
#include "primitives/pool/pool_impl.h"
#include "primitives/pool/pool_ops.h"

namespace crema::prim::cpu {
namespace {

// Outputs o in [*lo, *hi) whose window o * stride - pad + [0, kernel) lies inside [0, in).
void interior(int in, int kernel, int pad, int stride, int out, int* lo, int* hi) {
  const int l = std::min((pad + stride - 1) / stride, out);
  const int u = in + pad - kernel < 0 ? 0 : std::min((in + pad - kernel) / stride + 1, out);
  *lo = l;
  *hi = std::max(u, l);
}

// A window clipped to the input, and the divisor average pooling uses for it.
struct Window {
  int h0, h1, w0, w1;
  int divisor;
};

using pool_ops::Span;

// Computed once per call so the per-output loops do no clipping arithmetic.
std::vector<Span> spans(int in, int kernel, int pad, int stride, int out) {
  std::vector<Span> v(out);
  for (int o = 0; o < out; ++o) v[o] = pool_ops::span_of(o, in, kernel, pad, stride);
  return v;
}

Window window_of(const PoolDesc& pd, const Span& a, const Span& b) {
  return Window{a.lo, a.hi, b.lo, b.hi, pool_ops::divisor_of(pd.mode, a, b)};
}

// A 2-d plane view with element strides.
template <typename T>
struct Plane {
  T* data;
  int64_t sh, sw;
  T& at(int i, int j) const { return data[i * sh + j * sw]; }
};

template <typename T>
T pool_window(const PoolDesc& pd, Plane<const T> x, const Window& win) {
  // CEIL rounding with stride > kernel and no pad can place the last window past the input;
  // Caffe leaves such outputs undefined, we make them 0 (and they pass no gradient back).
  if (win.h0 >= win.h1 || win.w0 >= win.w1) return T(0);
  if (pd.mode == PoolMode::kMax) {
    T m = std::numeric_limits<T>::lowest();
    for (int i = win.h0; i < win.h1; ++i)
      for (int j = win.w0; j < win.w1; ++j) m = x.at(i, j) > m ? x.at(i, j) : m;
    return m;
  }
  T sum = 0;
  for (int i = win.h0; i < win.h1; ++i)
    for (int j = win.w0; j < win.w1; ++j) sum += x.at(i, j);
  return sum / T(win.divisor);
}

template <typename T>
void fwd_impl(const PoolDesc& pd, const TensorDesc& xd, const T* x, const TensorDesc& yd, T* y,
              Blend blend, int threads) {
  const int P = yd.h, Q = yd.w;
  const bool is_max = pd.mode == PoolMode::kMax;
  const std::vector<Span> hs = spans(xd.h, pd.kernel_h, pd.pad_h, pd.stride_h, P);
  const std::vector<Span> ws = spans(xd.w, pd.kernel_w, pd.pad_w, pd.stride_w, Q);
  int p_lo, p_hi, q_lo, q_hi;
  interior(xd.h, pd.kernel_h, pd.pad_h, pd.stride_h, P, &p_lo, &p_hi);
  interior(xd.w, pd.kernel_w, pd.pad_w, pd.stride_w, Q, &q_lo, &q_hi);
  const int64_t step = pd.stride_w * xd.stride_w;
  const T alpha = T(blend.alpha), beta = T(blend.beta);
  const T full_divisor = T(pd.kernel_h * pd.kernel_w);
  // The images of the batch are split over the threads.
  const int tasks = std::max(1, std::min(threads, xd.n));
  parallel_for(tasks, [&](int t) {
    int n_begin, n_end;
    split_range(xd.n, tasks, t, &n_begin, &n_end);
    std::vector<T> row(Q);
    for (int n = n_begin; n < n_end; ++n) {
      for (int c = 0; c < xd.c; ++c) {
        const Plane<const T> xp{x + n * xd.stride_n + c * xd.stride_c, xd.stride_h, xd.stride_w};
        T* yp = y + n * yd.stride_n + c * yd.stride_c;
        for (int p = 0; p < P; ++p) {
          const bool inside = p >= p_lo && p < p_hi;
          for (int q = 0; q < Q; ++q) {
            if (inside && q == q_lo) q = q_hi;  // the interior run is done below
            if (q >= Q) break;
            row[q] = pool_window(pd, xp, window_of(pd, hs[p], ws[q]));
          }
          if (inside && q_lo < q_hi) {
            T* r = row.data() + q_lo;
            const int len = q_hi - q_lo;
            const int h0 = p * pd.stride_h - pd.pad_h;
            const int w0 = q_lo * pd.stride_w - pd.pad_w;
            for (int i = 0; i < pd.kernel_h; ++i) {
              for (int j = 0; j < pd.kernel_w; ++j) {
                const T* src = &xp.at(h0 + i, w0 + j);
                if (i == 0 && j == 0) {
                  for (int t = 0; t < len; ++t) r[t] = src[t * step];
                } else if (is_max) {
                  for (int t = 0; t < len; ++t) r[t] = src[t * step] > r[t] ? src[t * step] : r[t];
                } else {
                  for (int t = 0; t < len; ++t) r[t] += src[t * step];
                }
              }
            }
            if (!is_max)
              for (int t = 0; t < len; ++t) r[t] /= full_divisor;
          }
          T* out = yp + p * yd.stride_h;
          const int64_t osw = yd.stride_w;
          if (alpha == T(1) && beta == T(0)) {
            for (int q = 0; q < Q; ++q) out[q * osw] = row[q];
          } else if (beta == T(0)) {
            for (int q = 0; q < Q; ++q) out[q * osw] = alpha * row[q];
          } else {
            for (int q = 0; q < Q; ++q) out[q * osw] = alpha * row[q] + beta * out[q * osw];
          }
        }
      }
    }
  });
}

// v if keep, else +0, by masking the bits: a ternary here compiles to a branch, which on random
// data mispredicts about a third of the time.
template <typename T>
T keep_if(bool keep, T v) {
  using Bits = std::conditional_t<sizeof(T) == 8, uint64_t, uint32_t>;
  return std::bit_cast<T>(std::bit_cast<Bits>(v) & (Bits(0) - Bits(keep)));
}

// Max pooling with non-overlapping windows and no padding (stride == kernel: LeNet's 2x2/2) on
// packed planes, written over: each input lies in at most one window, so every dx element is
// written exactly once, in input order, without the general path's clear-then-scatter. The
// argmax is the first input equal to the pooled maximum in row-major order: a per-window `taken`
// flag and masks, no branches (a branch per compare cost ~25 ns per output on random data).
const char* disjoint_unsupported(const PoolArgs& a) {
  const PoolDesc& pd = a.pd;
  if (a.forward()) return "backward only";
  if (!a.is_max()) return "not max pooling";
  if (pd.pad_h != 0 || pd.pad_w != 0 || pd.stride_h != pd.kernel_h || pd.stride_w != pd.kernel_w)
    return "windows overlap or are padded (needs stride = kernel, pad 0)";
  if (a.blend.beta != 0.0) return "beta is not 0 (dx is written over)";
  if (!a.xd.is_packed_nchw() || !a.yd.is_packed_nchw()) return "tensors not packed NCHW";
  return nullptr;
}

template <typename T>
void bwd_max_disjoint(const PoolDesc& pd, const TensorDesc& yd, const T* y, const T* dy,
                      const TensorDesc& xd, const T* x, T* dx, Blend blend, int threads) {
  const T alpha = T(blend.alpha);
  const int H = xd.h, W = xd.w, P = yd.h, Q = yd.w, kh = pd.kernel_h, kw = pd.kernel_w;
  // Columns [covered, W) and rows [rows_covered, H) lie in no window (floor-rounded shapes).
  const int covered = std::min(Q * kw, W), rows_covered = std::min(P * kh, H);
  const int64_t planes = int64_t(xd.n) * xd.c;
  const int tasks = int(std::max<int64_t>(1, std::min<int64_t>(threads, planes)));
  // Windows of width 2 that lie fully inside a row (LeNet's, VGG's) take an unrolled loop.
  const int pairs = kw == 2 ? std::min(Q, W / 2) : 0;
  parallel_for(tasks, [=](int t) {
    // int flags, not chars: a char store may alias anything and forces reloads in the loop.
    std::vector<int> taken(Q);
    std::vector<T> grad(Q);
    const int64_t begin = planes * t / tasks, end = planes * (t + 1) / tasks;
    for (int64_t plane = begin; plane < end; ++plane) {
      const T* xp = x + plane * H * W;
      const T* yp = y + plane * P * Q;
      const T* gy = dy + plane * P * Q;
      T* g = dx + plane * H * W;
      for (int p = 0; p < P; ++p) {
        const T* m = yp + p * Q;
        for (int q = 0; q < Q; ++q) grad[q] = alpha * gy[p * Q + q];
        std::fill(taken.begin(), taken.end(), 0);
        for (int i = p * kh; i < std::min((p + 1) * kh, H); ++i) {
          const T* xr = xp + int64_t(i) * W;
          T* gr = g + int64_t(i) * W;
          for (int q = 0; q < pairs; ++q) {
            const T mq = m[q], gq = grad[q];
            const bool done = taken[q];
            const bool hit0 = (xr[2 * q] == mq) & !done;
            const bool hit1 = (xr[2 * q + 1] == mq) & !done & !hit0;
            gr[2 * q] = keep_if(hit0, gq);
            gr[2 * q + 1] = keep_if(hit1, gq);
            taken[q] = done | hit0 | hit1;
          }
          for (int q = pairs; q < Q; ++q) {
            const T mq = m[q], gq = grad[q];
            bool done = taken[q];
            for (int col = q * kw; col < std::min((q + 1) * kw, W); ++col) {
              const bool hit = (xr[col] == mq) & !done;
              gr[col] = keep_if(hit, gq);
              done |= hit;
            }
            taken[q] = done;
          }
          std::fill(gr + covered, gr + W, T(0));
        }
      }
      std::fill(g + int64_t(rows_covered) * W, g + int64_t(H) * W, T(0));
    }
  });
}

template <typename T>
void bwd_impl(const PoolDesc& pd, const TensorDesc& yd, const T* y, const T* dy,
              const TensorDesc& xd, const T* x, T* dx, Blend blend, int threads) {
  const T alpha = T(blend.alpha), beta = T(blend.beta);
  const bool is_max = pd.mode == PoolMode::kMax;
  const std::vector<Span> hs = spans(xd.h, pd.kernel_h, pd.pad_h, pd.stride_h, yd.h);
  const std::vector<Span> ws = spans(xd.w, pd.kernel_w, pd.pad_w, pd.stride_w, yd.w);
  const int64_t xsh = xd.stride_h, xsw = xd.stride_w;
  const int tasks = std::max(1, std::min(threads, xd.n));
  parallel_for(tasks, [&](int t) {
    int n_begin, n_end;
    split_range(xd.n, tasks, t, &n_begin, &n_end);
    for (int n = n_begin; n < n_end; ++n) {
      for (int c = 0; c < xd.c; ++c) {
        T* g = dx + n * xd.stride_n + c * xd.stride_c;
        const T* xp = is_max ? x + n * xd.stride_n + c * xd.stride_c : nullptr;
        const T* yp = is_max ? y + n * yd.stride_n + c * yd.stride_c : nullptr;
        const T* gy = dy + n * yd.stride_n + c * yd.stride_c;
        // dx is accumulated into (windows overlap), so blend with beta first: 0 clears it without
        // reading, anything else scales it.
        if (beta == T(0)) {
          for (int i = 0; i < xd.h; ++i)
            for (int j = 0; j < xd.w; ++j) g[i * xsh + j * xsw] = T(0);
        } else if (beta != T(1)) {
          for (int i = 0; i < xd.h; ++i)
            for (int j = 0; j < xd.w; ++j) g[i * xsh + j * xsw] *= beta;
        }
        for (int p = 0; p < yd.h; ++p) {
          for (int q = 0; q < yd.w; ++q) {
            const Window win = window_of(pd, hs[p], ws[q]);
            if (win.h0 >= win.h1 || win.w0 >= win.w1) continue;  // empty: pooled to 0
            const int64_t yi = p * yd.stride_h + q * yd.stride_w;
            if (is_max) {
              // The argmax is the first input equal to the pooled maximum in row-major order. A
              // reverse scan with selects finds it without data-dependent branches.
              const T m = yp[yi];
              int64_t at = -1;
              for (int i = win.h1 - 1; i >= win.h0; --i)
                for (int j = win.w1 - 1; j >= win.w0; --j) {
                  const int64_t off = i * xsh + j * xsw;
                  at = xp[off] == m ? off : at;
                }
              if (at >= 0) g[at] += alpha * gy[yi];
            } else {
              const T v = alpha * gy[yi] / T(win.divisor);
              for (int i = win.h0; i < win.h1; ++i)
                for (int j = win.w0; j < win.w1; ++j) g[i * xsh + j * xsw] += v;
            }
          }
        }
      }
    }
  });
}

void run_direct(Handle& h, const PoolArgs& a) {
  const int threads = h.cpu_threads();
  visit_dtype(
      kFloatTypes, a.xd.dtype, a.forward() ? "pool_fwd" : "pool_bwd", Device::kCPU, [&](auto tag) {
        using T = typename decltype(tag)::type;
        if (a.forward())
          fwd_impl(a.pd, a.xd, static_cast<const T*>(a.x), a.yd, static_cast<T*>(a.out), a.blend,
                   threads);
        else
          bwd_impl(a.pd, a.yd, static_cast<const T*>(a.y), static_cast<const T*>(a.dy), a.xd,
                   static_cast<const T*>(a.x), static_cast<T*>(a.out), a.blend, threads);
      });
}

void run_disjoint(Handle& h, const PoolArgs& a) {
  const int threads = h.cpu_threads();
  visit_dtype(kFloatTypes, a.xd.dtype, "pool_bwd", Device::kCPU, [&](auto tag) {
    using T = typename decltype(tag)::type;
    bwd_max_disjoint(a.pd, a.yd, static_cast<const T*>(a.y), static_cast<const T*>(a.dy), a.xd,
                     static_cast<const T*>(a.x), static_cast<T*>(a.out), a.blend, threads);
  });
}

}  // namespace

const PoolImpl kPoolDisjoint{PoolAlgo::kDisjoint, Device::kCPU, disjoint_unsupported, nullptr,
                             run_disjoint};
const PoolImpl kPoolDirect{PoolAlgo::kDirect, Device::kCPU, nullptr, nullptr, run_direct};

}  // namespace crema::prim::cpu
