// MultinomialLogisticLoss layer tests: a hand-computed loss, the 1e-20 clamp, gradients, and
// label errors.
#include <cmath>

#include "layers/multinomial_logistic_loss_layer.h"
#include "loss_layer_test_util.h"
#include "test_util.h"

namespace crema::test {
namespace {

TEST(MultinomialLogisticLossLayer, HandComputedAndClamped) {
  auto layer = make_direct<MultinomialLogisticLossLayer>("type: 'MultinomialLogisticLoss'");
  TensorSet<double> bottom, top;
  Tensor<double>* p = bottom.add({2, 2});
  p->set_data({0.2, 0.8, 0.6, 0.4});
  bottom.add({2})->set_data({1, 0});
  top.add();
  EXPECT_NEAR(forward_loss(*layer, bottom, top), -(std::log(0.8) + std::log(0.6)) / 2, 1e-12);
  p->set_data({0.2, 0.0, 0.6, 0.4});  // log(0) is clamped to log(1e-20)
  Handle h;
  layer->forward(h, *bottom, *top);
  EXPECT_NEAR(top[0]->data_vector()[0], -(std::log(1e-20) + std::log(0.6)) / 2, 1e-9);
}

TEST(MultinomialLogisticLossLayer, Gradient) {
  auto layer = make_direct<MultinomialLogisticLossLayer>("type: 'MultinomialLogisticLoss'");
  TensorSet<double> bottom, top;
  bottom.add({4, 3, 1, 1}, 6, 0.2, 1.0);
  bottom.add({4, 1, 1, 1})->set_data({0, 2, 1, 2});
  top.add();
  EXPECT_TRUE(
      check_gradient(*layer, *bottom, *top, GradientCheckOptions().bottoms({0}).step(1e-4)));
}

TEST(MultinomialLogisticLossLayer, Errors) {
  expect_setup_error(
      *make_direct<MultinomialLogisticLossLayer>("type: 'MultinomialLogisticLoss'"),
      {{2, 3}, {2, 3}},
      "expected one label per sample: the probabilities are (2 3 (6)) but the labels "
      "are (2 3 (6))");
  auto l2 = make_direct<MultinomialLogisticLossLayer>("type: 'MultinomialLogisticLoss'");
  TensorSet<double> b2, t2;
  b2.add({2, 3}, 1, 0.1, 1);
  b2.add({2})->set_data({-1, 0});
  t2.add();
  expect_error([&] { forward_loss(*l2, b2, t2); },
               "label -1.000000 at position 0 is not an integer in [0, 3)");
}

}  // namespace
}  // namespace crema::test
