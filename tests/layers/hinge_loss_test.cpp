// HingeLoss layer tests: hand-computed L1 and L2 losses, gradients, label errors.
#include "layers/hinge_loss_layer.h"
#include "loss_layer_test_util.h"
#include "test_util.h"

namespace crema::test {
namespace {

double hinge(const std::string& norm) {
  auto layer =
      make_direct<HingeLossLayer>("type: 'HingeLoss' hinge_loss_param { norm: " + norm + " }");
  TensorSet<double> bottom, top;
  // Sample 0, label 2: margins 1 + 0.5, 1 - 0.2, max(0, 1 - 2). Sample 1, label 0:
  // max(0, 1 - 0.25), max(0, 1 - 3), 1 + 0.
  bottom.add({2, 3})->set_data({0.5, -0.2, 2.0, 0.25, -3, 0});
  bottom.add({2})->set_data({2, 0});
  top.add();
  return forward_loss(*layer, bottom, top);
}

TEST(HingeLossLayer, HandComputedL1AndL2) {
  EXPECT_NEAR(hinge("L1"), (1.5 + 0.8 + 0 + 0.75 + 0 + 1) / 2, 1e-12);
  EXPECT_NEAR(hinge("L2"), (2.25 + 0.64 + 0.5625 + 1) / 2, 1e-12);
}

TEST(HingeLossLayer, Gradient) {
  for (const char* norm : {"L1", "L2"}) {
    SCOPED_TRACE(norm);
    auto layer = make_direct<HingeLossLayer>(std::string("type: 'HingeLoss' hinge_loss_param { "
                                                         "norm: ") +
                                             norm + " }");
    TensorSet<double> bottom, top;
    bottom.add({4, 5, 1, 1}, 3, -0.8, 0.8);  // away from the kinks at +-1
    bottom.add({4})->set_data({0, 4, 2, 1});
    top.add();
    EXPECT_TRUE(check_gradient(*layer, *bottom, *top, GradientCheckOptions().bottoms({0})));
  }
}

TEST(HingeLossLayer, Errors) {
  expect_setup_error(
      *make_direct<HingeLossLayer>("type: 'HingeLoss'"), {{2, 3}, {3}},
      "layer test_HingeLoss (HingeLoss): expected one label per sample: the scores are "
      "(2 3 (6)) but the labels are (3 (3))");
  auto layer2 = make_direct<HingeLossLayer>("type: 'HingeLoss'");
  TensorSet<double> b2, t2;
  b2.add({2, 3});
  b2.add({2})->set_data({0, 3});
  t2.add();
  expect_error([&] { forward_loss(*layer2, b2, t2); },
               "layer test_HingeLoss (HingeLoss): hinge_loss_fwd: label 3.000000 at position 1");
}

}  // namespace
}  // namespace crema::test
