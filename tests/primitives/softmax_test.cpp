// Tests of softmax/log-softmax, softmax loss and accuracy on the CPU against naive double
// references.
#include "primitives/softmax.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "doc_tables.h"
#include "primitives/common/dtype_visit.h"
#include "primitives/common/softmax_ops.h"
#include "softmax_cases.h"
#include "test_util.h"

namespace crema::prim {
namespace {

const TypedTolerance kTol = {{1e-12, 1e-10}, {1e-6, 1e-5}};

using Shape = test::SoftmaxShape;
using test::loss_desc;
using test::make_labels;
const std::vector<Shape>& kShapes = test::unit_softmax_shapes();

size_t at(const Shape& s, int64_t o, int64_t c, int64_t i) {
  return size_t((o * s.channels + c) * s.inner + i);
}

// The oracle, straight from the definition (inputs stay small enough for exp in double).
std::vector<double> ref_softmax(const Shape& s, const std::vector<double>& x, bool log) {
  std::vector<double> y(x.size());
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t i = 0; i < s.inner; ++i) {
      double sum = 0;
      for (int64_t c = 0; c < s.channels; ++c) sum += std::exp(x[at(s, o, c, i)]);
      for (int64_t c = 0; c < s.channels; ++c)
        y[at(s, o, c, i)] =
            log ? x[at(s, o, c, i)] - std::log(sum) : std::exp(x[at(s, o, c, i)]) / sum;
    }
  return y;
}

std::vector<double> ref_softmax_bwd(const Shape& s, const std::vector<double>& y,
                                    const std::vector<double>& dy, bool log) {
  std::vector<double> dx(y.size());
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t i = 0; i < s.inner; ++i) {
      double d = 0;
      for (int64_t c = 0; c < s.channels; ++c)
        d += log ? dy[at(s, o, c, i)] : dy[at(s, o, c, i)] * y[at(s, o, c, i)];
      for (int64_t c = 0; c < s.channels; ++c) {
        const size_t j = at(s, o, c, i);
        dx[j] = log ? dy[j] - std::exp(y[j]) * d : y[j] * (dy[j] - d);
      }
    }
  return dx;
}

template <typename T>
std::vector<double> to_double(const std::vector<T>& v) {
  return std::vector<double>(v.begin(), v.end());
}

SoftmaxDesc desc(DataType t, const Shape& s, bool log) {
  return SoftmaxDesc{t, s.outer, s.channels, s.inner, log};
}

CREMA_FLOAT_TYPED_TEST_SUITE(SoftmaxTest);

TYPED_TEST(SoftmaxTest, ForwardAndBackwardMatchReference) {
  using T = TypeParam;
  Handle h;
  for (bool log : {false, true}) {
    for (const Shape& s : kShapes) {
      // Softmax over one channel is exactly 1 and its gradient exactly 0: not a useful check of
      // the backward pass, and a vacuous one for log-softmax.
      if (s.channels == 1 && log) continue;
      const size_t n = size_t(s.outer * s.channels * s.inner);
      const auto x = random_vector<T>(n, 41, -5.0, 5.0);
      const auto y_ref = ref_softmax(s, to_double(x), log);
      const auto dy = random_vector<T>(n, 42);
      // The backward input y is the library-independent reference rounded to T.
      std::vector<T> y_t(y_ref.begin(), y_ref.end());
      const auto dx_ref = ref_softmax_bwd(s, to_double(y_t), to_double(dy), log);
      for (SoftmaxAlgo a : auto_then(softmax_algos(Device::kCPU))) {
        SCOPED_TRACE(::testing::Message() << (log ? "log " : "") << s.outer << "x" << s.channels
                                          << "x" << s.inner << " " << softmax_algo_name(a));
        SoftmaxDesc sd = desc(dtype_of<T>(), s, log);
        sd.algo = a;
        auto y = poisoned<T>(n);
        if (softmax_fwd_unsupported(h, sd, x.data(), y.data())) continue;
        softmax_fwd(h, sd, x.data(), y.data());
        EXPECT_TRUE(all_close(y, y_ref, kTol.of<T>()));
        if (s.channels == 1) continue;
        auto dx = poisoned<T>(n);
        softmax_bwd(h, sd, y_t.data(), dy.data(), dx.data());
        EXPECT_TRUE(all_close(dx, dx_ref, kTol.of<T>()));
      }
    }
  }
}

