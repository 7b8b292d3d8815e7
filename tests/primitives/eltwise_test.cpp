// eltwise_fwd / eltwise_bwd on the CPU against naive double references: sum with coefficients,
// product (stable and fast gradients), max with the stored winner, blending, in-place forward.
#include "primitives/eltwise.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "primitives/common/dtype_visit.h"
#include "test_util.h"

namespace crema::prim {
namespace {

CREMA_FLOAT_TYPED_TEST_SUITE(EltwiseTest);

constexpr int kInputs = 3;
constexpr int64_t kN = 37;

template <typename T>
std::vector<std::vector<T>> inputs() {
  std::vector<std::vector<T>> x;
  for (int k = 0; k < kInputs; ++k) x.push_back(random_vector<T>(size_t(kN), 10 + k, 0.5, 2.0));
  // Negative values too, away from zero so the fast product gradient is well-conditioned.
  for (int64_t i = 0; i < kN; i += 3) x[1][size_t(i)] = -x[1][size_t(i)];
  return x;
}

TYPED_TEST(EltwiseTest, ForwardMatchesReference) {
  using T = TypeParam;
  const Tolerance tol = sizeof(T) == 8 ? Tolerance{1e-12, 1e-12} : Tolerance{1e-5, 1e-5};
  Handle h;
  const auto x = inputs<T>();
  const void* xp[kInputs] = {x[0].data(), x[1].data(), x[2].data()};
  const std::vector<double> coeff = {1.5, -2.0, 0.25};
  for (EltwiseOp op : {EltwiseOp::kSum, EltwiseOp::kProd, EltwiseOp::kMax}) {
    for (Blend b : {Blend{1, 0}, Blend{2, 0.5}}) {
      SCOPED_TRACE("op " + std::to_string(int(op)) + " beta " + std::to_string(b.beta));
      EltwiseDesc ed{dtype_of<T>(), op, kN, kInputs, {}, true};
      if (op == EltwiseOp::kSum) ed.coeff = coeff;
      auto y = b.beta == 0 ? poisoned<T>(size_t(kN)) : random_vector<T>(size_t(kN), 3);
      std::vector<int32_t> argmax(size_t(kN), -7);
      std::vector<double> ref(static_cast<size_t>(kN));
      std::vector<int32_t> ref_arg(size_t(kN), -7);
      for (int64_t i = 0; i < kN; ++i) {
        double v = op == EltwiseOp::kProd ? 1.0 : 0.0;
        for (int k = 0; k < kInputs; ++k) {
          const double xi = double(x[size_t(k)][size_t(i)]);
          if (op == EltwiseOp::kSum) v += coeff[size_t(k)] * xi;
          if (op == EltwiseOp::kProd) v *= xi;
          if (op == EltwiseOp::kMax && (k == 0 || xi > v)) {
            v = xi;
            ref_arg[size_t(i)] = k;
          }
        }
        ref[size_t(i)] = b.alpha * v + (b.beta == 0 ? 0.0 : b.beta * double(y[size_t(i)]));
      }
      eltwise_fwd(h, ed, xp, y.data(), argmax.data(), b);
      EXPECT_TRUE(all_close(y, ref, tol));
      if (op == EltwiseOp::kMax) {
        EXPECT_EQ(argmax, ref_arg);
      }
    }
  }
}

TYPED_TEST(EltwiseTest, BackwardMatchesReference) {
  using T = TypeParam;
  const Tolerance tol = sizeof(T) == 8 ? Tolerance{1e-12, 1e-12} : Tolerance{1e-5, 1e-5};
  Handle h;
  const auto x = inputs<T>();
  const void* xp[kInputs] = {x[0].data(), x[1].data(), x[2].data()};
  const auto dy = random_vector<T>(size_t(kN), 77);
  const std::vector<double> coeff = {1.5, -2.0, 0.25};
  struct Variant {
    EltwiseOp op;
    bool stable;
  };
  for (Variant v : {Variant{EltwiseOp::kSum, true}, Variant{EltwiseOp::kProd, true},
                    Variant{EltwiseOp::kProd, false}, Variant{EltwiseOp::kMax, true}}) {
    EltwiseDesc ed{dtype_of<T>(), v.op, kN, kInputs, {}, v.stable};
    if (v.op == EltwiseOp::kSum) ed.coeff = coeff;
    std::vector<T> y(static_cast<size_t>(kN));
    std::vector<int32_t> argmax(static_cast<size_t>(kN));
    eltwise_fwd(h, ed, xp, y.data(), argmax.data());
    for (int k = 0; k < kInputs; ++k) {
      SCOPED_TRACE("op " + std::to_string(int(v.op)) + " stable " + std::to_string(v.stable) +
                   " input " + std::to_string(k));
      std::vector<double> ref(static_cast<size_t>(kN));
      int winners = 0;
      for (int64_t i = 0; i < kN; ++i) {
        const double g = double(dy[size_t(i)]);
        double d = 0;
        if (v.op == EltwiseOp::kSum) d = coeff[size_t(k)] * g;
        if (v.op == EltwiseOp::kProd) {
          d = g;
          for (int j = 0; j < kInputs; ++j)
            if (j != k) d *= double(x[size_t(j)][size_t(i)]);
        }
        if (v.op == EltwiseOp::kMax) {
          // The winner, recomputed independently: the first input holding the maximum.
          int best = 0;
          for (int j = 1; j < kInputs; ++j)
            if (x[size_t(j)][size_t(i)] > x[size_t(best)][size_t(i)]) best = j;
          d = best == k ? g : 0.0;
          winners += best == k;
        }
        ref[size_t(i)] = d;
      }
      auto dx = poisoned<T>(size_t(kN));
      void* dxp[kInputs] = {};  // this input only
      dxp[k] = dx.data();
      eltwise_bwd(h, ed, xp, y.data(), dy.data(), argmax.data(), dxp);
      EXPECT_TRUE(all_close(dx, ref, Tolerance{tol.abs, 1e-4, v.op == EltwiseOp::kMax}));
      if (v.op == EltwiseOp::kMax) {
        EXPECT_GT(winners, 0);
      }
      // Accumulating form: dx = 1 * value + 1 * dx.
      std::vector<T> acc(size_t(kN), T(1));
      dxp[k] = acc.data();
      eltwise_bwd(h, ed, xp, y.data(), dy.data(), argmax.data(), dxp, Blend{1, 1});
      for (double& r : ref) r += 1;
      EXPECT_TRUE(all_close(acc, ref, Tolerance{tol.abs, 1e-4}));
    }
  }
}

TYPED_TEST(EltwiseTest, ForwardInPlace) {
  using T = TypeParam;
  Handle h;
  auto x = inputs<T>();
  std::vector<double> ref(static_cast<size_t>(kN));
  for (int64_t i = 0; i < kN; ++i)
    ref[size_t(i)] = double(x[0][size_t(i)]) + double(x[1][size_t(i)]) + double(x[2][size_t(i)]);
  const void* xp[kInputs] = {x[0].data(), x[1].data(), x[2].data()};
  eltwise_fwd(h, EltwiseDesc{dtype_of<T>(), EltwiseOp::kSum, kN, kInputs, {}, true}, xp,
              x[0].data(), nullptr);
  EXPECT_TRUE(all_close(x[0], ref, Tolerance{1e-5, 1e-5}));
}

TEST(Eltwise, BadDescriptorsAreErrors) {
  Handle h;
  float a[4] = {}, y[4] = {};
  const void* xp[2] = {a, a};
  EltwiseDesc ed{DataType::kFloat32, EltwiseOp::kProd, 4, 2, {1.0, 2.0}, true};
  EXPECT_THROW(eltwise_fwd(h, ed, xp, y, nullptr), PrimError);  // coefficients on a product
  ed = EltwiseDesc{DataType::kFloat32, EltwiseOp::kMax, 4, 2, {}, true};
  void* dxp[2] = {y, nullptr};
  EXPECT_THROW(eltwise_bwd(h, ed, xp, y, y, nullptr, dxp), PrimError);  // no argmax
  ed.relu = true;
  int32_t arg[4] = {};
  EXPECT_THROW(eltwise_bwd(h, ed, xp, y, y, arg, dxp), PrimError)
      << "max's gradient has no fused relu";
  ed.op = EltwiseOp::kSum;
  EXPECT_THROW(eltwise_bwd(h, ed, xp, nullptr, y, nullptr, dxp), PrimError);  // no y
  ed.negative_slope = -0.5;
  EXPECT_THROW(eltwise_fwd(h, ed, xp, y, nullptr), PrimError);  // negative slope
}

// kSum with the fused ReLU: y = relu(sum), and every input's gradient from one call, in place
// on input 0 (dy is dx[0]), against the two layers in a row in double.
TYPED_TEST(EltwiseTest, SumWithFusedReluMatchesTheLayersInARow) {
  using T = TypeParam;
  const Tolerance tol =
      sizeof(T) == 8 ? Tolerance{1e-12, 1e-12, true} : Tolerance{1e-5, 1e-5, true};
  Handle h;
  const auto x = inputs<T>();
  const void* xp[kInputs] = {x[0].data(), x[1].data(), x[2].data()};
  const std::vector<double> coeff = {1.5, -2.0, 0.25};
  for (double slope : {0.0, 0.1}) {
    SCOPED_TRACE(slope);
    EltwiseDesc ed{dtype_of<T>(), EltwiseOp::kSum, kN, kInputs, coeff, true, true, slope};
    std::vector<double> y_ref(static_cast<size_t>(kN)), dz(static_cast<size_t>(kN));
    const auto dy = random_vector<T>(size_t(kN), 78);
    for (size_t i = 0; i < size_t(kN); ++i) {
      double v = 0;
      for (int k = 0; k < kInputs; ++k) v += coeff[size_t(k)] * double(x[size_t(k)][i]);
      y_ref[i] = v > 0 ? v : slope * v;
      dz[i] = v > 0 ? double(dy[i]) : slope * double(dy[i]);
    }
    auto y = poisoned<T>(size_t(kN));
    eltwise_fwd(h, ed, xp, y.data(), nullptr);
    EXPECT_TRUE(all_close(y, y_ref, tol));
    std::vector<std::vector<T>> dx = {dy, poisoned<T>(size_t(kN)), poisoned<T>(size_t(kN))};
    void* dxp[kInputs] = {dx[0].data(), dx[1].data(), dx[2].data()};
    eltwise_bwd(h, ed, xp, y.data(), dx[0].data(), nullptr, dxp);
    for (int k = 0; k < kInputs; ++k) {
      std::vector<double> ref(static_cast<size_t>(kN));
      for (size_t i = 0; i < ref.size(); ++i) ref[i] = coeff[size_t(k)] * dz[i];
      EXPECT_TRUE(all_close(dx[size_t(k)], ref, tol)) << "input " << k;
    }
  }
}

}  // namespace
}  // namespace crema::prim
