// BatchNorm layer tests: training normalization, Caffe's running averages after two passes,
// global-statistics inference against the formula, gradients (with the statistics blobs frozen,
// as Caffe's test checks them), in place, untouched statistics diffs, and user errors.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "gradient_checker.h"
#include "layers/batch_norm_layer.h"
#include "test_util.h"

namespace crema::test {
namespace {

// Built directly rather than through the registry, so the tests name the class they test.
std::unique_ptr<Layer<double>> make_bn(const std::string& params, Phase phase = TRAIN) {
  return std::make_unique<BatchNormLayer<double>>(layer_param("type: 'BatchNorm' " + params, phase),
                                                  Device::kCPU);
}

// Per-channel mean and biased variance of an N x C x S tensor, in plain loops.
void channel_stats(const std::vector<double>& x, int N, int C, int S, std::vector<double>* mean,
                   std::vector<double>* var) {
  mean->assign(C, 0);
  var->assign(C, 0);
  for (int c = 0; c < C; ++c) {
    for (int n = 0; n < N; ++n)
      for (int s = 0; s < S; ++s) (*mean)[c] += x[(n * C + c) * S + s] / (N * S);
    for (int n = 0; n < N; ++n)
      for (int s = 0; s < S; ++s) {
        const double d = x[(n * C + c) * S + s] - (*mean)[c];
        (*var)[c] += d * d / (N * S);
      }
  }
}

TEST(BatchNormLayer, TrainingForwardNormalizesEachChannel) {
  auto layer = make_bn("");
  TensorSet<double> bottom;
  bottom.add({4, 3, 2, 5}, 1, -1, 3);
  const std::vector<double> y = forward_keeping_shape(*layer, bottom);
  EXPECT_FALSE(static_cast<BatchNormLayer<double>*>(layer.get())->use_global_stats());
  const auto x = bottom[0]->data_vector();
  std::vector<double> mean, var;
  channel_stats(x, 4, 3, 10, &mean, &var);
  std::vector<double> ref(x.size());
  for (size_t j = 0; j < x.size(); ++j) {
    const size_t c = (j / 10) % 3;
    ref[j] = (x[j] - mean[c]) / std::sqrt(var[c] + 1e-5);
  }
  EXPECT_TRUE(all_close(y, ref, {1e-12, 1e-10}));
}

// Two passes by hand, with f = 0.875 (exact in float, the proto's type) and m = N * H * W = 8:
//   blob2 = f * (f * 0 + 1) + 1;  blob0 = f * mean1 + mean2;  blob1 = f * u * var1 + u * var2,
// u = m / (m - 1).
TEST(BatchNormLayer, RunningAveragesAfterTwoPasses) {
  auto layer = make_bn("batch_norm_param { moving_average_fraction: 0.875 }");
  TensorSet<double> bottom, top;
  bottom.add({2, 3, 2, 2}, 2, -1, 2);
  top.add();
  layer->setup(*bottom, *top);
  ASSERT_EQ(layer->blobs().size(), 3u);
  EXPECT_EQ(layer->blobs()[0]->shape(), (std::vector<int64_t>{3}));
  EXPECT_EQ(layer->blobs()[2]->shape(), (std::vector<int64_t>{1}));
  Handle h;
  const auto x1 = bottom[0]->data_vector();
  layer->forward(h, *bottom, *top);
  const auto x2 = random_vector<double>(24, 3, 0, 5);
  bottom[0]->set_data(x2);
  layer->forward(h, *bottom, *top);
  std::vector<double> m1, v1, m2, v2;
  channel_stats(x1, 2, 3, 4, &m1, &v1);
  channel_stats(x2, 2, 3, 4, &m2, &v2);
  const double f = 0.875, u = 8.0 / 7.0;
  std::vector<double> mean_sum(3), var_sum(3);
  for (int c = 0; c < 3; ++c) {
    mean_sum[c] = f * m1[c] + m2[c];
    var_sum[c] = f * u * v1[c] + u * v2[c];
  }
  EXPECT_TRUE(all_close(layer->blobs()[0]->data_vector(), mean_sum, {1e-12, 1e-10}));
  EXPECT_TRUE(all_close(layer->blobs()[1]->data_vector(), var_sum, {1e-12, 1e-10}));
  EXPECT_NEAR(layer->blobs()[2]->data_vector()[0], f * 1 + 1, 1e-12);
}

// TEST phase defaults to the stored statistics: y = (x - blob0 / blob2) / sqrt(blob1 / blob2 +
// eps); an untrained layer (blob2 = 0) uses mean 0 and variance 0, as Caffe.
TEST(BatchNormLayer, GlobalStatsInferenceMatchesFormula) {
  auto layer = make_bn("batch_norm_param { eps: 0.0625 }", TEST);
  TensorSet<double> bottom, top;
  bottom.add({2, 2, 3}, 4, -2, 2);
  top.add();
  layer->setup(*bottom, *top);
  EXPECT_TRUE(static_cast<BatchNormLayer<double>*>(layer.get())->use_global_stats());
  Handle h;
  const auto x = bottom[0]->data_vector();
  layer->forward(h, *bottom, *top);
  std::vector<double> ref(x.size());
  for (size_t j = 0; j < x.size(); ++j) ref[j] = x[j] / std::sqrt(0.0625);
  EXPECT_TRUE(all_close(top[0]->data_vector(), ref, {1e-12, 1e-10}));

  layer->blobs()[0]->set_data({0.6, -1.0});
  layer->blobs()[1]->set_data({1.0, 3.0});
  layer->blobs()[2]->set_data({2.0});
  layer->forward(h, *bottom, *top);
  const double mean[2] = {0.3, -0.5}, var[2] = {0.5, 1.5};
  for (size_t j = 0; j < x.size(); ++j) {
    const size_t c = (j / 3) % 2;
    ref[j] = (x[j] - mean[c]) / std::sqrt(var[c] + 0.0625);
  }
  EXPECT_TRUE(all_close(top[0]->data_vector(), ref, {1e-12, 1e-10}));
  // dx = dy / sqrt(var + eps)
  const auto dy = random_vector<double>(12, 5);
  top[0]->set_diff(dy);
  layer->backward(h, *top, {true}, *bottom);
  std::vector<double> dx(12);
  for (size_t j = 0; j < 12; ++j) dx[j] = dy[j] / std::sqrt(var[(j / 3) % 2] + 0.0625);
  EXPECT_TRUE(all_close(bottom[0]->diff_vector(), dx, {1e-12, 1e-10}));
}

TEST(BatchNormLayer, UseGlobalStatsOverridesPhase) {
  TensorSet<double> bottom, top;
  bottom.add({3, 2}, 6);
  top.add();
  auto global = make_bn("batch_norm_param { use_global_stats: true }");
  global->setup(*bottom, *top);
  EXPECT_TRUE(static_cast<BatchNormLayer<double>*>(global.get())->use_global_stats());
  auto layer = make_bn("batch_norm_param { use_global_stats: false }", TEST);
  layer->setup(*bottom, *top);
  EXPECT_FALSE(static_cast<BatchNormLayer<double>*>(layer.get())->use_global_stats());
}

TEST(BatchNormLayer, TrainingGradientWithStatisticsFrozen) {
  for (const std::vector<int64_t>& shape :
       std::vector<std::vector<int64_t>>{{2, 3, 2, 3}, {5, 4}, {6}, {3, 2, 1, 2, 2}}) {
    SCOPED_TRACE(shape.size());
    auto layer = make_bn("");
    EXPECT_TRUE(check_gradient(*layer, Filled{shape, 7, -1, 2},
                               GradientCheckOptions().step(1e-4).threshold(1e-5).params(false)));
  }
}

TEST(BatchNormLayer, GlobalStatsGradientWithStatisticsFrozen) {
  auto layer = make_bn("batch_norm_param { use_global_stats: true }");
  TensorSet<double> bottom, top;
  bottom.add({2, 3, 2, 2}, 8);
  top.add();
  layer->setup(*bottom, *top);
  layer->blobs()[0]->set_data({0.5, -0.2, 0.1});
  layer->blobs()[1]->set_data({1.5, 0.7, 2.0});
  layer->blobs()[2]->set_data({1.5});
  EXPECT_TRUE(check_gradient(*layer, *bottom, *top,
                             GradientCheckOptions().step(1e-4).threshold(1e-6).params(false)));
}

// In place (top == bottom) gives the outputs and gradients of the separate-buffer layer, and
// backward never writes the statistics' diffs, so a solver with lr_mult 0 leaves them alone.
TEST(BatchNormLayer, InPlaceAndUntouchedStatisticsDiffs) {
  auto a = make_bn(""), b = make_bn("");
  InPlacePair run(*a, *b, {3, 2, 2, 2}, 9, -1, 2);
  run.setup();
  run.forward({1e-14, 0});
  for (auto& blob : b->blobs()) blob->fill_diff(7.0);
  run.backward(10, {1e-14, 0});
  ASSERT_EQ(b->param().param_size(), 3);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(b->param().param(i).lr_mult(), 0.0f);
    EXPECT_EQ(b->param().param(i).decay_mult(), 0.0f);
    EXPECT_FALSE(b->param_propagate_down(i));
    for (double v : b->blobs()[i]->diff_vector()) EXPECT_EQ(v, 7.0) << "blob " << i;
  }
  EXPECT_TRUE(all_close(b->blobs()[0]->data_vector(), a->blobs()[0]->data_vector(), {0, 0}));
}

TEST(BatchNormLayer, Errors) {
  TensorSet<double> bottom, top;
  bottom.add({2, 3, 2});
  top.add();
  expect_error([&] { make_bn("param { lr_mult: 1 }")->setup(*bottom, *top); }, "cannot be learned");
  EXPECT_NO_THROW(make_bn("param { lr_mult: 0 } param { lr_mult: 0 }")->setup(*bottom, *top));
  auto layer = make_bn("");
  layer->setup(*bottom, *top);
  TensorSet<double> other;
  other.add({2, 4, 2});
  expect_error([&] { layer->reshape(*other, *top); },
               "has 4 channels but the layer was set up for 3");
  EXPECT_THROW(make_bn("batch_norm_param { eps: -1 }")->setup(*bottom, *top), Error);
  EXPECT_THROW(make_bn("batch_norm_param { moving_average_fraction: 1.5 }")->setup(*bottom, *top),
               Error);
}

}  // namespace
}  // namespace crema::test
