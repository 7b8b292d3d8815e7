// Tests of the element-wise primitive on the CPU against a naive double reference, in float and
// double.
#include "primitives/elementwise.h"

#include <gtest/gtest.h>

#include <vector>

#include "primitives/common/dtype_visit.h"
#include "test_util.h"

namespace crema::prim {
namespace {

CREMA_FLOAT_TYPED_TEST_SUITE(ElementwiseTest);

TYPED_TEST(ElementwiseTest, AddScalar) {
  using T = TypeParam;
  Handle h;
  for (int64_t n : {0, 1, 7, 1031}) {  // empty, one, not a vector width's multiple, large
    const auto a = random_vector<T>(size_t(n), 21 + n, -2, 2);
    std::vector<double> ref(static_cast<size_t>(n));
    for (size_t i = 0; i < ref.size(); ++i) ref[i] = double(T(double(a[i]) + double(T(0.25))));
    auto y = a;
    elt_add_scalar(h, dtype_of<T>(), n, 0.25, y.data());
    EXPECT_TRUE(all_close(y, ref, Tolerance{0, 0, true})) << "n " << n;
  }
}

TEST(ElementwiseErrors, NegativeLength) {
  Handle h;
  float y = 0;
  EXPECT_THROW(elt_add_scalar(h, DataType::kFloat32, -1, 1.0, &y), PrimError);
}

}  // namespace
}  // namespace crema::prim
