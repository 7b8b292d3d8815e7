// `crema export` as a user runs it: the written file, read back, passes onnx's checker and gives
// crema's outputs; every mistake ends in one error line and exit status 1, and a failed export
// leaves an existing file as it was.
#include <onnx/checker.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "../tools/run_command.h"
#include "export_test_util.h"

namespace crema::test {
namespace {

const std::string kLeNet =
    std::string(CREMA_SOURCE_DIR) + "/models/lenet_fashion/lenet_deploy.prototxt";

CommandResult crema_export(const std::string& args) {
  return run_command(std::string(CREMA_BINARY_DIR) + "/crema export " + args);
}

std::string temp(const std::string& name) { return ::testing::TempDir() + "/onnx_cli_" + name; }

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// LeNet with random weights, saved as a .caffemodel; returns its path.
std::string lenet_weights() {
  static const std::string path = [] {
    Net<float> net(load_net_param_text(kLeNet), TEST, Device::kCPU);
    randomize_params(net, 5);
    NetParameter trained;
    net.to_proto(&trained);
    const std::string p = temp("lenet.caffemodel");
    write_binary_proto_atomic(trained, p);
    return p;
  }();
  return path;
}

TEST(OnnxCli, ExportsLeNetThatMatchesCrema) {
  const std::string out = temp("lenet.onnx");
  const auto r = crema_export("--model=" + kLeNet + " --weights=" + lenet_weights() +
                              " --onnx=" + out + " --batch=3");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("ONNX opset 17"), std::string::npos) << r.output;
  onnx::ModelProto model;
  ASSERT_TRUE(model.ParseFromString(read_file(out)));
  EXPECT_NO_THROW(onnx::checker::check_model(model));
  ASSERT_EQ(model.opset_import_size(), 1);
  EXPECT_EQ(model.opset_import(0).version(), 17);
  ASSERT_EQ(model.graph().input_size(), 1);
  EXPECT_EQ(model.graph().input(0).name(), "data");
  EXPECT_EQ(model.graph().input(0).type().tensor_type().shape().dim(0).dim_value(), 3);
  // The file's numbers are the weights': the same net loaded with them gives the same outputs.
  NetParameter param = load_net_param_text(kLeNet);
  set_input_batch(&param, 3);
  Net<float> net(param, TEST, Device::kCPU);
  net.copy_trained_layers_from(load_net_param_binary(lenet_weights()));
  const RefValues inputs = fill_inputs(net, 9);
  EXPECT_EQ(compare_outputs(net, model, inputs, 1e-4), "");
}

TEST(OnnxCli, DynamicBatchMakesTheBatchAxisSymbolic) {
  const std::string out = temp("lenet_dynamic.onnx");
  const auto r = crema_export("--model=" + kLeNet + " --weights=" + lenet_weights() +
                              " --onnx=" + out + " --dynamic_batch");
  ASSERT_EQ(r.status, 0) << r.output;
  onnx::ModelProto model;
  ASSERT_TRUE(model.ParseFromString(read_file(out)));
  EXPECT_EQ(model.graph().input(0).type().tensor_type().shape().dim(0).dim_param(), "N");
  EXPECT_EQ(model.graph().output(0).type().tensor_type().shape().dim(0).dim_param(), "N");
}

TEST(OnnxCli, MissingFlagsAreOneLineErrors) {
  auto r = crema_export("--model=" + kLeNet + " --weights=" + lenet_weights());
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.last_line, "crema: error: export needs --onnx=<net.onnx>");
  r = crema_export("--model=" + kLeNet + " --onnx=" + temp("x.onnx"));
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.last_line, "crema: error: export needs --weights=<net.caffemodel>");
}

TEST(OnnxCli, BadPathsAreOneLineErrors) {
  auto r = crema_export("--model=/nonexistent/deploy.prototxt --weights=" + lenet_weights() +
                        " --onnx=" + temp("x.onnx"));
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.last_line.rfind("crema: error: ", 0), 0u) << r.output;
  EXPECT_NE(r.last_line.find("/nonexistent/deploy.prototxt"), std::string::npos) << r.output;
  r = crema_export("--model=" + kLeNet +
                   " --weights=/nonexistent/w.caffemodel --onnx=" + temp("x.onnx"));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.last_line.find("/nonexistent/w.caffemodel"), std::string::npos) << r.output;
  r = crema_export("--model=" + kLeNet + " --weights=" + lenet_weights() +
                   " --onnx=/nonexistent/dir/net.onnx");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.last_line.find("/nonexistent/dir/net.onnx"), std::string::npos) << r.output;
}

