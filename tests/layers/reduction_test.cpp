// Reduction layer tests: each operation by hand, on all axes and on trailing axes, with coeff;
// gradients of every operation.
#include <gtest/gtest.h>

#include "gradient_checker.h"
#include "layers/reduction_layer.h"
#include "test_util.h"

namespace crema::test {
namespace {

template <typename Dtype>
std::unique_ptr<Layer<Dtype>> reduction(const std::string& params) {
  return std::make_unique<ReductionLayer<Dtype>>(layer_param("type: 'Reduction' " + params),
                                                 Device::kCPU);
}

TEST(ReductionLayer, EachOperationByHand) {
  // x = [[1, -2, 3], [-4, 5, -6]]
  struct Case {
    std::string params;
    std::vector<int64_t> shape;
    std::vector<float> y;
  };
  for (const Case& c : {
           Case{"", {}, {-3}},
           Case{"operation: SUM axis: 1", {2}, {2, -5}},
           Case{"operation: ASUM axis: 1", {2}, {6, 15}},
           Case{"operation: SUMSQ axis: 1", {2}, {14, 77}},
           Case{"operation: MEAN axis: 1", {2}, {2.f / 3, -5.f / 3}},
           Case{"operation: ASUM coeff: 0.5", {}, {10.5}},
           Case{"operation: SUMSQ axis: -1 coeff: -2", {2}, {-28, -154}},
           Case{"operation: MEAN axis: 0", {}, {-0.5}},
       }) {
    SCOPED_TRACE(c.params);
    TensorSet<float> bottom, top;
    bottom.add({2, 3})->set_data({1, -2, 3, -4, 5, -6});
    top.add();
    auto layer = reduction<float>("reduction_param { " + c.params + " }");
    layer->setup(*bottom, *top);
    EXPECT_EQ(top[0]->shape(), c.shape);
    Handle h;
    layer->forward(h, *bottom, *top);
    EXPECT_TRUE(all_close(top[0]->data_vector(), c.y, Tolerance{1e-6, 1e-6}));
  }
}

TEST(ReductionLayer, Gradient) {
  for (const char* op : {"SUM", "ASUM", "SUMSQ", "MEAN"}) {
    for (const char* axis : {"axis: 0", "axis: 1", "axis: 2 coeff: 1.5"}) {
      SCOPED_TRACE(std::string(op) + " " + axis);
      TensorSet<double> bottom, top;
      bottom.add({2, 3, 4}, 1);
      top.add();
      auto layer =
          reduction<double>("reduction_param { operation: " + std::string(op) + " " + axis + " }");
      // ASUM has a kink at 0; the random inputs keep away from it by more than the step.
      EXPECT_TRUE(check_gradient(*layer, *bottom, *top,
                                 GradientCheckOptions().threshold(1e-6).kink(0.0, 2e-3)));
    }
  }
}

TEST(ReductionLayer, AxisOutOfRangeIsAnError) {
  TensorSet<float> bottom, top;
  bottom.add({2, 3});
  top.add();
  try {
    reduction<float>("name: 'r' reduction_param { axis: 2 }")->setup(*bottom, *top);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "layer r (Reduction): axis 2 is out of range for an input of shape (2 3 (6))");
  }
}

}  // namespace
}  // namespace crema::test
