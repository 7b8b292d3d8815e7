// Reduction layer tests: each operation by hand, on all axes and on trailing axes, with coeff;
// gradients of every operation.
#include <gtest/gtest.h>

#include "gradient_checker.h"
#include "test_util.h"

namespace crema::test {
namespace {

TEST(ReductionLayer, EachOperationByHand) {
  // x = [[1, -2, 3], [-4, 5, -6]]
  for (const ForwardCase& c : {
           ForwardCase{"", {}, {-3}},
           ForwardCase{"operation: SUM axis: 1", {2}, {2, -5}},
           ForwardCase{"operation: ASUM axis: 1", {2}, {6, 15}},
           ForwardCase{"operation: SUMSQ axis: 1", {2}, {14, 77}},
           ForwardCase{"operation: MEAN axis: 1", {2}, {2.f / 3, -5.f / 3}},
           ForwardCase{"operation: ASUM coeff: 0.5", {}, {10.5}},
           ForwardCase{"operation: SUMSQ axis: -1 coeff: -2", {2}, {-28, -154}},
           ForwardCase{"operation: MEAN axis: 0", {}, {-0.5}},
       }) {
    SCOPED_TRACE(c.params);
    TensorSet<float> bottom;
    bottom.add({2, 3})->set_data({1, -2, 3, -4, 5, -6});
    expect_forward(*make_layer<float>("type: 'Reduction' reduction_param { " + c.params + " }"),
                   bottom, c, Tolerance{1e-6, 1e-6});
  }
}

TEST(ReductionLayer, Gradient) {
  for (const char* op : {"SUM", "ASUM", "SUMSQ", "MEAN"}) {
    for (const char* axis : {"axis: 0", "axis: 1", "axis: 2 coeff: 1.5"}) {
      SCOPED_TRACE(std::string(op) + " " + axis);
      TensorSet<double> bottom, top;
      bottom.add({2, 3, 4}, 1);
      top.add();
      auto layer = make_layer<double>(
          "type: 'Reduction' reduction_param { operation: " + std::string(op) + " " + axis + " }");
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
  EXPECT_EQ(error_of([&] {
              make_layer<float>("type: 'Reduction' name: 'r' reduction_param { axis: 2 }")
                  ->setup(*bottom, *top);
            }),
            "layer r (Reduction): axis 2 is out of range for an input of shape (2 3 (6))");
}

}  // namespace
}  // namespace crema::test
