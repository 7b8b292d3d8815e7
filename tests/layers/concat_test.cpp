// Concat layer tests: shapes (axis, negative axis, legacy concat_dim), values by hand, the
// Concat/Slice round trip, gradients, and the mismatched-shape error.
#include <gtest/gtest.h>

#include "gradient_checker.h"
#include "layers/slice_layer.h"
#include "test_util.h"

namespace crema::test {
namespace {

TEST(ConcatLayer, ShapesAndValues) {
  TensorSet<float> bottom, top;
  bottom.add({2, 1, 2})->set_data({1, 2, 3, 4});
  bottom.add({2, 2, 2})->set_data({5, 6, 7, 8, 9, 10, 11, 12});
  top.add();
  auto layer = make_layer<float>("type: 'Concat'");
  layer->setup(*bottom, *top);
  EXPECT_EQ(top[0]->shape(), (std::vector<int64_t>{2, 3, 2}));
  Handle h;
  layer->forward(h, *bottom, *top);
  EXPECT_EQ(top[0]->data_vector(), (std::vector<float>{1, 2, 5, 6, 7, 8, 3, 4, 9, 10, 11, 12}));
  // Backward hands each bottom its window of dy.
  top[0]->set_diff({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  layer->backward(h, *top, {true, true}, *bottom);
  EXPECT_EQ(bottom[0]->diff_vector(), (std::vector<float>{1, 2, 7, 8}));
  EXPECT_EQ(bottom[1]->diff_vector(), (std::vector<float>{3, 4, 5, 6, 9, 10, 11, 12}));
}

TEST(ConcatLayer, AxisVariants) {
  struct Case {
    std::string params;
    std::vector<int64_t> shape;
  };
  for (const Case& c : {Case{"concat_param { axis: 0 }", {5, 3, 4}},
                        Case{"concat_param { concat_dim: 0 }", {5, 3, 4}},
                        Case{"concat_param { axis: -3 }", {5, 3, 4}}}) {
    SCOPED_TRACE(c.params);
    TensorSet<float> bottom, top;
    bottom.add({2, 3, 4}, 1);
    bottom.add({3, 3, 4}, 2);
    top.add();
    auto layer = make_layer<float>("type: 'Concat' " + c.params);
    layer->setup(*bottom, *top);
    EXPECT_EQ(top[0]->shape(), c.shape);
    Handle h;
    layer->forward(h, *bottom, *top);
    std::vector<float> want = bottom[0]->data_vector();
    for (float v : bottom[1]->data_vector()) want.push_back(v);
    EXPECT_EQ(top[0]->data_vector(), want);
  }
}

TEST(ConcatLayer, SliceUndoesConcat) {
  TensorSet<float> bottom, mid, out;
  bottom.add({2, 3, 2, 3}, 1);
  bottom.add({2, 1, 2, 3}, 2);
  bottom.add({2, 4, 2, 3}, 3);
  mid.add();
  for (int i = 0; i < 3; ++i) out.add();
  auto c = make_layer<float>("type: 'Concat'");
  auto s = std::make_unique<SliceLayer<float>>(
      layer_param("type: 'Slice' slice_param { slice_point: 3 slice_point: 4 }"), Device::kCPU);
  c->setup(*bottom, *mid);
  s->setup(*mid, *out);
  Handle h;
  c->forward(h, *bottom, *mid);
  s->forward(h, *mid, *out);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(out[i]->shape(), bottom[i]->shape());
    EXPECT_EQ(out[i]->data_vector(), bottom[i]->data_vector());
  }
}

TEST(ConcatLayer, Gradient) {
  for (const char* params : {"", "concat_param { axis: 2 }", "concat_param { axis: 0 }"}) {
    SCOPED_TRACE(params);
    TensorSet<double> bottom, top;
    bottom.add({2, 3, 2}, 1);
    bottom.add({2, 3, 2}, 2);
    bottom.add({2, 3, 2}, 3);
    top.add();
    auto layer = make_layer<double>("type: 'Concat' " + std::string(params));
    EXPECT_TRUE(check_gradient(*layer, *bottom, *top, GradientCheckOptions().threshold(1e-8)));
  }
}

TEST(ConcatLayer, MismatchedShapesAreAnError) {
  TensorSet<float> bottom, top;
  bottom.add({2, 3, 4});
  bottom.add({2, 5, 5});
  top.add();
  EXPECT_EQ(
      error_of([&] { make_layer<float>("type: 'Concat' name: 'cat'")->setup(*bottom, *top); }),
      "layer cat (Concat): bottom 1 has shape (2 5 5 (50)) but bottom 0 has (2 3 4 "
      "(24)): they may differ only along the concatenation axis 1");
  EXPECT_THROW(make_layer<float>("type: 'Concat' concat_param { axis: 1 concat_dim: 1 }")
                   ->setup(*bottom, *top),
               Error);
  EXPECT_THROW(make_layer<float>("type: 'Concat' concat_param { axis: 3 }")->setup(*bottom, *top),
               Error);
}

}  // namespace
}  // namespace crema::test
