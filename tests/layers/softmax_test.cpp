// Softmax layer tests: values over the channel axis and a spatial axis, gradients.
#include <gtest/gtest.h>

#include <cmath>

#include "gradient_checker.h"
#include "test_util.h"

namespace crema::test {
namespace {

// Softmax over axis `axis` of a packed tensor, computed naively in double.
std::vector<double> naive_softmax(const std::vector<double>& x, const std::vector<int64_t>& shape,
                                  int axis) {
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= shape[i];
  for (size_t i = axis + 1; i < shape.size(); ++i) inner *= shape[i];
  const int64_t c = shape[axis];
  std::vector<double> y(x.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double sum = 0;
      for (int64_t j = 0; j < c; ++j) sum += std::exp(x[(o * c + j) * inner + i]);
      for (int64_t j = 0; j < c; ++j)
        y[(o * c + j) * inner + i] = std::exp(x[(o * c + j) * inner + i]) / sum;
    }
  return y;
}

struct SoftmaxCase {
  int axis;       // as written in the prototxt
  int canonical;  // the axis it means for a 4-d input
};

TEST(SoftmaxLayer, ForwardMatchesNaiveReference) {
  for (SoftmaxCase sc : {SoftmaxCase{1, 1}, SoftmaxCase{2, 2}, SoftmaxCase{-1, 3}}) {
    SCOPED_TRACE(sc.axis);
    auto layer = make_layer<double>(
        "type: 'Softmax' softmax_param { axis: " + std::to_string(sc.axis) + " }");
    TensorSet<double> bottom;
    bottom.add({2, 3, 4, 5}, 2, -4, 4);
    EXPECT_TRUE(all_close(forward_keeping_shape(*layer, bottom),
                          naive_softmax(bottom[0]->data_vector(), bottom[0]->shape(), sc.canonical),
                          {1e-14, 1e-12}));
  }
}

TEST(SoftmaxLayer, LargeInputsDoNotOverflow) {
  auto layer = make_layer<float>("type: 'Softmax'");
  TensorSet<float> bottom, top;
  bottom.add({1, 3});
  bottom[0]->set_data({1000.f, 1000.f, 999.f});
  top.add();
  layer->setup(*bottom, *top);
  Handle handle;
  layer->forward(handle, *bottom, *top);
  const double e = std::exp(-1.0), s = 2 + e;
  EXPECT_TRUE(all_close(top[0]->data_vector(), std::vector<double>{1 / s, 1 / s, e / s}));
}

TEST(SoftmaxLayer, GradientsChannelAndSpatial) {
  for (int axis : {1, 2, 3}) {
    SCOPED_TRACE(axis);
    auto layer =
        make_layer<double>("type: 'Softmax' softmax_param { axis: " + std::to_string(axis) + " }");
    EXPECT_TRUE(check_gradient(*layer, Filled{{2, 3, 2, 3}, 6, -2, 2},
                               GradientCheckOptions().threshold(1e-6)));
  }
}

}  // namespace
}  // namespace crema::test