TEST(OnnxCli, WeightsMissingALayerAreAnError) {
  // Weights of LeNet for a net with one more layer with parameters.
  std::string text = read_file(kLeNet);
  text +=
      "\nlayer { name: 'extra' type: 'InnerProduct' bottom: 'prob' top: 'extra' "
      "inner_product_param { num_output: 2 } }\n";
  const std::string model = temp("lenet_extra.prototxt");
  std::ofstream(model) << text;
  const auto r = crema_export("--model=" + model + " --weights=" + lenet_weights() +
                              " --onnx=" + temp("x.onnx"));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.last_line.find("has no weights for layer(s) extra"), std::string::npos) << r.output;
}

TEST(OnnxCli, UnsupportedLayerNamesItAndLeavesTheOldFile) {
  std::string text = read_file(kLeNet);
  text +=
      "\nlayer { name: 'pyramid' type: 'SPP' bottom: 'pool2' top: 'spp' spp_param { "
      "pyramid_height: 2 } }\n";
  const std::string model = temp("lenet_mvn.prototxt");
  std::ofstream(model) << text;
  const std::string out = temp("kept.onnx");
  std::ofstream(out) << "previous";
  const auto r =
      crema_export("--model=" + model + " --weights=" + lenet_weights() + " --onnx=" + out);
  EXPECT_EQ(r.status, 1);
  // The error points into the prototxt: file:line of the layer.
  EXPECT_EQ(r.last_line.rfind("crema: error: " + model + ":", 0), 0u) << r.output;
  EXPECT_NE(r.last_line.find(": layer pyramid (SPP): ONNX export does not support this layer type"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(read_file(out), "previous");
}

// A net's old input fields (input with input_shape or input_dim) are read as an Input layer.
TEST(OnnxExport, LegacyInputFieldsBecomeGraphInputs) {
  const char* conv =
      " layer { name: 'conv' type: 'Convolution' bottom: 'data' top: 'y' "
      "convolution_param { num_output: 2 kernel_size: 3 } }";
  for (const std::string inputs : {"input: 'data' input_shape { dim: 2 dim: 3 dim: 5 dim: 7 }",
                                   "input: 'data' input_dim: 2 input_dim: 3 input_dim: 5 "
                                   "input_dim: 7"}) {
    onnx::ModelProto model;
    EXPECT_EQ(export_and_compare(parse_net(inputs + conv), {}, 1e-5, &model), "") << inputs;
    ASSERT_EQ(model.graph().input_size(), 1);
    EXPECT_EQ(model.graph().input(0).name(), "data");
    const auto& shape = model.graph().input(0).type().tensor_type().shape();
    ASSERT_EQ(shape.dim_size(), 4);
    EXPECT_EQ(shape.dim(3).dim_value(), 7);
  }
}

TEST(OnnxExport, UnsupportedLayersAreNamed) {
  const auto error_of = [](const std::string& layers) -> std::string {
    const NetParameter param = parse_net(
        "layer { name: 'data' type: 'Input' top: 'data' input_param { shape { dim: 2 dim: 3 "
        "dim: 4 dim: 4 } } } " +
        layers);
    try {
      Net<float> net(param, TEST, Device::kCPU);
      net_to_onnx(net, {});
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_EQ(error_of("layer { name: 's' type: 'SPP' bottom: 'data' top: 'y' spp_param { "
                     "pyramid_height: 2 } }"),
            "layer s (SPP): ONNX export does not support this layer type");
  EXPECT_EQ(error_of("layer { name: 'bn' type: 'BatchNorm' bottom: 'data' top: 'y' "
                     "batch_norm_param { use_global_stats: false } }")
                .rfind("layer bn (BatchNorm): use_global_stats: false", 0),
            0u);
  EXPECT_EQ(error_of("layer { name: 'd' type: 'DummyData' top: 'y' dummy_data_param { shape { "
                     "dim: 1 } } }"),
            "layer d (DummyData): ONNX export takes a deploy net, whose inputs are Input layers");
}

}  // namespace
}  // namespace crema::test
