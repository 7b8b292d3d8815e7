// Crop layer tests: offsets by hand (one for all axes, one per axis, axis 0), gradients, and the
// crop-larger-than-input error.
#include <gtest/gtest.h>

#include "gradient_checker.h"
#include "test_util.h"

namespace crema::test {
namespace {

// x[n, c, h, w] = 1000 n + 100 c + 10 h + w, so every value names its position.
void fill_positions(Tensor<float>* t) {
  std::vector<float> v;
  for (int64_t n = 0; n < t->shape(0); ++n)
    for (int64_t c = 0; c < t->shape(1); ++c)
      for (int64_t h = 0; h < t->shape(2); ++h)
        for (int64_t w = 0; w < t->shape(3); ++w)
          v.push_back(float(1000 * n + 100 * c + 10 * h + w));
  t->set_data(v);
}

TEST(CropLayer, Offsets) {
  struct Case {
    std::string params;
    std::vector<int64_t> shape;
    std::vector<int64_t> first;  // (n, c, h, w) of the top's first element in the input
  };
  for (const Case& c :
       {Case{"", {2, 3, 2, 3}, {0, 0, 0, 0}},
        Case{"crop_param { offset: 1 }", {2, 3, 2, 3}, {0, 0, 1, 1}},
        Case{"crop_param { offset: 2 offset: 1 }", {2, 3, 2, 3}, {0, 0, 2, 1}},
        Case{"crop_param { axis: 1 offset: 1 offset: 2 offset: 0 }", {2, 2, 2, 3}, {0, 1, 2, 0}},
        Case{"crop_param { axis: 0 offset: 1 offset: 0 offset: 1 offset: 2 }",
             {1, 2, 2, 3},
             {1, 0, 1, 2}}}) {
    SCOPED_TRACE(c.params);
    TensorSet<float> bottom, top;
    fill_positions(bottom.add({2, 3, 4, 5}));
    bottom.add({1, 2, 2, 3});
    top.add();
    auto layer = make_layer<float>("type: 'Crop' " + c.params);
    layer->setup(*bottom, *top);
    ASSERT_EQ(top[0]->shape(), c.shape);
    Handle h;
    layer->forward(h, *bottom, *top);
    const auto y = top[0]->data_vector();
    size_t k = 0;
    for (int64_t n = 0; n < c.shape[0]; ++n)
      for (int64_t ch = 0; ch < c.shape[1]; ++ch)
        for (int64_t hh = 0; hh < c.shape[2]; ++hh)
          for (int64_t w = 0; w < c.shape[3]; ++w, ++k)
            ASSERT_EQ(y[k], float(1000 * (n + c.first[0]) + 100 * (ch + c.first[1]) +
                                  10 * (hh + c.first[2]) + (w + c.first[3])))
                << "element " << k;
  }
}

TEST(CropLayer, BackwardZeroesOutsideTheWindow) {
  TensorSet<float> bottom, top;
  bottom.add({1, 1, 3, 3}, 1);
  bottom.add({1, 1, 2, 2});
  top.add();
  auto layer = make_layer<float>("type: 'Crop' crop_param { offset: 1 }");
  layer->setup(*bottom, *top);
  Handle h;
  layer->forward(h, *bottom, *top);
  top[0]->set_diff({1, 2, 3, 4});
  bottom[0]->fill_diff(std::numeric_limits<float>::quiet_NaN());
  layer->backward(h, *top, {true, false}, *bottom);
  EXPECT_EQ(bottom[0]->diff_vector(), (std::vector<float>{0, 0, 0, 0, 1, 2, 0, 3, 4}));
}

TEST(CropLayer, Gradient) {
  TensorSet<double> bottom, top;
  bottom.add({2, 3, 4, 5}, 1);
  bottom.add({2, 2, 2, 3}, 2);
  top.add();
  auto layer =
      make_layer<double>("type: 'Crop' crop_param { axis: 1 offset: 1 offset: 2 offset: 1 }");
  EXPECT_TRUE(
      check_gradient(*layer, *bottom, *top, GradientCheckOptions().threshold(1e-8).bottoms({0})));
}

TEST(CropLayer, CropLargerThanInputIsAnError) {
  TensorSet<float> bottom, top;
  bottom.add({2, 3, 4, 5});
  bottom.add({2, 3, 3, 3});
  top.add();
  EXPECT_EQ(
      error_of([&] {
        make_layer<float>("type: 'Crop' name: 'c' crop_param { offset: 2 }")->setup(*bottom, *top);
      }),
      "layer c (Crop): crop of size 3 at offset 2 on axis 2 does not fit in the input "
      "(2 3 4 5 (120)), whose axis 2 has size 4");
  EXPECT_THROW(make_layer<float>("type: 'Crop' crop_param { offset: 0 offset: 0 offset: 0 }")
                   ->setup(*bottom, *top),
               Error);  // three offsets for two cropped axes
}

}  // namespace
}  // namespace crema::test
