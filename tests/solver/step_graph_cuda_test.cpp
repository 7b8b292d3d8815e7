// Training steps replayed from a CUDA graph (StepGraph) against the same steps launched kernel by
// kernel: the same losses and the same weights to the bit (every kernel is deterministic), new
// data and a new learning rate every step, a new input shape recorded again, a bad label still
// stopping the run with the layer's name, and a net that cannot be recorded trained eagerly.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "core/proto_io.h"
#include "cuda_test_util.h"
#include "data/data_test_util.h"
#include "solver/solver.h"

namespace crema {
namespace {

// Input -> IP(16) -> ReLU -> IP(4) -> SoftmaxWithLoss, SGD with momentum and an "inv" rate
// (it changes every step), strict fp32; extra_layers go before the loss.
SolverParameter graph_solver(const std::string& extra_layers = "") {
  const std::string net = R"(
    name: "graphed" default_forward_math: FLOAT default_backward_math: FLOAT
    layer { name: "input" type: "Input" top: "data" top: "label"
      input_param { shape { dim: 8 dim: 2 dim: 5 dim: 5 } shape { dim: 8 } } }
    layer { name: "ip1" type: "InnerProduct" bottom: "data" top: "ip1"
      inner_product_param { num_output: 16 weight_filler { type: "gaussian" std: 0.3 }
        bias_filler { type: "constant" value: 0.1 } } }
    layer { name: "relu" type: "ReLU" bottom: "ip1" top: "ip1" }
    layer { name: "ip2" type: "InnerProduct" bottom: "ip1" top: "ip2"
      inner_product_param { num_output: 4 weight_filler { type: "gaussian" std: 0.3 } } }
    )" + extra_layers + R"(
    layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip2" bottom: "label" top: "loss" })";
  SolverParameter p;
  read_text_proto_string("net_param {" + net +
                             "}\n type: \"SGD\" base_lr: 0.1 momentum: 0.9 weight_decay: 0.001\n"
                             "lr_policy: \"inv\" gamma: 0.1 power: 0.75 max_iter: 1000\n"
                             "random_seed: 5 display: 4 average_loss: 3\n",
                         "graph_solver", &p);
  return p;
}

// New data each step (seeded by step); labels in [0, 4) unless bad_label is set.
void feed(Net<float>& net, int step, float bad_label = -1) {
  Tensor<float>& data = *net.blob_by_name("data");
  Tensor<float>& label = *net.blob_by_name("label");
  std::mt19937 gen{uint32_t(step)};
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> x(size_t(data.count())), l(size_t(label.count()));
  for (float& v : x) v = dist(gen);
  for (size_t i = 0; i < l.size(); ++i) l[i] = float((i + size_t(step)) % 4);
  if (bad_label >= 0) l.back() = bad_label;
  data.set_data(x);
  label.set_data(l);
}

struct Trained {
  std::vector<float> losses;  // last_loss() after each step() call
  std::vector<std::vector<float>> weights;
  float smoothed = 0;
  int recordings = 0;  // -1: no step graph
  bool replayed = false;
};

// steps calls of step(per_call), new data before each; the input batch becomes 4 from
// call shrink_at on.
Trained train(const SolverParameter& p, bool graph, int calls, int per_call = 1,
              int shrink_at = -1) {
  prim::Handle h(Device::kCUDA);
  auto solver = create_solver<float>(p, Device::kCUDA, h, "step_graph_cuda_test");
  solver->set_cuda_graph(graph);
  Trained t;
  for (int i = 0; i < calls; ++i) {
    if (i == shrink_at) {
      solver->net().blob_by_name("data")->reshape({4, 2, 5, 5});
      solver->net().blob_by_name("label")->reshape({4});
    }
    feed(solver->net(), i);
    solver->step(per_call);
    t.losses.push_back(solver->last_loss());
  }
  for (const Tensor<float>* w : solver->net().learnable_params())
    t.weights.push_back(w->data_vector());
  t.smoothed = solver->smoothed_loss();
  t.recordings = solver->step_graph() ? solver->step_graph()->recordings() : -1;
  t.replayed = solver->step_graph() && solver->step_graph()->active();
  return t;
}

void expect_same_training(const Trained& replayed, const Trained& launched) {
  EXPECT_EQ(replayed.losses, launched.losses);
  EXPECT_EQ(replayed.smoothed, launched.smoothed);
  ASSERT_EQ(replayed.weights.size(), launched.weights.size());
  for (size_t i = 0; i < replayed.weights.size(); ++i)
    EXPECT_EQ(replayed.weights[i], launched.weights[i]) << "parameter " << i;
}

TEST(StepGraphCuda, ReplayedStepsTrainTheWeightsOfLaunchedOnes) {
  CREMA_SKIP_WITHOUT_GPU();
  const Trained replayed = train(graph_solver(), true, 10);
  EXPECT_TRUE(replayed.replayed);
  EXPECT_EQ(replayed.recordings, 1);
  const Trained launched = train(graph_solver(), false, 10);
  EXPECT_EQ(launched.recordings, -1);
  expect_same_training(replayed, launched);
}

TEST(StepGraphCuda, LossesOfManyStepsAreReadInOrder) {
  CREMA_SKIP_WITHOUT_GPU();
  // One call of 13 steps on the same data: the losses wait on the GPU until the displays.
  const Trained replayed = train(graph_solver(), true, 1, 13);
  EXPECT_TRUE(replayed.replayed);
  expect_same_training(replayed, train(graph_solver(), false, 1, 13));
}

TEST(StepGraphCuda, ANewInputShapeIsRecordedAgain) {
  CREMA_SKIP_WITHOUT_GPU();
  const Trained replayed = train(graph_solver(), true, 8, 1, 4);
  EXPECT_EQ(replayed.recordings, 2);
  expect_same_training(replayed, train(graph_solver(), false, 8, 1, 4));
}

TEST(StepGraphCuda, ABadLabelInAReplayedStepNamesItsLayer) {
  CREMA_SKIP_WITHOUT_GPU();
  prim::Handle h(Device::kCUDA);
  auto solver = create_solver<float>(graph_solver(), Device::kCUDA, h, "step_graph_cuda_test");
  for (int i = 0; i < 3; ++i) {
    feed(solver->net(), i);
    solver->step(1);
  }
  ASSERT_TRUE(solver->step_graph() && solver->step_graph()->recordings() == 1);
  feed(solver->net(), 3, 7);
  const std::string error = test::error_of([&] { solver->step(1); });
  EXPECT_NE(error.find("layer loss (SoftmaxWithLoss)"), std::string::npos) << error;
  EXPECT_NE(error.find("label 7"), std::string::npos) << error;
}

TEST(StepGraphCuda, ANetThatWaitsForTheGpuTrainsLayerByLayer) {
  CREMA_SKIP_WITHOUT_GPU();
  // Accuracy reads its labels' check on the host: no step graph at all.
  const std::string accuracy =
      "layer { name: \"acc\" type: \"Accuracy\" bottom: \"ip2\" bottom: \"label\" top: \"acc\" }";
  const Trained launched = train(graph_solver(accuracy), true, 6);
  EXPECT_EQ(launched.recordings, -1);
  expect_same_training(launched, train(graph_solver(accuracy), false, 6));
}

}  // namespace
}  // namespace crema
