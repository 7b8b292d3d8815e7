// Im2col layer tests: a hand-computed patch matrix, the top shape with pad/stride/dilation,
// gradients (col2im), and a missing kernel.
#include "layers/im2col_layer.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "gradient_checker.h"
#include "test_util.h"

namespace crema::test {
namespace {

std::unique_ptr<Im2colLayer<double>> im2col_layer(const std::string& params) {
  return std::make_unique<Im2colLayer<double>>(
      layer_param("type: 'Im2col' convolution_param { " + params + " }"), Device::kCPU);
}

TEST(Im2colLayer, HandComputedPatches) {
  auto layer = im2col_layer("kernel_size: 2");
  TensorSet<double> bottom, top;
  bottom.add({1, 1, 3, 3})->set_data({1, 2, 3, 4, 5, 6, 7, 8, 9});
  top.add();
  layer->setup(*bottom, *top);
  ASSERT_EQ(top[0]->shape(), (std::vector<int64_t>{1, 4, 2, 2}));
  Handle h;
  layer->forward(h, *bottom, *top);
  // One row per kernel tap (r, s), over the 2 x 2 output positions.
  const std::vector<double> want = {1, 2, 4, 5, 2, 3, 5, 6, 4, 5, 7, 8, 5, 6, 8, 9};
  EXPECT_EQ(top[0]->data_vector(), want);
}

TEST(Im2colLayer, ShapeAndGradient) {
  auto layer = im2col_layer("kernel_h: 3 kernel_w: 2 pad_h: 1 pad_w: 0 stride_h: 2 stride_w: 1");
  TensorSet<double> bottom, top;
  bottom.add({2, 3, 5, 4}, 9);
  top.add();
  EXPECT_TRUE(check_gradient(*layer, *bottom, *top));
  // P = (5 + 2 - 3) / 2 + 1 = 3, Q = (4 - 2) / 1 + 1 = 3.
  EXPECT_EQ(top[0]->shape(), (std::vector<int64_t>{2, 3 * 3 * 2, 3, 3}));
}

TEST(Im2colLayer, GradientWithDilation) {
  auto layer = im2col_layer("kernel_size: 2 dilation: 2 pad: 1 stride: 2");
  EXPECT_TRUE(check_gradient(*layer, Filled{{1, 2, 6, 5}, 10}));
}

TEST(Im2colLayer, Errors) {
  for (const auto& [params, text] : std::vector<std::pair<std::string, std::string>>{
           {"stride: 2", "layer test_Im2col (Im2col): kernel_size (or kernel_h and kernel_w)"},
           {"kernel_size: 5", "kernel extent 5 is larger than the padded input 3"}})
    expect_setup_error(*im2col_layer(params), {{1, 1, 3, 3}}, text);
}

}  // namespace
}  // namespace crema::test
