// SoftmaxWithLoss layer tests: loss values under each normalization and ignore_label, the prob
// top, gradients, and the label errors.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>

#include "gradient_checker.h"
#include "test_util.h"

namespace crema::test {
namespace {

constexpr int kN = 3, kC = 4, kH = 2, kW = 2;

// Scores N x C x H x W and labels N x 1 x H x W with some positions set to the ignore label 2
// (and one to a label that only matters when nothing is ignored).
void make_inputs(TensorSet<double>& bottom) {
  bottom.add({kN, kC, kH, kW}, 31, -3, 3);
  Tensor<double>* label = bottom.add({kN, 1, kH, kW});
  std::vector<double> l(label->count());
  for (size_t i = 0; i < l.size(); ++i) l[i] = double((i * 7 + 1) % kC);
  label->set_data(l);
}

// -sum log p[label] over positions, and the number of positions counted.
struct RawLoss {
  double sum = 0;
  int valid = 0;
};
RawLoss naive_loss(const std::vector<double>& x, const std::vector<double>& label, int ignore,
                   bool has_ignore) {
  RawLoss r;
  for (int n = 0; n < kN; ++n)
    for (int i = 0; i < kH * kW; ++i) {
      const int l = int(label[n * kH * kW + i]);
      if (has_ignore && l == ignore) continue;
      double sum = 0;
      for (int c = 0; c < kC; ++c) sum += std::exp(x[(n * kC + c) * kH * kW + i]);
      const double p = std::exp(x[(n * kC + l) * kH * kW + i]) / sum;
      r.sum -= std::log(std::max(p, double(FLT_MIN)));
      ++r.valid;
    }
  return r;
}

struct NormCase {
  std::string param;
  double divisor_of_valid;  // -1: use the valid count
  double divisor;           // otherwise this
};

TEST(SoftmaxWithLossLayer, LossUnderEachNormalization) {
  const double full = kN * kH * kW;
  const NormCase cases[] = {
      {"", -1, 0},  // VALID is the default
      {"normalization: VALID", -1, 0},
      {"normalization: FULL", 0, full},
      {"normalization: BATCH_SIZE", 0, double(kN)},
      {"normalization: NONE", 0, 1.0},
      {"normalize: true", -1, 0},
      {"normalize: false", 0, double(kN)},
      {"normalize: false normalization: FULL", 0, full},  // the newer field wins
  };
  for (bool ignore : {false, true}) {
    for (const NormCase& nc : cases) {
      const std::string text = "type: 'SoftmaxWithLoss' loss_param { " + nc.param +
                               (ignore ? " ignore_label: 2" : "") + " }";
      SCOPED_TRACE(text);
      auto layer = make_layer<double>(text);
      TensorSet<double> bottom, top;
      make_inputs(bottom);
      top.add();
      top.add();
      layer->setup(*bottom, *top);
      EXPECT_TRUE(layer->is_loss());
      EXPECT_EQ(top[0]->count(), 1);
      EXPECT_EQ(top[1]->shape(), bottom[0]->shape());
      Handle handle;
      layer->forward(handle, *bottom, *top);
      const RawLoss raw = naive_loss(bottom[0]->data_vector(), bottom[1]->data_vector(), 2, ignore);
      if (ignore) {
        ASSERT_LT(raw.valid, kN * kH * kW);
      }
      const double divisor = nc.divisor_of_valid < 0 ? raw.valid : nc.divisor;
      EXPECT_NEAR(top[0]->data_vector()[0], raw.sum / divisor, 1e-12);
      // The second top is the softmax, summing to 1 over the channels.
      const auto prob = top[1]->data_vector();
      double total = 0;
      for (double p : prob) total += p;
      EXPECT_NEAR(total, kN * kH * kW, 1e-9);
    }
  }
}

TEST(SoftmaxWithLossLayer, GradientsUnderEachNormalization) {
  for (std::string norm : {"VALID", "FULL", "BATCH_SIZE", "NONE"}) {
    const std::string text =
        "type: 'SoftmaxWithLoss' loss_param { ignore_label: 2 normalization: " + norm + " }";
    SCOPED_TRACE(text);
    auto layer = make_layer<double>(text);
    TensorSet<double> bottom, top;
    make_inputs(bottom);
    top.add();
    EXPECT_TRUE(
        check_gradient(*layer, *bottom, *top, GradientCheckOptions().threshold(1e-6).bottoms({0})));
    // Ignored positions get exactly zero gradient.
    const auto label = bottom[1]->data_vector();
    const auto dx = bottom[0]->diff_vector();
    for (int n = 0; n < kN; ++n)
      for (int i = 0; i < kH * kW; ++i)
        if (label[n * kH * kW + i] == 2) {
          for (int c = 0; c < kC; ++c) EXPECT_EQ(dx[(n * kC + c) * kH * kW + i], 0.0);
        }
  }
}

TEST(SoftmaxWithLossLayer, SpatialAxisGradient) {
  // Softmax over axis 3: labels are one per (n, c, h).
  auto layer = make_layer<double>("type: 'SoftmaxWithLoss' softmax_param { axis: 3 }");
  TensorSet<double> bottom, top;
  bottom.add({2, 2, 2, 3}, 4, -2, 2);
  Tensor<double>* label = bottom.add({8});
  label->set_data({0, 1, 2, 0, 1, 2, 2, 1});
  top.add();
  EXPECT_TRUE(
      check_gradient(*layer, *bottom, *top, GradientCheckOptions().threshold(1e-6).bottoms({0})));
}

TEST(SoftmaxWithLossLayer, LabelErrors) {
  TensorSet<double> bottom, top;
  make_inputs(bottom);
  top.add();
  Handle handle;
  auto layer = make_layer<double>("name: 'loss' type: 'SoftmaxWithLoss'");
  layer->setup(*bottom, *top);
  EXPECT_FALSE(layer->allow_force_backward(1));
  layer->forward(handle, *bottom, *top);
  top[0]->fill_diff(1);
  EXPECT_THROW(layer->backward(handle, *top, {true, true}, *bottom), Error);

  // A label outside [0, C) names the layer.
  std::vector<double> l = bottom[1]->data_vector();
  l[3] = kC;
  bottom[1]->set_data(l);
  expect_error([&] { layer->forward(handle, *bottom, *top); }, "layer loss");

  // The label count must match the positions.
  bottom[1]->reshape({kN, kH * kW + 1});
  EXPECT_THROW(layer->reshape(*bottom, *top), Error);
}

}  // namespace
}  // namespace crema::test
