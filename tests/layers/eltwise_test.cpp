// Eltwise layer tests: each operation by hand, gradients of SUM with coefficients, PROD (both
// gradient forms) and MAX (distinct values), in-place SUM, and the parameter/shape errors.
#include <gtest/gtest.h>

#include "gradient_checker.h"
#include "test_util.h"

namespace crema::test {
namespace {

TEST(EltwiseLayer, ByHand) {
  struct Case {
    std::string params;
    std::vector<float> y;
  };
  for (const Case& c : {Case{"", {5, 1, 0, 3}},
                        Case{"eltwise_param { coeff: 1 coeff: -1 coeff: 2 }", {0, -3, -5, 5}},
                        Case{"eltwise_param { operation: PROD }", {3, 0, -6, 0}},
                        Case{"eltwise_param { operation: MAX }", {3, 2, 2, 4}}}) {
    SCOPED_TRACE(c.params);
    TensorSet<float> bottom, top;
    bottom.add({2, 2})->set_data({1, -1, 2, 4});
    bottom.add({2, 2})->set_data({3, 2, 1, -1});
    bottom.add({2, 2})->set_data({1, 0, -3, 0});
    top.add();
    auto layer = make_layer<float>("type: 'Eltwise' " + c.params);
    layer->setup(*bottom, *top);
    Handle h;
    layer->forward(h, *bottom, *top);
    EXPECT_EQ(top[0]->data_vector(), c.y);
  }
}

TEST(EltwiseLayer, Gradient) {
  for (const char* params :
       {"eltwise_param { operation: SUM }", "eltwise_param { coeff: 0.5 coeff: -2 coeff: 3 }",
        "eltwise_param { operation: PROD }",
        "eltwise_param { operation: PROD stable_prod_grad: false }",
        "eltwise_param { operation: MAX }"}) {
    SCOPED_TRACE(params);
    TensorSet<double> bottom, top;
    // Distinct values (no near-ties for MAX: the max is not differentiable at a tie), away
    // from zero for the fast PROD gradient, which divides by the input.
    const std::vector<double> base = {0.3, -0.7, 1.1, -1.5, 0.45, 0.9, -0.2, 1.35};
    for (int k = 0; k < 3; ++k) {
      std::vector<double> v;
      for (size_t i = 0; i < base.size(); ++i)
        v.push_back(base[(i + 3 * size_t(k)) % base.size()] + 0.05 * k);
      bottom.add({2, 4})->set_data(v);
    }
    top.add();
    EXPECT_TRUE(check_gradient(*make_layer<double>("type: 'Eltwise' " + std::string(params)),
                               *bottom, *top, GradientCheckOptions().threshold(1e-7)));
  }
}

TEST(EltwiseLayer, SumInPlace) {
  TensorSet<float> bottom, top;
  Tensor<float>* a = bottom.add({3});
  a->set_data({1, 2, 3});
  bottom.add({3})->set_data({10, 20, 30});
  top.alias(a);
  auto layer = make_layer<float>("type: 'Eltwise' eltwise_param { coeff: 2 coeff: 1 }");
  layer->setup(*bottom, *top);
  Handle h;
  layer->forward(h, *bottom, *top);
  EXPECT_EQ(a->data_vector(), (std::vector<float>{12, 24, 36}));
  a->set_diff({1, 2, 3});
  layer->backward(h, *top, {true, true}, *bottom);
  EXPECT_EQ(bottom[1]->diff_vector(), (std::vector<float>{1, 2, 3}));  // read before overwritten
  EXPECT_EQ(a->diff_vector(), (std::vector<float>{2, 4, 6}));
}

std::string error_of(const std::string& params, std::vector<int64_t> second_shape) {
  TensorSet<float> bottom, top;
  bottom.add({2, 3});
  bottom.add(second_shape);
  top.add();
  try {
    make_layer<float>("type: 'Eltwise' name: 'e' " + params)->setup(*bottom, *top);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(EltwiseLayer, Errors) {
  EXPECT_EQ(error_of("", {2, 4}),
            "layer e (Eltwise): bottom 1 has shape (2 4 (8)) but bottom 0 has (2 3 (6)): all "
            "bottoms must have the same shape");
  EXPECT_EQ(error_of("eltwise_param { coeff: 1 }", {2, 3}),
            "layer e (Eltwise): 1 coeff(s) for 2 bottoms: give one per bottom");
  EXPECT_EQ(error_of("eltwise_param { operation: MAX coeff: 1 coeff: 1 }", {2, 3}),
            "layer e (Eltwise): coeff applies to the SUM operation only");
}

}  // namespace
}  // namespace crema::test
