// The reference nets' deploy definitions with random weights: the exported graph, run by the
// reference evaluator, must give crema's outputs; and a wrong conversion must be caught.
#include <functional>

#include "export_test_util.h"
#include "test_util.h"

namespace crema::test {
namespace {

NetParameter model(const std::string& path, int batch) {
  NetParameter param = load_net_param_text(std::string(CREMA_SOURCE_DIR) + "/models/" + path);
  set_input_batch(&param, batch);
  return param;
}

// Relative to the largest output: float32 against double through up to 50 layers.
constexpr double kNetTolerance = 1e-4;

TEST(OnnxNets, LeNet) {
  EXPECT_EQ(export_and_compare(model("lenet_fashion/lenet_deploy.prototxt", 4), {}, kNetTolerance),
            "");
}

TEST(OnnxNets, LeNetSymbolicBatch) {
  OnnxExportOptions options;
  options.dynamic_batch = true;
  EXPECT_EQ(
      export_and_compare(model("lenet_fashion/lenet_deploy.prototxt", 3), options, kNetTolerance),
      "");
}

// A model exported with a symbolic batch runs at another batch size than the net it came from.
TEST(OnnxNets, SymbolicBatchRunsAtAnotherBatchSize) {
  NetParameter param = model("cifar10_quick/deploy.prototxt", 2);
  Net<float> net(param, TEST, Device::kCPU);
  randomize_params(net, 3);
  OnnxExportOptions options;
  options.dynamic_batch = true;
  const onnx::ModelProto exported = net_to_onnx(net, options);
  set_input_batch(&param, 5);
  Net<float> bigger(param, TEST, Device::kCPU);
  NetParameter weights;
  net.to_proto(&weights);
  bigger.copy_trained_layers_from(weights);
  const RefValues inputs = fill_inputs(bigger, 5);
  EXPECT_EQ(compare_outputs(bigger, exported, inputs, kNetTolerance), "");
}

TEST(OnnxNets, Cifar10Quick) {
  EXPECT_EQ(export_and_compare(model("cifar10_quick/deploy.prototxt", 2), {}, kNetTolerance), "");
}

TEST(OnnxNets, CaffeNet) {
  EXPECT_EQ(export_and_compare(model("caffenet/deploy.prototxt", 1), {}, kNetTolerance), "");
}

TEST(OnnxNets, GoogLeNet) {
  EXPECT_EQ(export_and_compare(model("googlenet/deploy.prototxt", 1), {}, kNetTolerance), "");
}

TEST(OnnxNets, ResNet50) {
  if (kAddressSanitizer) GTEST_SKIP() << "minutes of double-precision loops under the sanitizers";
  EXPECT_EQ(export_and_compare(model("resnet50/deploy.prototxt", 1), {}, kNetTolerance), "");
}

// The other reference nets: the export runs onnx's checker and shape inference, and every
// value's inferred shape must be crema's (net_to_onnx throws otherwise); one node per layer
// that computes.
void expect_checked_export(const std::string& path, int conv_layers) {
  Net<float> net(model(path, 1), TEST, Device::kCPU);
  const onnx::ModelProto exported = net_to_onnx(net, {});
  int convs = 0;
  for (const auto& node : exported.graph().node()) convs += node.op_type() == "Conv";
  EXPECT_EQ(convs, conv_layers) << path;
  ASSERT_EQ(exported.graph().output_size(), 1);
  EXPECT_EQ(exported.graph().output(0).name(), "prob");
}

TEST(OnnxNets, AlexNetPassesTheChecks) { expect_checked_export("alexnet/deploy.prototxt", 5); }

TEST(OnnxNets, Vgg16PassesTheChecks) {
  if (kAddressSanitizer) GTEST_SKIP() << "138 million weights copied twice under the sanitizers";
  expect_checked_export("vgg16/deploy.prototxt", 13);
}

// The numerical comparison is what proves the conversions: each of these changes one detail of
// an exported graph to what a careless converter would write, and the comparison must fail.
const onnx::NodeProto* find_node(onnx::ModelProto* m, const std::string& op) {
  for (const auto& n : m->graph().node())
    if (n.op_type() == op) return &n;
  return nullptr;
}

void set_int_attr(onnx::ModelProto* m, const std::string& op, const std::string& attr,
                  const std::vector<int64_t>& values) {
  for (auto& n : *m->mutable_graph()->mutable_node()) {
    if (n.op_type() != op) continue;
    for (auto& a : *n.mutable_attribute()) {
      if (a.name() != attr) continue;
      if (a.type() == onnx::AttributeProto::INT) {
        a.set_i(values[0]);
      } else {
        a.clear_ints();
        for (int64_t v : values) a.add_ints(v);
      }
    }
  }
}

std::string tampered(const char* layer, const char* input,
                     const std::function<void(onnx::ModelProto*)>& change) {
  const NetParameter param = parse_net(
      std::string("layer { name: 'data' type: 'Input' top: 'data' input_param { shape { ") + input +
      " } } } " + layer);
  Net<float> net(param, TEST, Device::kCPU);
  randomize_params(net, 7);
  const RefValues inputs = fill_inputs(net, 11);
  onnx::ModelProto exported = net_to_onnx(net, {});
  EXPECT_EQ(compare_outputs(net, exported, inputs, 1e-5), "") << "the export itself must match";
  change(&exported);
  return compare_outputs(net, exported, inputs, 1e-5);
}

TEST(OnnxTampered, PoolingWithoutTheCeilPadDiffers) {
  const char* pool =
      "layer { name: 'p' type: 'Pooling' bottom: 'data' top: 'y' pooling_param { "
      "pool: MAX kernel_size: 3 stride: 2 pad: 1 } }";
  const std::string diff = tampered(pool, "dim: 1 dim: 2 dim: 8 dim: 8", [](onnx::ModelProto* m) {
    ASSERT_NE(find_node(m, "MaxPool"), nullptr);
    set_int_attr(m, "MaxPool", "pads", {1, 1, 1, 1});  // symmetric: floor rounding
  });
  EXPECT_NE(diff.find("shape"), std::string::npos) << diff;
}

TEST(OnnxTampered, AveragePoolCountingTheCeilPadDiffers) {
  const char* pool =
      "layer { name: 'p' type: 'Pooling' bottom: 'data' top: 'y' pooling_param { "
      "pool: AVE kernel_size: 3 stride: 2 } }";
  const std::string diff = tampered(pool, "dim: 1 dim: 2 dim: 8 dim: 8", [](onnx::ModelProto* m) {
    ASSERT_NE(find_node(m, "AveragePool"), nullptr);
    set_int_attr(m, "AveragePool", "count_include_pad", {1});
  });
  EXPECT_NE(diff.find("max error"), std::string::npos) << diff;
}

TEST(OnnxTampered, AveragePoolIgnoringTheSymmetricPadDiffers) {
  const char* pool =
      "layer { name: 'p' type: 'Pooling' bottom: 'data' top: 'y' pooling_param { "
      "pool: AVE kernel_size: 3 stride: 1 pad: 1 } }";
  const std::string diff = tampered(pool, "dim: 1 dim: 2 dim: 6 dim: 6", [](onnx::ModelProto* m) {
    set_int_attr(m, "AveragePool", "count_include_pad", {0});
  });
  EXPECT_NE(diff.find("max error"), std::string::npos) << diff;
}

TEST(OnnxTampered, BatchNormWithoutTheScaleFactorDiffers) {
  const char* bn = "layer { name: 'bn' type: 'BatchNorm' bottom: 'data' top: 'y' }";
  const std::string diff = tampered(bn, "dim: 2 dim: 3 dim: 4 dim: 4", [](onnx::ModelProto* m) {
    // The stored sums used as the mean, undivided by their weight (2 in these tests).
    for (auto& t : *m->mutable_graph()->mutable_initializer()) {
      if (t.name() != "bn/mean") continue;
      std::string raw = t.raw_data();
      auto* f = reinterpret_cast<float*>(raw.data());
      for (size_t i = 0; i < raw.size() / 4; ++i) f[i] *= 2;
      t.set_raw_data(raw);
    }
  });
  EXPECT_NE(diff.find("max error"), std::string::npos) << diff;
}

}  // namespace
}  // namespace crema::test
