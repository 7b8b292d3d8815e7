// InnerProduct layer tests: shapes, forward against a naive reference, gradients, size errors.
#include <gtest/gtest.h>

#include "gradient_checker.h"
#include "test_util.h"

namespace crema::test {
namespace {

std::string ip_text(int n, bool transpose, int axis = 1, bool bias = true) {
  std::ostringstream os;
  os << "type: 'InnerProduct' inner_product_param { num_output: " << n
     << " transpose: " << (transpose ? "true" : "false") << " axis: " << axis
     << " bias_term: " << (bias ? "true" : "false")
     << " weight_filler { type: 'uniform' min: -1 max: 1 }"
     << " bias_filler { type: 'uniform' min: -1 max: 1 } }";
  return os.str();
}

// y[m, j] = b[j] + sum_i x[m, i] * W(j, i), W stored N x K, or K x N when transposed.
std::vector<double> naive_ip(const std::vector<double>& x, const std::vector<double>& w,
                             const std::vector<double>& b, int m, int n, int k, bool transpose) {
  std::vector<double> y(size_t(m) * n);
  for (int r = 0; r < m; ++r)
    for (int j = 0; j < n; ++j) {
      double sum = b.empty() ? 0.0 : b[j];
      for (int i = 0; i < k; ++i)
        sum += x[size_t(r) * k + i] * (transpose ? w[size_t(i) * n + j] : w[size_t(j) * k + i]);
      y[size_t(r) * n + j] = sum;
    }
  return y;
}

TEST(InnerProductLayer, ForwardMatchesNaiveReference) {
  for (bool transpose : {false, true}) {
    for (bool bias : {false, true}) {
      SCOPED_TRACE(ip_text(5, transpose, 1, bias));
      auto layer = make_layer<double>(ip_text(5, transpose, 1, bias));
      TensorSet<double> bottom, top;
      bottom.add({3, 2, 2, 3}, 4);
      top.add();
      layer->setup(*bottom, *top);
      EXPECT_EQ(top[0]->shape(), (std::vector<int64_t>{3, 5}));
      ASSERT_EQ(layer->blobs().size(), bias ? 2u : 1u);
      const std::vector<int64_t> wshape =
          transpose ? std::vector<int64_t>{12, 5} : std::vector<int64_t>{5, 12};
      EXPECT_EQ(layer->blobs()[0]->shape(), wshape);
      Handle handle;
      layer->forward(handle, *bottom, *top);
      const auto ref = naive_ip(bottom[0]->data_vector(), layer->blobs()[0]->data_vector(),
                                bias ? layer->blobs()[1]->data_vector() : std::vector<double>{}, 3,
                                5, 12, transpose);
      EXPECT_TRUE(all_close(top[0]->data_vector(), ref, {1e-12, 1e-12}));
    }
  }
}

TEST(InnerProductLayer, AxisKeepsLeadingAxes) {
  auto layer = make_layer<float>(ip_text(7, false, 2));
  TensorSet<float> bottom, top;
  bottom.add({2, 3, 4, 5});
  top.add();
  layer->setup(*bottom, *top);
  EXPECT_EQ(top[0]->shape(), (std::vector<int64_t>{2, 3, 7}));
  EXPECT_EQ(layer->blobs()[0]->shape(), (std::vector<int64_t>{7, 20}));
}

TEST(InnerProductLayer, Gradients) {
  for (bool transpose : {false, true}) {
    SCOPED_TRACE(transpose ? "transpose" : "no transpose");
    auto layer = make_layer<double>(ip_text(4, transpose));
    TensorSet<double> bottom, top;
    bottom.add({3, 2, 3}, 8);
    top.add();
    EXPECT_TRUE(check_gradient(*layer, *bottom, *top, GradientCheckOptions().threshold(1e-6)));
  }
  auto layer = make_layer<double>(ip_text(3, false, 2, false));
  TensorSet<double> bottom, top;
  bottom.add({2, 2, 3}, 9);
  top.add();
  EXPECT_TRUE(check_gradient(*layer, *bottom, *top, GradientCheckOptions().threshold(1e-6)));
}

TEST(InnerProductLayer, HugeWeightIsAnErrorNotACrash) {
  auto layer = make_layer<float>(
      "name: 'fc' type: 'InnerProduct' inner_product_param { num_output: 4000000000 }");
  TensorSet<float> bottom, top;
  bottom.add({2, 1000});
  top.add();
  try {
    layer->setup(*bottom, *top);
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("layer fc (InnerProduct)"), std::string::npos) << what;
    EXPECT_NE(what.find("too large"), std::string::npos) << what;
  }
}

TEST(InnerProductLayer, InputSizeChangeIsAnError) {
  auto layer = make_layer<float>(ip_text(3, false));
  TensorSet<float> bottom, top;
  bottom.add({2, 6});
  top.add();
  layer->setup(*bottom, *top);
  bottom[0]->reshape({2, 7});
  EXPECT_THROW(layer->reshape(*bottom, *top), Error);
}

}  // namespace
}  // namespace crema::test
