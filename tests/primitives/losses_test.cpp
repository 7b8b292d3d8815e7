// Loss primitives against naive double-precision references written from Caffe's definitions:
// forward loss values and backward gradients for each loss, in float and double, with ignore
// labels and each normalization where the loss has them; bad labels are errors.
#include "primitives/losses.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "primitives/handle.h"
#include "test_util.h"

namespace crema::prim {
namespace {

template <typename T>
constexpr DataType dt() {
  return sizeof(T) == 8 ? DataType::kFloat64 : DataType::kFloat32;
}

template <typename T>
std::vector<T> cast(const std::vector<double>& v) {
  return std::vector<T>(v.begin(), v.end());
}

// Labels n % classes, a few replaced by the ignore value when given.
std::vector<double> labels(int n, int classes, int ignore_every = 0, double ignore = -1) {
  std::vector<double> l(n);
  for (int i = 0; i < n; ++i) l[i] = (ignore_every && i % ignore_every == 1) ? ignore : i % classes;
  return l;
}

Tolerance tol_for(bool is_double) {
  return is_double ? Tolerance{1e-12, 1e-10} : Tolerance{1e-5, 1e-4};
}

CREMA_FLOAT_TYPED_TEST_SUITE(LossPrimitive);

TYPED_TEST(LossPrimitive, Euclidean) {
  using T = TypeParam;
  const int N = 3, D = 7;
  const auto a = random_vector<double>(N * D, 1), b = random_vector<double>(N * D, 2);
  double ref = 0;
  for (int i = 0; i < N * D; ++i) ref += (a[i] - b[i]) * (a[i] - b[i]);
  ref /= 2.0 * N;
  Handle h;
  EuclideanLossDesc d{dt<T>(), N, D};
  const auto ta = cast<T>(a), tb = cast<T>(b);
  std::vector<T> loss = poisoned<T>(1), da = poisoned<T>(N * D), db = poisoned<T>(N * D);
  euclidean_loss_fwd(h, d, ta.data(), tb.data(), loss.data());
  EXPECT_NEAR(loss[0], ref, 1e-5 * ref);
  euclidean_loss_bwd(h, d, ta.data(), tb.data(), 0.7, da.data(), db.data());
  std::vector<double> rda(N * D), rdb(N * D);
  for (int i = 0; i < N * D; ++i) {
    rda[i] = 0.7 / N * (double(ta[i]) - double(tb[i]));
    rdb[i] = -rda[i];
  }
  EXPECT_TRUE(all_close(da, rda, tol_for(sizeof(T) == 8)));
  EXPECT_TRUE(all_close(db, rdb, tol_for(sizeof(T) == 8)));
}

TYPED_TEST(LossPrimitive, SigmoidCrossEntropyEachNormalization) {
  using T = TypeParam;
  const int N = 3, D = 5;
  // Logits large enough that a naive log(sigmoid) would overflow in float.
  auto x = random_vector<double>(N * D, 3, -4, 4);
  x[0] = 60;
  x[1] = -60;
  auto t = random_vector<double>(N * D, 4, 0, 1);
  t[4] = -1;  // ignored when ignore_label is -1
  t[9] = -1;
  const auto tx = cast<T>(x), tt = cast<T>(t);
  for (bool ignore : {false, true}) {
    for (auto mode : {LossNormalization::kFull, LossNormalization::kValid,
                      LossNormalization::kBatchSize, LossNormalization::kNone}) {
      SCOPED_TRACE("ignore " + std::to_string(ignore) + " mode " + std::to_string(int(mode)));
      double sum = 0;
      int valid = 0;
      std::vector<double> rdx(N * D, 0.0);
      for (int i = 0; i < N * D; ++i) {
        if (ignore && t[i] == -1) continue;
        const double xi = double(tx[i]), ti = double(tt[i]);
        // -[t log s + (1 - t) log(1 - s)] with logs of sigmoids computed stably via log1p.
        const double log_s = xi >= 0 ? -std::log1p(std::exp(-xi)) : xi - std::log1p(std::exp(xi));
        const double log_1ms = log_s - xi;
        sum += -(ti * log_s + (1 - ti) * log_1ms);
        rdx[i] = 1 / (1 + std::exp(-xi)) - ti;
        ++valid;
      }
      const double norm = mode == LossNormalization::kFull        ? N * D
                          : mode == LossNormalization::kValid     ? valid
                          : mode == LossNormalization::kBatchSize ? N
                                                                  : 1;
      SigmoidCrossEntropyLossDesc d{dt<T>(), N, D, ignore, -1, mode};
      Handle h;
      std::vector<T> loss = poisoned<T>(1), dx = poisoned<T>(N * D);
      sigmoid_cross_entropy_loss_fwd(h, d, tx.data(), tt.data(), loss.data());
      EXPECT_NEAR(loss[0], sum / norm, 1e-5 * sum / norm);
      sigmoid_cross_entropy_loss_bwd(h, d, tx.data(), tt.data(), 2.0, dx.data());
      for (double& g : rdx) g *= 2.0 / norm;
      EXPECT_TRUE(all_close(dx, rdx, tol_for(sizeof(T) == 8)));
    }
  }
}

TYPED_TEST(LossPrimitive, HingeL1AndL2) {
  using T = TypeParam;
  const int N = 4, D = 5;
  const auto x = random_vector<double>(N * D, 5, -2, 2);
  const auto l = labels(N, D);
  const auto tx = cast<T>(x), tl = cast<T>(l);
  for (HingeNorm norm : {HingeNorm::kL1, HingeNorm::kL2}) {
    double sum = 0;
    std::vector<double> rdx(N * D);
    for (int n = 0; n < N; ++n)
      for (int j = 0; j < D; ++j) {
        const double s = j == int(l[n]) ? -1 : 1;
        const double v = std::max(0.0, 1 + s * double(tx[n * D + j]));
        sum += norm == HingeNorm::kL1 ? v : v * v;
        rdx[n * D + j] = 0.5 / N * s * (norm == HingeNorm::kL1 ? (v > 0) : 2 * v);
      }
    HingeLossDesc d{dt<T>(), N, D, norm};
    Handle h;
    std::vector<T> loss = poisoned<T>(1), dx = poisoned<T>(N * D);
    hinge_loss_fwd(h, d, tx.data(), tl.data(), loss.data());
    EXPECT_NEAR(loss[0], sum / N, 1e-5 * sum / N);
    hinge_loss_bwd(h, d, tx.data(), tl.data(), 0.5, dx.data());
    EXPECT_TRUE(all_close(dx, rdx, tol_for(sizeof(T) == 8)));
  }
}

TYPED_TEST(LossPrimitive, InfogainSpatialWithIgnore) {
  using T = TypeParam;
  const int O = 2, C = 3, I = 4;
  // Probabilities normalized over C for each (o, i), one tiny enough to hit the clamp.
  auto p = random_vector<double>(O * C * I, 6, 0.1, 1);
  for (int o = 0; o < O; ++o)
    for (int i = 0; i < I; ++i) {
      double s = 0;
      for (int c = 0; c < C; ++c) s += p[(o * C + c) * I + i];
      for (int c = 0; c < C; ++c) p[(o * C + c) * I + i] /= s;
    }
  p[0] = 1e-30;
  const auto H = random_vector<double>(C * C, 7, 0, 2);
  const auto l = labels(O * I, C, 3, 5);  // positions 1, 4, 7 ignored (label 5)
  const auto tp = cast<T>(p), tH = cast<T>(H), tl = cast<T>(l);
  double sum = 0;
  int valid = 0;
  std::vector<double> rdx(O * C * I, 0.0);
  for (int o = 0; o < O; ++o)
    for (int i = 0; i < I; ++i) {
      const int k = int(l[o * I + i]);
      if (k == 5) continue;
      ++valid;
      double row = 0;
      for (int c = 0; c < C; ++c) row += double(tH[k * C + c]);
      for (int c = 0; c < C; ++c) {
        const double pc = double(tp[(o * C + c) * I + i]);
        sum -= double(tH[k * C + c]) * std::log(std::max(pc, 1e-20));
        rdx[(o * C + c) * I + i] = pc * row - double(tH[k * C + c]);
      }
    }
  InfogainLossDesc d{dt<T>(), O, C, I, true, 5, LossNormalization::kValid};
  Handle h;
  std::vector<T> loss = poisoned<T>(1), dx = poisoned<T>(O * C * I);
  infogain_loss_fwd(h, d, tp.data(), tl.data(), tH.data(), loss.data());
  EXPECT_NEAR(loss[0], sum / valid, 1e-5 * sum / valid);
  infogain_loss_bwd(h, d, tp.data(), tl.data(), tH.data(), 1.5, dx.data());
  for (double& g : rdx) g *= 1.5 / valid;
  EXPECT_TRUE(all_close(dx, rdx, tol_for(sizeof(T) == 8)));
}

TYPED_TEST(LossPrimitive, MultinomialLogisticClampsAtThreshold) {
  using T = TypeParam;
  const int N = 4, D = 3;
  auto p = random_vector<double>(N * D, 8, 0.05, 1);
  p[0] = 0;  // label of sample 0 is 0: log(0) is clamped to log(1e-20)
  const auto l = labels(N, D);
  const auto tp = cast<T>(p), tl = cast<T>(l);
  double sum = 0;
  std::vector<double> rdx(N * D, 0.0);
  for (int n = 0; n < N; ++n) {
    const double pk = std::max(double(tp[n * D + int(l[n])]), 1e-20);
    sum -= std::log(pk);
    rdx[n * D + int(l[n])] = -1.0 / N / pk;
  }
  MultinomialLogisticLossDesc d{dt<T>(), N, D};
  Handle h;
  std::vector<T> loss = poisoned<T>(1), dx = poisoned<T>(N * D);
  multinomial_logistic_loss_fwd(h, d, tp.data(), tl.data(), loss.data());
  EXPECT_NEAR(loss[0], sum / N, 1e-5 * sum / N);
  EXPECT_NEAR(loss[0], (46.0517018598809 + 0) / N, 5.0);  // dominated by -log(1e-20)
  multinomial_logistic_loss_bwd(h, d, tp.data(), tl.data(), 1.0, dx.data());
  // Two thirds of the gradient is zero by definition.
  EXPECT_TRUE(all_close(dx, rdx, Tolerance{0, 1e-6, true}));
  EXPECT_FLOAT_EQ(float(dx[0]), float(-1e20 / N));
}

TYPED_TEST(LossPrimitive, ContrastiveBothForms) {
  using T = TypeParam;
  const int N = 6, D = 4;
  const auto a = random_vector<double>(N * D, 9), b = random_vector<double>(N * D, 10);
  std::vector<double> y = {1, 0, 0, 1, 0, 0};
  const auto ta = cast<T>(a), tb = cast<T>(b), ty = cast<T>(y);
  for (bool legacy : {false, true}) {
    const double margin = legacy ? 2.0 : 1.5;
    double sum = 0;
    std::vector<double> rda(N * D), rdb(N * D);
    for (int n = 0; n < N; ++n) {
      double dsq = 0;
      for (int j = 0; j < D; ++j) dsq += std::pow(double(ta[n * D + j]) - double(tb[n * D + j]), 2);
      const double dist = std::sqrt(dsq);
      double g = 0;
      if (y[n] != 0) {
        sum += dsq;
        g = 1;
      } else if (legacy) {
        sum += std::max(margin - dsq, 0.0);
        g = margin - dsq > 0 ? -1 : 0;
      } else {
        sum += std::pow(std::max(margin - dist, 0.0), 2);
        g = margin - dist > 0 ? -(margin - dist) / (dist + 1e-4) : 0;
      }
      for (int j = 0; j < D; ++j) {
        rda[n * D + j] = 0.9 / N * g * (double(ta[n * D + j]) - double(tb[n * D + j]));
        rdb[n * D + j] = -rda[n * D + j];
      }
    }
    ContrastiveLossDesc d{dt<T>(), N, D, margin, legacy};
    Handle h;
    std::vector<T> loss = poisoned<T>(1), da = poisoned<T>(N * D), db = poisoned<T>(N * D);
    contrastive_loss_fwd(h, d, ta.data(), tb.data(), ty.data(), loss.data());
    EXPECT_NEAR(loss[0], sum / (2.0 * N), 1e-5 * sum);
    contrastive_loss_bwd(h, d, ta.data(), tb.data(), ty.data(), 0.9, da.data(), db.data());
    const Tolerance tol{1e-6, 1e-4, true};  // dissimilar pairs past the margin give zeros
    EXPECT_TRUE(all_close(da, rda, tol));
    EXPECT_TRUE(all_close(db, rdb, tol));
    double mag = 0;
    for (double v : rda) mag += std::fabs(v);
    EXPECT_GT(mag, 0.1);
  }
}

TEST(LossPrimitiveErrors, BadLabelsAndSizes) {
  Handle h;
  const std::vector<double> x(6, 0.5), loss(1);
  std::vector<double> out(6);
  const std::vector<double> bad = {0, 3};  // 3 is not in [0, 3)
  auto expect_error = [](auto f, const std::string& text) {
    try {
      f();
      ADD_FAILURE() << "no error, expected " << text;
    } catch (const PrimError& e) {
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  };
  expect_error(
      [&] {
        hinge_loss_fwd(h, HingeLossDesc{DataType::kFloat64, 2, 3}, x.data(), bad.data(),
                       out.data());
      },
      "hinge_loss_fwd: label 3.000000 at position 1 is not an integer in [0, 3)");
  expect_error(
      [&] {
        multinomial_logistic_loss_bwd(h, MultinomialLogisticLossDesc{DataType::kFloat64, 2, 3},
                                      x.data(), bad.data(), 1.0, out.data());
      },
      "multinomial_logistic_loss_bwd: label 3.000000 at position 1");
  const std::vector<double> frac = {0.5, 1, 2};
  expect_error(
      [&] {
        InfogainLossDesc d{DataType::kFloat64, 3, 2, 1, true, -1, LossNormalization::kValid};
        infogain_loss_fwd(h, d, x.data(), frac.data(), x.data(), out.data());
      },
      "label 0.500000 at position 0 is not an integer in [0, 2) nor the ignore label -1");
  expect_error(
      [&] {
        euclidean_loss_fwd(h, EuclideanLossDesc{DataType::kFloat64, 0, 3}, x.data(), x.data(),
                           out.data());
      },
      "euclidean_loss_fwd: empty input");
}

}  // namespace
}  // namespace crema::prim
