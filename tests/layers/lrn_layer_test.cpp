// LRN layer tests: forward values of both norm regions against Caffe's formulas, numeric
// gradient checks in double, and the parameter errors.
#include "layers/lrn_layer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "gradient_checker.h"
#include "test_util.h"

namespace crema::test {
namespace {

std::unique_ptr<LrnLayer<double>> make_lrn(const std::string& lrn_param) {
  return std::make_unique<LrnLayer<double>>(layer_param("type: 'LRN' " + lrn_param), Device::kCPU);
}

// Caffe's LRN written out on a 4-d tensor: the window sum of x^2 over n channels (across) or an
// n x n square (within, divided by n * n as Caffe's average pooling does, with k fixed at 1).
std::vector<double> naive_lrn(const Tensor<double>& t, bool within, int n, double alpha,
                              double beta, double k) {
  const int N = int(t.num()), C = int(t.channels()), H = int(t.height()), W = int(t.width());
  const std::vector<double> x = t.data_vector();
  const int r = n / 2;
  std::vector<double> y(x.size());
  for (int b = 0; b < N; ++b)
    for (int c = 0; c < C; ++c)
      for (int i = 0; i < H; ++i)
        for (int j = 0; j < W; ++j) {
          double sum = 0;
          for (int cc = std::max(0, c - r); cc <= std::min(C - 1, c + r); ++cc)
            for (int ii = std::max(0, i - r); ii <= std::min(H - 1, i + r); ++ii)
              for (int jj = std::max(0, j - r); jj <= std::min(W - 1, j + r); ++jj) {
                if (within ? cc != c : (ii != i || jj != j)) continue;
                const double v = x[t.offset(b, cc, ii, jj)];
                sum += v * v;
              }
          const double scale = within ? 1.0 + alpha / (n * n) * sum : k + alpha / n * sum;
          const size_t o = size_t(t.offset(b, c, i, j));
          y[o] = x[o] * std::pow(scale, -beta);
        }
  return y;
}

TEST(LrnLayer, ForwardMatchesCaffeFormulas) {
  struct Case {
    std::string param;
    bool within;
    int n;
    double alpha, beta, k;
  };
  const Case cases[] = {
      {"", false, 5, 1.0, 0.75, 1.0},  // the defaults
      {"lrn_param { local_size: 3 alpha: 2 beta: 0.6 k: 2 }", false, 3, 2.0, 0.6, 2.0},
      {"lrn_param { norm_region: WITHIN_CHANNEL local_size: 3 alpha: 2 }", true, 3, 2.0, 0.75, 1.0},
      // k is ignored within a channel, as in Caffe.
      {"lrn_param { norm_region: WITHIN_CHANNEL k: 5 beta: 0.5 }", true, 5, 1.0, 0.5, 1.0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.param);
    TensorSet<double> bottom;
    bottom.add({2, 7, 4, 5}, 3, -2, 2);
    const std::vector<double> y = forward_keeping_shape(*make_lrn(c.param), bottom);
    // lrn_param stores float: the layer sees 0.6 as float(0.6).
    const auto f = [](double v) { return double(float(v)); };
    EXPECT_TRUE(all_close(y, naive_lrn(*bottom[0], c.within, c.n, f(c.alpha), f(c.beta), f(c.k)),
                          {1e-12, 1e-10}));
  }
}

// The layer's gradient on a random input of the given shape, checked numerically.
void expect_gradient(const char* param, const std::vector<int64_t>& shape, uint64_t seed) {
  SCOPED_TRACE(param);
  auto layer = make_lrn(param);
  TensorSet<double> bottom, top;
  bottom.add(shape, seed, -1.5, 1.5);
  top.add();
  EXPECT_TRUE(check_gradient<double>(*layer, *bottom, *top));
}

TEST(LrnLayer, GradientAcrossChannels) {
  for (const char* param : {"", "lrn_param { local_size: 3 alpha: 2 beta: 0.6 k: 1.5 }",
                            "lrn_param { local_size: 1 alpha: 0.5 }"})
    expect_gradient(param, {2, 7, 3, 4}, 11);
}

TEST(LrnLayer, GradientWithinChannel) {
  for (const char* param : {"lrn_param { norm_region: WITHIN_CHANNEL }",
                            "lrn_param { norm_region: WITHIN_CHANNEL local_size: 3 alpha: 3 "
                            "beta: 0.6 k: 7 }"})
    expect_gradient(param, {2, 3, 5, 4}, 13);
}

TEST(LrnLayer, BadParametersAreLayerErrors) {
  for (const char* param : {"lrn_param { local_size: 4 }", "lrn_param { local_size: 0 }"}) {
    SCOPED_TRACE(param);
    auto layer = make_lrn(param);
    TensorSet<double> bottom, top;
    bottom.add({1, 3, 2, 2});
    top.add();
    try {
      layer->setup(*bottom, *top);
      ADD_FAILURE() << "an even local_size was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("local_size must be odd"), std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find("(LRN)"), std::string::npos) << e.what();
    }
  }
  {
    auto layer = make_lrn("");
    TensorSet<double> io;
    io.add({1, 3, 2, 2});
    EXPECT_THROW(layer->setup(*io, *io), Error);  // in place
  }
  {
    auto layer = make_lrn("");
    TensorSet<double> bottom, top;
    bottom.add({3, 4});
    top.add();
    EXPECT_THROW(layer->setup(*bottom, *top), Error);  // not 4-d
  }
}

}  // namespace
}  // namespace crema::test
