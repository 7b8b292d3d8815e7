// solver_update on the CPU against the formulas of solver_update.h evaluated in double, one
// element at a time: every rule, each regularization, with and without gradient scaling, for
// three consecutive steps (so the histories feed back).
#include "primitives/solver_update.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "test_util.h"

namespace crema::prim {
namespace {

struct State {
  std::vector<double> w, g, h, h2;
};

// The oracle, written out from the header's formulas.
void ref_step(const SolverUpdateDesc& d, State& s) {
  for (size_t i = 0; i < s.w.size(); ++i) {
    double g = s.g[i] * d.grad_scale;
    const double w = s.w[i];
    if (d.regularization == Regularization::kL2) g += d.decay * w;
    if (d.regularization == Regularization::kL1) g += d.decay * (w > 0 ? 1 : w < 0 ? -1 : 0);
    double& h = s.h[i];
    double& h2 = s.h2[i];
    switch (d.rule) {
      case UpdateRule::kSgd:
        h = d.rate * g + d.momentum * h;
        g = h;
        break;
      case UpdateRule::kNesterov: {
        const double old = h;
        h = d.rate * g + d.momentum * h;
        g = (1 + d.momentum) * h - d.momentum * old;
        break;
      }
      case UpdateRule::kAdaGrad:
        h += g * g;
        g = d.rate * g / (std::sqrt(h) + d.delta);
        break;
      case UpdateRule::kRmsProp:
        h = (1 - d.rms_decay) * g * g + d.rms_decay * h;
        g = d.rate * g / (std::sqrt(h) + d.delta);
        break;
      case UpdateRule::kAdaDelta:
        h = (1 - d.momentum) * g * g + d.momentum * h;
        g *= std::sqrt((h2 + d.delta) / (h + d.delta));
        h2 = (1 - d.momentum) * g * g + d.momentum * h2;
        g *= d.rate;
        break;
      case UpdateRule::kAdam:
        h = (1 - d.momentum) * g + d.momentum * h;
        h2 = (1 - d.momentum2) * g * g + d.momentum2 * h2;
        g = d.rate * h / (std::sqrt(h2) + d.delta);
        break;
    }
    s.g[i] = g;
    s.w[i] = w - g;
  }
}

// Coefficients are exact binary fractions, and so are 1 - m and 1 + m, so that the f32 library
// and the double oracle start from the same numbers (the library rounds them to the dtype).
SolverUpdateDesc desc(UpdateRule rule, Regularization reg, double grad_scale) {
  SolverUpdateDesc d;
  d.rule = rule;
  d.regularization = reg;
  d.decay = reg == Regularization::kNone ? 0.0 : 0.0078125;
  d.grad_scale = grad_scale;
  d.rate = 0.046875;
  d.momentum = rule == UpdateRule::kAdaDelta ? 0.9375 : 0.875;
  d.momentum2 = 0.9990234375;
  d.rms_decay = 0.984375;
  d.delta = 1.0 / (1 << 20);
  return d;
}

template <typename T>
void check_rule(UpdateRule rule, Regularization reg, double grad_scale) {
  SCOPED_TRACE("rule " + std::to_string(int(rule)) + " reg " + std::to_string(int(reg)) +
               " scale " + std::to_string(grad_scale) + (sizeof(T) == 8 ? " f64" : " f32"));
  const size_t n = 1000;
  SolverUpdateDesc d = desc(rule, reg, grad_scale);
  d.dtype = sizeof(T) == 8 ? DataType::kFloat64 : DataType::kFloat32;
  d.count = int64_t(n);
  std::vector<T> w = random_vector<T>(n, 1), h(n, T(0)), h2(n, T(0));
  State ref{std::vector<double>(w.begin(), w.end()),
            {},
            std::vector<double>(n, 0.0),
            std::vector<double>(n, 0.0)};
  Handle cpu(Device::kCPU);
  for (int step = 0; step < 3; ++step) {
    std::vector<T> g = random_vector<T>(n, 10 + step);
    ref.g.assign(g.begin(), g.end());
    solver_update(cpu, d, w.data(), g.data(), h.data(), h2.data());
    ref_step(d, ref);
    const test::Tolerance tol =
        sizeof(T) == 8 ? test::Tolerance{1e-12, 1e-10} : test::Tolerance{1e-6, 2e-5};
    ASSERT_TRUE(all_close(w, ref.w, tol)) << "weights, step " << step;
    ASSERT_TRUE(all_close(g, ref.g, tol)) << "step value, step " << step;
    ASSERT_TRUE(all_close(h, ref.h, tol)) << "history, step " << step;
  }
}

TEST(SolverUpdate, EveryRuleMatchesItsFormula) {
  for (UpdateRule rule : {UpdateRule::kSgd, UpdateRule::kNesterov, UpdateRule::kAdaGrad,
                          UpdateRule::kRmsProp, UpdateRule::kAdaDelta, UpdateRule::kAdam})
    for (Regularization reg : {Regularization::kNone, Regularization::kL2, Regularization::kL1})
      for (double grad_scale : {1.0, 0.25}) {
        check_rule<float>(rule, reg, grad_scale);
        check_rule<double>(rule, reg, grad_scale);
      }
}

TEST(SolverUpdate, RejectsBadDescriptors) {
  Handle cpu(Device::kCPU);
  std::vector<float> v(4, 1.0f);
  SolverUpdateDesc d = desc(UpdateRule::kAdam, Regularization::kNone, 1.0);
  d.count = 4;
  EXPECT_THROW(solver_update(cpu, d, v.data(), v.data(), v.data(), nullptr), PrimError);
  d.rule = UpdateRule::kSgd;
  d.rate = std::nan("");
  EXPECT_THROW(solver_update(cpu, d, v.data(), v.data(), v.data(), nullptr), PrimError);
  // A list mixes neither rules nor dtypes, and checks every parameter before touching any.
  std::vector<float> w(4, 1.0f), g(4, 0.5f), h(4, 0.0f), w2(4, 1.0f);
  SolverUpdateDesc sgd = desc(UpdateRule::kSgd, Regularization::kNone, 1.0);
  sgd.count = 4;
  SolverUpdateDesc nesterov = sgd;
  nesterov.rule = UpdateRule::kNesterov;
  std::vector<SolverUpdateParam> list = {{sgd, w.data(), g.data(), h.data(), nullptr},
                                         {nesterov, w2.data(), g.data(), h.data(), nullptr}};
  EXPECT_THROW(solver_update(cpu, list.data(), list.size()), PrimError);
  list[1].desc = sgd;
  list[1].desc.dtype = DataType::kFloat64;
  EXPECT_THROW(solver_update(cpu, list.data(), list.size()), PrimError);
  list[1].desc = sgd;
  list[1].hist = nullptr;
  EXPECT_THROW(solver_update(cpu, list.data(), list.size()), PrimError);
  EXPECT_EQ(w, std::vector<float>(4, 1.0f));
}

// The list form equals one call per parameter, bit for bit.
TEST(SolverUpdate, ListEqualsOneCallPerParameter) {
  Handle cpu(Device::kCPU);
  std::vector<std::vector<float>> w1, g1, h1, w2, g2, h2;
  std::vector<SolverUpdateParam> list;
  for (int i = 0; i < 5; ++i) {
    const size_t n = size_t(3 + 40 * i);
    for (auto* v : {&w1, &w2}) v->push_back(random_vector<float>(n, 1 + i));
    for (auto* v : {&g1, &g2}) v->push_back(random_vector<float>(n, 10 + i));
    for (auto* v : {&h1, &h2}) v->push_back(random_vector<float>(n, 20 + i));
    SolverUpdateDesc d = desc(UpdateRule::kNesterov, Regularization(i % 3), 0.5);
    d.count = int64_t(n);
    d.rate = 0.01 * (i + 1);
    solver_update(cpu, d, w1[i].data(), g1[i].data(), h1[i].data(), nullptr);
    list.push_back({d, w2[i].data(), g2[i].data(), h2[i].data(), nullptr});
  }
  solver_update(cpu, list.data(), list.size());
  EXPECT_EQ(w1, w2);
  EXPECT_EQ(g1, g2);
  EXPECT_EQ(h1, h2);
}

}  // namespace
}  // namespace crema::prim
