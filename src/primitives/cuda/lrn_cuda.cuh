// Internal to LRN's CUDA rows (lrn_cuda.cu, lrn_lanes_cuda.cu): loads in the math type, and a
// call's pointers and coefficients in its storage type.
#pragma once

#include <cstdint>
#include <type_traits>

#include "primitives/common/dtype_visit.h"
#include "primitives/common/lrn_impl.h"
#include "primitives/common/lrn_ops.h"
#include "primitives/cuda/cuda_util.cuh"

namespace crema::prim::cuda {
namespace {

// a * b rounded on its own, never fused into the following add: the CPU's running sums add
// rounded squares.
__device__ __forceinline__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul_rn(double a, double b) { return __dmul_rn(a, b); }

// The value at p (stored as S: f32, f64, bf16 or f16) in the math type T, through the read-only
// cache.
template <typename T, typename S>
__device__ __forceinline__ T ld(const S* p) {
  if constexpr (std::is_same_v<S, T>)
    return __ldg(p);
  else
    return T(load_as_float(S{__ldg(reinterpret_cast<const uint16_t*>(p))}));
}

// A call with its data stored as S, and in S's math type T the blend, k, and the window's
// coefficients a = alpha / N and c = 2 alpha beta / N (N: the window's cells, local_size across
// channels, its square within).
template <typename S, typename T = MathOf<S>>
struct Typed {
  using Math = T;
  const S* x;
  const S* y;
  const S* dy;
  S* out;
  T alpha, beta, k, a, c;
};

// Runs f(Typed<T>, neg_pow) for a's data type and beta (lrn_ops.h), then checks the launches.
template <typename F>
void typed(const LrnArgs& a, F&& f) {
  const char* op = a.forward ? "lrn_fwd" : "lrn_bwd";
  const LrnDesc& ld = a.ld;
  const double cells = a.across() ? ld.local_size : double(ld.local_size) * ld.local_size;
  visit_dtype(kAllTypes, a.xd.dtype, op, Device::kCUDA, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using T = MathOf<S>;
    const Typed<S> t{static_cast<const S*>(a.x),
                     static_cast<const S*>(a.y),
                     static_cast<const S*>(a.dy),
                     static_cast<S*>(a.out),
                     T(a.blend.alpha),
                     T(a.blend.beta),
                     T(ld.k),
                     T(ld.alpha / cells),
                     T(2 * ld.alpha * ld.beta / cells)};
    lrn_ops::visit_neg_pow<T>(ld.beta, [&](auto neg_pow) { f(t, neg_pow); });
  });
  check_launch(op);
}

// Calls f with std::integral_constant<int, r> for the kernels that hold a window in registers
// (0 <= r <= 3), or returns false.
template <typename F>
bool visit_radius(int r, F&& f) {
  switch (r) {
    case 0:
      f(std::integral_constant<int, 0>{});
      return true;
    case 1:
      f(std::integral_constant<int, 1>{});
      return true;
    case 2:
      f(std::integral_constant<int, 2>{});
      return true;
    case 3:
      f(std::integral_constant<int, 3>{});
      return true;
    default:
      return false;
  }
}

}  // namespace
}  // namespace crema::prim::cuda
