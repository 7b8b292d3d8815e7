// Convolution layer tests: shapes, forward against a naive loop reference, gradients, errors.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "gradient_checker.h"
#include "test_util.h"

namespace crema::test {
namespace {

struct ConvCase {
  int kh, kw, ph, pw, sh, sw, dh, dw, groups;
};

// Naive reference: y[n,k,p,q] = b[k] + sum x[n, c, p*sh - ph + r*dh, q*sw - pw + s*dw] * w.
std::vector<double> naive_conv(const std::vector<double>& x, const std::vector<double>& w,
                               const std::vector<double>& b, int n, int c, int h, int wd, int k,
                               const ConvCase& cc, int oh, int ow) {
  std::vector<double> y(size_t(n) * k * oh * ow, 0.0);
  const int cg = c / cc.groups, kg = k / cc.groups;
  for (int in = 0; in < n; ++in)
    for (int ik = 0; ik < k; ++ik)
      for (int p = 0; p < oh; ++p)
        for (int q = 0; q < ow; ++q) {
          double sum = b.empty() ? 0.0 : b[ik];
          const int g = ik / kg;
          for (int ic = 0; ic < cg; ++ic)
            for (int r = 0; r < cc.kh; ++r)
              for (int s = 0; s < cc.kw; ++s) {
                const int iy = p * cc.sh - cc.ph + r * cc.dh;
                const int ix = q * cc.sw - cc.pw + s * cc.dw;
                if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;
                sum += x[((size_t(in) * c + g * cg + ic) * h + iy) * wd + ix] *
                       w[((size_t(ik) * cg + ic) * cc.kh + r) * cc.kw + s];
              }
          y[((size_t(in) * k + ik) * oh + p) * ow + q] = sum;
        }
  return y;
}

std::string conv_text(const ConvCase& cc, int k, bool bias = true) {
  std::ostringstream os;
  os << "type: 'Convolution' convolution_param { num_output: " << k << " kernel_h: " << cc.kh
     << " kernel_w: " << cc.kw << " pad_h: " << cc.ph << " pad_w: " << cc.pw
     << " stride_h: " << cc.sh << " stride_w: " << cc.sw << " dilation: " << cc.dh
     << " dilation: " << cc.dw << " group: " << cc.groups << " bias_term: " << (bias ? 1 : 0)
     << " weight_filler { type: 'uniform' min: -1 max: 1 }"
     << " bias_filler { type: 'uniform' min: -1 max: 1 } }";
  return os.str();
}

template <typename T>
std::vector<double> as_double(const std::vector<T>& v) {
  return std::vector<double>(v.begin(), v.end());
}

TEST(ConvolutionLayer, ForwardMatchesNaiveReference) {
  const ConvCase cases[] = {
      {3, 3, 0, 0, 1, 1, 1, 1, 1},  // plain
      {3, 2, 1, 2, 2, 1, 1, 1, 1},  // rectangular kernel, pad, stride
      {3, 3, 2, 2, 1, 1, 2, 2, 1},  // dilation
      {1, 1, 0, 0, 1, 1, 1, 1, 2},  // 1x1, groups
      {3, 3, 1, 1, 2, 2, 1, 1, 4},  // depthwise-style: groups = channels
  };
  const int n = 2, c = 4, h = 7, wd = 6, k = 8;
  for (const ConvCase& cc : cases) {
    SCOPED_TRACE(conv_text(cc, k));
    auto layer = make_layer<float>(conv_text(cc, k));
    TensorSet<float> bottom, top;
    bottom.add({n, c, h, wd}, 3);
    top.add();
    layer->setup(*bottom, *top);
    const int oh = (h + 2 * cc.ph - cc.dh * (cc.kh - 1) - 1) / cc.sh + 1;
    const int ow = (wd + 2 * cc.pw - cc.dw * (cc.kw - 1) - 1) / cc.sw + 1;
    EXPECT_EQ(top[0]->shape(), (std::vector<int64_t>{n, k, oh, ow}));
    ASSERT_EQ(layer->blobs().size(), 2u);
    EXPECT_EQ(layer->blobs()[0]->shape(), (std::vector<int64_t>{k, c / cc.groups, cc.kh, cc.kw}));
    EXPECT_EQ(layer->blobs()[1]->shape(), (std::vector<int64_t>{k}));
    Handle handle;
    layer->forward(handle, *bottom, *top);
    const auto ref =
        naive_conv(as_double(bottom[0]->data_vector()), as_double(layer->blobs()[0]->data_vector()),
                   as_double(layer->blobs()[1]->data_vector()), n, c, h, wd, k, cc, oh, ow);
    EXPECT_TRUE(all_close(top[0]->data_vector(), ref, {1e-4, 1e-4}));
  }
}

TEST(ConvolutionLayer, NoBiasAndSeveralBottomsShareWeights) {
  const ConvCase cc{2, 2, 0, 0, 1, 1, 1, 1, 1};
  auto layer = make_layer<double>(conv_text(cc, 3, false));
  TensorSet<double> bottom, top;
  bottom.add({1, 2, 3, 3}, 1);
  bottom.add({1, 2, 3, 3}, 2);
  top.add();
  top.add();
  layer->setup(*bottom, *top);
  ASSERT_EQ(layer->blobs().size(), 1u);
  Handle handle;
  layer->forward(handle, *bottom, *top);
  for (int i = 0; i < 2; ++i) {
    const auto ref = naive_conv(bottom[i]->data_vector(), layer->blobs()[0]->data_vector(), {}, 1,
                                2, 3, 3, 3, cc, 2, 2);
    EXPECT_TRUE(all_close(top[i]->data_vector(), ref, {1e-12, 1e-12}));
  }
}

TEST(ConvolutionLayer, FoldsAxesBeforeTheChannelAxis) {
  auto layer = make_layer<float>(
      "type: 'Convolution' convolution_param { num_output: 2 kernel_size: 3 axis: 2 }");
  TensorSet<float> bottom, top;
  bottom.add({2, 3, 4, 5, 5});
  top.add();
  layer->setup(*bottom, *top);
  EXPECT_EQ(top[0]->shape(), (std::vector<int64_t>{2, 3, 2, 3, 3}));
}

TEST(ConvolutionLayer, GradientsWithPadStrideDilationGroups) {
  const ConvCase cases[] = {
      {3, 3, 1, 1, 1, 1, 1, 1, 1},
      {3, 2, 1, 0, 2, 1, 1, 1, 2},
      {2, 2, 2, 1, 1, 2, 2, 1, 2},
  };
  for (const ConvCase& cc : cases) {
    SCOPED_TRACE(conv_text(cc, 4));
    auto layer = make_layer<double>(conv_text(cc, 4));
    EXPECT_TRUE(check_gradient(*layer, Filled{{2, 2, 5, 4}, 11},
                               GradientCheckOptions().step(1e-3).threshold(1e-6)));
  }
}

// Expects setting up the float layer of `text` on one bottom of `shape` to throw an error that
// contains every one of `parts`.
void expect_setup_error_mentions(const std::string& text, const std::vector<int64_t>& shape,
                                 const std::vector<std::string>& parts) {
  const std::string what = setup_error(text, shape);
  for (const std::string& part : parts) EXPECT_NE(what.find(part), std::string::npos) << what;
}

TEST(ConvolutionLayer, KernelLargerThanPaddedInputIsAnError) {
  expect_setup_error_mentions(
      "name: 'c1' type: 'Convolution' convolution_param { num_output: 2 kernel_size: 7 pad: 1 }",
      {1, 1, 4, 4}, {"layer c1 (Convolution)", "kernel 7x7", "4x4"});
}

TEST(ConvolutionLayer, GroupNotDividingChannelsIsAnError) {
  expect_setup_error_mentions(
      "name: 'c2' type: 'Convolution' convolution_param { num_output: 4 kernel_size: 1 group: 2 }",
      {1, 3, 4, 4}, {"layer c2", "channels (3)", "group (2)"});
}

TEST(ConvolutionLayer, ThreeDimensionalIsRejected) {
  expect_setup_error_mentions(
      "type: 'Convolution' convolution_param { num_output: 2 kernel_size: 1 }", {1, 2, 3, 3, 3},
      {"only 2-d"});
}

// Sizes come from uint32 fields of an untrusted file: values past the primitives' int range are
// refused by name instead of wrapping to negative or huge ints.
TEST(ConvolutionLayer, OutOfRangeGeometryIsAnError) {
  const std::pair<std::string, std::string> cases[] = {
      {"kernel_size: 3000000000", "kernel 3000000000 is too large"},
      {"kernel_size: 3 pad: 4000000000", "pad 4000000000 is too large"},
      {"kernel_size: 3 stride_h: 3000000000 stride_w: 1", "stride 3000000000 is too large"},
      {"kernel_size: 3 dilation: 2147483648", "dilation must be in [1, 1073741824]"}};
  for (const auto& [field, message] : cases) {
    SCOPED_TRACE(field);
    expect_setup_error_mentions(
        "name: 'c3' type: 'Convolution' convolution_param { num_output: 2 " + field + " }",
        {1, 1, 8, 8}, {"layer c3 (Convolution)", message});
  }
}

// num_output and group are uint32 too; Convolution and Deconvolution read them through one
// checked reader.
TEST(ConvolutionLayer, OutOfRangeNumOutputOrGroupIsAnError) {
  const std::pair<std::string, std::string> cases[] = {
      {"num_output: 0 kernel_size: 1", "num_output must be in [1, 1073741824], got 0"},
      {"num_output: 3000000000 kernel_size: 1", "num_output must be in [1, 1073741824]"},
      {"num_output: 2 group: 0 kernel_size: 1", "group must be in [1, 1073741824], got 0"},
      {"num_output: 2 group: 4294967295 kernel_size: 1", "group must be in [1, 1073741824]"},
      {"num_output: 3 group: 2 kernel_size: 1", "num_output (3) must be divisible by group (2)"}};
  for (const char* type : {"Convolution", "Deconvolution"})
    for (const auto& [field, message] : cases) {
      SCOPED_TRACE(std::string(type) + " " + field);
      expect_setup_error_mentions(
          std::string("name: 'c4' type: '") + type + "' convolution_param { " + field + " }",
          {1, 2, 8, 8}, {std::string("layer c4 (") + type + ")", message});
    }
}

}  // namespace
}  // namespace crema::test
