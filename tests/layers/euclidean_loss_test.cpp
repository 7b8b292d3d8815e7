// EuclideanLoss layer tests: a hand-computed loss, gradients to both bottoms, the count error.
#include "layers/euclidean_loss_layer.h"
#include "loss_layer_test_util.h"
#include "test_util.h"

namespace crema::test {
namespace {

TEST(EuclideanLossLayer, HandComputedLoss) {
  auto layer = make_direct<EuclideanLossLayer>("type: 'EuclideanLoss'");
  TensorSet<double> bottom, top;
  bottom.add({2, 2})->set_data({1, 2, 3, 4});
  bottom.add({2, 2})->set_data({0, 0, 3, 6});
  top.add();
  // (1 + 4 + 0 + 4) / (2 * 2)
  EXPECT_DOUBLE_EQ(forward_loss(*layer, bottom, top), 2.25);
}

TEST(EuclideanLossLayer, GradientBothBottoms) {
  auto layer = make_direct<EuclideanLossLayer>("type: 'EuclideanLoss'");
  TensorSet<double> bottom, top;
  bottom.add({3, 2, 2, 1}, 1);
  bottom.add({3, 4}, 2);  // same count, another shape: Caffe compares counts
  top.add();
  EXPECT_TRUE(check_gradient(*layer, *bottom, *top));
}

TEST(EuclideanLossLayer, MismatchedCountsNameBothShapes) {
  expect_setup_error(*make_direct<EuclideanLossLayer>("type: 'EuclideanLoss'"), {{2, 3}, {2, 4}},
                     "layer test_EuclideanLoss (EuclideanLoss): the two bottoms must have the same "
                     "non-zero count and first axis, but bottom 0 is (2 3 (6)) and bottom 1 is "
                     "(2 4 (8))");
}

}  // namespace
}  // namespace crema::test
