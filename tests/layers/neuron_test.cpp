// ReLU, Sigmoid and TanH layer tests: values, in-place operation, gradients.
#include <gtest/gtest.h>

#include <cmath>

#include "gradient_checker.h"
#include "test_util.h"

namespace crema::test {
namespace {

struct Neuron {
  std::string text;
  double (*f)(double);
  double kink_range;
};

double relu(double x) { return x > 0 ? x : 0.0; }
double leaky(double x) { return x > 0 ? x : 0.25 * x; }
double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double tanh_fn(double x) { return std::tanh(x); }

const Neuron kNeurons[] = {
    {"type: 'ReLU'", relu, 0.01},
    {"type: 'ReLU' relu_param { negative_slope: 0.25 }", leaky, 0.01},
    {"type: 'Sigmoid'", sigmoid, -1},
    {"type: 'TanH'", tanh_fn, -1},
};

TEST(NeuronLayers, ForwardValuesAnyRank) {
  for (const Neuron& nr : kNeurons) {
    SCOPED_TRACE(nr.text);
    TensorSet<double> bottom;
    bottom.add({2, 3, 2, 2, 2}, 3, -3, 3);  // 5-d: element-wise layers take any rank
    const std::vector<double> y = forward_keeping_shape(*make_layer<double>(nr.text), bottom);
    std::vector<double> ref;
    for (double x : bottom[0]->data_vector()) ref.push_back(nr.f(x));
    EXPECT_TRUE(all_close(y, ref, {1e-12, 1e-12, true}));
  }
}

TEST(NeuronLayers, InPlaceMatchesOutOfPlace) {
  for (const Neuron& nr : kNeurons) {
    SCOPED_TRACE(nr.text);
    TensorSet<double> a_bottom, a_top, b_io;
    a_bottom.add({4, 5}, 7, -2, 2);
    a_top.add();
    b_io.add({4, 5}, 7, -2, 2);
    auto a = make_layer<double>(nr.text), b = make_layer<double>(nr.text);
    a->setup(*a_bottom, *a_top);
    b->setup(*b_io, *b_io);
    Handle handle;
    a->forward(handle, *a_bottom, *a_top);
    b->forward(handle, *b_io, *b_io);
    EXPECT_TRUE(all_close(b_io[0]->data_vector(), a_top[0]->data_vector(), {0, 0, true}));
    const auto dy = random_vector<double>(20, 8);
    a_top[0]->set_diff(dy);
    b_io[0]->set_diff(dy);
    a->backward(handle, *a_top, {true}, *a_bottom);
    b->backward(handle, *b_io, {true}, *b_io);
    EXPECT_TRUE(all_close(b_io[0]->diff_vector(), a_bottom[0]->diff_vector(), {1e-15, 0, true}));
  }
}

TEST(NeuronLayers, Gradients) {
  for (const Neuron& nr : kNeurons) {
    SCOPED_TRACE(nr.text);
    auto layer = make_layer<double>(nr.text);
    EXPECT_TRUE(
        check_gradient(*layer, Filled{{2, 3, 4}, 12, -2, 2},
                       GradientCheckOptions().step(1e-3).threshold(1e-5).kink(0, nr.kink_range)));
  }
}

TEST(NeuronLayers, NegativeSlopeInPlaceIsAnError) {
  TensorSet<float> io;
  io.add({3});
  EXPECT_THROW(make_layer<float>("type: 'ReLU' relu_param { negative_slope: -1 }")->setup(*io, *io),
               Error);
}

}  // namespace
}  // namespace crema::test
