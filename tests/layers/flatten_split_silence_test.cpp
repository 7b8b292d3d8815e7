// Flatten, Split and Silence layer tests: shapes, shared memory, summed and zero gradients.
#include <gtest/gtest.h>

#include "gradient_checker.h"
#include "test_util.h"

namespace crema::test {
namespace {

TEST(FlattenLayer, Shapes) {
  struct Case {
    std::string param;
    std::vector<int64_t> shape;
  };
  const Case cases[] = {
      {"", {2, 60}},
      {"axis: 2", {2, 3, 20}},
      {"axis: 1 end_axis: 2", {2, 12, 5}},
      {"axis: 0 end_axis: -2", {24, 5}},
      {"axis: -1", {2, 3, 4, 5}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.param);
    auto layer = make_layer<float>("type: 'Flatten' flatten_param { " + c.param + " }");
    TensorSet<float> bottom, top;
    bottom.add({2, 3, 4, 5}, 1);
    top.add();
    layer->setup(*bottom, *top);
    EXPECT_EQ(top[0]->shape(), c.shape);
    Handle handle;
    layer->forward(handle, *bottom, *top);
    EXPECT_EQ(top[0]->data_vector(), bottom[0]->data_vector());
  }
}

TEST(FlattenLayer, SharesMemoryAndGradient) {
  auto layer = make_layer<double>("type: 'Flatten'");
  TensorSet<double> bottom, top;
  bottom.add({2, 3, 2}, 3);
  top.add();
  layer->setup(*bottom, *top);
  EXPECT_EQ(top[0]->data(), bottom[0]->data());
  EXPECT_EQ(top[0]->diff(), bottom[0]->diff());
  EXPECT_TRUE(check_gradient(*layer, *bottom, *top, GradientCheckOptions().threshold(1e-8)));
}

TEST(FlattenLayer, EndBeforeStartIsAnError) {
  TensorSet<float> bottom, top;
  bottom.add({2, 3, 4});
  top.add();
  EXPECT_THROW(make_layer<float>("type: 'Flatten' flatten_param { axis: 2 end_axis: 1 }")
                   ->setup(*bottom, *top),
               Error);
}

TEST(SplitLayer, SharesDataAndSumsDiffs) {
  auto layer = make_layer<float>("type: 'Split'");
  TensorSet<float> bottom, top;
  bottom.add({2, 3}, 1);
  for (int i = 0; i < 3; ++i) top.add();
  layer->setup(*bottom, *top);
  Handle handle;
  layer->forward(handle, *bottom, *top);
  std::vector<double> sum(6, 0.0);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(top[i]->shape(), bottom[0]->shape());
    EXPECT_EQ(top[i]->data_vector(), bottom[0]->data_vector());
    const auto d = random_int_vector<float>(6, 10 + i);
    top[i]->set_diff(d);
    for (int j = 0; j < 6; ++j) sum[j] += d[j];
  }
  bottom[0]->fill_diff(std::numeric_limits<float>::quiet_NaN());
  layer->backward(handle, *top, {true}, *bottom);
  EXPECT_TRUE(all_close(bottom[0]->diff_vector(), sum, {0, 0}));
}

TEST(SplitLayer, Gradient) {
  auto layer = make_layer<double>("type: 'Split'");
  TensorSet<double> bottom, top;
  bottom.add({3, 4}, 5);
  top.add();
  top.add();
  EXPECT_TRUE(check_gradient(*layer, *bottom, *top, GradientCheckOptions().threshold(1e-8)));
}

TEST(SilenceLayer, BackwardWritesZeros) {
  auto layer = make_layer<float>("type: 'Silence'");
  TensorSet<float> bottom, top;
  bottom.add({3}, 1);
  bottom.add({2, 2}, 2);
  layer->setup(*bottom, *top);
  Handle handle;
  layer->forward(handle, *bottom, *top);
  bottom[0]->fill_diff(7);
  bottom[1]->fill_diff(7);
  layer->backward(handle, *top, {true, false}, *bottom);
  EXPECT_EQ(bottom[0]->diff_vector(), std::vector<float>(3, 0.f));
  EXPECT_EQ(bottom[1]->diff_vector(), std::vector<float>(4, 7.f));
}

}  // namespace
}  // namespace crema::test