// Inputs near 100 overflow a float exp unless the maximum is subtracted first.
TYPED_TEST(SoftmaxTest, StableForLargeInputs) {
  using T = TypeParam;
  Handle h;
  for (const Shape& s : {Shape{2, 9, 1}, Shape{2, 9, 5}}) {
    for (bool log : {false, true}) {
      const size_t n = size_t(s.outer * s.channels * s.inner);
      const auto x = random_vector<T>(n, 51, 95.0, 105.0);
      auto y = poisoned<T>(n);
      softmax_fwd(h, desc(dtype_of<T>(), s, log), x.data(), y.data());
      EXPECT_TRUE(all_close(y, ref_softmax(s, to_double(x), log), kTol.of<T>()));
    }
  }
}

TYPED_TEST(SoftmaxTest, BlendAccumulatesAndInPlace) {
  using T = TypeParam;
  Handle h;
  const Blend blend{2.0, 1.0};
  for (const Shape& s : {Shape{3, 7, 1}, Shape{2, 5, 9}}) {
    for (bool log : {false, true}) {
      for (SoftmaxAlgo a : auto_then(softmax_algos(Device::kCPU))) {
        SCOPED_TRACE(::testing::Message()
                     << (log ? "log " : "") << s.inner << " " << softmax_algo_name(a));
        const size_t n = size_t(s.outer * s.channels * s.inner);
        SoftmaxDesc sd = desc(dtype_of<T>(), s, log);
        sd.algo = a;
        const auto x = random_vector<T>(n, 61, -3.0, 3.0);
        const auto y0 = random_vector<T>(n, 62);
        if (softmax_fwd_unsupported(h, sd, x.data(), y0.data())) continue;
        const auto y_ref = ref_softmax(s, to_double(x), log);
        std::vector<double> blended(n);
        for (size_t j = 0; j < n; ++j) blended[j] = 2.0 * y_ref[j] + double(y0[j]);
        auto y = y0;
        softmax_fwd(h, sd, x.data(), y.data(), blend);
        EXPECT_TRUE(all_close(y, blended, kTol.of<T>()));

        auto buf = x;
        softmax_fwd(h, sd, buf.data(), buf.data());
        EXPECT_TRUE(all_close(buf, y_ref, kTol.of<T>()));

        std::vector<T> y_t(y_ref.begin(), y_ref.end());
        const auto dy = random_vector<T>(n, 63);
        const auto dx0 = random_vector<T>(n, 64);
        const auto dx_ref = ref_softmax_bwd(s, to_double(y_t), to_double(dy), log);
        std::vector<double> dx_blended(n);
        for (size_t j = 0; j < n; ++j) dx_blended[j] = 2.0 * dx_ref[j] + double(dx0[j]);
        auto dx = dx0;
        softmax_bwd(h, sd, y_t.data(), dy.data(), dx.data(), blend);
        EXPECT_TRUE(all_close(dx, dx_blended, kTol.of<T>()));

        auto grad = dy;  // dx aliasing dy, as an in-place layer's backward
        softmax_bwd(h, sd, y_t.data(), grad.data(), grad.data());
        EXPECT_TRUE(all_close(grad, dx_ref, kTol.of<T>()));
      }
    }
  }
}

// The CPU's rows, each runs what it supports and says why not otherwise; docs/primitives.md
// lists every device's rows in the table's order.
TEST(SoftmaxAlgos, ForcedRowsAndDocs) {
  Handle h;
  std::vector<float> x(2 * 3 * 4), y(x.size());
  SoftmaxDesc sd{DataType::kFloat32, 2, 3, 4, false, SoftmaxAlgo::kRows};
  EXPECT_STREQ(softmax_fwd_unsupported(h, sd, x.data(), y.data()), "inner > 1 (spatial)");
  EXPECT_THROW(softmax_fwd(h, sd, x.data(), y.data()), PrimError);
  sd.algo = SoftmaxAlgo::kWarpRows;
  EXPECT_STREQ(softmax_bwd_unsupported(h, sd, y.data(), x.data(), y.data()), "not a cpu algorithm");
  sd.algo = SoftmaxAlgo::kSpatial;
  EXPECT_EQ(softmax_fwd_unsupported(h, sd, x.data(), y.data()), nullptr);
  EXPECT_EQ(softmax_algo_of("block_rows"), SoftmaxAlgo::kBlockRows);
  EXPECT_THROW(softmax_algo_of("fast"), PrimError);

  test::expect_documented("Softmax algorithms", softmax_algos, softmax_algo_name);
}

// ---- softmax loss ---------------------------------------------------------------------------

struct LossRef {
  double loss;
  std::vector<double> dx;
};

