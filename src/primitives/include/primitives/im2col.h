// im2col / col2im as primitives: the patch matrix of a 2-d convolution (Caffe's Im2col layer)
// and its adjoint, for a batch of packed N x C x H x W images.
//
//   col[n, (c*R + r)*S + s, p, q] = x[n, c, p*sh - ph + r*dh, q*sw - pw + s*dw]  (0 outside x)
//   P = (H + 2*ph - dh*(R-1) - 1) / sh + 1, likewise Q; col is packed N x (C*R*S) x P x Q.
//   col2im is the transpose: dx[n, c, i, j] = sum of the dcol entries im2col read from (i, j).
// Both blend: out = alpha * op + beta * out (beta == 0 never reads out).
#pragma once

#include <cstdint>

#include "primitives/handle.h"
#include "primitives/types.h"

namespace crema::prim {

struct Im2colDesc {
  DataType dtype = DataType::kFloat32;
  int n = 1, c = 1, h = 1, w = 1;  // the image batch, packed NCHW
  int kernel_h = 1, kernel_w = 1;
  int pad_h = 0, pad_w = 0;
  int stride_h = 1, stride_w = 1;
  int dilation_h = 1, dilation_w = 1;
};

// The packed col shape N x (C*R*S) x P x Q; throws PrimError for an invalid geometry (the
// dilated kernel larger than the padded input, non-positive sizes).
TensorDesc im2col_col_desc(const Im2colDesc& d);

void im2col(Handle& h, const Im2colDesc& d, const void* x, void* col, Blend blend = {});
void col2im(Handle& h, const Im2colDesc& d, const void* col, void* x, Blend blend = {});

}  // namespace crema::prim
