// CPU implementation of tensor_copy: the views are first coalesced (tensor_copy_ops.h) so a
// Concat of packed tensors becomes a few long rows; each row is then one memcpy or one
// vectorizable loop (a conversion between storage types: one loop through fp32).
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "primitives/common/dtype_visit.h"
#include "primitives/common/tensor_copy_ops.h"
#include "primitives/handle.h"
#include "primitives/types.h"
#include "primitives/view.h"

namespace crema::prim::cpu {
namespace {

using copy_ops::coalesce;
using copy_ops::Coalesced;

template <typename T>
void copy_row(const T* x, int64_t ix, T* y, int64_t iy, int64_t n, T a, T b) {
  if (b == T(0)) {
    if (a == T(1) && ix == 1 && iy == 1) {
      std::memcpy(y, x, size_t(n) * sizeof(T));
    } else if (ix == 1 && iy == 1) {
      for (int64_t i = 0; i < n; ++i) y[i] = a * x[i];
    } else {
      for (int64_t i = 0; i < n; ++i) y[i * iy] = a * x[i * ix];
    }
  } else if (b == T(1)) {
    if (ix == 1 && iy == 1) {
      for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
    } else {
      for (int64_t i = 0; i < n; ++i) y[i * iy] += a * x[i * ix];
    }
  } else {
    for (int64_t i = 0; i < n; ++i) y[i * iy] = a * x[i * ix] + b * y[i * iy];
  }
}

// Between storage types: through M (fp32, or fp64 when a side is f64).
template <typename X, typename Y>
void convert_row(const X* x, int64_t ix, Y* y, int64_t iy, int64_t n, double a, double b) {
  using M = BlendMath<X, Y>;
  const M ma = M(a), mb = M(b);
  for (int64_t i = 0; i < n; ++i) {
    const M v = ma * M(load_as_float(x[i * ix]));
    y[i * iy] = store_from_float<Y>(mb == M(0) ? v : v + mb * M(load_as_float(y[i * iy])));
  }
}

template <typename X, typename Y>
void copy_impl(const ViewDesc& xd, const void* xv, const ViewDesc& yd, void* yv, Blend blend) {
  const Coalesced c = coalesce(xd, yd);
  const X* x = static_cast<const X*>(xv);
  Y* y = static_cast<Y*>(yv);
  const int last = c.rank - 1;
  int64_t rows = 1;
  for (int d = 0; d < last; ++d) rows *= c.size[d];
  int64_t idx[ViewDesc::kMaxDims] = {};
  int64_t ox = 0, oy = 0;
  for (int64_t r = 0; r < rows; ++r) {
    if constexpr (std::is_same_v<X, Y> && !std::is_same_v<X, bf16_t> && !std::is_same_v<X, f16_t>)
      copy_row(x + ox, c.sx[last], y + oy, c.sy[last], c.size[last], X(blend.alpha), X(blend.beta));
    else
      convert_row(x + ox, c.sx[last], y + oy, c.sy[last], c.size[last], blend.alpha, blend.beta);
    // Odometer over the outer axes, last one fastest.
    for (int d = last - 1; d >= 0; --d) {
      ox += c.sx[d];
      oy += c.sy[d];
      if (++idx[d] < c.size[d]) break;
      ox -= c.sx[d] * c.size[d];
      oy -= c.sy[d] * c.size[d];
      idx[d] = 0;
    }
  }
}

}  // namespace

void tensor_copy(Handle&, const ViewDesc& xd, const void* x, const ViewDesc& yd, void* y,
                 Blend blend) {
  visit_dtype(kAllTypes, xd.dtype, "tensor_copy", Device::kCPU, [&](auto xt) {
    visit_dtype(kAllTypes, yd.dtype, "tensor_copy", Device::kCPU, [&](auto yt) {
      copy_impl<typename decltype(xt)::type, typename decltype(yt)::type>(xd, x, yd, y, blend);
    });
  });
}

}  // namespace crema::prim::cpu
