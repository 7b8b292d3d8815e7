// Embed layer tests: the lookup by hand, gradients of the table and bias with repeated indices,
// and the index-out-of-range error.
#include <gtest/gtest.h>

#include "gradient_checker.h"
#include "test_util.h"

namespace crema::test {
namespace {

const char* kParams =
    "embed_param { num_output: 3 input_dim: 4 weight_filler { type: 'uniform' min: -1 max: 1 } "
    "bias_filler { type: 'uniform' min: -1 max: 1 } }";

TEST(EmbedLayer, LookupByHand) {
  TensorSet<float> bottom, top;
  bottom.add({2, 2})->set_data({3, 0, 3, 1});
  top.add();
  auto layer = make_layer<float>(std::string("type: 'Embed' ") + kParams);
  layer->setup(*bottom, *top);
  EXPECT_EQ(top[0]->shape(), (std::vector<int64_t>{2, 2, 3}));
  layer->blobs()[0]->set_data({0, 1, 2, 10, 11, 12, 20, 21, 22, 30, 31, 32});
  layer->blobs()[1]->set_data({0.5f, 0, -1});
  Handle h;
  layer->forward(h, *bottom, *top);
  EXPECT_EQ(top[0]->data_vector(),
            (std::vector<float>{30.5f, 31, 31, 0.5f, 1, 1, 30.5f, 31, 31, 10.5f, 11, 11}));
}

TEST(EmbedLayer, Gradient) {
  // Table and bias values in [4, 6); indices in [0, 3]. The indices cannot be perturbed (a
  // fractional index is an error), so the kink range [-0.5, 3.5) skips exactly them.
  const std::string fillers =
      "weight_filler { type: 'uniform' min: 4 max: 6 } bias_filler { type: 'uniform' min: 4 "
      "max: 6 }";
  for (const char* bias : {"", "bias_term: false"}) {
    SCOPED_TRACE(bias);
    TensorSet<double> bottom, top;
    bottom.add({5})->set_data({2, 0, 2, 3, 2});  // repeats: the table gradient accumulates
    top.add();
    auto layer = make_layer<double>("type: 'Embed' embed_param { num_output: 3 input_dim: 4 " +
                                    std::string(bias) + " " + fillers + " }");
    EXPECT_TRUE(check_gradient(*layer, *bottom, *top,
                               GradientCheckOptions().threshold(1e-8).kink(1.5, 2.0)));
    EXPECT_EQ(bottom[0]->diff_vector(), std::vector<double>(5, 0.0));
  }
}

TEST(EmbedLayer, IndexOutOfRangeIsAnError) {
  TensorSet<float> bottom, top;
  bottom.add({3})->set_data({1, 4, 0});
  top.add();
  auto layer = make_layer<float>("type: 'Embed' name: 'emb' " + std::string(kParams));
  layer->setup(*bottom, *top);
  Handle h;
  EXPECT_EQ(error_of([&] { layer->forward(h, *bottom, *top); }),
            "layer emb (Embed): gather_rows: index 4 at position 1 is not a row of the table "
            "[0, 4)");
  EXPECT_THROW(
      make_layer<float>("type: 'Embed' embed_param { num_output: 3 }")->setup(*bottom, *top),
      Error);
}

}  // namespace
}  // namespace crema::test
