// im2col / col2im primitives on CUDA: the batch kernels of im2col_cuda.cuh over the packed
// N x (C*R*S) x P x Q patch matrix. Memory-bound: im2col reads each x element R*S times (mostly
// from cache) and writes the patch matrix once (plus a read of it when beta != 0); col2im reads
// the patch matrix once and writes x once.
#include "primitives/common/dtype_visit.h"
#include "primitives/cuda/im2col_cuda.cuh"
#include "primitives/im2col.h"

namespace crema::prim::cuda {
namespace {

ConvGeom geom_of(const Im2colDesc& d, int p, int q) {
  return ConvGeom{d.c,        d.h,        d.w,          d.kernel_h,   d.kernel_w, d.pad_h, d.pad_w,
                  d.stride_h, d.stride_w, d.dilation_h, d.dilation_w, p,          q};
}

template <typename T>
void run(Handle& h, const Im2colDesc& d, const TensorDesc& cd, const void* in, void* out,
         Blend blend, bool forward) {
  const ConvGeom g = geom_of(d, cd.h, cd.w);
  const int64_t image = int64_t(d.c) * d.h * d.w;
  const int64_t pq = int64_t(cd.h) * cd.w;
  if (forward)
    launch_im2col(stream_of(h), g, d.n, static_cast<const T*>(in), image, static_cast<T*>(out),
                  cd.stride_n, pq, T(blend.alpha), T(blend.beta));
  else
    launch_col2im(stream_of(h), g, d.n, static_cast<const T*>(in), cd.stride_n, pq,
                  static_cast<T*>(out), image, T(blend.alpha), T(blend.beta));
}

}  // namespace

void im2col_run(Handle& h, const Im2colDesc& d, const TensorDesc& cd, const void* x, void* col,
                Blend blend) {
  visit_dtype(kFloatTypes, d.dtype, "im2col", Device::kCUDA,
              [&](auto tag) { run<typename decltype(tag)::type>(h, d, cd, x, col, blend, true); });
}

void col2im_run(Handle& h, const Im2colDesc& d, const TensorDesc& cd, const void* col, void* x,
                Blend blend) {
  visit_dtype(kFloatTypes, d.dtype, "col2im", Device::kCUDA,
              [&](auto tag) { run<typename decltype(tag)::type>(h, d, cd, col, x, blend, false); });
}

}  // namespace crema::prim::cuda