LossRef ref_loss(const Shape& s, const std::vector<double>& prob, const std::vector<double>& label,
                 LossNormalization norm, bool has_ignore, int ignore, double loss_weight) {
  double sum = 0;
  int64_t valid = 0;
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t i = 0; i < s.inner; ++i) {
      const double l = label[size_t(o * s.inner + i)];
      if (has_ignore && l == ignore) continue;
      sum += -std::log(std::max(prob[at(s, o, int64_t(l), i)], double(FLT_MIN)));
      ++valid;
    }
  double z = 1;
  if (norm == LossNormalization::kFull) z = double(s.outer * s.inner);
  if (norm == LossNormalization::kValid) z = double(valid);
  if (norm == LossNormalization::kBatchSize) z = double(s.outer);
  if (z < 1) z = 1;
  LossRef r{sum / z, std::vector<double>(prob.size())};
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t i = 0; i < s.inner; ++i) {
      const double l = label[size_t(o * s.inner + i)];
      for (int64_t c = 0; c < s.channels; ++c) {
        const size_t j = at(s, o, c, i);
        r.dx[j] = (has_ignore && l == ignore)
                      ? 0.0
                      : loss_weight / z * (prob[j] - (c == int64_t(l) ? 1.0 : 0.0));
      }
    }
  return r;
}

CREMA_FLOAT_TYPED_TEST_SUITE(SoftmaxLossTest);

TYPED_TEST(SoftmaxLossTest, EachNormalizationWithAndWithoutIgnore) {
  using T = TypeParam;
  Handle h;
  const LossNormalization norms[] = {LossNormalization::kFull, LossNormalization::kValid,
                                     LossNormalization::kBatchSize, LossNormalization::kNone};
  struct Ignore {
    bool has;
    int label;
  };
  // An ignore label outside the classes (255, as segmentation sets use) and inside them.
  const Ignore ignores[] = {{false, -1}, {true, 255}, {true, 2}};
  for (const Shape& s : {Shape{1, 5, 1}, Shape{6, 10, 1}, Shape{3, 7, 5}}) {
    for (LossNormalization norm : norms) {
      for (const Ignore& ig : ignores) {
        SCOPED_TRACE(::testing::Message()
                     << s.outer << "x" << s.channels << "x" << s.inner << " norm " << int(norm)
                     << " ignore " << ig.has << " " << ig.label);
        const size_t n = size_t(s.outer * s.channels * s.inner);
        const auto prob_d = ref_softmax(s, to_double(random_vector<double>(n, 71, -3, 3)), false);
        const std::vector<T> prob(prob_d.begin(), prob_d.end());
        const auto label = make_labels<T>(s, ig.has, ig.label, 72);
        const SoftmaxLossDesc ld = loss_desc(dtype_of<T>(), s, norm, ig.has, ig.label);
        const LossRef r =
            ref_loss(s, to_double(prob), to_double(label), norm, ig.has, ig.label, 0.7);
        T loss = std::numeric_limits<T>::quiet_NaN();
        softmax_loss_fwd(h, ld, prob.data(), label.data(), &loss);
        EXPECT_GT(r.loss, 0.1);
        EXPECT_NEAR(double(loss), r.loss, 1e-5 * r.loss);
        auto dx = poisoned<T>(n);
        softmax_loss_bwd(h, ld, prob.data(), label.data(), 0.7, dx.data());
        EXPECT_TRUE(all_close(dx, r.dx, kTol.of<T>()));
      }
    }
  }
}

// A zero probability on the label costs -log(FLT_MIN), not infinity; an all-ignored batch
// costs 0 and has zero gradient.
TYPED_TEST(SoftmaxLossTest, ClampAndAllIgnored) {
  using T = TypeParam;
  Handle h;
  const Shape s{2, 3, 1};
  const std::vector<T> prob = {0, 0.5, 0.5, 0.25, 0.25, 0.5};
  const std::vector<T> label = {0, 2};
  T loss = 0;
  softmax_loss_fwd(h, loss_desc(dtype_of<T>(), s, LossNormalization::kValid, false, -1),
                   prob.data(), label.data(), &loss);
  EXPECT_NEAR(double(loss), (-std::log(double(FLT_MIN)) - std::log(0.5)) / 2, 1e-4);

  const std::vector<T> ignored = {-1, -1};
  for (LossNormalization norm : {LossNormalization::kValid, LossNormalization::kFull}) {
    const auto ld = loss_desc(dtype_of<T>(), s, norm, true, -1);
    loss = std::numeric_limits<T>::quiet_NaN();
    softmax_loss_fwd(h, ld, prob.data(), ignored.data(), &loss);
    EXPECT_EQ(double(loss), 0.0);
    auto dx = poisoned<T>(prob.size());
    softmax_loss_bwd(h, ld, prob.data(), ignored.data(), 1.0, dx.data());
    for (T v : dx) EXPECT_EQ(double(v), 0.0);
  }
}

