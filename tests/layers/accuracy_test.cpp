// Accuracy layer tests: top-1 and top-k, ignore_label, per-class accuracy, a spatial axis.
#include <gtest/gtest.h>

#include "gradient_checker.h"
#include "test_util.h"

namespace crema::test {
namespace {

// 4 samples, 3 classes. Sample scores and labels chosen so top-1 hits samples 0 and 2, and
// top-2 also hits sample 1; sample 3's label is the lowest score.
void make_inputs(TensorSet<float>& bottom) {
  bottom.add({4, 3})->set_data({0.9f, 0.1f, 0.0f,    // label 0: rank 1
                                0.5f, 0.2f, 0.3f,    // label 2: rank 2
                                0.1f, 0.7f, 0.2f,    // label 1: rank 1
                                0.3f, 0.6f, 0.1f});  // label 2: rank 3
  bottom.add({4})->set_data({0, 2, 1, 2});
}

std::vector<float> run(const std::string& text, TensorSet<float>& bottom, int num_top) {
  auto layer = make_layer<float>(text);
  TensorSet<float> top;
  for (int i = 0; i < num_top; ++i) top.add();
  layer->setup(*bottom, *top);
  Handle handle;
  layer->forward(handle, *bottom, *top);
  std::vector<float> out = top[0]->data_vector();
  if (num_top > 1)
    for (float v : top[1]->data_vector()) out.push_back(v);
  return out;
}

TEST(AccuracyLayer, TopOneAndTopK) {
  TensorSet<float> bottom;
  make_inputs(bottom);
  EXPECT_FLOAT_EQ(run("type: 'Accuracy'", bottom, 1)[0], 0.5f);
  EXPECT_FLOAT_EQ(run("type: 'Accuracy' accuracy_param { top_k: 2 }", bottom, 1)[0], 0.75f);
  EXPECT_FLOAT_EQ(run("type: 'Accuracy' accuracy_param { top_k: 3 }", bottom, 1)[0], 1.0f);
}

TEST(AccuracyLayer, IgnoreLabelAndPerClass) {
  TensorSet<float> bottom;
  make_inputs(bottom);
  // Ignoring class 2 leaves samples 0 and 2, both right.
  EXPECT_FLOAT_EQ(run("type: 'Accuracy' accuracy_param { ignore_label: 2 }", bottom, 1)[0], 1.f);
  // Per class: class 0 1/1, class 1 1/1, class 2 0/2.
  const auto out = run("type: 'Accuracy'", bottom, 2);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_TRUE(all_close(out, std::vector<double>{0.5, 1.0, 1.0, 0.0}, {0, 0, true}));
}

TEST(AccuracyLayer, SpatialAxis) {
  // Scores 1 x 2 x 3 with the 3 classes along axis 2: two positions, one label each; the
  // first is right, the second is not.
  TensorSet<float> bottom;
  bottom.add({1, 2, 3})->set_data({0.1f, 0.8f, 0.1f, 0.6f, 0.3f, 0.1f});
  bottom.add({2})->set_data({1, 1});
  EXPECT_FLOAT_EQ(run("type: 'Accuracy' accuracy_param { axis: 2 }", bottom, 1)[0], 0.5f);
}

TEST(AccuracyLayer, ErrorsAndNoGradient) {
  TensorSet<float> bottom, top;
  make_inputs(bottom);
  top.add();
  EXPECT_THROW(
      make_layer<float>("type: 'Accuracy' accuracy_param { top_k: 4 }")->setup(*bottom, *top),
      Error);
  auto layer = make_layer<float>("type: 'Accuracy'");
  layer->setup(*bottom, *top);
  Handle handle;
  EXPECT_THROW(layer->backward(handle, *top, {true, false}, *bottom), Error);
  bottom[1]->reshape({5});
  EXPECT_THROW(layer->reshape(*bottom, *top), Error);
}

}  // namespace
}  // namespace crema::test
