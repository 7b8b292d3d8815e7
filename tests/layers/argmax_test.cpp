// ArgMax layer tests: both layouts by hand (top_k with out_max_val, with and without axis), and
// the errors (top_k too large, backward).
#include <gtest/gtest.h>

#include "gradient_checker.h"
#include "test_util.h"

namespace crema::test {
namespace {

// Two items of 2 x 3 values: item 0 = [0.1 0.9 0.3; 0.8 0.2 0.5], item 1 = [5 1 4; 2 3 0].
std::vector<float> input() { return {0.1f, 0.9f, 0.3f, 0.8f, 0.2f, 0.5f, 5, 1, 4, 2, 3, 0}; }

TEST(ArgMaxLayer, ByHand) {
  for (const ForwardCase& c : {
           // Over each item flattened (6 values).
           ForwardCase{"", {2, 1, 1}, {1, 0}},
           ForwardCase{"argmax_param { top_k: 3 }", {2, 1, 3}, {1, 3, 5, 0, 2, 4}},
           ForwardCase{"argmax_param { top_k: 2 out_max_val: true }",
                       {2, 2, 2},
                       {1, 3, 0.9f, 0.8f, 0, 2, 5, 4}},
           // Along axis 2 (3 values per row): indices, or values with out_max_val.
           ForwardCase{"argmax_param { axis: 2 top_k: 2 }", {2, 2, 2}, {1, 2, 0, 2, 0, 2, 1, 0}},
           ForwardCase{"argmax_param { axis: 2 top_k: 2 out_max_val: true }",
                       {2, 2, 2},
                       {0.9f, 0.3f, 0.8f, 0.5f, 5, 4, 3, 2}},
           // Along axis 1 (2 values per column).
           ForwardCase{"argmax_param { axis: 1 }", {2, 1, 3}, {1, 0, 1, 0, 1, 0}},
       }) {
    SCOPED_TRACE(c.params);
    TensorSet<float> bottom;
    bottom.add({2, 2, 3})->set_data(input());
    expect_forward(*make_layer<float>("type: 'ArgMax' " + c.params), bottom, c);
  }
}

TEST(ArgMaxLayer, TwoAxisInputGetsThreeAxes) {
  TensorSet<float> bottom, top;
  bottom.add({3, 4}, 1);
  top.add();
  auto layer = make_layer<float>("type: 'ArgMax' argmax_param { out_max_val: true }");
  layer->setup(*bottom, *top);
  EXPECT_EQ(top[0]->shape(), (std::vector<int64_t>{3, 2, 1}));
}

TEST(ArgMaxLayer, Errors) {
  TensorSet<float> bottom, top;
  bottom.add({2, 2, 3});
  top.add();
  EXPECT_EQ(error_of([&] {
              make_layer<float>("type: 'ArgMax' name: 'a' argmax_param { axis: 2 top_k: 4 }")
                  ->setup(*bottom, *top);
            }),
            "layer a (ArgMax): top_k 4 is larger than the 3 values searched in the input (2 "
            "2 3 (12))");
  auto layer = make_layer<float>("type: 'ArgMax'");
  layer->setup(*bottom, *top);
  Handle h;
  EXPECT_THROW(layer->backward(h, *top, {true}, *bottom), Error);
  EXPECT_NO_THROW(layer->backward(h, *top, {false}, *bottom));
}

}  // namespace
}  // namespace crema::test
