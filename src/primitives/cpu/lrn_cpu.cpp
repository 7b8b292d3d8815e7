// Local Response Normalization on the CPU. Across channels, the window energy is a running sum
// over channels kept for a whole H*W plane at once (add the channel entering the window, subtract
// the one leaving), so every inner loop is a contiguous, vectorizable pass over the plane. Within
// a channel, the n x n window sum is separable: a horizontal then a vertical clipped box sum.
// Scratch rows and planes come from the Handle workspace.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "primitives/common/dtype_visit.h"
#include "primitives/common/lrn_impl.h"
#include "primitives/common/lrn_ops.h"
#include "primitives/cpu/cpu_blend.h"

namespace crema::prim::cpu {
namespace {

// Calls f with a functor s -> s^-beta (lrn_ops.h). GCC vectorizes sqrt only under
// -fno-math-errno (otherwise each call keeps its errno path).
template <typename T, typename F>
void with_neg_pow(double beta, F&& f) {
  lrn_ops::visit_neg_pow<T>(beta, f);
}

template <typename T>
inline void add_row(int64_t n, const T* src, T* acc) {
  for (int64_t i = 0; i < n; ++i) acc[i] += src[i];
}

// acc[i] += sign * f(src[i]), f the square (kSquare) or the identity. A template flag rather
// than a function argument, so the loop is inlined and vectorized.
template <bool kSquare, typename T>
inline void accumulate(int64_t n, T sign, const T* src, T* acc) {
  for (int64_t i = 0; i < n; ++i) acc[i] += sign * (kSquare ? src[i] * src[i] : src[i]);
}

// Slides a window of 2r+1 channels over C planes of hw values: acc starts as the sum of f over
// channels [0, r] (what channel 0 sees), and after visit(c) becomes channel c+1's window sum:
// the channel entering is added, the one leaving subtracted. Channels outside [0, C) are zeros.
template <bool kSquare, typename T, typename Visit>
void slide_channels(int C, int r, int64_t hw, const T* src, T* acc, Visit visit) {
  std::fill(acc, acc + hw, T(0));
  for (int c = 0; c <= std::min(r, C - 1); ++c) accumulate<kSquare>(hw, T(1), src + c * hw, acc);
  for (int c = 0; c < C; ++c) {
    visit(c);
    if (c + r + 1 < C) accumulate<kSquare>(hw, T(1), src + (c + r + 1) * hw, acc);
    if (c - r >= 0) accumulate<kSquare>(hw, T(-1), src + (c - r) * hw, acc);
  }
}

// out = sum of in over the (2r+1) x (2r+1) window of each pixel, clipped to the H x W plane.
// Separable: rows into tmp, then columns of tmp into out; each pass is contiguous over w.
template <typename T>
void box_sum(int H, int W, int r, const T* in, T* tmp, T* out) {
  for (int y = 0; y < H; ++y) {
    const T* src = in + int64_t(y) * W;
    T* dst = tmp + int64_t(y) * W;
    std::fill(dst, dst + W, T(0));
    for (int d = -r; d <= r; ++d) {
      const int lo = std::max(0, -d), hi = std::min(W, W - d);
      for (int x = lo; x < hi; ++x) dst[x] += src[x + d];
    }
  }
  for (int y = 0; y < H; ++y) {
    T* dst = out + int64_t(y) * W;
    std::fill(dst, dst + W, T(0));
    for (int yy = std::max(0, y - r); yy <= std::min(H - 1, y + r); ++yy)
      add_row(W, tmp + int64_t(yy) * W, dst);
  }
}

template <typename T>
T* scratch(Handle& h, int64_t elements) {
  return static_cast<T*>(h.workspace(size_t(elements) * sizeof(T)));
}

// ---- across channels ---------------------------------------------------------------------

template <typename T>
void across_fwd(Handle& h, const LrnDesc& ld, const TensorDesc& d, const T* x, T* y, Blend blend) {
  const int C = d.c, r = ld.local_size / 2;
  const int64_t hw = int64_t(d.h) * d.w, image = C * hw;
  const T k = T(ld.k), a = T(ld.alpha / ld.local_size);
  T* acc = scratch<T>(h, hw);
  with_neg_pow<T>(ld.beta, [&](auto neg_pow) {
    for (int n = 0; n < d.n; ++n) {
      const T* xn = x + n * image;
      T* yn = y + n * image;
      slide_channels<true>(C, r, hw, xn, acc, [&](int c) {
        const T* xc = xn + c * hw;
        blend_row(hw, blend, yn + c * hw,
                  [&](int64_t i) { return xc[i] * neg_pow(lrn_ops::scale_of(k, a, acc[i])); });
      });
    }
  });
}

// Two passes per image: the first stores scale^-beta (P) and dy * y / scale (R) for every
// channel, the second slides the channel window over R and writes dx.
template <typename T>
void across_bwd(Handle& h, const LrnDesc& ld, const TensorDesc& d, const T* y, const T* dy,
                const T* x, T* dx, Blend blend) {
  const int C = d.c, r = ld.local_size / 2;
  const int64_t hw = int64_t(d.h) * d.w, image = C * hw;
  const T k = T(ld.k), a = T(ld.alpha / ld.local_size);
  const T cc = T(2 * ld.alpha * ld.beta / ld.local_size);
  T* acc = scratch<T>(h, 2 * image + hw);
  T* P = acc + hw;
  T* R = P + image;
  with_neg_pow<T>(ld.beta, [&](auto neg_pow) {
    for (int n = 0; n < d.n; ++n) {
      const int64_t off = n * image;
      slide_channels<true>(C, r, hw, x + off, acc, [&](int c) {
        const int64_t o = off + c * hw;
        T* Pc = P + c * hw;
        T* Rc = R + c * hw;
        for (int64_t i = 0; i < hw; ++i) {
          const T s = lrn_ops::scale_of(k, a, acc[i]);
          Pc[i] = neg_pow(s);
          Rc[i] = dy[o + i] * y[o + i] / s;
        }
      });
      slide_channels<false>(C, r, hw, static_cast<const T*>(R), acc, [&](int c) {
        const int64_t o = off + c * hw;
        const T* Pc = P + c * hw;
        blend_row(hw, blend, dx + o,
                  [&](int64_t i) { return dy[o + i] * Pc[i] - cc * x[o + i] * acc[i]; });
      });
    }
  });
}

// ---- within a channel --------------------------------------------------------------------

template <typename T>
void within_fwd(Handle& h, const LrnDesc& ld, const TensorDesc& d, const T* x, T* y, Blend blend) {
  const int r = ld.local_size / 2;
  const int64_t hw = int64_t(d.h) * d.w, planes = int64_t(d.n) * d.c;
  const T k = T(ld.k), a = T(ld.alpha / (double(ld.local_size) * ld.local_size));
  T* sq = scratch<T>(h, 3 * hw);
  T* tmp = sq + hw;
  T* S = tmp + hw;
  with_neg_pow<T>(ld.beta, [&](auto neg_pow) {
    for (int64_t p = 0; p < planes; ++p) {
      const T* xp = x + p * hw;
      for (int64_t i = 0; i < hw; ++i) sq[i] = xp[i] * xp[i];
      box_sum(d.h, d.w, r, static_cast<const T*>(sq), tmp, S);
      blend_row(hw, blend, y + p * hw, [&](int64_t i) { return xp[i] * neg_pow(k + a * S[i]); });
    }
  });
}

template <typename T>
void within_bwd(Handle& h, const LrnDesc& ld, const TensorDesc& d, const T* y, const T* dy,
                const T* x, T* dx, Blend blend) {
  const int r = ld.local_size / 2;
  const int64_t hw = int64_t(d.h) * d.w, planes = int64_t(d.n) * d.c;
  const double nn = double(ld.local_size) * ld.local_size;
  const T k = T(ld.k), a = T(ld.alpha / nn), cc = T(2 * ld.alpha * ld.beta / nn);
  T* A = scratch<T>(h, 4 * hw);  // x^2, then dy * y / scale
  T* tmp = A + hw;
  T* S = tmp + hw;  // window sum of A
  T* P = S + hw;    // scale^-beta
  with_neg_pow<T>(ld.beta, [&](auto neg_pow) {
    for (int64_t p = 0; p < planes; ++p) {
      const int64_t o = p * hw;
      for (int64_t i = 0; i < hw; ++i) A[i] = x[o + i] * x[o + i];
      box_sum(d.h, d.w, r, static_cast<const T*>(A), tmp, S);
      for (int64_t i = 0; i < hw; ++i) {
        const T s = k + a * S[i];
        P[i] = neg_pow(s);
        A[i] = dy[o + i] * y[o + i] / s;
      }
      box_sum(d.h, d.w, r, static_cast<const T*>(A), tmp, S);
      blend_row(hw, blend, dx + o,
                [&](int64_t i) { return dy[o + i] * P[i] - cc * x[o + i] * S[i]; });
    }
  });
}

template <typename F>
void typed(const LrnArgs& a, F&& f) {
  visit_dtype(kFloatTypes, a.xd.dtype, a.forward ? "lrn_fwd" : "lrn_bwd", Device::kCPU,
              [&](auto tag) { f(tag); });
}

void run_across(Handle& h, const LrnArgs& a) {
  typed(a, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (a.forward)
      across_fwd(h, a.ld, a.xd, static_cast<const T*>(a.x), static_cast<T*>(a.out), a.blend);
    else
      across_bwd(h, a.ld, a.xd, static_cast<const T*>(a.y), static_cast<const T*>(a.dy),
                 static_cast<const T*>(a.x), static_cast<T*>(a.out), a.blend);
  });
}

void run_within(Handle& h, const LrnArgs& a) {
  typed(a, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (a.forward)
      within_fwd(h, a.ld, a.xd, static_cast<const T*>(a.x), static_cast<T*>(a.out), a.blend);
    else
      within_bwd(h, a.ld, a.xd, static_cast<const T*>(a.y), static_cast<const T*>(a.dy),
                 static_cast<const T*>(a.x), static_cast<T*>(a.out), a.blend);
  });
}

}  // namespace

const LrnImpl kLrnAcross{LrnAlgo::kAcross, Device::kCPU, lrn_across_only, nullptr, run_across};
const LrnImpl kLrnWithin{LrnAlgo::kWithin, Device::kCPU, lrn_within_only, nullptr, run_within};

}  // namespace crema::prim::cpu
