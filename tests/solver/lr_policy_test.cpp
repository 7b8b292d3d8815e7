// Tests of the learning-rate policies against their formulas at several iterations, and of the
// errors for unknown policies and missing fields.
#include "solver/lr_policy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/errors.h"
#include "core/proto_io.h"
#include "proto_test_util.h"

namespace crema {
namespace {

SolverParameter solver(const std::string& text) {
  return test::parse_text<SolverParameter>(text, "lr_policy_test");
}

double rate(const SolverParameter& p, int iter) {
  int step = 0;
  return learning_rate(p, iter, &step);
}

const int kIters[] = {0, 1, 7, 99, 100, 101, 250, 999};

void expect_rel_near(double got, double want, int iter) {
  EXPECT_NEAR(got, want, 1e-12 * std::fabs(want) + 1e-300) << "iteration " << iter;
}

TEST(LrPolicy, Fixed) {
  const auto p = solver("base_lr: 0.01 lr_policy: \"fixed\"");
  for (int it : kIters) expect_rel_near(rate(p, it), double(0.01f), it);
}

TEST(LrPolicy, Step) {
  const auto p = solver("base_lr: 0.1 lr_policy: \"step\" gamma: 0.5 stepsize: 100");
  for (int it : kIters) {
    int step = 0;
    expect_rel_near(learning_rate(p, it, &step), double(0.1f) * std::pow(0.5, it / 100), it);
    EXPECT_EQ(step, it / 100);
  }
  EXPECT_DOUBLE_EQ(rate(p, 99) / rate(p, 100), 2.0);
}

TEST(LrPolicy, Exp) {
  const auto p = solver("base_lr: 0.1 lr_policy: \"exp\" gamma: 0.99");
  for (int it : kIters)
    expect_rel_near(rate(p, it), double(0.1f) * std::pow(double(0.99f), it), it);
}

TEST(LrPolicy, Inv) {
  const auto p = solver("base_lr: 0.01 lr_policy: \"inv\" gamma: 0.0001 power: 0.75");
  for (int it : kIters)
    expect_rel_near(rate(p, it),
                    double(0.01f) * std::pow(1.0 + double(0.0001f) * it, -double(0.75f)), it);
  // LeNet's solver prints "lr = 0.00992565" at iteration 100.
  EXPECT_NEAR(rate(p, 100), 0.00992565, 5e-9);
}

TEST(LrPolicy, Multistep) {
  const auto p = solver(
      "base_lr: 1 lr_policy: \"multistep\" gamma: 0.1 stepvalue: 100 stepvalue: 250 "
      "stepvalue: 500");
  // Called every iteration, as the solver does: the step advances at each stepvalue.
  int step = 0;
  for (int it = 0; it <= 999; ++it) {
    const double r = learning_rate(p, it, &step);
    const int want = (it >= 100) + (it >= 250) + (it >= 500);
    ASSERT_EQ(step, want) << "iteration " << it;
    expect_rel_near(r, std::pow(double(0.1f), want), it);
  }
  // Jumping ahead (a restore) passes every boundary reached.
  step = 0;
  expect_rel_near(learning_rate(p, 600, &step), std::pow(double(0.1f), 3), 600);
  EXPECT_EQ(step, 3);
}

TEST(LrPolicy, Poly) {
  const auto p = solver("base_lr: 0.1 lr_policy: \"poly\" power: 2 max_iter: 1000");
  for (int it : kIters)
    expect_rel_near(rate(p, it), double(0.1f) * std::pow(1.0 - it / 1000.0, 2.0), it);
  EXPECT_EQ(rate(p, 1000), 0.0);
}

TEST(LrPolicy, Sigmoid) {
  const auto p = solver("base_lr: 0.1 lr_policy: \"sigmoid\" gamma: 0.05 stepsize: 100");
  for (int it : kIters)
    expect_rel_near(rate(p, it), double(0.1f) / (1.0 + std::exp(-double(0.05f) * (it - 100.0))),
                    it);
  EXPECT_NEAR(rate(p, 100), double(0.1f) / 2, 1e-15);
}

// A negative gamma is Caffe's falling sigmoid: base_lr early, half at stepsize, then to 0.
TEST(LrPolicy, SigmoidFallsWithANegativeGamma) {
  const auto p = solver("base_lr: 0.1 lr_policy: \"sigmoid\" gamma: -0.05 stepsize: 100");
  EXPECT_NO_THROW(check_lr_policy(p));
  EXPECT_NEAR(rate(p, 0), double(0.1f) / (1.0 + std::exp(double(-0.05f) * 100.0)), 1e-12);
  EXPECT_NEAR(rate(p, 100), double(0.1f) / 2, 1e-15);
  EXPECT_LT(rate(p, 1000), 1e-10);
}

TEST(LrPolicy, UnknownPolicyListsKnownOnes) {
  const auto p = solver("base_lr: 0.1 lr_policy: \"cosine\"");
  try {
    rate(p, 0);
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("cosine"), std::string::npos) << what;
    for (const char* known : {"fixed", "step", "exp", "inv", "multistep", "poly", "sigmoid"})
      EXPECT_NE(what.find(known), std::string::npos) << what;
  }
  EXPECT_THROW(check_lr_policy(solver("base_lr: 0.1")), Error);
}

TEST(LrPolicy, MissingFields) {
  EXPECT_THROW(check_lr_policy(solver("lr_policy: \"step\" gamma: 0.1")), Error);
  EXPECT_THROW(check_lr_policy(solver("lr_policy: \"step\" stepsize: 10")), Error);
  EXPECT_THROW(check_lr_policy(solver("lr_policy: \"exp\"")), Error);
  EXPECT_THROW(check_lr_policy(solver("lr_policy: \"inv\" gamma: 0.1")), Error);
  EXPECT_THROW(check_lr_policy(solver("lr_policy: \"multistep\" gamma: 0.1")), Error);
  EXPECT_THROW(check_lr_policy(solver("lr_policy: \"poly\" power: 1")), Error);
  EXPECT_THROW(check_lr_policy(solver("lr_policy: \"sigmoid\" gamma: 0.1")), Error);
  EXPECT_THROW(check_lr_policy(solver("lr_policy: \"step\" gamma: -1 stepsize: 10")), Error);
  try {
    check_lr_policy(solver("lr_policy: \"step\" gamma: 0.1"));
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("stepsize"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(check_lr_policy(solver("lr_policy: \"fixed\"")));
}

}  // namespace
}  // namespace crema
