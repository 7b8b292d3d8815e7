// Scale and Bias layer tests: broadcast shapes (axis, num_axes, scalar, second bottom), default
// fillers, gradients of data and parameters, in place, and shape errors.
#include <gtest/gtest.h>

#include <memory>

#include "gradient_checker.h"
#include "layers/bias_layer.h"
#include "layers/scale_layer.h"
#include "test_util.h"

namespace crema::test {
namespace {

// Built directly rather than through the registry, so the tests name the class they test.
std::unique_ptr<Layer<double>> make_scale(const std::string& params) {
  return std::make_unique<ScaleLayer<double>>(layer_param("type: 'Scale' " + params), Device::kCPU);
}
std::unique_ptr<Layer<double>> make_bias(const std::string& params) {
  return std::make_unique<BiasLayer<double>>(layer_param("type: 'Bias' " + params), Device::kCPU);
}

const char* kGauss = "{ type: 'gaussian' std: 1 }";

struct Case {
  std::string params;
  std::vector<int64_t> x_shape;
  std::vector<int64_t> param_shape;  // learned blob shape, or the second bottom's
  bool second_bottom;
  int64_t inner;  // product of x's axes after the parameter's (all of x for a scalar)
};

std::vector<Case> scale_cases() {
  const std::string f = std::string("filler ") + kGauss;
  return {
      {"scale_param { " + f + " }", {2, 3, 4}, {3}, false, 4},
      {"scale_param { " + f + " bias_term: true bias_filler " + kGauss + " }",
       {2, 3, 2, 2},
       {3},
       false,
       4},
      {"scale_param { axis: 0 num_axes: 2 " + f + " }", {2, 3, 2}, {2, 3}, false, 2},
      {"scale_param { axis: -1 num_axes: -1 " + f + " }", {2, 3, 5}, {5}, false, 1},
      {"scale_param { num_axes: 0 " + f + " }", {2, 3}, {}, false, 6},
      {"scale_param { axis: 1 }", {2, 3, 4, 2}, {3, 4}, true, 2},
      {"scale_param { axis: 1 bias_term: true bias_filler " + std::string(kGauss) + " }",
       {2, 3, 2},
       {3},
       true,
       2},
      {"", {3, 4}, {}, true, 12},
  };
}

// A case's bottoms (x, and the scale where it is a bottom) drawn from seed and seed + 1, and
// one top.
void case_tensors(const Case& c, uint64_t seed, TensorSet<double>* bottom, TensorSet<double>* top) {
  bottom->add(c.x_shape, seed, -2, 2);
  if (c.second_bottom) bottom->add(c.param_shape, seed + 1, 0.5, 1.5);
  top->add();
}

TEST(ScaleLayer, ForwardMatchesBroadcastReference) {
  for (const Case& c : scale_cases()) {
    SCOPED_TRACE(c.params);
    auto layer = make_scale(c.params);
    TensorSet<double> bottom, top;
    case_tensors(c, 1, &bottom, &top);
    layer->setup(*bottom, *top);
    const Tensor<double>& s = c.second_bottom ? *bottom[1] : *layer->blobs()[0];
    EXPECT_EQ(s.shape(), c.param_shape);
    EXPECT_EQ(top[0]->shape(), c.x_shape);
    Handle h;
    layer->forward(h, *bottom, *top);
    const auto x = bottom[0]->data_vector(), sv = s.data_vector();
    const int64_t k = int64_t(sv.size()), inner = c.inner;
    std::vector<double> bias(size_t(k), 0.0);
    if (c.params.find("bias_term") != std::string::npos)
      bias = layer->blobs().back()->data_vector();
    std::vector<double> ref(x.size());
    for (size_t j = 0; j < x.size(); ++j) {
      const size_t ch = size_t((int64_t(j) / inner) % k);
      ref[j] = x[j] * sv[ch] + bias[ch];
    }
    EXPECT_TRUE(all_close(top[0]->data_vector(), ref, {1e-14, 1e-14}));
  }
}

TEST(ScaleLayer, Gradients) {
  for (const Case& c : scale_cases()) {
    SCOPED_TRACE(c.params);
    auto layer = make_scale(c.params);
    TensorSet<double> bottom, top;
    case_tensors(c, 3, &bottom, &top);
    EXPECT_TRUE(
        check_gradient(*layer, *bottom, *top, GradientCheckOptions().step(1e-3).threshold(1e-7)));
  }
}

// Default fillers: a learned scale starts at 1 and a bias at 0, so the layer is the identity.
TEST(ScaleLayer, DefaultFillersAreIdentity) {
  auto layer = make_scale("scale_param { bias_term: true }");
  TensorSet<double> bottom, top;
  bottom.add({2, 3, 2}, 5);
  top.add();
  layer->setup(*bottom, *top);
  ASSERT_EQ(layer->blobs().size(), 2u);
  Handle h;
  layer->forward(h, *bottom, *top);
  EXPECT_TRUE(all_close(top[0]->data_vector(), bottom[0]->data_vector(), {0, 0}));
}

TEST(ScaleLayer, InPlaceMatchesOutOfPlace) {
  const std::string params = std::string("scale_param { filler ") + kGauss +
                             " bias_term: true bias_filler " + kGauss + " }";
  auto a = make_scale(params), b = make_scale(params);
  InPlacePair run(*a, *b, {2, 3, 4}, 6);
  run.setup();
  for (size_t i = 0; i < 2; ++i) b->blobs()[i]->copy_from(*a->blobs()[i]);
  run.forward({0, 0});
  for (auto* l : {a.get(), b.get()})
    for (auto& blob : l->blobs()) blob->fill_diff(0);
  run.backward(7, {1e-15, 0});
  for (size_t i = 0; i < 2; ++i)
    EXPECT_TRUE(all_close(b->blobs()[i]->diff_vector(), a->blobs()[i]->diff_vector(), {1e-14, 0}));
}

TEST(ScaleLayer, ShapeErrors) {
  TensorSet<double> bottom, top;
  bottom.add({2, 3, 4});
  bottom.add({3, 5});
  top.add();
  expect_error([&] { make_scale("")->setup(*bottom, *top); }, "does not broadcast");
  TensorSet<double> one, t1;
  one.add({2, 3});
  t1.add();
  EXPECT_THROW(make_scale("scale_param { num_axes: 3 }")->setup(*one, *t1), Error);
  EXPECT_THROW(make_scale("scale_param { num_axes: -2 }")->setup(*one, *t1), Error);
  EXPECT_THROW(make_scale("scale_param { axis: 2 }")->setup(*one, *t1), Error);
}

TEST(BiasLayer, ForwardAndGradients) {
  const std::string f = std::string("bias_param { filler ") + kGauss;
  const std::vector<Case> cases = {
      {f + " }", {2, 3, 4}, {3}, false, 4},
      {f + " axis: 0 num_axes: -1 }", {2, 3}, {2, 3}, false, 1},
      {f + " num_axes: 0 }", {4, 2}, {}, false, 8},
      {"bias_param { axis: 1 }", {2, 3, 2}, {3, 2}, true, 1},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.params);
    auto layer = make_bias(c.params);
    TensorSet<double> bottom, top;
    bottom.add(c.x_shape, 8, -2, 2);
    if (c.second_bottom) bottom.add(c.param_shape, 9, -1, 1);
    top.add();
    layer->setup(*bottom, *top);
    const Tensor<double>& b = c.second_bottom ? *bottom[1] : *layer->blobs()[0];
    EXPECT_EQ(b.shape(), c.param_shape);
    Handle h;
    layer->forward(h, *bottom, *top);
    const auto x = bottom[0]->data_vector(), bv = b.data_vector();
    const int64_t inner = c.inner;
    std::vector<double> ref(x.size());
    for (size_t j = 0; j < x.size(); ++j)
      ref[j] = x[j] + bv[size_t((int64_t(j) / inner) % int64_t(bv.size()))];
    EXPECT_TRUE(all_close(top[0]->data_vector(), ref, {1e-14, 1e-14}));
    auto fresh = make_bias(c.params);
    EXPECT_TRUE(
        check_gradient(*fresh, *bottom, *top, GradientCheckOptions().step(1e-3).threshold(1e-7)));
  }
}

TEST(BiasLayer, DefaultFillerIsZeroAndInPlaceWorks) {
  auto layer = make_bias("");
  TensorSet<double> io;
  io.add({2, 3}, 10);
  const auto x = io[0]->data_vector();
  layer->setup(*io, *io);
  Handle h;
  layer->forward(h, *io, *io);
  EXPECT_TRUE(all_close(io[0]->data_vector(), x, {0, 0}));
  const auto dy = random_vector<double>(6, 11);
  io[0]->set_diff(dy);
  layer->blobs()[0]->fill_diff(0);
  layer->backward(h, *io, {true}, *io);
  EXPECT_TRUE(all_close(io[0]->diff_vector(), dy, {0, 0}));
  std::vector<double> db(3, 0.0);
  for (size_t j = 0; j < 6; ++j) db[j % 3] += dy[j];
  EXPECT_TRUE(all_close(layer->blobs()[0]->diff_vector(), db, {1e-15, 0}));
}

TEST(BiasLayer, ShapeErrors) {
  TensorSet<double> bottom, top;
  bottom.add({2, 3});
  bottom.add({4});
  top.add();
  expect_error([&] { make_bias("")->setup(*bottom, *top); },
               "layer test_Bias (Bias): bias (4 (4)) does not broadcast");
}

}  // namespace
}  // namespace crema::test
