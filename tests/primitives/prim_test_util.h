// Pieces the CPU primitive tests share: central differences, the gradient oracle of the tests
// that check a backward formula against their own double-precision forward reference, the
// descriptor checks every entry point makes, and the random inputs of an NCHW test.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

#include "primitives/common/dtype_visit.h"
#include "primitives/types.h"
#include "problems.h"
#include "test_util.h"

namespace crema::test {

// The gradient of the scalar function f at x, by central differences:
//   df/dx_j ~ (f(x + step e_j) - f(x - step e_j)) / (2 step)
template <typename F>
std::vector<double> numeric_gradient(const F& f, const std::vector<double>& x, double step) {
  std::vector<double> g(x.size());
  for (size_t j = 0; j < x.size(); ++j) {
    auto p = x, m = x;
    p[j] += step;
    m[j] -= step;
    g[j] = (f(p) - f(m)) / (2 * step);
  }
  return g;
}

// v, the values of a packed NCHW tensor of t's sizes, placed where t's strides put them (t
// packed channels last: the NHWC copy), converted to To.
template <typename To = double, typename From>
std::vector<To> laid_out(const std::vector<From>& v, const prim::TensorDesc& t) {
  std::vector<To> out(v.size());
  size_t i = 0;
  for (int n = 0; n < t.n; ++n)
    for (int c = 0; c < t.c; ++c)
      for (int h = 0; h < t.h; ++h)
        for (int w = 0; w < t.w; ++w)
          out[size_t(n * t.stride_n + c * t.stride_c + h * t.stride_h + w * t.stride_w)] =
              To(v[i++]);
  return out;
}

// call(xd, yd) runs an entry point on input and output descriptors; it must refuse an output of
// other sizes or of another dtype than x (an N=1, float, 2 x 3 x 4 tensor), and a strided pair
// whose images are 48 values apart.
template <typename Call>
void expect_mismatched_descriptors_refused(const Call& call) {
  using prim::DataType;
  using prim::TensorDesc;
  const TensorDesc x = TensorDesc::nchw(DataType::kFloat32, 1, 2, 3, 4);
  EXPECT_THROW(call(x, TensorDesc::nchw(DataType::kFloat32, 1, 2, 4, 3)), prim::PrimError);
  EXPECT_THROW(call(x, TensorDesc::nchw(DataType::kFloat64, 1, 2, 3, 4)), prim::PrimError);
  TensorDesc strided = x;
  strided.stride_n = 48;
  EXPECT_THROW(call(strided, strided), prim::PrimError);
}

// The tensors of a forward and backward test over the packed NCHW shape s: its descriptor, its
// element count, an input x uniform in [lo, hi) drawn from seed, and an output gradient dy
// uniform in [-1, 1) drawn from seed + 1.
template <typename T>
struct NchwInputs {
  prim::TensorDesc d;
  size_t n;
  std::vector<T> x, dy;
};
template <typename T>
NchwInputs<T> nchw_inputs(const Nchw& s, uint64_t seed, double lo, double hi) {
  const size_t n = size_t(s.count());
  return {s.desc(prim::dtype_of<T>()), n, random_vector<T>(n, seed, lo, hi),
          random_vector<T>(n, seed + 1)};
}

}  // namespace crema::test