TYPED_TEST(SoftmaxLossTest, BadLabelThrowsNamingIt) {
  using T = TypeParam;
  Handle h;
  const Shape s{2, 4, 3};
  const std::vector<T> prob(24, T(0.25));
  const auto ld = loss_desc(dtype_of<T>(), s, LossNormalization::kValid, true, -1);
  const T nan = std::numeric_limits<T>::quiet_NaN();
  for (T bad : {T(4), T(1.5), T(-2), nan}) {
    std::vector<T> label = {0, 1, 2, 3, 0, 1};
    label[4] = bad;
    for (int pass = 0; pass < 2; ++pass) {
      SCOPED_TRACE(::testing::Message() << "label " << double(bad) << " pass " << pass);
      try {
        T loss;
        std::vector<T> dx(24);
        if (pass == 0)
          softmax_loss_fwd(h, ld, prob.data(), label.data(), &loss);
        else
          softmax_loss_bwd(h, ld, prob.data(), label.data(), 1.0, dx.data());
        ADD_FAILURE() << "no PrimError";
      } catch (const PrimError& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("position 4"), std::string::npos) << what;
        EXPECT_NE(what.find("label " + std::to_string(double(bad))), std::string::npos) << what;
      }
    }
  }
}

// ---- accuracy -------------------------------------------------------------------------------

AccuracyDesc acc_desc(DataType t, const Shape& s, int top_k, bool has_ignore, int ignore) {
  return AccuracyDesc{t, s.outer, s.channels, s.inner, top_k, has_ignore, ignore};
}

CREMA_FLOAT_TYPED_TEST_SUITE(AccuracyTest);

// A hand-checked case with ties: scores {1, 3, 3, 0}: labels 1 and 2 tie with each other, so
// neither is top-1 (a tie counts against the label, as in Caffe) but both are top-3; label 0 is
// top-3, label 3 is not.
TYPED_TEST(AccuracyTest, TiesCountAgainstTheLabel) {
  using T = TypeParam;
  Handle h;
  const Shape s{4, 4, 1};
  const std::vector<T> scores = {1, 3, 3, 0, 1, 3, 3, 0, 1, 3, 3, 0, 1, 3, 3, 0};
  const std::vector<T> label = {1, 2, 0, 3};
  T acc = -1;
  std::vector<T> per_class(4, T(-1));
  accuracy_fwd(h, acc_desc(dtype_of<T>(), s, 1, false, -1), scores.data(), label.data(), &acc,
               per_class.data());
  EXPECT_DOUBLE_EQ(double(acc), 0.0);
  EXPECT_EQ(per_class, (std::vector<T>{0, 0, 0, 0}));
  const std::vector<T> untied = {1, 3, 2, 0, 1, 3, 2, 0, 1, 3, 2, 0, 1, 3, 2, 0};
  accuracy_fwd(h, acc_desc(dtype_of<T>(), s, 1, false, -1), untied.data(), label.data(), &acc,
               per_class.data());
  EXPECT_DOUBLE_EQ(double(acc), 0.25);
  const std::vector<T> label1 = {1, 1, 2, 3};
  accuracy_fwd(h, acc_desc(dtype_of<T>(), s, 1, false, -1), untied.data(), label1.data(), &acc,
               per_class.data());
  EXPECT_DOUBLE_EQ(double(acc), 0.5);
  EXPECT_EQ(per_class, (std::vector<T>{0, 1, 0, 0}));
  accuracy_fwd(h, acc_desc(dtype_of<T>(), s, 3, false, -1), scores.data(), label.data(), &acc,
               nullptr);
  EXPECT_DOUBLE_EQ(double(acc), 0.75);
}

