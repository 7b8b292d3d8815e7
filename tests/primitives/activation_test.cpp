// Tests of act_fwd/act_bwd on the CPU against a naive double-precision reference.
#include "primitives/activation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "test_util.h"

namespace crema::prim {
namespace {

using test::all_close;
using test::poisoned;
using test::random_vector;
using test::Tolerance;

template <typename T>
DataType dtype_of() {
  return sizeof(T) == 8 ? DataType::kFloat64 : DataType::kFloat32;
}

template <typename T>
Tolerance tol() {
  return sizeof(T) == 8 ? Tolerance{1e-12, 1e-10} : Tolerance{1e-6, 1e-5};
}

// The oracle: the formulas of activation.h in double, one element at a time.
double ref_fwd(const ActDesc& ad, double x) {
  switch (ad.mode) {
    case ActMode::kRelu:
      return x > 0 ? x : ad.relu_negative_slope * x;
    case ActMode::kSigmoid:
      return 1.0 / (1.0 + std::exp(-x));
    case ActMode::kTanh:
      return std::tanh(x);
  }
  return 0;
}

double ref_bwd(const ActDesc& ad, double x, double dy) {
  const double y = ref_fwd(ad, x);
  switch (ad.mode) {
    case ActMode::kRelu:
      return x > 0 ? dy : ad.relu_negative_slope * dy;
    case ActMode::kSigmoid:
      return dy * y * (1 - y);
    case ActMode::kTanh:
      return dy * (1 - y * y);
  }
  return 0;
}

std::vector<ActDesc> all_modes() {
  return {{ActMode::kRelu, 0.0},
          {ActMode::kRelu, 0.1},
          {ActMode::kSigmoid, 0.0},
          {ActMode::kTanh, 0.0}};
}

struct Shape {
  int n, c, h, w;
};
const Shape kShapes[] = {{1, 1, 1, 1}, {1, 3, 5, 7}, {2, 7, 3, 1}, {3, 1, 11, 13}};

template <typename T>
class ActTest : public ::testing::Test {};
using Types = ::testing::Types<float, double>;
TYPED_TEST_SUITE(ActTest, Types);

// Inputs lean positive so that plain ReLU's output is not mostly zeros (a vacuous comparison).
TYPED_TEST(ActTest, ForwardAndBackwardMatchReference) {
  using T = TypeParam;
  Handle h;
  for (const ActDesc& ad : all_modes()) {
    for (const Shape& s : kShapes) {
      SCOPED_TRACE(::testing::Message()
                   << "mode " << int(ad.mode) << " slope " << ad.relu_negative_slope << " shape "
                   << s.n << "x" << s.c << "x" << s.h << "x" << s.w);
      const TensorDesc d = TensorDesc::nchw(dtype_of<T>(), s.n, s.c, s.h, s.w);
      const size_t n = size_t(d.count());
      const auto x = random_vector<T>(n, 11, -2.0, 4.0);
      const auto dy = random_vector<T>(n, 12, -1.0, 1.0);
      std::vector<double> y_ref(n), dx_ref(n);
      for (size_t i = 0; i < n; ++i) {
        y_ref[i] = ref_fwd(ad, double(x[i]));
        dx_ref[i] = ref_bwd(ad, double(x[i]), double(dy[i]));
      }
      auto y = poisoned<T>(n);
      act_fwd(h, ad, d, x.data(), d, y.data());
      EXPECT_TRUE(all_close(y, y_ref, tol<T>()));
      auto dx = poisoned<T>(n);
      act_bwd(h, ad, d, y.data(), dy.data(), d, x.data(), dx.data());
      EXPECT_TRUE(all_close(dx, dx_ref, tol<T>()));
    }
  }
}

// beta = 1 accumulates into what the output held; alpha scales the operation only.
TYPED_TEST(ActTest, BlendAccumulates) {
  using T = TypeParam;
  Handle h;
  const Blend blend{0.5, 1.0};
  for (const ActDesc& ad : all_modes()) {
    SCOPED_TRACE(::testing::Message() << "mode " << int(ad.mode));
    const TensorDesc d = TensorDesc::nchw(dtype_of<T>(), 2, 3, 5, 3);
    const size_t n = size_t(d.count());
    const auto x = random_vector<T>(n, 21, -2.0, 2.0);
    const auto dy = random_vector<T>(n, 22);
    const auto y0 = random_vector<T>(n, 23);
    const auto dx0 = random_vector<T>(n, 24);
    std::vector<double> y_ref(n), dx_ref(n);
    std::vector<T> y_exact(n);
    for (size_t i = 0; i < n; ++i) {
      y_ref[i] = 0.5 * ref_fwd(ad, double(x[i])) + double(y0[i]);
      dx_ref[i] = 0.5 * ref_bwd(ad, double(x[i]), double(dy[i])) + double(dx0[i]);
      y_exact[i] = T(ref_fwd(ad, double(x[i])));
    }
    auto y = y0;
    act_fwd(h, ad, d, x.data(), d, y.data(), blend);
    EXPECT_TRUE(all_close(y, y_ref, tol<T>()));
    auto dx = dx0;
    act_bwd(h, ad, d, y_exact.data(), dy.data(), d, x.data(), dx.data(), blend);
    EXPECT_TRUE(all_close(dx, dx_ref, tol<T>()));
  }
}

// In-place layers: x, y share a buffer forward, dy, dx share one backward, and ReLU's backward
// then sees the output where it asks for the input.
TYPED_TEST(ActTest, InPlace) {
  using T = TypeParam;
  Handle h;
  for (const ActDesc& ad : all_modes()) {
    SCOPED_TRACE(::testing::Message() << "mode " << int(ad.mode));
    const TensorDesc d = TensorDesc::nchw(dtype_of<T>(), 1, 5, 7, 9);
    const size_t n = size_t(d.count());
    const auto x = random_vector<T>(n, 31, -2.0, 4.0);
    const auto dy = random_vector<T>(n, 32);
    std::vector<double> y_ref(n), dx_ref(n);
    for (size_t i = 0; i < n; ++i) {
      y_ref[i] = ref_fwd(ad, double(x[i]));
      dx_ref[i] = ref_bwd(ad, double(x[i]), double(dy[i]));
    }
    auto buf = x;
    act_fwd(h, ad, d, buf.data(), d, buf.data());
    EXPECT_TRUE(all_close(buf, y_ref, tol<T>()));
    auto grad = dy;
    act_bwd(h, ad, d, buf.data(), grad.data(), d, buf.data(), grad.data());
    EXPECT_TRUE(all_close(grad, dx_ref, tol<T>()));
  }
}

TEST(ActErrors, MismatchedDescriptorsThrow) {
  Handle h;
  const ActDesc ad;
  std::vector<float> a(24), b(24);
  const TensorDesc x = TensorDesc::nchw(DataType::kFloat32, 1, 2, 3, 4);
  EXPECT_THROW(
      act_fwd(h, ad, x, a.data(), TensorDesc::nchw(DataType::kFloat32, 1, 2, 4, 3), b.data()),
      PrimError);
  EXPECT_THROW(
      act_fwd(h, ad, x, a.data(), TensorDesc::nchw(DataType::kFloat64, 1, 2, 3, 4), b.data()),
      PrimError);
  TensorDesc strided = x;
  strided.stride_n = 48;
  EXPECT_THROW(act_fwd(h, ad, strided, a.data(), strided, b.data()), PrimError);
}

}  // namespace
}  // namespace crema::prim
