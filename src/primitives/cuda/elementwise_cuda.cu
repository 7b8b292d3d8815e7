// The element-wise primitive on CUDA: one grid-stride kernel. Memory-bound: 8 bytes per f32
// element.
#include "primitives/common/dtype_visit.h"
#include "primitives/cuda/cuda_util.cuh"
#include "primitives/elementwise.h"

namespace crema::prim::cuda {
namespace {

template <typename T>
__global__ void add_scalar_kernel(int64_t n, T alpha, T* y) {
  CREMA_CUDA_LOOP(i, n) y[i] += alpha;
}

}  // namespace

void elt_add_scalar(Handle& h, DataType t, int64_t n, double alpha, void* y) {
  visit_dtype(kFloatTypes, t, "elt_add_scalar", Device::kCUDA, [&](auto tag) {
    using T = typename decltype(tag)::type;
    add_scalar_kernel<<<grid_for(n), kBlock, 0, stream_of(h)>>>(n, T(alpha), static_cast<T*>(y));
    check_launch("add_scalar_kernel");
  });
}

}  // namespace crema::prim::cuda
