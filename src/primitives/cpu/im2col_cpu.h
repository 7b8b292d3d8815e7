// Internal: the patch-matrix unfold (im2col) and its adjoint (col2im) of the CPU convolution,
// and the index-range helper shared with the direct loops. Only included by conv_cpu.cpp.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace crema::prim::cpu {

// Geometry of one image's convolution: input C x H x W (packed), kernel R x S, output P x Q.
struct ConvGeom {
  int c, h, w;
  int r, s;
  int pad_h, pad_w, stride_h, stride_w, dilation_h, dilation_w;
  int p, q;
};

// Output indices o in [0, count) whose input index o * stride + offset lies in [0, limit), as
// the half-open range [*lo, *hi). Computing it once per kernel tap (KernelTap) keeps bounds
// checks out of the inner loops.
inline void valid_range(int offset, int stride, int limit, int count, int* lo, int* hi) {
  int l = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  int u = limit - offset <= 0 ? 0 : (limit - offset + stride - 1) / stride;
  l = std::min(l, count);
  u = std::min(u, count);
  *lo = l;
  *hi = std::max(u, l);
}

// One kernel tap (r, s): output rows [p_lo, p_hi) and columns [q_lo, q_hi) read the input
// inside the image, at row p * stride_h + h_off and column q * stride_w + w_off.
struct KernelTap {
  int h_off, w_off;
  int p_lo, p_hi, q_lo, q_hi;
};

// The R * S taps of g in (r, s) order, so tap r * S + s is kernel position (r, s).
inline std::vector<KernelTap> kernel_taps(const ConvGeom& g) {
  std::vector<KernelTap> taps;
  taps.reserve(size_t(g.r) * g.s);
  for (int r = 0; r < g.r; ++r) {
    for (int s = 0; s < g.s; ++s) {
      KernelTap t;
      t.h_off = r * g.dilation_h - g.pad_h;
      t.w_off = s * g.dilation_w - g.pad_w;
      valid_range(t.h_off, g.stride_h, g.h, g.p, &t.p_lo, &t.p_hi);
      valid_range(t.w_off, g.stride_w, g.w, g.q, &t.q_lo, &t.q_hi);
      taps.push_back(t);
    }
  }
  return taps;
}

// col[(c*R + r)*S + s][p*Q + q] = x[c][p*sh - ph + r*dh][q*sw - pw + s*dw], 0 outside the input.
// ld is the row stride of col: 0 means P*Q (one image); B*P*Q when B images sit side by side so
// that one GEMM covers the whole chunk.
template <typename T>
void im2col(const ConvGeom& g, const T* x, T* col, int64_t ld = 0);

// x[c][h][w] += the col entries im2col would have read from it (the transpose of im2col).
template <typename T>
void col2im_add(const ConvGeom& g, const T* col, T* x, int64_t ld = 0);

// How the CPU convolution splits a batch: `threads` workers each take a contiguous share of the
// images and run im2col + GEMM over chunks of `chunk` images in their own workspace slice. The
// patch matrix (C*R*S rows) and the output-side matrix (K rows) of a chunk sit side by side, so
// one GEMM covers the chunk: images with small output planes get a wider GEMM. A chunk is capped
// at kConvChunkBytes so that im2col's output is still in the core's L2 cache when the GEMM packs
// it: on LeNet, chunks of 32 images (4.5 MB) made the conv layers ~1.4x slower than chunks of one
// image (a 50x64x500 GEMM for conv2). Backward filter sums per-thread partial gradients
// (`filter` elements each) in a fixed order, so results do not depend on timing.
struct ConvCpuPlan {
  int threads = 1;
  int chunk = 1;          // images per GEMM
  size_t per_thread = 0;  // workspace elements of one thread's chunk matrices
  size_t filter = 0;      // elements of one partial filter gradient
  size_t total_elems() const { return size_t(threads) * (per_thread + filter); }
};

inline constexpr size_t kConvChunkBytes = size_t(128) << 10;  // per thread

inline ConvCpuPlan plan_conv_cpu(const ConvGeom& g, int batch, int k, int64_t filter_count,
                                 size_t elem_size, size_t budget, int threads, bool im2col) {
  ConvCpuPlan plan;
  plan.threads = std::max(1, std::min(threads, batch));
  plan.filter = plan.threads > 1 ? size_t(filter_count) : 0;
  if (!im2col) return plan;
  const int share = (batch + plan.threads - 1) / plan.threads;
  const size_t per_image = (size_t(g.c) * g.r * g.s + size_t(k)) * size_t(g.p) * g.q * elem_size;
  const size_t target = std::min(budget / plan.threads, kConvChunkBytes);
  const size_t fit = per_image ? target / per_image : size_t(share);
  plan.chunk = int(std::clamp<size_t>(fit, 1, size_t(std::max(share, 1))));
  plan.per_thread = (size_t(g.c) * g.r * g.s + size_t(k)) * size_t(g.p) * g.q * size_t(plan.chunk);
  return plan;
}

}  // namespace crema::prim::cpu
