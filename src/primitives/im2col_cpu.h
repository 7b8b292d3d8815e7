// Internal: the patch-matrix unfold (im2col) and its adjoint (col2im) of the CPU convolution,
// and the index-range helper shared with the direct loops. Only included by conv_cpu.cpp.
#pragma once

#include <algorithm>

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
template <typename T>
void im2col(const ConvGeom& g, const T* x, T* col);

// x[c][h][w] += the col entries im2col would have read from it (the transpose of im2col).
template <typename T>
void col2im_add(const ConvGeom& g, const T* col, T* x);

}  // namespace crema::prim::cpu
