// BatchReindex layer tests: values by hand, gradient with repeated and missing indices, errors.
#include <gtest/gtest.h>

#include "gradient_checker.h"
#include "test_util.h"

namespace crema::test {
namespace {

TEST(BatchReindexLayer, ByHand) {
  TensorSet<float> bottom, top;
  bottom.add({3, 2})->set_data({1, 2, 3, 4, 5, 6});
  bottom.add({4})->set_data({2, 0, 2, 1});
  top.add();
  auto layer = make_layer<float>("type: 'BatchReindex'");
  layer->setup(*bottom, *top);
  EXPECT_EQ(top[0]->shape(), (std::vector<int64_t>{4, 2}));
  Handle h;
  layer->forward(h, *bottom, *top);
  EXPECT_EQ(top[0]->data_vector(), (std::vector<float>{5, 6, 1, 2, 5, 6, 3, 4}));
  top[0]->set_diff({1, 1, 2, 2, 3, 3, 4, 4});
  bottom[0]->fill_diff(std::numeric_limits<float>::quiet_NaN());
  layer->backward(h, *top, {true, false}, *bottom);
  EXPECT_EQ(bottom[0]->diff_vector(), (std::vector<float>{2, 2, 4, 4, 4, 4}));
}

TEST(BatchReindexLayer, Gradient) {
  TensorSet<double> bottom, top;
  bottom.add({4, 2, 3}, 1);
  bottom.add({5})->set_data({3, 0, 3, 1, 0});  // item 2 never picked: its gradient is 0
  top.add();
  EXPECT_TRUE(check_gradient(*make_layer<double>("type: 'BatchReindex'"), *bottom, *top,
                             GradientCheckOptions().threshold(1e-8).bottoms({0})));
}

TEST(BatchReindexLayer, Errors) {
  TensorSet<float> bottom, top;
  bottom.add({3, 2}, 1);
  bottom.add({2})->set_data({1, 3});
  top.add();
  auto layer = make_layer<float>("type: 'BatchReindex' name: 'br'");
  layer->setup(*bottom, *top);
  Handle h;
  EXPECT_EQ(error_of([&] { layer->forward(h, *bottom, *top); }),
            "layer br (BatchReindex): gather_rows: index 3 at position 1 is not a row of the "
            "table [0, 3)");
  TensorSet<float> b2, t2;
  b2.add({3, 2});
  b2.add({2, 1});
  t2.add();
  EXPECT_THROW(make_layer<float>("type: 'BatchReindex'")->setup(*b2, *t2),
               Error);  // indices must be 1-d
}

}  // namespace
}  // namespace crema::test
