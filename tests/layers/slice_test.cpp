// Slice layer tests: slice points and equal pieces, values by hand, gradients, and the errors
// for slice points out of order or beyond the axis.
#include <gtest/gtest.h>

#include "gradient_checker.h"
#include "test_util.h"

namespace crema::test {
namespace {

TEST(SliceLayer, PointsAndValues) {
  TensorSet<float> bottom, top;
  bottom.add({2, 5})->set_data({0, 1, 2, 3, 4, 10, 11, 12, 13, 14});
  for (int i = 0; i < 3; ++i) top.add();
  auto layer = make_layer<float>("type: 'Slice' slice_param { slice_point: 1 slice_point: 4 }");
  layer->setup(*bottom, *top);
  Handle h;
  layer->forward(h, *bottom, *top);
  EXPECT_EQ(top[0]->data_vector(), (std::vector<float>{0, 10}));
  EXPECT_EQ(top[1]->data_vector(), (std::vector<float>{1, 2, 3, 11, 12, 13}));
  EXPECT_EQ(top[2]->data_vector(), (std::vector<float>{4, 14}));
  EXPECT_EQ(top[1]->shape(), (std::vector<int64_t>{2, 3}));
}

TEST(SliceLayer, EqualPiecesAndLegacySliceDim) {
  TensorSet<float> bottom, top;
  bottom.add({6, 2}, 1);
  top.add();
  top.add();
  auto layer = make_layer<float>("type: 'Slice' slice_param { slice_dim: 0 }");
  layer->setup(*bottom, *top);
  EXPECT_EQ(top[0]->shape(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(top[1]->shape(), (std::vector<int64_t>{3, 2}));
  Handle h;
  layer->forward(h, *bottom, *top);
  const auto x = bottom[0]->data_vector();
  EXPECT_EQ(top[1]->data_vector(), std::vector<float>(x.begin() + 6, x.end()));
}

TEST(SliceLayer, Gradient) {
  for (const char* params : {"slice_param { axis: 1 slice_point: 1 slice_point: 3 }",
                             "slice_param { axis: -1 }", "slice_param { axis: 0 }"}) {
    SCOPED_TRACE(params);
    TensorSet<double> bottom, top;
    bottom.add({3, 4, 3}, 1);
    for (int i = 0; i < 3; ++i) top.add();
    auto layer = make_layer<double>("type: 'Slice' " + std::string(params));
    EXPECT_TRUE(check_gradient(*layer, *bottom, *top, GradientCheckOptions().threshold(1e-8)));
  }
}

std::string error_of(const std::string& params, int tops) {
  TensorSet<float> bottom, top;
  bottom.add({2, 6});
  for (int i = 0; i < tops; ++i) top.add();
  try {
    make_layer<float>("type: 'Slice' name: 's' " + params)->setup(*bottom, *top);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(SliceLayer, BadSlicePointsAreErrors) {
  EXPECT_EQ(error_of("slice_param { slice_point: 4 slice_point: 2 }", 3),
            "layer s (Slice): slice_point 2 (number 1) must be larger than 4 and smaller than 6, "
            "the size of axis 1 of the input (2 6 (12)): slice points are strictly increasing "
            "and inside the axis");
  EXPECT_EQ(error_of("slice_param { slice_point: 2 slice_point: 6 }", 3),
            "layer s (Slice): slice_point 6 (number 1) must be larger than 2 and smaller than 6, "
            "the size of axis 1 of the input (2 6 (12)): slice points are strictly increasing "
            "and inside the axis");
  EXPECT_EQ(error_of("slice_param { slice_point: 2 }", 3),
            "layer s (Slice): 1 slice_point(s) for 3 tops: give one fewer than the tops, or none "
            "for equal pieces");
  EXPECT_EQ(error_of("", 4),
            "layer s (Slice): axis 1 of size 6 of the input (2 6 (12)) does not split into 4 "
            "equal pieces; give slice_point");
}

}  // namespace
}  // namespace crema::test
