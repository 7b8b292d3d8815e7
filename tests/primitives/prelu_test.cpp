// Tests of the PReLU primitives on the CPU against a naive double reference.
#include "primitives/prelu.h"

#include <gtest/gtest.h>

#include <vector>

#include "primitives/common/dtype_visit.h"
#include "problems.h"
#include "test_util.h"

namespace crema::prim {
namespace {

const TypedTolerance kTol = {{1e-12, 1e-10}, {1e-5, 1e-5}};

using Shape = test::Nchw;
const Shape kShapes[] = {{2, 3, 4, 5}, {1, 1, 1, 1}, {3, 7, 1, 1}, {2, 16, 5, 3}};

CREMA_FLOAT_TYPED_TEST_SUITE(PreluTest);

TYPED_TEST(PreluTest, ForwardAndBackwardMatchReference) {
  using T = TypeParam;
  Handle h;
  for (bool shared : {false, true}) {
    for (const Shape& s : kShapes) {
      SCOPED_TRACE(::testing::Message() << "shared " << shared << " shape " << s.n << "x" << s.c
                                        << "x" << s.h << "x" << s.w);
      const PreluDesc pd{shared};
      const TensorDesc d = s.desc(dtype_of<T>());
      const size_t n = size_t(d.count()), hw = size_t(s.h) * s.w, ns = shared ? 1 : size_t(s.c);
      const auto x = random_vector<T>(n, 1, -2.0, 1.0);
      const auto dy = random_vector<T>(n, 2, 0.5, 1.5);
      const auto slope = random_vector<T>(ns, 3, 0.1, 0.9);
      const auto ds0 = random_vector<T>(ns, 4);
      std::vector<double> y_ref(n), dx_ref(n), ds_ref(ds0.begin(), ds0.end());
      for (size_t j = 0; j < n; ++j) {
        const size_t k = shared ? 0 : (j / hw) % size_t(s.c);
        const double xv = double(x[j]), a = double(slope[k]);
        y_ref[j] = xv > 0 ? xv : a * xv;
        dx_ref[j] = xv > 0 ? double(dy[j]) : a * double(dy[j]);
        if (xv <= 0) ds_ref[k] += double(dy[j]) * xv;
      }
      auto y = poisoned<T>(n), dx = poisoned<T>(n);
      prelu_fwd(h, pd, d, x.data(), slope.data(), d, y.data());
      EXPECT_TRUE(all_close(y, y_ref, kTol.of<T>()));
      auto ds = ds0;
      prelu_bwd(h, pd, d, x.data(), dy.data(), slope.data(), dx.data(), ds.data(), {}, {1.0, 1.0});
      EXPECT_TRUE(all_close(dx, dx_ref, kTol.of<T>()));
      EXPECT_TRUE(all_close(ds, ds_ref, kTol.of<T>()));
      // Data gradient alone, in place over dy.
      auto g = dy;
      prelu_bwd(h, pd, d, x.data(), g.data(), slope.data(), g.data(), nullptr);
      EXPECT_TRUE(all_close(g, dx_ref, kTol.of<T>()));
    }
  }
}

TEST(PreluErrors, BadArgumentsThrow) {
  Handle h;
  std::vector<float> a(6), b(6), s(2);
  const TensorDesc d = TensorDesc::nchw(DataType::kFloat32, 1, 2, 1, 3);
  EXPECT_THROW(prelu_bwd(h, {}, d, a.data(), b.data(), s.data(), nullptr, nullptr), PrimError);
  EXPECT_THROW(prelu_fwd(h, {}, d, a.data(), s.data(),
                         TensorDesc::nchw(DataType::kFloat32, 1, 3, 1, 2), b.data()),
               PrimError);
  EXPECT_THROW(prelu_fwd(h, {}, d, a.data(), nullptr, d, b.data()), PrimError);
}

}  // namespace
}  // namespace crema::prim
