// Reshape layer tests: Caffe's shape rules (0 copies, -1 inferred, axis, num_axes), shared
// memory, gradient, and the two-inferred-dims and count-mismatch errors.
#include <gtest/gtest.h>

#include "gradient_checker.h"
#include "test_util.h"

namespace crema::test {
namespace {

TEST(ReshapeLayer, Shapes) {
  struct Case {
    std::string params;
    std::vector<int64_t> shape;
  };
  const Case cases[] = {
      {"shape { dim: 6 dim: 20 }", {6, 20}},
      {"shape { dim: 0 dim: -1 }", {2, 60}},
      {"shape { dim: 0 dim: 0 dim: 2 dim: -1 }", {2, 3, 2, 10}},
      {"shape { dim: -1 dim: 5 }", {24, 5}},
      {"axis: 1 shape { dim: 60 }", {2, 60}},                 // axes 1.. replaced
      {"axis: 1 num_axes: 2 shape { dim: -1 }", {2, 12, 5}},  // axes 1, 2 merged
      {"axis: -1 shape { dim: 1 }", {2, 3, 4, 5, 1}},         // appended after the last axis
      {"axis: 0 num_axes: 0 shape { dim: 1 }", {1, 2, 3, 4, 5}},
      {"axis: 2 num_axes: 1 shape { dim: 2 dim: 2 }", {2, 3, 2, 2, 5}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.params);
    TensorSet<float> bottom, top;
    bottom.add({2, 3, 4, 5}, 1);
    top.add();
    auto layer = make_layer<float>("type: 'Reshape' reshape_param { " + c.params + " }");
    layer->setup(*bottom, *top);
    EXPECT_EQ(top[0]->shape(), c.shape);
    EXPECT_EQ(top[0]->data(), bottom[0]->data());
    EXPECT_EQ(top[0]->diff(), bottom[0]->diff());
  }
}

TEST(ReshapeLayer, Gradient) {
  TensorSet<double> bottom, top;
  bottom.add({2, 3, 2}, 3);
  top.add();
  auto layer = make_layer<double>("type: 'Reshape' reshape_param { shape { dim: -1 dim: 3 } }");
  EXPECT_TRUE(check_gradient(*layer, *bottom, *top, GradientCheckOptions().threshold(1e-8)));
}

std::string error_of(const std::string& params) {
  TensorSet<float> bottom, top;
  bottom.add({2, 3, 4});
  top.add();
  try {
    make_layer<float>("type: 'Reshape' name: 'r' reshape_param { " + params + " }")
        ->setup(*bottom, *top);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(ReshapeLayer, Errors) {
  EXPECT_EQ(error_of("shape { dim: -1 dim: 2 dim: -1 }"),
            "layer r (Reshape): shape { -1 2 -1 } has 2 dims of -1; at most one can be inferred");
  EXPECT_EQ(error_of("shape { dim: 5 dim: 5 }"),
            "layer r (Reshape): shape { 5 5 } gives (5 5) with 25 elements but the input (2 3 4 "
            "(24)) has 24");
  EXPECT_EQ(error_of("shape { dim: 5 dim: -1 }"),
            "layer r (Reshape): cannot infer the -1 dim of shape { 5 -1 }: the input (2 3 4 (24)) "
            "has 24 elements, not a multiple of 5");
  EXPECT_EQ(error_of("shape { dim: 0 dim: 0 dim: 0 dim: 0 }"),
            "layer r (Reshape): shape dim 3 is 0 (copy) but the input (2 3 4 (24)) has no axis 3");
  EXPECT_EQ(error_of("axis: 2 num_axes: 2 shape { dim: 4 }"),
            "layer r (Reshape): axis 2 with num_axes 2 goes past the last axis of the input (2 3 "
            "4 (24))");
  EXPECT_NE(error_of("shape { dim: 4294967296 dim: 4294967296 dim: 4294967296 }"), "no error");
}

}  // namespace
}  // namespace crema::test
