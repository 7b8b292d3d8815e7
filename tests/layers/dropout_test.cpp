// Dropout layer tests: the TRAIN mask and scaling, reproducibility from the Handle seed, the
// TEST identity, gradients.
#include <gtest/gtest.h>

#include "gradient_checker.h"
#include "test_util.h"

namespace crema::test {
namespace {

TEST(DropoutLayer, TrainKeepsAndScales) {
  auto layer = make_layer<double>("type: 'Dropout' dropout_param { dropout_ratio: 0.25 }");
  TensorSet<double> bottom, top;
  bottom.add({4, 250}, 3, 0.5, 1.5);  // never zero, so a zero output means dropped
  top.add();
  layer->setup(*bottom, *top);
  Handle handle;
  handle.set_seed(42);
  layer->forward(handle, *bottom, *top);
  const auto x = bottom[0]->data_vector(), y = top[0]->data_vector();
  int kept = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (y[i] != 0) {
      ++kept;
      EXPECT_NEAR(y[i], x[i] / 0.75, 1e-12) << i;
    }
  }
  // 1000 draws with p = 0.75: mean 750, sd ~14.
  EXPECT_GT(kept, 680);
  EXPECT_LT(kept, 820);

  // Backward uses the same mask and scale.
  const auto dy = random_vector<double>(x.size(), 5, 0.5, 1.5);
  top[0]->set_diff(dy);
  layer->backward(handle, *top, {true}, *bottom);
  const auto dx = bottom[0]->diff_vector();
  for (size_t i = 0; i < x.size(); ++i)
    EXPECT_NEAR(dx[i], y[i] == 0 ? 0.0 : dy[i] / 0.75, 1e-12) << i;

  // The same seed draws the same mask; the next forward draws a fresh one.
  auto first = top[0]->data_vector();
  handle.set_seed(42);
  layer->forward(handle, *bottom, *top);
  EXPECT_EQ(top[0]->data_vector(), first);
  layer->forward(handle, *bottom, *top);
  EXPECT_NE(top[0]->data_vector(), first);
}

TEST(DropoutLayer, TestPhaseIsIdentity) {
  auto layer = make_layer<float>("type: 'Dropout' dropout_param { dropout_ratio: 0.5 }", TEST);
  TensorSet<float> bottom, top;
  bottom.add({3, 7}, 4);
  top.add();
  layer->setup(*bottom, *top);
  Handle handle;
  layer->forward(handle, *bottom, *top);
  EXPECT_EQ(top[0]->data_vector(), bottom[0]->data_vector());
  const auto dy = random_vector<float>(21, 6);
  top[0]->set_diff(dy);
  layer->backward(handle, *top, {true}, *bottom);
  EXPECT_EQ(bottom[0]->diff_vector(), dy);
}

TEST(DropoutLayer, InPlaceTrain) {
  auto layer = make_layer<float>("type: 'Dropout'");
  TensorSet<float> io;
  io.add({64}, 2, 1, 2);
  const auto x = io[0]->data_vector();
  layer->setup(*io, *io);
  Handle handle;
  layer->forward(handle, *io, *io);
  const auto y = io[0]->data_vector();
  int dropped = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (y[i] == 0) {
      ++dropped;
    } else {
      EXPECT_FLOAT_EQ(y[i], 2 * x[i]);
    }
  }
  EXPECT_GT(dropped, 8);
  EXPECT_LT(dropped, 56);
}

TEST(DropoutLayer, Gradient) {
  auto layer = make_layer<double>("type: 'Dropout' dropout_param { dropout_ratio: 0.4 }");
  EXPECT_TRUE(check_gradient(*layer, Filled{{2, 3, 4}, 9},
                             GradientCheckOptions().threshold(1e-6).seed(77)));
}

TEST(DropoutLayer, RatioOutOfRangeIsAnError) {
  TensorSet<float> bottom, top;
  bottom.add({4});
  top.add();
  EXPECT_THROW(
      make_layer<float>("type: 'Dropout' dropout_param { dropout_ratio: 1 }")->setup(*bottom, *top),
      Error);
}

}  // namespace
}  // namespace crema::test
