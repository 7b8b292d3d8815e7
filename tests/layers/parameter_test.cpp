// Parameter layer tests: the blob's shape, the top sharing its data, the accumulated gradient.
#include <gtest/gtest.h>

#include "gradient_checker.h"
#include "test_util.h"

namespace crema::test {
namespace {

TEST(ParameterLayer, TopIsTheBlob) {
  TensorSet<float> bottom, top;
  top.add();
  auto layer = make_layer<float>("type: 'Parameter' parameter_param { shape { dim: 2 dim: 3 } }");
  layer->setup(*bottom, *top);
  ASSERT_EQ(layer->blobs().size(), 1u);
  EXPECT_EQ(layer->blobs()[0]->shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(top[0]->shape(), (std::vector<int64_t>{2, 3}));
  layer->blobs()[0]->set_data({1, 2, 3, 4, 5, 6});
  Handle h;
  layer->forward(h, *bottom, *top);
  EXPECT_EQ(top[0]->data_vector(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  // Backward accumulates: two passes give twice the top's gradient.
  top[0]->set_diff({1, 1, 2, 2, 3, 3});
  layer->blobs()[0]->fill_diff(0);
  layer->backward(h, *top, {}, *bottom);
  layer->backward(h, *top, {}, *bottom);
  EXPECT_EQ(layer->blobs()[0]->diff_vector(), (std::vector<float>{2, 2, 4, 4, 6, 6}));
}

TEST(ParameterLayer, Gradient) {
  TensorSet<double> bottom, top;
  top.add();
  auto layer = make_layer<double>("type: 'Parameter' parameter_param { shape { dim: 4 } }");
  EXPECT_TRUE(check_gradient(*layer, *bottom, *top, GradientCheckOptions().threshold(1e-8)));
}

TEST(ParameterLayer, HugeShapeIsAnError) {
  TensorSet<float> bottom, top;
  top.add();
  EXPECT_THROW(
      make_layer<float>("type: 'Parameter' parameter_param { shape { dim: 100000 dim: 100000 } }")
          ->setup(*bottom, *top),
      Error);
}

}  // namespace
}  // namespace crema::test
