// Internal: the patch-matrix unfold (im2col) and its adjoint (col2im) of the CPU convolution,
// and the index-range helper shared with the direct loops. Only included by conv_cpu.cpp.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace crema::prim::cpu {

// Geometry of one image's convolution: input C x H x W (packed), kernel R x S, output P x Q.
struct ConvGeom {
  int c, h, w;
  int r, s;
  int pad_h, pad_w, stride_h, stride_w, dilation_h, dilation_w;
  int p, q;
};

// Output indices o in [0, count) whose input index o * stride + offset lies in [0, limit), as
// the half-open range [*lo, *hi). Computing it once per kernel tap keeps bounds checks out of
// the inner loops.
inline void valid_range(int offset, int stride, int limit, int count, int* lo, int* hi) {
  int l = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  int u = limit - offset <= 0 ? 0 : (limit - offset + stride - 1) / stride;
  l = std::min(l, count);
  u = std::min(u, count);
  *lo = l;
  *hi = std::max(u, l);
}

// col[(c*R + r)*S + s][p*Q + q] = x[c][p*sh - ph + r*dh][q*sw - pw + s*dw], 0 outside the input.
// ld is the row stride of col: 0 means P*Q (one image); B*P*Q when B images sit side by side so
// that one GEMM covers the whole chunk.
template <typename T>
void im2col(const ConvGeom& g, const T* x, T* col, int64_t ld = 0);

// x[c][h][w] += the col entries im2col would have read from it (the transpose of im2col).
template <typename T>
void col2im_add(const ConvGeom& g, const T* col, T* x, int64_t ld = 0);

// Images per im2col chunk: as many as fit the workspace budget holding the patch matrix
// (C*R*S rows) and the output-side matrix (K rows) of B*P*Q columns each. Wide GEMMs over a
// chunk run near the BLAS peak where one small GEMM per image (LeNet's conv2: 50x64x500) does
// not.
inline int im2col_chunk(const ConvGeom& g, int batch, int k, size_t elem_size, size_t budget) {
  const size_t per_image = (size_t(g.c) * g.r * g.s + size_t(k)) * size_t(g.p) * g.q * elem_size;
  const size_t fit = per_image ? budget / per_image : size_t(batch);
  return int(std::clamp<size_t>(fit, 1, size_t(std::max(batch, 1))));
}

// Workspace elements of a chunk of B images.
inline size_t im2col_workspace_elems(const ConvGeom& g, int chunk, int k) {
  return (size_t(g.c) * g.r * g.s + size_t(k)) * size_t(g.p) * g.q * size_t(chunk);
}

}  // namespace crema::prim::cpu
