// im2col / col2im primitives: geometry validation, the one device dispatcher, and the CPU batch
// loop over the per-image routines of im2col_cpu.h (shared with the CPU convolution). The CUDA
// bodies live in im2col_cuda.cu.
#include "primitives/im2col.h"

#include <algorithm>
#include <string>

#include "primitives/common/dispatch.h"
#include "primitives/common/dtype_visit.h"
#include "primitives/conv.h"
#include "primitives/cpu/im2col_cpu.h"

namespace crema::prim {
namespace cpu {
namespace {

ConvGeom geom_of(const Im2colDesc& d, int p, int q) {
  return ConvGeom{d.c,        d.h,        d.w,          d.kernel_h,   d.kernel_w, d.pad_h, d.pad_w,
                  d.stride_h, d.stride_w, d.dilation_h, d.dilation_w, p,          q};
}

// col = alpha * im2col(x) + beta * col, one image at a time; a scratch image-sized column
// buffer is only needed when blending.
template <typename T>
void im2col_batch(Handle& h, const Im2colDesc& d, const TensorDesc& cd, const T* x, T* col,
                  Blend blend) {
  const ConvGeom g = geom_of(d, cd.h, cd.w);
  const int64_t in_img = int64_t(d.c) * d.h * d.w, col_img = cd.stride_n;
  const bool plain = blend.alpha == 1.0 && blend.beta == 0.0;
  T* tmp = plain ? nullptr : static_cast<T*>(h.workspace(size_t(col_img) * sizeof(T)));
  for (int n = 0; n < d.n; ++n) {
    T* out = col + n * col_img;
    if (plain) {
      im2col(g, x + n * in_img, out);
      continue;
    }
    im2col(g, x + n * in_img, tmp);
    const T a = T(blend.alpha), b = T(blend.beta);
    for (int64_t i = 0; i < col_img; ++i) out[i] = a * tmp[i] + (b == T(0) ? T(0) : b * out[i]);
  }
}

// x = alpha * col2im(col) + beta * x: the adjoint accumulates, so x is first scaled by beta
// (cleared without reading when beta == 0) and alpha folds into a scaled copy of col.
template <typename T>
void col2im_batch(Handle& h, const Im2colDesc& d, const TensorDesc& cd, const T* col, T* x,
                  Blend blend) {
  const ConvGeom g = geom_of(d, cd.h, cd.w);
  const int64_t in_img = int64_t(d.c) * d.h * d.w, col_img = cd.stride_n;
  const T a = T(blend.alpha), b = T(blend.beta);
  T* tmp = a == T(1) ? nullptr : static_cast<T*>(h.workspace(size_t(col_img) * sizeof(T)));
  for (int n = 0; n < d.n; ++n) {
    T* xi = x + n * in_img;
    if (b == T(0))
      std::fill(xi, xi + in_img, T(0));
    else if (b != T(1))
      for (int64_t i = 0; i < in_img; ++i) xi[i] *= b;
    const T* src = col + n * col_img;
    if (tmp) {
      for (int64_t i = 0; i < col_img; ++i) tmp[i] = a * src[i];
      src = tmp;
    }
    col2im_add(g, src, xi);
  }
}

}  // namespace

void im2col_run(Handle& h, const Im2colDesc& d, const TensorDesc& cd, const void* x, void* col,
                Blend blend) {
  visit_dtype(kFloatTypes, d.dtype, "im2col", h.device(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    im2col_batch(h, d, cd, static_cast<const T*>(x), static_cast<T*>(col), blend);
  });
}

void col2im_run(Handle& h, const Im2colDesc& d, const TensorDesc& cd, const void* col, void* x,
                Blend blend) {
  visit_dtype(kFloatTypes, d.dtype, "col2im", h.device(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    col2im_batch(h, d, cd, static_cast<const T*>(col), static_cast<T*>(x), blend);
  });
}

}  // namespace cpu

// Defined in im2col_cuda.cu with the signatures of the CPU ones above.
namespace cuda {
void im2col_run(Handle& h, const Im2colDesc& d, const TensorDesc& cd, const void* x, void* col,
                Blend blend);
void col2im_run(Handle& h, const Im2colDesc& d, const TensorDesc& cd, const void* col, void* x,
                Blend blend);
}  // namespace cuda

namespace {

[[noreturn]] void fail(const std::string& why) { throw PrimError(why); }

void check(const char* op, const void* a, const void* b) {
  if (!a || !b) fail(std::string(op) + ": null data pointer");
}

}  // namespace

TensorDesc im2col_col_desc(const Im2colDesc& d) {
  if (d.n < 1 || d.c < 1 || d.h < 1 || d.w < 1)
    fail("im2col: empty input " + std::to_string(d.n) + "x" + std::to_string(d.c) + "x" +
         std::to_string(d.h) + "x" + std::to_string(d.w));
  const int p = conv_out_dim(d.h, d.kernel_h, d.pad_h, d.stride_h, d.dilation_h);
  const int q = conv_out_dim(d.w, d.kernel_w, d.pad_w, d.stride_w, d.dilation_w);
  const int64_t rows = int64_t(d.c) * d.kernel_h * d.kernel_w;
  if (rows > int64_t(1) << 30) fail("im2col: too many patch rows (" + std::to_string(rows) + ")");
  return TensorDesc::nchw(d.dtype, d.n, int(rows), p, q);
}

void im2col(Handle& h, const Im2colDesc& d, const void* x, void* col, Blend blend) {
  const TensorDesc cd = im2col_col_desc(d);
  check("im2col", x, col);
  CREMA_DISPATCH(h, im2col_run, h, d, cd, x, col, blend);
}

void col2im(Handle& h, const Im2colDesc& d, const void* col, void* x, Blend blend) {
  const TensorDesc cd = im2col_col_desc(d);
  check("col2im", col, x);
  CREMA_DISPATCH(h, col2im_run, h, d, cd, col, x, blend);
}

}  // namespace crema::prim
