// Input and DummyData layer tests: top shapes, fill values, refill rules, parameter errors.
#include <gtest/gtest.h>

#include "gradient_checker.h"
#include "test_util.h"

namespace crema::test {
namespace {

TEST(InputLayer, OneShapeForAllOrOnePerTop) {
  {
    auto layer = make_layer<float>("type: 'Input' input_param { shape { dim: 2 dim: 3 } }");
    TensorSet<float> bottom, top;
    top.add();
    top.add();
    layer->setup(*bottom, *top);
    EXPECT_EQ(top[0]->shape(), (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(top[1]->shape(), (std::vector<int64_t>{2, 3}));
  }
  {
    auto layer = make_layer<float>(
        "type: 'Input' input_param { shape { dim: 4 dim: 1 dim: 5 dim: 5 } shape { dim: 4 } }");
    TensorSet<float> bottom, top;
    top.add();
    top.add();
    layer->setup(*bottom, *top);
    EXPECT_EQ(top[0]->shape(), (std::vector<int64_t>{4, 1, 5, 5}));
    EXPECT_EQ(top[1]->shape(), (std::vector<int64_t>{4}));
  }
  {
    auto layer = make_layer<float>(
        "type: 'Input' input_param { shape { dim: 1 } shape { dim: 2 } shape { dim: 3 } }");
    TensorSet<float> bottom, top;
    top.add();
    top.add();
    EXPECT_THROW(layer->setup(*bottom, *top), Error);
  }
}

TEST(DummyDataLayer, ShapesAndConstantFill) {
  auto layer = make_layer<float>(
      "type: 'DummyData' dummy_data_param { shape { dim: 2 dim: 3 } shape { dim: 4 } "
      "data_filler { type: 'constant' value: 1.5 } data_filler { value: -2 } }");
  TensorSet<float> bottom, top;
  top.add();
  top.add();
  layer->setup(*bottom, *top);
  EXPECT_EQ(top[0]->data_vector(), std::vector<float>(6, 1.5f));
  EXPECT_EQ(top[1]->data_vector(), std::vector<float>(4, -2.f));
  // Constant tops are filled once: forward leaves what the user wrote.
  top[0]->fill_data(9);
  Handle handle;
  layer->forward(handle, *bottom, *top);
  EXPECT_EQ(top[0]->data_vector(), std::vector<float>(6, 9.f));
}

TEST(DummyDataLayer, LegacyShapeDefaultsToZeros) {
  auto layer = make_layer<float>(
      "type: 'DummyData' dummy_data_param { num: 2 channels: 3 height: 1 height: 2 width: 4 }");
  TensorSet<float> bottom, top;
  top.add();
  top.add();
  layer->setup(*bottom, *top);
  EXPECT_EQ(top[0]->shape(), (std::vector<int64_t>{2, 3, 1, 4}));
  EXPECT_EQ(top[1]->shape(), (std::vector<int64_t>{2, 3, 2, 4}));
  EXPECT_EQ(top[1]->data_vector(), std::vector<float>(48, 0.f));
}

TEST(DummyDataLayer, RandomFillerRefillsEachForward) {
  auto layer = make_layer<float>(
      "type: 'DummyData' dummy_data_param { shape { dim: 50 } "
      "data_filler { type: 'uniform' min: 2 max: 3 } }");
  TensorSet<float> bottom, top;
  top.add();
  layer->setup(*bottom, *top);
  Handle handle;
  layer->forward(handle, *bottom, *top);
  const auto first = top[0]->data_vector();
  for (float v : first) {
    EXPECT_GE(v, 2.f);
    EXPECT_LE(v, 3.f);
  }
  layer->forward(handle, *bottom, *top);
  EXPECT_NE(top[0]->data_vector(), first);
}

TEST(DummyDataLayer, ParameterErrors) {
  TensorSet<float> bottom, top;
  top.add();
  top.add();
  top.add();
  // Two fillers for three tops.
  EXPECT_THROW(make_layer<float>("type: 'DummyData' dummy_data_param { shape { dim: 1 } "
                                 "data_filler {} data_filler {} }")
                   ->setup(*bottom, *top),
               Error);
  // Both shape forms.
  EXPECT_THROW(
      make_layer<float>("type: 'DummyData' dummy_data_param { shape { dim: 1 } num: 1 channels: 1 "
                        "height: 1 width: 1 }")
          ->setup(*bottom, *top),
      Error);
  // No shape at all.
  EXPECT_THROW(make_layer<float>("type: 'DummyData'")->setup(*bottom, *top), Error);
}

}  // namespace
}  // namespace crema::test
