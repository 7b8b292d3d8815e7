// Deconvolution layer tests: shapes, forward equal to the transpose of a convolution matrix
// built by hand, a hand-computed upsampling, the bilinear filler, gradients (groups, stride,
// pad, dilation, bias), and parameter errors.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "gradient_checker.h"
#include "layers/deconvolution_layer.h"
#include "test_util.h"

namespace crema::test {
namespace {

template <typename Dtype = double>
std::unique_ptr<DeconvolutionLayer<Dtype>> deconv(const std::string& params) {
  return std::make_unique<DeconvolutionLayer<Dtype>>(
      layer_param("type: 'Deconvolution' convolution_param { " + params + " }"), Device::kCPU);
}

TEST(DeconvolutionLayer, UpsamplesEachPixelIntoAKernelBlock) {
  // Kernel 2, stride 2, no overlap: every input pixel becomes its value times the kernel.
  auto layer = deconv("num_output: 1 kernel_size: 2 stride: 2 bias_term: false");
  TensorSet<double> bottom, top;
  bottom.add({1, 1, 2, 2})->set_data({1, 2, 3, 4});
  top.add();
  layer->setup(*bottom, *top);
  ASSERT_EQ(top[0]->shape(), (std::vector<int64_t>{1, 1, 4, 4}));
  layer->blobs()[0]->set_data({1, 10, 100, 1000});
  Handle h;
  layer->forward(h, *bottom, *top);
  const std::vector<double> want = {1, 10, 2, 20, 100, 1000, 200, 2000,
                                    3, 30, 4, 40, 300, 3000, 400, 4000};
  EXPECT_EQ(top[0]->data_vector(), want);
}

TEST(DeconvolutionLayer, ForwardIsTheTransposeOfAConvolutionMatrix) {
  // Convolution from 3 x 5 x 5 (the deconvolution's top) to 2 x 3 x 3 (its bottom): kernel 3,
  // stride 2, pad 1. Its matrix M (18 x 75) is written from the definition; the deconvolution
  // with the same weight must compute M^T x + bias.
  const int Cin = 2, Cout = 3, H = 3, Ho = 5, K = 3, S = 2, P = 1;
  auto layer = deconv(
      "num_output: 3 kernel_size: 3 stride: 2 pad: 1 "
      "weight_filler { type: 'gaussian' } bias_filler { type: 'uniform' }");
  TensorSet<double> bottom, top;
  Tensor<double>* x = bottom.add({1, Cin, H, H}, 5);
  top.add();
  layer->setup(*bottom, *top);
  ASSERT_EQ(layer->blobs()[0]->shape(), (std::vector<int64_t>{Cin, Cout, K, K}));
  ASSERT_EQ(top[0]->shape(), (std::vector<int64_t>{1, Cout, Ho, Ho}));
  const std::vector<double> w = layer->blobs()[0]->data_vector();
  const std::vector<double> b = layer->blobs()[1]->data_vector();
  std::vector<double> M(size_t(Cin * H * H) * (Cout * Ho * Ho), 0.0);
  for (int k = 0; k < Cin; ++k)
    for (int p = 0; p < H; ++p)
      for (int q = 0; q < H; ++q)
        for (int c = 0; c < Cout; ++c)
          for (int r = 0; r < K; ++r)
            for (int s = 0; s < K; ++s) {
              const int i = p * S - P + r, j = q * S - P + s;
              if (i < 0 || i >= Ho || j < 0 || j >= Ho) continue;
              const int row = (k * H + p) * H + q, col = (c * Ho + i) * Ho + j;
              M[size_t(row) * (Cout * Ho * Ho) + col] += w[((k * Cout + c) * K + r) * K + s];
            }
  const std::vector<double> xv = x->data_vector();
  std::vector<double> want(Cout * Ho * Ho);
  for (int col = 0; col < Cout * Ho * Ho; ++col) {
    double v = b[col / (Ho * Ho)];
    for (int row = 0; row < Cin * H * H; ++row)
      v += M[size_t(row) * (Cout * Ho * Ho) + col] * xv[row];
    want[col] = v;
  }
  Handle h;
  layer->forward(h, *bottom, *top);
  EXPECT_TRUE(all_close(top[0]->data_vector(), want, Tolerance{1e-12, 1e-10}));
}

TEST(DeconvolutionLayer, BilinearUpsamplingKeepsAConstantImageConstant) {
  auto layer = deconv(
      "num_output: 2 group: 2 kernel_size: 4 stride: 2 pad: 1 bias_term: false "
      "weight_filler { type: 'bilinear' }");
  TensorSet<double> bottom, top;
  bottom.add({1, 2, 4, 4})->set_data(std::vector<double>(32, 3.0));
  top.add();
  layer->setup(*bottom, *top);
  ASSERT_EQ(top[0]->shape(), (std::vector<int64_t>{1, 2, 8, 8}));
  Handle h;
  layer->forward(h, *bottom, *top);
  const std::vector<double> y = top[0]->data_vector();
  for (int c = 0; c < 2; ++c)
    for (int i = 1; i < 7; ++i)
      for (int j = 1; j < 7; ++j) EXPECT_NEAR(y[(c * 8 + i) * 8 + j], 3.0, 1e-12) << i << "," << j;
}

TEST(DeconvolutionLayer, GradientStridePadBias) {
  auto layer = deconv(
      "num_output: 3 kernel_size: 3 stride: 2 pad: 1 "
      "weight_filler { type: 'gaussian' } bias_filler { type: 'gaussian' }");
  EXPECT_TRUE(check_gradient(*layer, Filled{{2, 2, 3, 4}, 1}));
}

TEST(DeconvolutionLayer, GradientGroupsDilationTwoBottoms) {
  auto layer = deconv(
      "num_output: 4 group: 2 kernel_h: 3 kernel_w: 2 dilation: 2 "
      "weight_filler { type: 'gaussian' } bias_filler { type: 'gaussian' }");
  TensorSet<double> bottom, top;
  bottom.add({1, 4, 3, 3}, 2);
  bottom.add({1, 4, 3, 3}, 3);
  top.add();
  top.add();
  EXPECT_TRUE(check_gradient(*layer, *bottom, *top));
  EXPECT_EQ(top[0]->shape(), (std::vector<int64_t>{1, 4, 7, 5}));
}

TEST(DeconvolutionLayer, Errors) {
  expect_setup_error(*deconv("num_output: 2 kernel_size: 2 pad: 3"), {{1, 1, 2, 2}},
                     "layer test_Deconvolution (Deconvolution): output would be -3x-3");
  expect_setup_error(*deconv("num_output: 3 group: 2 kernel_size: 2"), {{1, 2, 2, 2}},
                     "num_output (3) must be divisible by group (2)");
  expect_setup_error(*deconv("num_output: 2"), {{1, 2, 2, 2}},
                     "kernel_size (or kernel_h and kernel_w) is required");
  expect_setup_error(*deconv("num_output: 2 kernel_size: 2"), {{2, 2, 2}},
                     "only 2-d deconvolution");
}

}  // namespace
}  // namespace crema::test
