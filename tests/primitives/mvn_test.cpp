// Tests of the MVN primitives on the CPU against a naive double reference, and of the
// reference's backward formula against central differences (at eps = 0 it is exact).
#include "primitives/mvn.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "primitives/common/dtype_visit.h"
#include "problems.h"
#include "test_util.h"

namespace crema::prim {
namespace {

const TypedTolerance kTol = {{1e-11, 1e-10}, {2e-5, 2e-4}};

using Shape = test::Nchw;
const Shape kShapes[] = {{2, 3, 4, 5}, {1, 4, 1, 7}, {3, 1, 3, 3}, {2, 5, 1, 3}};

// The oracle: rows of D values normalized one by one, as mvn.h states.
void ref(const MvnDesc& md, const Shape& s, const std::vector<double>& x,
         const std::vector<double>& dy, std::vector<double>* y, std::vector<double>* dx) {
  const size_t hw = size_t(s.h) * s.w;
  const size_t D = md.across_channels ? size_t(s.c) * hw : hw, rows = x.size() / D;
  y->assign(x.size(), 0);
  dx->assign(x.size(), 0);
  for (size_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0, mdy = 0, mdyy = 0;
    for (size_t i = 0; i < D; ++i) mean += x[r * D + i] / double(D);
    for (size_t i = 0; i < D; ++i) var += (x[r * D + i] - mean) * (x[r * D + i] - mean) / double(D);
    const double div = md.normalize_variance ? std::sqrt(var) + md.eps : 1.0;
    for (size_t i = 0; i < D; ++i) (*y)[r * D + i] = (x[r * D + i] - mean) / div;
    for (size_t i = 0; i < D; ++i) {
      mdy += dy[r * D + i] / double(D);
      mdyy += dy[r * D + i] * (*y)[r * D + i] / double(D);
    }
    for (size_t i = 0; i < D; ++i) {
      const size_t j = r * D + i;
      (*dx)[j] = md.normalize_variance ? (dy[j] - mdy - (*y)[j] * mdyy) / div : dy[j] - mdy;
    }
  }
}

std::vector<MvnDesc> all_descs() {
  return {{true, false, 1e-9},
          {true, true, 1e-9},
          {false, false, 1e-9},
          {false, true, 1e-9},
          {true, false, 0.1}};
}

CREMA_FLOAT_TYPED_TEST_SUITE(MvnTest);

TYPED_TEST(MvnTest, ForwardAndBackwardMatchReference) {
  using T = TypeParam;
  Handle h;
  for (const MvnDesc& md : all_descs()) {
    for (const Shape& s : kShapes) {
      SCOPED_TRACE(::testing::Message()
                   << "variance " << md.normalize_variance << " across " << md.across_channels
                   << " eps " << md.eps << " shape " << s);
      const TensorDesc d = s.desc(dtype_of<T>());
      const size_t n = size_t(d.count());
      const auto x = random_vector<T>(n, 5, -1.0, 3.0);
      const auto dy = random_vector<T>(n, 6);
      std::vector<double> y_ref, dx_ref;
      ref(md, s, std::vector<double>(x.begin(), x.end()), std::vector<double>(dy.begin(), dy.end()),
          &y_ref, &dx_ref);
      auto y = poisoned<T>(n), dx = poisoned<T>(n);
      mvn_fwd(h, md, d, x.data(), d, y.data());
      EXPECT_TRUE(all_close(y, y_ref, kTol.of<T>()));
      mvn_bwd(h, md, d, x.data(), dy.data(), d, dx.data());
      EXPECT_TRUE(all_close(dx, dx_ref, kTol.of<T>()));
      // Blends and in place: y = x forward; dx = dy accumulating backward.
      auto buf = x;
      mvn_fwd(h, md, d, buf.data(), d, buf.data());
      EXPECT_TRUE(all_close(buf, y_ref, kTol.of<T>()));
      auto g = dy;
      std::vector<double> acc(n);
      for (size_t j = 0; j < n; ++j) acc[j] = 0.5 * dx_ref[j] + double(dy[j]);
      mvn_bwd(h, md, d, x.data(), g.data(), d, g.data(), {0.5, 1});
      EXPECT_TRUE(all_close(g, acc, kTol.of<T>()));
    }
  }
}

TEST(MvnReference, BackwardIsTheGradientOfForwardAtZeroEps) {
  const Shape s{2, 2, 2, 3};
  const size_t n = 24;
  const auto x = random_vector<double>(n, 7, -1.0, 2.0);
  const auto w = random_vector<double>(n, 8);
  for (bool across : {false, true}) {
    for (bool var : {false, true}) {
      const MvnDesc md{var, across, 0.0};
      std::vector<double> y, dx;
      ref(md, s, x, w, &y, &dx);
      auto f = [&](const std::vector<double>& v) {
        std::vector<double> yy, unused;
        ref(md, s, v, w, &yy, &unused);
        double sum = 0;
        for (size_t j = 0; j < n; ++j) sum += yy[j] * w[j];
        return sum;
      };
      std::vector<double> numeric(n);
      for (size_t j = 0; j < n; ++j) {
        auto p = x, m = x;
        p[j] += 1e-6;
        m[j] -= 1e-6;
        numeric[j] = (f(p) - f(m)) / 2e-6;
      }
      EXPECT_TRUE(all_close(dx, numeric, {1e-7, 1e-6})) << "across " << across << " var " << var;
    }
  }
}

TEST(MvnErrors, BadDescriptorsThrow) {
  Handle h;
  std::vector<float> a(12), b(12);
  const TensorDesc d = TensorDesc::nchw(DataType::kFloat32, 1, 2, 2, 3);
  EXPECT_THROW(mvn_fwd(h, {true, false, -1.0}, d, a.data(), d, b.data()), PrimError);
  EXPECT_THROW(
      mvn_fwd(h, {}, d, a.data(), TensorDesc::nchw(DataType::kFloat64, 1, 2, 2, 3), b.data()),
      PrimError);
  EXPECT_THROW(mvn_bwd(h, {}, d, a.data(), nullptr, d, b.data()), PrimError);
}

}  // namespace
}  // namespace crema::prim
