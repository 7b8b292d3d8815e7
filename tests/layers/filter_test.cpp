// Filter layer tests: selection by hand for two data bottoms, the resized tops, gradient with
// zeros for the dropped items, and shape errors.
#include <gtest/gtest.h>

#include "gradient_checker.h"
#include "test_util.h"

namespace crema::test {
namespace {

TEST(FilterLayer, ByHand) {
  TensorSet<float> bottom, top;
  bottom.add({4, 2})->set_data({1, 2, 3, 4, 5, 6, 7, 8});
  bottom.add({4})->set_data({10, 20, 30, 40});
  bottom.add({4, 1})->set_data({0, 1, 0, 1});
  top.add();
  top.add();
  auto layer = make_layer<float>("type: 'Filter'");
  layer->setup(*bottom, *top);
  EXPECT_EQ(top[0]->shape(), (std::vector<int64_t>{4, 2}));  // the whole batch until forward
  Handle h;
  layer->forward(h, *bottom, *top);
  EXPECT_EQ(top[0]->shape(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(top[0]->data_vector(), (std::vector<float>{3, 4, 7, 8}));
  EXPECT_EQ(top[1]->data_vector(), (std::vector<float>{20, 40}));
  top[0]->set_diff({1, 2, 3, 4});
  top[1]->set_diff({5, 6});
  bottom[0]->fill_diff(std::numeric_limits<float>::quiet_NaN());
  bottom[1]->fill_diff(std::numeric_limits<float>::quiet_NaN());
  layer->backward(h, *top, {true, true, false}, *bottom);
  EXPECT_EQ(bottom[0]->diff_vector(), (std::vector<float>{0, 0, 1, 2, 0, 0, 3, 4}));
  EXPECT_EQ(bottom[1]->diff_vector(), (std::vector<float>{0, 5, 0, 6}));
}

TEST(FilterLayer, Gradient) {
  TensorSet<double> bottom, top;
  bottom.add({5, 3}, 1);
  bottom.add({5, 2, 2}, 2);
  bottom.add({5})->set_data({1, 0, 1, 1, 0});
  top.add();
  top.add();
  EXPECT_TRUE(check_gradient(*make_layer<double>("type: 'Filter'"), *bottom, *top,
                             GradientCheckOptions().threshold(1e-8).bottoms({0, 1})));
}

TEST(FilterLayer, Errors) {
  auto error_of = [](std::vector<int64_t> data, std::vector<int64_t> sel, int tops) {
    TensorSet<float> bottom, top;
    bottom.add(data);
    bottom.add(sel);
    for (int i = 0; i < tops; ++i) top.add();
    try {
      make_layer<float>("type: 'Filter' name: 'f'")->setup(*bottom, *top);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error_of({3, 2}, {4}, 1),
            "layer f (Filter): bottom 0 (3 2 (6)) must have 4 items, as the selector (4 (4))");
  EXPECT_EQ(error_of({4, 2}, {4, 2}, 1),
            "layer f (Filter): the selector (last bottom) must hold one value per item, shape (N) "
            "or (N, 1, ...), got (4 2 (8))");
  EXPECT_EQ(error_of({4, 2}, {4}, 2), "layer f (Filter): needs one top per data bottom (1), got 2");
}

}  // namespace
}  // namespace crema::test
