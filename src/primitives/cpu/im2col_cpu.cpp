// im2col / col2im for the CPU convolution. Each row of the patch matrix is one kernel tap
// (c, r, s); its valid output range is computed once, so the inner loops are plain copies (a
// short row copy per output row at stride 1) with zero-filled margins and no per-element branches.
#include "primitives/cpu/im2col_cpu.h"

#include <cstdint>
#include <cstring>

namespace crema::prim::cpu {

// dst[0, n) = src[0, n) for the short rows of a patch matrix (LeNet's conv2 has 8-element
// rows): fixed-size 32-byte moves, the last one overlapping, instead of a libc memcpy call per
// row, which cost more than the copy itself.
template <typename T>
inline void copy_row(T* dst, const T* src, int n) {
  constexpr int kBlock = 32 / sizeof(T);
  if (n >= kBlock) {
    int i = 0;
    for (; i + kBlock <= n; i += kBlock) std::memcpy(dst + i, src + i, 32);
    if (i < n) std::memcpy(dst + n - kBlock, src + n - kBlock, 32);
    return;
  }
  for (int i = 0; i < n; ++i) dst[i] = src[i];
}

template <typename T>
void im2col(const ConvGeom& g, const T* x, T* col, int64_t ld) {
  const int64_t pq = int64_t(g.p) * g.q;
  if (ld == 0) ld = pq;
  const int64_t hw = int64_t(g.h) * g.w;
  const std::vector<KernelTap> taps = kernel_taps(g);
  T* out = col;
  for (int c = 0; c < g.c; ++c) {
    const T* xc = x + c * hw;
    for (const KernelTap& t : taps) {
      const int n_valid = t.q_hi - t.q_lo;
      std::fill(out, out + int64_t(t.p_lo) * g.q, T(0));
      for (int p = t.p_lo; p < t.p_hi; ++p) {
        T* o = out + int64_t(p) * g.q;
        const T* src = xc + int64_t(p * g.stride_h + t.h_off) * g.w + t.q_lo * g.stride_w + t.w_off;
        std::fill(o, o + t.q_lo, T(0));
        if (g.stride_w == 1) {
          copy_row(o + t.q_lo, src, n_valid);
        } else {
          T* dst = o + t.q_lo;
          const int sw = g.stride_w;
          for (int i = 0; i < n_valid; ++i) dst[i] = src[i * sw];
        }
        std::fill(o + t.q_hi, o + g.q, T(0));
      }
      std::fill(out + int64_t(t.p_hi) * g.q, out + pq, T(0));
      out += ld;
    }
  }
}

template <typename T>
void col2im_add(const ConvGeom& g, const T* col, T* x, int64_t ld) {
  if (ld == 0) ld = int64_t(g.p) * g.q;
  const int64_t hw = int64_t(g.h) * g.w;
  const std::vector<KernelTap> taps = kernel_taps(g);
  const int sw = g.stride_w;
  const T* in = col;
  for (int c = 0; c < g.c; ++c) {
    T* xc = x + c * hw;
    for (const KernelTap& t : taps) {
      const int n_valid = t.q_hi - t.q_lo;
      for (int p = t.p_lo; p < t.p_hi; ++p) {
        const T* src = in + int64_t(p) * g.q + t.q_lo;
        T* dst = xc + int64_t(p * g.stride_h + t.h_off) * g.w + t.q_lo * sw + t.w_off;
        if (sw == 1) {
          for (int i = 0; i < n_valid; ++i) dst[i] += src[i];
        } else {
          for (int i = 0; i < n_valid; ++i) dst[i * sw] += src[i];
        }
      }
      in += ld;
    }
  }
}

template void im2col<float>(const ConvGeom&, const float*, float*, int64_t);
template void im2col<double>(const ConvGeom&, const double*, double*, int64_t);
template void col2im_add<float>(const ConvGeom&, const float*, float*, int64_t);
template void col2im_add<double>(const ConvGeom&, const double*, double*, int64_t);

}  // namespace crema::prim::cpu
