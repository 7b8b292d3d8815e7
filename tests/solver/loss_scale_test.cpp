// Loss scaling (NVIDIA Caffe's global_grad_scale and global_grad_scale_adaptive): a static
// power-of-two scale changes no bit of training (every gradient is scaled and unscaled
// exactly); the adaptive scaler skips the steps whose gradients overflowed, halves the scale
// until they fit, and then trains; a scale that cannot be right is an error.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/proto_io.h"
#include "solver_test_util.h"

namespace crema {
namespace {

struct TrainRun {
  std::vector<float> losses;
  std::vector<std::vector<float>> initial, after_first, weights;  // learnable parameters
  double final_scale = 0;
};

std::vector<std::vector<float>> params_of(Solver<float>& solver) {
  std::vector<std::vector<float>> out;
  for (const Tensor<float>* t : solver.net().learnable_params()) out.push_back(t->data_vector());
  return out;
}

// The tiny net (solver_test_util.h) with net_fields merged in, its loss weighted loss_weight,
// its data drawn uniformly from [-range, range], trained at base_lr.
TrainRun train(const std::string& net_fields, int steps, float loss_weight = 1, float range = 1,
               double base_lr = 0.1) {
  SolverParameter p = test::tiny_solver(
      16, "momentum: 0.9 weight_decay: 0.001 lr_policy: 'fixed' display: 0", 5, true);
  p.set_base_lr(float(base_lr));
  NetParameter with_fields;
  read_text_proto_string(net_fields, "fields", &with_fields);
  p.mutable_net_param()->MergeFrom(with_fields);
  for (LayerParameter& l : *p.mutable_net_param()->mutable_layer()) {
    if (l.name() == "loss") l.add_loss_weight(loss_weight);
    if (l.name() == "data") {
      l.mutable_dummy_data_param()->mutable_data_filler(0)->set_min(-range);
      l.mutable_dummy_data_param()->mutable_data_filler(0)->set_max(range);
    }
  }
  prim::Handle h;
  auto solver = create_solver<float>(p, Device::kCPU, h, "loss_scale_test");
  TrainRun run;
  run.initial = params_of(*solver);
  for (int i = 0; i < steps; ++i) {
    solver->step(1);
    run.losses.push_back(solver->last_loss());
    if (i == 0) run.after_first = params_of(*solver);
  }
  run.weights = params_of(*solver);
  run.final_scale = solver->net().loss_scale();
  return run;
}

TEST(LossScale, StaticPowerOfTwoChangesNothing) {
  const TrainRun plain = train("", 20);
  const TrainRun scaled = train("global_grad_scale: 1024", 20);
  EXPECT_EQ(scaled.losses, plain.losses);  // forward reports the unscaled loss
  EXPECT_EQ(scaled.weights, plain.weights);
  EXPECT_NE(scaled.weights, scaled.initial);
  EXPECT_EQ(scaled.final_scale, 1024);
  ASSERT_LT(plain.losses.back(), plain.losses.front()) << "the net does not learn";
}

// Inputs of magnitude up to 1e20 make the weight gradients (dy x^T, dy of magnitude up to the
// scale over 16 samples) overflow float at a loss scale of 2^64: the first steps are skipped
// (the weights stay as the fillers made them) and the scale halves each time until the
// gradients fit, somewhere below 3.4e38 / 1e20 = 2^61; from there the updates apply (a tiny
// learning rate keeps them finite on such inputs).
TEST(LossScale, AdaptiveSkipsOverflowedStepsAndLowersTheScale) {
  const TrainRun run = train(
      "global_grad_scale: 18446744073709551616 "
      "global_grad_scale_adaptive: true",
      30, 1, 1e20f, 1e-22);
  EXPECT_EQ(run.after_first, run.initial) << "the first step was not skipped";
  EXPECT_LE(run.final_scale, 0x1p62);
  EXPECT_GE(run.final_scale, 1);
  EXPECT_NE(run.weights, run.initial) << "no update applied after the scale settled";
  for (const auto& w : run.weights)
    for (float v : w) ASSERT_TRUE(std::isfinite(v));
}

// The scaled loss weight must itself be a float.
TEST(LossScale, ScaleOverflowingTheLossWeightIsAnError) {
  try {
    train("global_grad_scale: 1.7014118e+38", 1, 4);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("loss weight 4 times loss scale"), std::string::npos)
        << e.what();
  }
}

TEST(LossScale, AdaptiveStartsAt65536AndStaysWhereGradientsFit) {
  const TrainRun plain = train("", 10);
  const TrainRun run = train("global_grad_scale_adaptive: true", 10);
  EXPECT_EQ(run.final_scale, 65536);
  EXPECT_EQ(run.weights, plain.weights);  // no step skipped, and 2^16 scales exactly
}

// The scale in use is part of the .solverstate: a resumed run goes on at the scale the
// interrupted one had reached, and a state with a scale that cannot be is refused before the
// solver changes.
TEST(LossScale, SnapshotKeepsTheScale) {
  const std::string dir = test::fresh_dir("loss_scale_snapshot");
  SolverParameter p = test::tiny_solver(
      16, "base_lr: 1e-22 lr_policy: 'fixed' display: 0 snapshot_prefix: '" + dir + "/s'", 5, true);
  NetParameter fields;
  read_text_proto_string(
      "global_grad_scale: 18446744073709551616 "
      "global_grad_scale_adaptive: true",
      "fields", &fields);
  p.mutable_net_param()->MergeFrom(fields);
  for (LayerParameter& l : *p.mutable_net_param()->mutable_layer())
    if (l.name() == "data") {
      l.mutable_dummy_data_param()->mutable_data_filler(0)->set_min(-1e20f);
      l.mutable_dummy_data_param()->mutable_data_filler(0)->set_max(1e20f);
    }
  prim::Handle h;
  auto first = create_solver<float>(p, Device::kCPU, h, "first");
  first->step(10);
  const double reached = first->net().loss_scale();
  ASSERT_LT(reached, 0x1p64) << "no overflow lowered the scale";
  const std::string state = first->snapshot();

  auto resumed = create_solver<float>(p, Device::kCPU, h, "resumed");
  EXPECT_EQ(resumed->net().loss_scale(), 0x1p64);
  resumed->restore(state);
  EXPECT_EQ(resumed->net().loss_scale(), reached);

  SolverState bad;
  read_binary_proto(state, &bad);
  bad.set_loss_scale(-4);
  write_binary_proto_atomic(bad, dir + "/bad.solverstate");
  auto other = create_solver<float>(p, Device::kCPU, h, "other");
  EXPECT_THROW(other->restore(dir + "/bad.solverstate"), Error);
  EXPECT_EQ(other->net().loss_scale(), 0x1p64);
  EXPECT_EQ(other->iter(), 0);
}

// An NVIDIA Caffe FP16 net header (half types and math, a static loss scale of 32) trains: on the
// CPU the math is fp32 and storage stays fp32, so it trains exactly as the plain net, the scale
// being a power of two.
TEST(LossScale, NvidiaCaffeFp16HeaderTrains) {
  const TrainRun plain = train("", 20);
  const TrainRun fp16 = train(
      "default_forward_type: FLOAT16 default_backward_type: FLOAT16 "
      "default_forward_math: FLOAT16 default_backward_math: FLOAT16 global_grad_scale: 32",
      20);
  EXPECT_EQ(fp16.losses, plain.losses);
  EXPECT_EQ(fp16.weights, plain.weights);
  EXPECT_LT(fp16.losses.back(), fp16.losses.front());
}

TEST(LossScale, NonPositiveScaleIsAnError) {
  try {
    train("global_grad_scale: 0", 1);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("global_grad_scale must be positive, got 0"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace crema
