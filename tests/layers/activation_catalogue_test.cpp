// Tests of the activation layers ELU, AbsVal, Power, Exp, Log, BNLL, Threshold, Clip, Swish and
// PReLU: values against the formulas, gradients, in-place rules and the user errors.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "gradient_checker.h"
#include "layers/activation_layer.h"
#include "layers/prelu_layer.h"
#include "test_util.h"

namespace crema::test {
namespace {

std::unique_ptr<Layer<double>> make_act(const std::string& text) {
  return std::make_unique<ActivationLayer<double>>(layer_param(text), Device::kCPU);
}
std::unique_ptr<Layer<double>> make_prelu(const std::string& params) {
  return std::make_unique<PreluLayer<double>>(layer_param("type: 'PReLU' " + params), Device::kCPU);
}

struct Act {
  std::string text;
  double (*f)(double);
  bool in_place;      // whether the layer accepts top == bottom
  double kink;        // a kink to keep gradient-check points away from
  double kink_range;  // negative: none
};

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

// Parameters are exact in float (the proto's type), so the double formulas use the same values.
const Act kActs[] = {
    {"type: 'ELU'", [](double x) { return x > 0 ? x : std::exp(x) - 1; }, true, 0, 0.01},
    {"type: 'ELU' elu_param { alpha: 0.25 }",
     [](double x) { return x > 0 ? x : 0.25 * (std::exp(x) - 1); }, true, 0, 0.01},
    {"type: 'AbsVal'", [](double x) { return std::fabs(x); }, false, 0, 0.01},
    {"type: 'Power' power_param { power: 2 scale: 0.5 shift: 1 }",
     [](double x) { return (1 + 0.5 * x) * (1 + 0.5 * x); }, false, 0, -1},
    {"type: 'Power' power_param { power: 0.5 scale: 0.5 shift: 2 }",
     [](double x) { return std::sqrt(2 + 0.5 * x); }, false, 0, -1},
    {"type: 'Power' power_param { scale: -2 shift: 1 }", [](double x) { return 1 - 2 * x; }, true,
     0, -1},
    {"type: 'Exp'", [](double x) { return std::exp(x); }, true, 0, -1},
    {"type: 'Exp' exp_param { base: 2 scale: 0.5 shift: 1 }",
     [](double x) { return std::pow(2.0, 1 + 0.5 * x); }, true, 0, -1},
    {"type: 'Log' log_param { shift: 3 }", [](double x) { return std::log(3 + x); }, false, 0, -1},
    {"type: 'Log' log_param { base: 10 scale: 2 shift: 5 }",
     [](double x) { return std::log10(5 + 2 * x); }, false, 0, -1},
    {"type: 'BNLL'", [](double x) { return std::log(1 + std::exp(x)); }, true, 0, -1},
    {"type: 'Clip' clip_param { min: -0.5 max: 0.75 }",
     [](double x) { return std::min(std::max(x, -0.5), 0.75); }, false, 0.75, 0.01},
    {"type: 'Swish'", [](double x) { return x * sigmoid(x); }, false, 0, -1},
    {"type: 'Swish' swish_param { beta: 2 }", [](double x) { return x * sigmoid(2 * x); }, false, 0,
     -1},
    {"type: 'Threshold' threshold_param { threshold: 0.2 }",
     [](double x) { return x > 0.2 ? 1.0 : 0.0; }, true, 0, -1},
};

TEST(ActivationLayers, ForwardValuesAnyRank) {
  for (const Act& a : kActs) {
    SCOPED_TRACE(a.text);
    auto layer = make_act(a.text);
    EXPECT_EQ(std::string(layer->type()), layer_param(a.text).type());
    TensorSet<double> bottom;
    bottom.add({2, 3, 2, 1, 2}, 3, -1.5, 1.5);
    const std::vector<double> y = forward_keeping_shape(*layer, bottom);
    std::vector<double> ref;
    for (double x : bottom[0]->data_vector()) ref.push_back(a.f(x));
    EXPECT_TRUE(all_close(y, ref, {1e-12, 1e-12, true}));
  }
}

TEST(ActivationLayers, Gradients) {
  for (const Act& a : kActs) {
    if (a.text.find("Threshold") != std::string::npos) continue;
    SCOPED_TRACE(a.text);
    auto layer = make_act(a.text);
    TensorSet<double> bottom, top;
    bottom.add({2, 3, 4}, 12, -1.5, 1.5);
    top.add();
    GradientCheckOptions opt = GradientCheckOptions().step(1e-4).threshold(1e-6);
    if (a.kink_range > 0) opt.kink(a.kink, a.kink_range);
    EXPECT_TRUE(check_gradient(*layer, *bottom, *top, opt));
  }
}

// Where in place is allowed it gives the separate-buffer results; elsewhere it is refused.
TEST(ActivationLayers, InPlaceRules) {
  for (const Act& a : kActs) {
    SCOPED_TRACE(a.text);
    auto sep = make_act(a.text), inp = make_act(a.text);
    InPlacePair run(*sep, *inp, {4, 5}, 7, -1.5, 1.5);
    if (!a.in_place) {
      expect_error([&] { run.setup(); }, "cannot run in place");
      continue;
    }
    run.setup();
    run.forward({0, 0, true});
    if (a.text.find("Threshold") != std::string::npos) continue;
    run.backward(8, {1e-15, 1e-15});
  }
}

TEST(ActivationLayers, ThresholdRefusesBackward) {
  auto layer = make_act("type: 'Threshold'");
  TensorSet<double> bottom, top;
  bottom.add({3}, 1);
  top.add();
  layer->setup(*bottom, *top);
  Handle h;
  layer->forward(h, *bottom, *top);
  layer->backward(h, *top, {false}, *bottom);  // nothing asked: fine
  expect_error([&] { layer->backward(h, *top, {true}, *bottom); },
               "layer test_Threshold (Threshold): has no gradient");
}

TEST(ActivationLayers, ParameterErrors) {
  TensorSet<double> bottom, top;
  bottom.add({3}, 1);
  top.add();
  auto message = [&](const std::string& text) {
    try {
      make_act(text)->setup(*bottom, *top);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("type: 'Exp' exp_param { base: -2 }").find("base must be strictly positive"),
            std::string::npos);
  EXPECT_NE(message("type: 'Log' log_param { base: 1 }").find("base 1"), std::string::npos);
  EXPECT_NE(message("type: 'Clip' clip_param { min: 2 max: 1 }").find("must not exceed"),
            std::string::npos);
  EXPECT_NE(message("type: 'ELU' elu_param { alpha: inf }").find("finite"), std::string::npos);
  TensorSet<double> io;
  io.add({3}, 2);
  EXPECT_THROW(make_act("type: 'ELU' elu_param { alpha: -1 }")->setup(*io, *io), Error);
}

// PReLU: default slope 0.25 per channel, channel_shared, gradients of data and slopes, in place.
TEST(PreluLayer, ForwardDefaultsAndShared) {
  for (bool shared : {false, true}) {
    SCOPED_TRACE(shared);
    auto layer = make_prelu(shared ? "prelu_param { channel_shared: true }" : "");
    TensorSet<double> bottom, top;
    bottom.add({2, 3, 2, 2}, 4);
    top.add();
    layer->setup(*bottom, *top);
    ASSERT_EQ(layer->blobs().size(), 1u);
    EXPECT_EQ(layer->blobs()[0]->count(), shared ? 1 : 3);
    for (double s : layer->blobs()[0]->data_vector()) EXPECT_EQ(s, 0.25);
    if (!shared) layer->blobs()[0]->set_data({0.1, 0.5, -0.3});
    Handle h;
    layer->forward(h, *bottom, *top);
    const auto x = bottom[0]->data_vector();
    std::vector<double> ref(x.size());
    for (size_t j = 0; j < x.size(); ++j) {
      const double a = shared ? 0.25 : std::vector<double>{0.1, 0.5, -0.3}[(j / 4) % 3];
      ref[j] = x[j] > 0 ? x[j] : a * x[j];
    }
    EXPECT_TRUE(all_close(top[0]->data_vector(), ref, {1e-15, 0}));
  }
}

TEST(PreluLayer, Gradients) {
  for (const char* params : {"prelu_param { filler { type: 'uniform' min: 0.1 max: 0.9 } }",
                             "prelu_param { channel_shared: true }"}) {
    for (const std::vector<int64_t>& shape :
         std::vector<std::vector<int64_t>>{{2, 3, 2, 2}, {4, 5}}) {
      SCOPED_TRACE(::testing::Message() << params << " rank " << shape.size());
      auto layer = make_prelu(params);
      EXPECT_TRUE(check_gradient(*layer, Filled{shape, 5, -1, 1},
                                 GradientCheckOptions().step(1e-4).threshold(1e-7).kink(0, 1e-3)));
    }
  }
}

TEST(PreluLayer, InPlaceMatchesOutOfPlace) {
  auto a = make_prelu(""), b = make_prelu("");
  InPlacePair run(*a, *b, {2, 3, 4}, 6);
  run.setup();
  run.forward({0, 0});
  a->blobs()[0]->fill_diff(0);
  b->blobs()[0]->fill_diff(0);
  run.backward(7, {0, 0});
  EXPECT_TRUE(all_close(b->blobs()[0]->diff_vector(), a->blobs()[0]->diff_vector(), {1e-15, 0}));
}

TEST(PreluLayer, NeedsTwoAxes) {
  TensorSet<double> bottom, top;
  bottom.add({5});
  top.add();
  expect_error([&] { make_prelu("")->setup(*bottom, *top); }, "at least 2 axes");
}

}  // namespace
}  // namespace crema::test
