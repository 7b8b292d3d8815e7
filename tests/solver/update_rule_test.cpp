// Tests of the update rules: every solver type (SGD with L2 and L1 decay, Nesterov, AdaGrad,
// RMSProp, AdaDelta, Adam) against a hand computation in double over 3 steps on a tiny
// InnerProduct + SoftmaxWithLoss net (weight lr_mult 1 / decay_mult 1, bias lr_mult 2 /
// decay_mult 0); iter_size accumulation; gradient clipping; a tiny net overfitting a batch.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/rng.h"
#include "solver/solver.h"
#include "solver_test_util.h"
#include "test_util.h"

namespace crema {
namespace {

struct RuleCase {
  const char* type;
  std::string extra;  // solver fields beyond base_lr / lr_policy
};

// The update value of one element (what the solver subtracts from w), updating its history.
double reference_update(const SolverParameter& p, int iter, double r, double g, double* h1,
                        double* h2) {
  const std::string type = p.type();
  const double m = p.momentum(), delta = p.delta();
  if (type == "SGD") {
    *h1 = m * *h1 + r * g;
    return *h1;
  }
  if (type == "Nesterov") {
    const double old = *h1;
    *h1 = m * *h1 + r * g;
    return (1 + m) * *h1 - m * old;
  }
  if (type == "AdaGrad") {
    *h1 += g * g;
    return r * g / (std::sqrt(*h1) + delta);
  }
  if (type == "RMSProp") {
    const double d = p.rms_decay();
    *h1 = d * *h1 + (1 - d) * g * g;
    return r * g / (std::sqrt(*h1) + delta);
  }
  if (type == "AdaDelta") {
    *h1 = m * *h1 + (1 - m) * g * g;
    const double u = g * std::sqrt((*h2 + delta) / (*h1 + delta));
    *h2 = m * *h2 + (1 - m) * u * u;
    return r * u;
  }
  // Adam
  const double b2 = p.momentum2(), t = iter + 1;
  *h1 = m * *h1 + (1 - m) * g;
  *h2 = b2 * *h2 + (1 - b2) * g * g;
  return r * std::sqrt(1 - std::pow(b2, t)) / (1 - std::pow(m, t)) * *h1 / (std::sqrt(*h2) + delta);
}

class UpdateRuleTest : public ::testing::TestWithParam<RuleCase> {};

TEST_P(UpdateRuleTest, MatchesHandComputationOverThreeSteps) {
  const RuleCase& c = GetParam();
  const int batch = 4;
  const SolverParameter param = test::tiny_solver(
      batch, "lr_policy: \"fixed\" type: \"" + std::string(c.type) + "\" " + c.extra);
  Handle h;
  auto solver = create_solver<double>(param, Device::kCPU, h);
  EXPECT_STREQ(solver->type(), c.type);
  Net<double>& net = solver->net();
  test::set_batch(net, batch);
  ASSERT_EQ(net.learnable_params().size(), 2u);
  std::vector<double> w = net.learnable_params()[0]->data_vector();
  std::vector<double> b = net.learnable_params()[1]->data_vector();
  const auto x = test::batch_data(batch), labels = test::batch_labels(batch);
  std::vector<double> hw1(w.size()), hw2(w.size()), hb1(b.size()), hb2(b.size());
  const double lr = param.base_lr(), decay = param.weight_decay();
  const bool l1 = param.regularization_type() == "L1";
  for (int it = 0; it < 3; ++it) {
    std::vector<double> dw, db;
    const double loss = test::reference_gradient(w, b, x, labels, &dw, &db);
    solver->step(1);
    EXPECT_NEAR(solver->last_loss(), loss, 1e-12) << "iteration " << it;
    for (size_t i = 0; i < w.size(); ++i) {
      const double reg = l1 ? (w[i] > 0) - (w[i] < 0) : w[i];  // decay_mult 1
      w[i] -= reference_update(param, it, lr * 1, dw[i] + decay * reg, &hw1[i], &hw2[i]);
    }
    for (size_t i = 0; i < b.size(); ++i)  // lr_mult 2, decay_mult 0
      b[i] -= reference_update(param, it, lr * 2, db[i], &hb1[i], &hb2[i]);
    const Tolerance tol{1e-12, 1e-10};
    ASSERT_TRUE(all_close(net.learnable_params()[0]->data_vector(), w, tol)) << "step " << it;
    ASSERT_TRUE(all_close(net.learnable_params()[1]->data_vector(), b, tol)) << "step " << it;
  }
  EXPECT_EQ(solver->iter(), 3);
  // The history the solver would snapshot is the reference's: set-major, weights then bias.
  const auto& hist = solver->history();
  const bool two_sets = std::string(c.type) == "AdaDelta" || std::string(c.type) == "Adam";
  ASSERT_EQ(hist.size(), two_sets ? 4u : 2u);
  const Tolerance tol{1e-12, 1e-10, true};
  if (std::string(c.type) != "Nesterov") {  // Nesterov's history is the plain momentum too
    EXPECT_TRUE(all_close(hist[0]->data_vector(), hw1, tol));
    EXPECT_TRUE(all_close(hist[1]->data_vector(), hb1, tol));
  }
  if (two_sets) {
    EXPECT_TRUE(all_close(hist[2]->data_vector(), hw2, tol));
    EXPECT_TRUE(all_close(hist[3]->data_vector(), hb2, tol));
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllTypes, UpdateRuleTest,
    ::testing::Values(RuleCase{"SGD", "base_lr: 0.5 momentum: 0.9 weight_decay: 0.05"},
                      RuleCase{"SGD",
                               "base_lr: 0.5 momentum: 0.9 weight_decay: 0.05 "
                               "regularization_type: \"L1\""},
                      RuleCase{"Nesterov", "base_lr: 0.5 momentum: 0.9 weight_decay: 0.05"},
                      RuleCase{"AdaGrad", "base_lr: 0.5 weight_decay: 0.05 delta: 1e-6"},
                      RuleCase{"RMSProp", "base_lr: 0.05 rms_decay: 0.9 weight_decay: 0.05"},
                      RuleCase{"AdaDelta",
                               "base_lr: 1 momentum: 0.95 delta: 1e-6 weight_decay: 0.05"},
                      RuleCase{"Adam",
                               "base_lr: 0.01 momentum: 0.9 momentum2: 0.999 weight_decay: "
                               "0.05"}),
    [](const ::testing::TestParamInfo<RuleCase>& info) {
      return std::string(info.param.type) + std::to_string(info.index);
    });

// iter_size 2 on batches of 4 makes the same update as one batch of 8 holding both batches.
TEST(Solver, IterSizeEqualsLargerBatch) {
  const std::string extra = "base_lr: 0.5 lr_policy: \"fixed\" momentum: 0.9 weight_decay: 0.01 ";
  Handle h;
  auto small = create_solver<double>(
      test::tiny_solver(4, extra + "iter_size: 2", 0, /*dummy=*/true), Device::kCPU, h);
  auto large =
      create_solver<double>(test::tiny_solver(8, extra, 0, /*dummy=*/true), Device::kCPU, h);
  const auto& ps = small->net().learnable_params();
  const auto& pl = large->net().learnable_params();
  for (size_t i = 0; i < ps.size(); ++i) pl[i]->set_data(ps[i]->data_vector());
  const auto w0 = ps[0]->data_vector();
  // The DummyData draws the same stream of inputs: 4 + 4 rows per step, or 8 at once.
  seed_thread_rng(99);
  small->step(3);
  seed_thread_rng(99);
  large->step(3);
  EXPECT_NEAR(small->last_loss(), large->last_loss(), 1e-12);
  for (size_t i = 0; i < ps.size(); ++i)
    EXPECT_TRUE(all_close(ps[i]->data_vector(), pl[i]->data_vector(), {1e-12, 1e-10}))
        << "param " << i;
  // And the weights did move.
  EXPECT_GT(std::fabs(ps[0]->data_vector()[0] - w0[0]), 1e-4);
}

std::vector<double> flat_weights(Net<double>& net) {
  std::vector<double> all;
  for (auto* p : net.learnable_params())
    for (double v : p->data_vector()) all.push_back(v);
  return all;
}

TEST(Solver, ClipGradientsBoundsTheGlobalNorm) {
  const std::string extra = "base_lr: 1 lr_policy: \"fixed\" ";
  Handle h;
  auto plain = create_solver<double>(test::tiny_solver(4, extra), Device::kCPU, h);
  auto clipped =
      create_solver<double>(test::tiny_solver(4, extra + "clip_gradients: 0.01"), Device::kCPU, h);
  auto loose =
      create_solver<double>(test::tiny_solver(4, extra + "clip_gradients: 1000"), Device::kCPU, h);
  std::vector<double> w0;
  for (auto* s : {plain.get(), clipped.get(), loose.get()}) {
    test::set_batch(s->net(), 4);
    w0 = flat_weights(s->net());  // identical: same seed
    s->step(1);
  }
  // Update = lr_mult * g: the weights have lr_mult 1, the bias 2, so compare the raw step.
  const auto wp = flat_weights(plain->net()), wc = flat_weights(clipped->net()),
             wl = flat_weights(loose->net());
  const int n_weights = int(plain->net().learnable_params()[0]->count());
  double norm_plain = 0;
  std::vector<double> gp(w0.size()), gc(w0.size());
  for (size_t i = 0; i < w0.size(); ++i) {
    const double mult = int(i) < n_weights ? 1.0 : 2.0;
    gp[i] = (w0[i] - wp[i]) / mult;
    gc[i] = (w0[i] - wc[i]) / mult;
    norm_plain += gp[i] * gp[i];
  }
  norm_plain = std::sqrt(norm_plain);
  const double clip = double(0.01f);  // clip_gradients is a float field
  ASSERT_GT(norm_plain, clip);
  double norm_clipped = 0;
  for (size_t i = 0; i < w0.size(); ++i) {
    norm_clipped += gc[i] * gc[i];
    EXPECT_NEAR(gc[i], gp[i] * clip / norm_plain, 1e-12) << i;
  }
  EXPECT_NEAR(std::sqrt(norm_clipped), clip, 1e-12);
  // A bound above the norm changes nothing.
  EXPECT_EQ(wl, wp);
}

TEST(Solver, TinyNetOverfitsAFixedBatch) {
  const int batch = 6;
  Handle h;
  auto solver = create_solver<float>(
      test::tiny_solver(batch,
                        "base_lr: 0.1 lr_policy: \"fixed\" momentum: 0.9 max_iter: 300 "
                        "test_iter: 1 test_interval: 1000 test_initialization: false "
                        "snapshot_after_train: false display: 100",
                        /*hidden=*/16),
      Device::kCPU, h);
  test::set_batch(solver->net(), batch);
  ASSERT_EQ(solver->test_nets().size(), 1u);
  test::set_batch(*solver->test_nets()[0], batch);
  auto score = [&](const std::string& name) {
    for (const TestScore& t : solver->test_scores()[0])
      if (t.name == name) return t;
    ADD_FAILURE() << "no test output " << name;
    return TestScore{};
  };
  solver->test_all();
  const double initial_loss = score("loss").value;
  solver->solve();
  EXPECT_EQ(solver->iter(), 300);
  EXPECT_LT(solver->last_loss(), 0.02f);
  const auto& scores = solver->test_all();
  ASSERT_EQ(scores.size(), 1u);
  ASSERT_EQ(scores[0].size(), 2u);
  EXPECT_EQ(score("acc").value, 1.0);
  EXPECT_EQ(score("acc").loss_weight, 0.0);
  EXPECT_EQ(score("loss").loss_weight, 1.0);
  EXPECT_LT(score("loss").value, 0.02);
  EXPECT_GT(initial_loss, 0.5);
}

}  // namespace
}  // namespace crema
