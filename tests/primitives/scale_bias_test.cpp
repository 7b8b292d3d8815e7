// Tests of the broadcast scale/bias primitives on the CPU against a naive double reference.
#include "primitives/scale_bias.h"

#include <gtest/gtest.h>

#include <vector>

#include "primitives/common/dtype_visit.h"
#include "test_util.h"

namespace crema::prim {
namespace {

template <typename T>
Tolerance tol() {
  return sizeof(T) == 8 ? Tolerance{1e-12, 1e-10} : Tolerance{1e-5, 1e-5};
}

struct View {
  int64_t outer, channels, inner;
};
// inner = 1 (InnerProduct-like), outer = 1, a scalar, and resnet50:scale_conv1 batch-of-2 sized.
const View kViews[] = {{2, 3, 5}, {4, 7, 1}, {1, 5, 6}, {3, 1, 4}, {2, 64, 112}, {1, 1, 1}};

CREMA_FLOAT_TYPED_TEST_SUITE(ScaleBiasTest);

TYPED_TEST(ScaleBiasTest, ForwardAndGradientsMatchReference) {
  using T = TypeParam;
  Handle h;
  for (const View& v : kViews) {
    SCOPED_TRACE(::testing::Message() << v.outer << "x" << v.channels << "x" << v.inner);
    const ScaleBiasDesc sd{dtype_of<T>(), v.outer, v.channels, v.inner};
    const size_t n = size_t(sd.count()), C = size_t(v.channels);
    const auto x = random_vector<T>(n, 1, -2.0, 2.0);
    const auto dy = random_vector<T>(n, 2);
    const auto scale = random_vector<T>(C, 3, 0.5, 2.0);
    const auto bias = random_vector<T>(C, 4, 0.5, 1.5);
    std::vector<double> y_sb(n), y_s(n), y_b(n), dx(n), dscale(C, 0.0), dbias(C, 0.0);
    for (int64_t o = 0; o < v.outer; ++o)
      for (size_t c = 0; c < C; ++c)
        for (int64_t i = 0; i < v.inner; ++i) {
          const size_t j = (size_t(o) * C + c) * size_t(v.inner) + size_t(i);
          y_s[j] = double(x[j]) * double(scale[c]);
          y_b[j] = double(x[j]) + double(bias[c]);
          y_sb[j] = y_s[j] + double(bias[c]);
          dx[j] = double(dy[j]) * double(scale[c]);
          dscale[c] += double(dy[j]) * double(x[j]);
          dbias[c] += double(dy[j]);
        }
    auto y = poisoned<T>(n);
    scale_bias_fwd(h, sd, x.data(), scale.data(), bias.data(), y.data());
    EXPECT_TRUE(all_close(y, y_sb, tol<T>()));
    y = poisoned<T>(n);
    scale_bias_fwd(h, sd, x.data(), scale.data(), nullptr, y.data());
    EXPECT_TRUE(all_close(y, y_s, tol<T>()));
    y = poisoned<T>(n);
    scale_bias_fwd(h, sd, x.data(), nullptr, bias.data(), y.data());
    EXPECT_TRUE(all_close(y, y_b, tol<T>()));
    auto g = poisoned<T>(n);
    scale_bias_bwd_data(h, sd, dy.data(), scale.data(), g.data());
    EXPECT_TRUE(all_close(g, dx, tol<T>()));
    auto ds = poisoned<T>(C), db = poisoned<T>(C);
    scale_bias_bwd_scale(h, sd, dy.data(), x.data(), ds.data());
    scale_bias_bwd_bias(h, sd, dy.data(), db.data());
    EXPECT_TRUE(all_close(ds, dscale, tol<T>()));
    EXPECT_TRUE(all_close(db, dbias, tol<T>()));
  }
}

// Parameter gradients accumulate with beta = 1; alpha scales the operation only; in place.
TYPED_TEST(ScaleBiasTest, BlendAndInPlace) {
  using T = TypeParam;
  Handle h;
  const ScaleBiasDesc sd{dtype_of<T>(), 3, 4, 5};
  const size_t n = 60, C = 4;
  const auto x = random_vector<T>(n, 11, -2.0, 2.0);
  const auto dy = random_vector<T>(n, 12);
  const auto scale = random_vector<T>(C, 13, 0.5, 2.0);
  const auto bias = random_vector<T>(C, 14, 0.5, 1.5);
  const auto ds0 = random_vector<T>(C, 15), db0 = random_vector<T>(C, 16);
  std::vector<double> y_ref(n), ds_ref(ds0.begin(), ds0.end()), db_ref(db0.begin(), db0.end());
  for (size_t j = 0; j < n; ++j) {
    const size_t c = (j / 5) % C;
    y_ref[j] = double(x[j]) * double(scale[c]) + double(bias[c]);
    ds_ref[c] += 0.5 * double(dy[j]) * double(x[j]);
    db_ref[c] += 0.5 * double(dy[j]);
  }
  auto buf = x;
  scale_bias_fwd(h, sd, buf.data(), scale.data(), bias.data(), buf.data());
  EXPECT_TRUE(all_close(buf, y_ref, tol<T>()));
  auto ds = ds0, db = db0;
  scale_bias_bwd_scale(h, sd, dy.data(), x.data(), ds.data(), {0.5, 1});
  scale_bias_bwd_bias(h, sd, dy.data(), db.data(), {0.5, 1});
  EXPECT_TRUE(all_close(ds, ds_ref, tol<T>()));
  EXPECT_TRUE(all_close(db, db_ref, tol<T>()));
  std::vector<double> dx_ref(n);
  for (size_t j = 0; j < n; ++j) dx_ref[j] = double(dy[j]) * double(scale[(j / 5) % C]);
  auto g = dy;
  scale_bias_bwd_data(h, sd, g.data(), scale.data(), g.data());
  EXPECT_TRUE(all_close(g, dx_ref, tol<T>()));
}

TEST(ScaleBiasErrors, BadArgumentsThrow) {
  Handle h;
  std::vector<float> a(6), b(6), s(2);
  EXPECT_THROW(
      scale_bias_fwd(h, {DataType::kFloat32, 1, 2, 3}, a.data(), nullptr, nullptr, b.data()),
      PrimError);
  EXPECT_THROW(
      scale_bias_fwd(h, {DataType::kFloat32, -1, 2, 3}, a.data(), s.data(), nullptr, b.data()),
      PrimError);
  EXPECT_THROW(scale_bias_bwd_scale(h, {DataType::kFloat32, 1, 2, 3}, a.data(), nullptr, s.data()),
               PrimError);
}

}  // namespace
}  // namespace crema::prim
