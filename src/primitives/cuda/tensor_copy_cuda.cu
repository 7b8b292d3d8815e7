// tensor_copy on CUDA: the views are coalesced as on the CPU (tensor_copy_ops.h), then one
// grid-stride kernel maps each flat index of the common sizes to its x and y offsets (last axis
// fastest, so adjacent threads touch adjacent elements where the views are contiguous). 32-bit
// index math where the count allows. A packed copy with alpha 1, beta 0 between equal types is a
// cudaMemcpyAsync. Between storage types the blend runs in fp32 (fp64 when a side is f64).
// Memory-bound: sizeof(X) + sizeof(Y) bytes per element (plus sizeof(Y) with beta != 0).
#include <type_traits>

#include "primitives/common/dtype_visit.h"
#include "primitives/common/tensor_copy_ops.h"
#include "primitives/cuda/cuda_util.cuh"
#include "primitives/tensor_copy.h"

namespace crema::prim::cuda {
namespace {

template <typename I>
struct Geometry {
  int rank;
  I size[ViewDesc::kMaxDims];
  int64_t sx[ViewDesc::kMaxDims], sy[ViewDesc::kMaxDims];
};

// y = alpha * x + beta * y in M (fp32, or fp64 when a side is f64), rounded to Y.
template <typename X, typename Y, typename M>
__device__ __forceinline__ void convert_blend_store(Y* out, X x, M alpha, M beta) {
  const M v = alpha * M(load_as_float(x));
  *out = store_from_float<Y>(beta == M(0) ? v : v + beta * M(load_as_float(*out)));
}

template <typename X, typename Y, typename M, typename I>
__global__ void copy_kernel(Geometry<I> g, I n, const X* x, Y* y, M alpha, M beta) {
  for (I i = I(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += I(blockDim.x) * gridDim.x) {
    I r = i;
    int64_t ox = 0, oy = 0;
#pragma unroll
    for (int d = ViewDesc::kMaxDims - 1; d >= 0; --d) {
      if (d >= g.rank) continue;
      const I q = d > 0 ? r / g.size[d] : I(0);
      const I at = r - q * g.size[d];
      ox += int64_t(at) * g.sx[d];
      oy += int64_t(at) * g.sy[d];
      r = q;
    }
    convert_blend_store(y + oy, x[ox], alpha, beta);
  }
}

template <typename X, typename Y, typename I>
void launch(Handle& h, const copy_ops::Coalesced& c, int64_t n, const X* x, Y* y, Blend b) {
  using M = BlendMath<X, Y>;
  Geometry<I> g{};
  g.rank = c.rank;
  for (int d = 0; d < c.rank; ++d) {
    g.size[d] = I(c.size[d]);
    g.sx[d] = c.sx[d];
    g.sy[d] = c.sy[d];
  }
  copy_kernel<X, Y, M, I>
      <<<grid_for(n), kBlock, 0, stream_of(h)>>>(g, I(n), x, y, M(b.alpha), M(b.beta));
  check_launch("tensor_copy");
}

template <typename X, typename Y>
void copy(Handle& h, const ViewDesc& xd, const void* xv, const ViewDesc& yd, void* yv, Blend b) {
  const copy_ops::Coalesced c = copy_ops::coalesce(xd, yd);
  const X* x = static_cast<const X*>(xv);
  Y* y = static_cast<Y*>(yv);
  const int64_t n = xd.count();
  if (std::is_same_v<X, Y> && c.rank == 1 && c.sx[0] == 1 && c.sy[0] == 1 && b.alpha == 1 &&
      b.beta == 0) {
    check_cuda(cudaMemcpyAsync(y, x, size_t(n) * sizeof(X), cudaMemcpyDeviceToDevice, stream_of(h)),
               "tensor_copy");
    return;
  }
  if (n < (int64_t(1) << 31))  // i + grid stride stays below 2^32
    launch<X, Y, uint32_t>(h, c, n, x, y, b);
  else
    launch<X, Y, uint64_t>(h, c, n, x, y, b);
}

}  // namespace

void tensor_copy(Handle& h, const ViewDesc& xd, const void* x, const ViewDesc& yd, void* y,
                 Blend blend) {
  visit_dtype(kAllTypes, xd.dtype, "tensor_copy", Device::kCUDA, [&](auto xt) {
    visit_dtype(kAllTypes, yd.dtype, "tensor_copy", Device::kCUDA, [&](auto yt) {
      copy<typename decltype(xt)::type, typename decltype(yt)::type>(h, xd, x, yd, y, blend);
    });
  });
}

}  // namespace crema::prim::cuda
