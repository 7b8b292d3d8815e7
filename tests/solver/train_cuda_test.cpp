// Training on the GPU: a seeded solver over a small conv net (convolution, ReLU, LRN, max and
// average pooling, dropout, inner products, softmax loss, data from a DummyData filler) runs on
// the CPU and on the GPU; the loss sequences and final weights agree within float reordering,
// and a second GPU run repeats the first bit for bit (no float atomics anywhere).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "core/proto_io.h"
#include "cuda_test_util.h"
#include "solver/sgd_solvers.h"

namespace crema {
namespace {

// math: the net's default math ("" leaves it to the device: TF32 on the GPU).
SolverParameter conv_solver(const std::string& type, const std::string& math = "FLOAT") {
  const std::string precision =
      math.empty() ? "" : "default_forward_math: " + math + " default_backward_math: " + math;
  const std::string net = precision + R"(
    name: "small_conv"
    layer { name: "data" type: "DummyData" top: "data" top: "label"
      dummy_data_param { shape { dim: 8 dim: 3 dim: 12 dim: 12 } shape { dim: 8 }
        data_filler { type: "uniform" min: -1 max: 1 }
        data_filler { type: "constant" value: 2 } } }
    layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
      convolution_param { num_output: 8 kernel_size: 3 pad: 1
        weight_filler { type: "gaussian" std: 0.2 } bias_filler { type: "constant" value: 0.1 } } }
    layer { name: "relu1" type: "ReLU" bottom: "conv1" top: "conv1" }
    layer { name: "norm1" type: "LRN" bottom: "conv1" top: "norm1"
      lrn_param { local_size: 3 alpha: 0.001 beta: 0.75 } }
    layer { name: "pool1" type: "Pooling" bottom: "norm1" top: "pool1"
      pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
    layer { name: "conv2" type: "Convolution" bottom: "pool1" top: "conv2"
      convolution_param { num_output: 8 kernel_size: 3 group: 2
        weight_filler { type: "gaussian" std: 0.2 } bias_filler { type: "constant" value: 0.1 } } }
    layer { name: "pool2" type: "Pooling" bottom: "conv2" top: "pool2"
      pooling_param { pool: AVE kernel_size: 2 stride: 2 } }
    layer { name: "ip1" type: "InnerProduct" bottom: "pool2" top: "ip1"
      inner_product_param { num_output: 16 weight_filler { type: "xavier" } } }
    layer { name: "drop" type: "Dropout" bottom: "ip1" top: "ip1" dropout_param { dropout_ratio: 0.3 } }
    layer { name: "ip2" type: "InnerProduct" bottom: "ip1" top: "ip2"
      inner_product_param { num_output: 4 weight_filler { type: "xavier" } } }
    layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip2" bottom: "label" top: "loss" })";
  SolverParameter p;
  read_text_proto_string("net_param {" + net + "}\n type: \"" + type +
                             "\" base_lr: 0.01 momentum: 0.9 weight_decay: 0.0005\n"
                             "lr_policy: \"fixed\" max_iter: 1000 random_seed: 7 display: 0\n",
                         "conv_solver", &p);
  if (type == "Adam") p.set_momentum2(0.999);
  return p;
}

struct TrainRun {
  std::vector<float> losses;
  std::vector<std::vector<float>> weights;
};

TrainRun train(const std::string& type, Device device, int steps, const std::string& math) {
  prim::Handle h(device);
  auto solver = create_solver<float>(conv_solver(type, math), device, h, "conv_solver");
  TrainRun run;
  for (int i = 0; i < steps; ++i) {
    solver->step(1);
    run.losses.push_back(solver->last_loss());
  }
  for (const Tensor<float>* p : solver->net().learnable_params())
    run.weights.push_back(p->data_vector());
  return run;
}

TEST(TrainCuda, GpuFollowsCpuAndRepeatsItself) {
  CREMA_SKIP_WITHOUT_GPU();
  for (const std::string type : {"SGD", "Adam"}) {
    SCOPED_TRACE(type);
    const int steps = 30;
    const TrainRun cpu = train(type, Device::kCPU, steps, "FLOAT");
    const TrainRun gpu = train(type, Device::kCUDA, steps, "FLOAT");
    const TrainRun again = train(type, Device::kCUDA, steps, "FLOAT");
    ASSERT_LT(cpu.losses.back(), cpu.losses.front()) << "the net does not learn";
    for (int i = 0; i < steps; ++i)
      EXPECT_NEAR(gpu.losses[i], cpu.losses[i], 1e-4 * (1 + std::fabs(cpu.losses[i])))
          << "step " << i;
    ASSERT_EQ(gpu.weights.size(), cpu.weights.size());
    for (size_t j = 0; j < cpu.weights.size(); ++j) {
      EXPECT_TRUE(test::all_close(gpu.weights[j], cpu.weights[j], {1e-4, 1e-3, true}))
          << "parameter " << j;
      EXPECT_EQ(again.weights[j], gpu.weights[j]) << "parameter " << j << " not repeatable";
    }
    EXPECT_EQ(again.losses, gpu.losses);
  }
}

// The GPU's default math (TF32 convolutions and GEMMs) and BF16 math: the loss follows the
// strict CPU run within the formats' rounding (about 1e-3 and 1e-2 relative after 30 steps of
// this net) and repeats bit for bit.
TEST(TrainCuda, TensorCoreMathFollowsCpuAndRepeatsItself) {
  CREMA_SKIP_WITHOUT_GPU();
  const int steps = 30;
  const TrainRun cpu = train("SGD", Device::kCPU, steps, "FLOAT");
  const TrainRun strict = train("SGD", Device::kCUDA, steps, "FLOAT");
  for (const auto& [math, tol] : {std::pair<std::string, double>{"", 5e-3}, {"BFLOAT16", 3e-2}}) {
    SCOPED_TRACE(math.empty() ? "default" : math);
    const TrainRun gpu = train("SGD", Device::kCUDA, steps, math);
    const TrainRun again = train("SGD", Device::kCUDA, steps, math);
    for (int i = 0; i < steps; ++i)
      EXPECT_NEAR(gpu.losses[i], cpu.losses[i], tol * (1 + std::fabs(cpu.losses[i])))
          << "step " << i;
    EXPECT_EQ(again.losses, gpu.losses);
    EXPECT_NE(gpu.losses, strict.losses) << "the same as strict fp32: the math mode is not applied";
  }
}

// On the GPU the loss checks its labels without making the host wait: the error surfaces where
// the loss is read, still naming the loss layer and the label, and nothing is trained on it.
TEST(TrainCuda, BadLabelNamesTheLossLayer) {
  CREMA_SKIP_WITHOUT_GPU();
  for (Device device : {Device::kCPU, Device::kCUDA}) {
    SCOPED_TRACE(device == Device::kCPU ? "cpu" : "gpu");
    SolverParameter p = conv_solver("SGD");
    p.mutable_net_param()
        ->mutable_layer(0)
        ->mutable_dummy_data_param()
        ->mutable_data_filler(1)
        ->set_value(5);  // four classes
    prim::Handle h(device);
    auto solver = create_solver<float>(p, device, h, "conv_solver");
    const std::vector<float> before = solver->net().learnable_params()[0]->data_vector();
    try {
      solver->step(1);
      ADD_FAILURE() << "no error";
    } catch (const std::exception& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("layer loss (SoftmaxWithLoss)"), std::string::npos) << what;
      EXPECT_NE(what.find("label 5.000000 at position 0"), std::string::npos) << what;
    }
    EXPECT_EQ(solver->net().learnable_params()[0]->data_vector(), before);
    EXPECT_NO_THROW(h.synchronize()) << "the error was reported once";
  }
}

}  // namespace
}  // namespace crema
