// ContrastiveLoss layer tests: hand-computed losses in both forms, gradients to both feature
// bottoms, and the pair/label shape errors.
#include "layers/contrastive_loss_layer.h"
#include "loss_layer_test_util.h"
#include "test_util.h"

namespace crema::test {
namespace {

double contrastive(const std::string& params) {
  auto layer = make_direct<ContrastiveLossLayer>(
      "type: 'ContrastiveLoss' "
      "contrastive_loss_param { " +
      params + " }");
  TensorSet<double> bottom, top;
  // Pair 0 is similar at distance 1; pair 1 is dissimilar at distance 5.
  bottom.add({2, 2, 1, 1})->set_data({1, 0, 0, 0});
  bottom.add({2, 2, 1, 1})->set_data({0, 0, 3, 4});
  bottom.add({2, 1, 1, 1})->set_data({1, 0});
  top.add();
  return forward_loss(*layer, bottom, top);
}

TEST(ContrastiveLossLayer, HandComputed) {
  EXPECT_NEAR(contrastive(""), 1.0 / 4, 1e-12);                 // margin 1 < 5: only d^2 = 1
  EXPECT_NEAR(contrastive("margin: 6"), (1 + 1.0) / 4, 1e-12);  // (6 - 5)^2
  EXPECT_NEAR(contrastive("margin: 30 legacy_version: true"), (1 + 5.0) / 4, 1e-12);  // 30 - 25
}

TEST(ContrastiveLossLayer, Gradient) {
  for (const char* params : {"margin: 1.5", "margin: 1.0 legacy_version: true"}) {
    SCOPED_TRACE(params);
    auto layer = make_direct<ContrastiveLossLayer>(
        std::string("type: 'ContrastiveLoss' contrastive_loss_param { ") + params + " }");
    TensorSet<double> bottom, top;
    bottom.add({6, 3, 1, 1}, 7, -0.5, 0.5);
    bottom.add({6, 3, 1, 1}, 8, -0.5, 0.5);
    bottom.add({6, 1, 1, 1})->set_data({1, 0, 0, 1, 0, 0});
    top.add();
    EXPECT_TRUE(check_gradient(*layer, *bottom, *top,
                               GradientCheckOptions().bottoms({0, 1}).threshold(2e-3)));
  }
}

TEST(ContrastiveLossLayer, Errors) {
  expect_setup_error(*make_direct<ContrastiveLossLayer>("type: 'ContrastiveLoss'"),
                     {{2, 3}, {2, 2}, {2}}, "bottom 0 is (2 3 (6)) and bottom 1 is (2 2 (4))");
  expect_setup_error(*make_direct<ContrastiveLossLayer>("type: 'ContrastiveLoss'"),
                     {{2, 3}, {2, 3}, {3}},
                     "expected one similarity label per pair: the features are (2 3 (6)) but the "
                     "labels are (3 (3))");
}

}  // namespace
}  // namespace crema::test