// NaN scores are never a correct prediction (they compared false with everything, so the label
// looked like the top class: a diverged net reported accuracy 1). The loss of NaN scores is NaN,
// not the FLT_MIN clamp's 87.3365.
TYPED_TEST(AccuracyTest, NanScoresAreWrong) {
  using T = TypeParam;
  Handle h;
  const Shape s{2, 3, 1};
  const T nan = std::numeric_limits<T>::quiet_NaN();
  const std::vector<T> scores = {nan, nan, nan, 0, 2, 1};
  const std::vector<T> label = {0, 1};
  T acc = -1;
  for (int top_k : {1, 3}) {
    accuracy_fwd(h, acc_desc(dtype_of<T>(), s, top_k, false, -1), scores.data(), label.data(), &acc,
                 nullptr);
    EXPECT_DOUBLE_EQ(double(acc), 0.5) << "top " << top_k;
  }
  EXPECT_TRUE(std::isnan(softmax_ops::loss_term(double(nan))));
  EXPECT_DOUBLE_EQ(softmax_ops::loss_term(0.0), -std::log(double(FLT_MIN)));
}

TYPED_TEST(AccuracyTest, TopKIgnoreAndPerClassMatchReference) {
  using T = TypeParam;
  Handle h;
  for (const Shape& s : {Shape{50, 10, 1}, Shape{7, 6, 9}}) {
    for (int k : {1, 3}) {
      for (bool has_ignore : {false, true}) {
        SCOPED_TRACE(::testing::Message() << s.outer << "x" << s.channels << "x" << s.inner
                                          << " top " << k << " ignore " << has_ignore);
        const size_t n = size_t(s.outer * s.channels * s.inner);
        // Small integer scores: many ties.
        const auto scores = random_int_vector<T>(n, 81, 0, 20);
        const auto label = make_labels<T>(s, has_ignore, 255, 82);
        std::vector<double> hit(size_t(s.channels)), seen(size_t(s.channels));
        double correct = 0, valid = 0;
        for (int64_t o = 0; o < s.outer; ++o)
          for (int64_t i = 0; i < s.inner; ++i) {
            const double l = double(label[size_t(o * s.inner + i)]);
            if (has_ignore && l == 255) continue;
            const int64_t lc = int64_t(l);
            int better = 0;
            for (int64_t c = 0; c < s.channels; ++c)
              if (c != lc && scores[at(s, o, c, i)] >= scores[at(s, o, lc, i)]) ++better;
            valid += 1;
            seen[size_t(lc)] += 1;
            if (better < k) {
              correct += 1;
              hit[size_t(lc)] += 1;
            }
          }
        const double acc_ref = correct / valid;
        ASSERT_GT(acc_ref, 0.0);
        ASSERT_LT(acc_ref, 1.0);
        T acc = std::numeric_limits<T>::quiet_NaN();
        auto per_class = poisoned<T>(size_t(s.channels));
        accuracy_fwd(h, acc_desc(dtype_of<T>(), s, k, has_ignore, 255), scores.data(), label.data(),
                     &acc, per_class.data());
        EXPECT_NEAR(double(acc), acc_ref, 1e-6);
        for (int64_t c = 0; c < s.channels; ++c)
          EXPECT_NEAR(double(per_class[size_t(c)]),
                      seen[size_t(c)] ? hit[size_t(c)] / seen[size_t(c)] : 0.0, 1e-6)
              << "class " << c;
      }
    }
  }
}

// Classes that never occur get accuracy 0; so does a batch where everything is ignored.
TYPED_TEST(AccuracyTest, EmptyClassesAndAllIgnored) {
  using T = TypeParam;
  Handle h;
  const Shape s{2, 3, 1};
  const std::vector<T> scores = {0.1, 0.7, 0.2, 0.5, 0.3, 0.2};
  const std::vector<T> label = {1, 1};
  T acc = -1;
  auto per_class = poisoned<T>(3);
  accuracy_fwd(h, acc_desc(dtype_of<T>(), s, 1, false, -1), scores.data(), label.data(), &acc,
               per_class.data());
  EXPECT_DOUBLE_EQ(double(acc), 0.5);
  EXPECT_EQ(per_class, (std::vector<T>{0, 0.5, 0}));
  const std::vector<T> ignored = {7, 7};
  accuracy_fwd(h, acc_desc(dtype_of<T>(), s, 1, true, 7), scores.data(), ignored.data(), &acc,
               per_class.data());
  EXPECT_EQ(double(acc), 0.0);
  const std::vector<T> bad = {1, 3};
  EXPECT_THROW(accuracy_fwd(h, acc_desc(dtype_of<T>(), s, 1, false, -1), scores.data(), bad.data(),
                            &acc, nullptr),
               PrimError);
  EXPECT_THROW(accuracy_fwd(h, acc_desc(dtype_of<T>(), s, 4, false, -1), scores.data(),
                            label.data(), &acc, nullptr),
               PrimError);
}

}  // namespace
}  // namespace crema::prim
