// CPU implementation of the reductions: an odometer over the kept axes, and for each output
// element an odometer over the reduced axes accumulating in double. The backward walks every
// input element once with dy's strides zeroed on the reduced axes (a broadcast read).
#include <cmath>
#include <cstdint>

#include "primitives/common/dtype_visit.h"
#include "primitives/common/reduce_ops.h"

namespace crema::prim::cpu {
namespace {

// Calls f(offset0, offset1, offset2) for every index of w, as an odometer.
template <typename F>
void walk(const ReduceAxes& w, F&& f) {
  const int64_t n = w.count();
  int64_t idx[ViewDesc::kMaxDims] = {};
  int64_t o[3] = {0, 0, 0};
  for (int64_t k = 0; k < n; ++k) {
    f(o[0], o[1], o[2]);
    for (int d = w.rank - 1; d >= 0; --d) {
      for (int j = 0; j < 3; ++j) o[j] += w.s[j][d];
      if (++idx[d] < w.size[d]) break;
      for (int j = 0; j < 3; ++j) o[j] -= w.s[j][d] * w.size[d];
      idx[d] = 0;
    }
  }
}

template <typename T>
void fwd_impl(const ReduceDesc& rd, const ViewDesc& xd, const void* xv, const ViewDesc& yd,
              void* yv, Blend blend) {
  const T* x = static_cast<const T*>(xv);
  T* y = static_cast<T*>(yv);
  ReduceAxes kept, reduced;
  split_reduce_axes(xd, yd, &kept, &reduced);
  const int64_t n = reduced.count();
  const double scale = blend.alpha * (rd.op == ReduceOp::kMean && n > 0 ? 1.0 / double(n) : 1.0);
  walk(kept, [&](int64_t ox, int64_t oy, int64_t) {
    double acc = 0;
    walk(reduced, [&](int64_t rx, int64_t, int64_t) { acc += reduce_term(rd.op, x[ox + rx]); });
    const double v = scale * acc;
    y[oy] = blend.beta == 0.0 ? T(v) : T(v + blend.beta * double(y[oy]));
  });
}

template <typename T>
void bwd_impl(const ReduceDesc& rd, const ViewDesc& xd, const void* xv, const ViewDesc& dyd,
              const void* dyv, const ViewDesc& dxd, void* dxv, Blend blend) {
  const T* x = static_cast<const T*>(xv);
  const T* dy = static_cast<const T*>(dyv);
  T* dx = static_cast<T*>(dxv);
  const ReduceAxes w = reduce_bwd_axes(xd, dyd, dxd);
  const int64_t n = xd.count() / (dyd.count() > 0 ? dyd.count() : 1);
  const T a = T(blend.alpha * (rd.op == ReduceOp::kMean ? 1.0 / double(n) : 1.0));
  const T b = T(blend.beta);
  walk(w, [&](int64_t ox, int64_t oy, int64_t od) {
    T g = dy[oy];
    if (rd.op == ReduceOp::kAsum) {
      const T v = x[ox];
      g *= T((T(0) < v) - (v < T(0)));
    } else if (rd.op == ReduceOp::kSumSq) {
      g *= T(2) * x[ox];
    }
    dx[od] = b == T(0) ? a * g : a * g + b * dx[od];
  });
}

}  // namespace

void reduce_fwd(Handle&, const ReduceDesc& rd, const ViewDesc& xd, const void* x,
                const ViewDesc& yd, void* y, Blend blend) {
  visit_dtype(kFloatTypes, xd.dtype, "reduce_fwd", Device::kCPU,
              [&](auto tag) { fwd_impl<typename decltype(tag)::type>(rd, xd, x, yd, y, blend); });
}

void reduce_bwd(Handle&, const ReduceDesc& rd, const ViewDesc& xd, const void* x,
                const ViewDesc& dyd, const void* dy, const ViewDesc& dxd, void* dx, Blend blend) {
  visit_dtype(kFloatTypes, xd.dtype, "reduce_bwd", Device::kCPU, [&](auto tag) {
    bwd_impl<typename decltype(tag)::type>(rd, xd, x, dyd, dy, dxd, dx, blend);
  });
}

}  // namespace crema::prim::cpu
