// Tests of the element-wise primitives on the CPU against naive double references, in float and
// double, including in-place use (output aliasing an input) and NaN-poisoned outputs.
#include "primitives/elementwise.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
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
class ElementwiseTest : public ::testing::Test {};
using Types = ::testing::Types<float, double>;
TYPED_TEST_SUITE(ElementwiseTest, Types);

// Lengths: empty, one, not a multiple of a vector width, large.
const int64_t kLengths[] = {0, 1, 7, 1031};

TYPED_TEST(ElementwiseTest, Sign) {
  using T = TypeParam;
  Handle h;
  for (int64_t n : kLengths) {
    auto x = random_vector<T>(size_t(n), 11 + n);
    if (n > 3) x[3] = T(0);  // sign(0) must be 0
    auto y = poisoned<T>(size_t(n));
    elt_sign(h, dtype_of<T>(), n, x.data(), y.data());
    std::vector<double> ref(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) ref[i] = x[i] > 0 ? 1.0 : (x[i] < 0 ? -1.0 : 0.0);
    EXPECT_TRUE(all_close(y, ref, Tolerance{0, 0, true})) << "n " << n;
    if (n > 3) {
      EXPECT_EQ(y[3], T(0));
    }
  }
}

TYPED_TEST(ElementwiseTest, MulDivSqrtAddScalar) {
  using T = TypeParam;
  const Tolerance tol = sizeof(T) == 8 ? Tolerance{1e-14, 1e-13} : Tolerance{1e-6, 1e-6};
  Handle h;
  for (int64_t n : kLengths) {
    const size_t un = size_t(n);
    const auto a = random_vector<T>(un, 21 + n, -2, 2);
    const auto b = random_vector<T>(un, 31 + n, 0.5, 3);  // away from 0 for the division
    std::vector<double> rmul(un), rdiv(un), rsqrt(un), radd(un);
    for (size_t i = 0; i < un; ++i) {
      rmul[i] = double(a[i]) * double(b[i]);
      rdiv[i] = double(a[i]) / double(b[i]);
      rsqrt[i] = std::sqrt(double(b[i]));
      radd[i] = double(a[i]) + 0.25;
    }
    auto y = poisoned<T>(un);
    elt_mul(h, dtype_of<T>(), n, a.data(), b.data(), y.data());
    EXPECT_TRUE(all_close(y, rmul, tol)) << "mul n " << n;
    y = poisoned<T>(un);
    elt_div(h, dtype_of<T>(), n, a.data(), b.data(), y.data());
    EXPECT_TRUE(all_close(y, rdiv, tol)) << "div n " << n;
    y = poisoned<T>(un);
    elt_sqrt(h, dtype_of<T>(), n, b.data(), y.data());
    EXPECT_TRUE(all_close(y, rsqrt, tol)) << "sqrt n " << n;
    y = a;
    elt_add_scalar(h, dtype_of<T>(), n, 0.25, y.data());
    EXPECT_TRUE(all_close(y, radd, tol)) << "add_scalar n " << n;
  }
}

TYPED_TEST(ElementwiseTest, InPlace) {
  using T = TypeParam;
  Handle h;
  const int64_t n = 37;
  const auto a = random_vector<T>(size_t(n), 5, 0.5, 2);
  std::vector<double> ref(static_cast<size_t>(n));
  // y = sqrt(a * a) / a, computed in place, is 1 up to rounding.
  auto y = a;
  elt_mul(h, dtype_of<T>(), n, y.data(), y.data(), y.data());
  elt_sqrt(h, dtype_of<T>(), n, y.data(), y.data());
  elt_div(h, dtype_of<T>(), n, y.data(), a.data(), y.data());
  for (auto& r : ref) r = 1.0;
  const double eps = std::numeric_limits<T>::epsilon();
  EXPECT_TRUE(all_close(y, ref, Tolerance{4 * eps, 0}));
  // sign in place: negatives become -1.
  for (auto& v : y) v = -v;
  elt_sign(h, dtype_of<T>(), n, y.data(), y.data());
  for (auto& r : ref) r = -1.0;
  EXPECT_TRUE(all_close(y, ref, Tolerance{0, 0}));
}

TEST(ElementwiseErrors, NegativeLength) {
  Handle h;
  float x = 1, y = 0;
  EXPECT_THROW(elt_sign(h, DataType::kFloat32, -1, &x, &y), PrimError);
  EXPECT_THROW(elt_add_scalar(h, DataType::kFloat32, -1, 1.0, &y), PrimError);
}

}  // namespace
}  // namespace crema::prim
