// SigmoidCrossEntropyLoss layer tests: hand-computed losses under the default (BATCH_SIZE) and
// the other normalizations with an ignore label, extreme logits, gradients, the count error.
#include <cmath>

#include "layers/sigmoid_cross_entropy_loss_layer.h"
#include "loss_layer_test_util.h"
#include "test_util.h"

namespace crema::test {
namespace {

double loss_with(const std::string& loss_param) {
  auto layer = make_direct<SigmoidCrossEntropyLossLayer>(
      "type: 'SigmoidCrossEntropyLoss' loss_param { " + loss_param + " }");
  TensorSet<double> bottom, top;
  // One sample of four: sigmoid(0) = 1/2 against 1 and sigmoid(ln 3) = 3/4 against 0 give
  // ln 2 + ln 4 = ln 8; the other two targets are the ignore label -1 when it is set.
  bottom.add({1, 4})->set_data({0, std::log(3.0), 5, -5});
  bottom.add({1, 4})->set_data({1, 0, -1, -1});
  top.add();
  return forward_loss(*layer, bottom, top);
}

TEST(SigmoidCrossEntropyLossLayer, HandComputedUnderEachNormalization) {
  const double ln8 = std::log(8.0);
  EXPECT_NEAR(loss_with("ignore_label: -1"), ln8, 1e-12);  // BATCH_SIZE: N = 1
  EXPECT_NEAR(loss_with("ignore_label: -1 normalization: VALID"), ln8 / 2, 1e-12);
  EXPECT_NEAR(loss_with("ignore_label: -1 normalization: FULL"), ln8 / 4, 1e-12);
  EXPECT_NEAR(loss_with("ignore_label: -1 normalize: true"), ln8 / 2, 1e-12);
  // Without ignore_label the -1 targets count: x = 5, t = -1 adds log(1 + e^5) + 5, and
  // x = -5, t = -1 adds log(1 + e^-5) - 5.
  const double extra = std::log1p(std::exp(5.0)) + 5 + std::log1p(std::exp(-5.0)) - 5;
  EXPECT_NEAR(loss_with(""), ln8 + extra, 1e-12);
}

TEST(SigmoidCrossEntropyLossLayer, ExtremeLogitsStayFinite) {
  auto layer = make_direct<SigmoidCrossEntropyLossLayer, float>("type: 'SigmoidCrossEntropyLoss'");
  TensorSet<float> bottom, top;
  bottom.add({2, 1})->set_data({200.0f, -200.0f});
  bottom.add({2, 1})->set_data({0.0f, 1.0f});
  top.add();
  EXPECT_NEAR(forward_loss(*layer, bottom, top), 200.0, 1e-3);  // (200 + 200) / 2
}

TEST(SigmoidCrossEntropyLossLayer, Gradient) {
  for (const char* norm : {"", "normalization: VALID ignore_label: 1", "normalization: FULL"}) {
    SCOPED_TRACE(norm);
    auto layer = make_direct<SigmoidCrossEntropyLossLayer>(
        std::string("type: 'SigmoidCrossEntropyLoss' loss_param { ") + norm + " }");
    TensorSet<double> bottom, top;
    bottom.add({3, 2, 2}, 1, -3, 3);
    Tensor<double>* t = bottom.add({3, 4}, 2, 0, 1);
    std::vector<double> tv = t->data_vector();
    tv[3] = tv[7] = 1;  // ignored when ignore_label is 1
    t->set_data(tv);
    top.add();
    EXPECT_TRUE(check_gradient(*layer, *bottom, *top, GradientCheckOptions().bottoms({0})));
  }
}

TEST(SigmoidCrossEntropyLossLayer, MismatchedCountsNameBothShapes) {
  expect_setup_error(
      *make_direct<SigmoidCrossEntropyLossLayer>("type: 'SigmoidCrossEntropyLoss'"),
      {{2, 3}, {2, 2}},
      "the scores and the targets must have the same non-zero count, but bottom 0 is "
      "(2 3 (6)) and bottom 1 is (2 2 (4))");
}

}  // namespace
}  // namespace crema::test
