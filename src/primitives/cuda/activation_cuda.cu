// Activations on CUDA: one grid-stride kernel per mode functor (activation_ops.h, the same math
// as the CPU), instantiated by act_ops::visit. Tensors may be stored in bf16 or f16 (computed in
// fp32). Memory-bound: 2 * sizeof(T) bytes per element forward, 3-4 backward.
#include "primitives/activation.h"
#include "primitives/common/activation_ops.h"
#include "primitives/common/dtype_visit.h"
#include "primitives/cuda/cuda_util.cuh"

namespace crema::prim::cuda {
namespace {

template <typename T, typename Op, typename M = MathOf<T>>
__global__ void fwd_kernel(Op op, int64_t n, const T* x, T* y, M alpha, M beta) {
  CREMA_CUDA_LOOP(i, n) blend_store(y + i, op.fwd(M(load_as_float(x[i]))), alpha, beta);
}

template <typename T, typename Op, typename M = MathOf<T>>
__global__ void bwd_kernel(Op op, int64_t n, const T* y, const T* dy, const T* x, T* dx, M alpha,
                           M beta) {
  CREMA_CUDA_LOOP(i, n)
  blend_store(dx + i,
              op.bwd(M(load_as_float(x[i])), M(load_as_float(y[i])), M(load_as_float(dy[i]))),
              alpha, beta);
}

template <typename T>
void fwd(Handle& h, const ActDesc& ad, int64_t n, const T* x, T* y, Blend b) {
  using M = MathOf<T>;
  act_ops::visit<M>(ad, [&](auto op) {
    fwd_kernel<<<grid_for(n), kBlock, 0, stream_of(h)>>>(op, n, x, y, M(b.alpha), M(b.beta));
  });
  check_launch("act_fwd");
}

template <typename T>
void bwd(Handle& h, const ActDesc& ad, int64_t n, const T* y, const T* dy, const T* x, T* dx,
         Blend b) {
  using M = MathOf<T>;
  if (!x) x = dy;  // not read by this mode (act_bwd_reads_x); any valid pointer will do
  if (!y) y = dy;
  act_ops::visit<M>(ad, [&](auto op) {
    bwd_kernel<<<grid_for(n), kBlock, 0, stream_of(h)>>>(op, n, y, dy, x, dx, M(b.alpha),
                                                         M(b.beta));
  });
  check_launch("act_bwd");
}

}  // namespace

void act_fwd(Handle& h, const ActDesc& ad, const TensorDesc& xd, const void* x, const TensorDesc&,
             void* y, Blend blend) {
  visit_dtype(kAllTypes, xd.dtype, "act_fwd", Device::kCUDA, [&](auto tag) {
    using T = typename decltype(tag)::type;
    fwd(h, ad, xd.count(), static_cast<const T*>(x), static_cast<T*>(y), blend);
  });
}

void act_bwd(Handle& h, const ActDesc& ad, const TensorDesc&, const void* y, const void* dy,
             const TensorDesc& xd, const void* x, void* dx, Blend blend) {
  visit_dtype(kAllTypes, xd.dtype, "act_bwd", Device::kCUDA, [&](auto tag) {
    using T = typename decltype(tag)::type;
    bwd(h, ad, xd.count(), static_cast<const T*>(y), static_cast<const T*>(dy),
        static_cast<const T*>(x), static_cast<T*>(dx), blend);
  });
}

}  // namespace crema::prim::cuda
