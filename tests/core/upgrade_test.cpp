// Tests of the V0/V1 net upgrade, the net-input and data-transform upgrades and the solver_type
// upgrade, on a real V1 LeNet file and small inline nets.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/errors.h"
#include "core/proto_io.h"
#include "core/upgrade_proto.h"
#include "crema.pb.h"
#include "error_util.h"
#include "proto_test_util.h"

namespace crema {
namespace {

NetParameter parse_net(const std::string& text) { return test::parse_text<NetParameter>(text); }

using test::error_of;

TEST(UpgradeNet, V1LeNetBecomesCurrentFormat) {
  const std::string path = std::string(CREMA_SOURCE_DIR) + "/tests/data/v1_lenet.prototxt";
  NetParameter raw;
  read_text_proto(path, &raw);
  ASSERT_EQ(raw.layers_size(), 11);
  EXPECT_TRUE(net_needs_upgrade(raw));

  const NetParameter net = load_net_param_text(path);
  EXPECT_FALSE(net_needs_upgrade(net));
  EXPECT_EQ(net.name(), "LeNet");
  EXPECT_EQ(net.layers_size(), 0);
  ASSERT_EQ(net.layer_size(), 11);
  const std::vector<std::string> types = {"Data",         "Data",     "Convolution",    "Pooling",
                                          "Convolution",  "Pooling",  "InnerProduct",   "ReLU",
                                          "InnerProduct", "Accuracy", "SoftmaxWithLoss"};
  for (int i = 0; i < net.layer_size(); ++i) EXPECT_EQ(net.layer(i).type(), types[i]) << i;

  // Data: phase rules kept, legacy scale moved to transform_param.
  const LayerParameter& train_data = net.layer(0);
  ASSERT_EQ(train_data.include_size(), 1);
  EXPECT_EQ(train_data.include(0).phase(), TRAIN);
  EXPECT_EQ(net.layer(1).include(0).phase(), TEST);
  EXPECT_FALSE(train_data.data_param().has_scale());
  EXPECT_FLOAT_EQ(train_data.transform_param().scale(), 0.00390625f);
  EXPECT_EQ(train_data.data_param().batch_size(), 64u);
  EXPECT_EQ(train_data.data_param().backend(), DataParameter::LMDB);
  EXPECT_EQ(train_data.data_param().source(), "data/mnist_train_lmdb");
  EXPECT_EQ(train_data.top_size(), 2);
  EXPECT_EQ(train_data.top(1), "label");

  // Convolution: settings and blobs_lr / weight_decay as ParamSpecs.
  const LayerParameter& conv1 = net.layer(2);
  EXPECT_EQ(conv1.name(), "conv1");
  EXPECT_EQ(conv1.bottom(0), "data");
  EXPECT_EQ(conv1.top(0), "conv1");
  EXPECT_EQ(conv1.convolution_param().num_output(), 20u);
  ASSERT_EQ(conv1.convolution_param().kernel_size_size(), 1);
  EXPECT_EQ(conv1.convolution_param().kernel_size(0), 5u);
  EXPECT_EQ(conv1.convolution_param().weight_filler().type(), "xavier");
  ASSERT_EQ(conv1.param_size(), 2);
  EXPECT_EQ(conv1.param(0).lr_mult(), 1.0f);
  EXPECT_EQ(conv1.param(1).lr_mult(), 2.0f);
  EXPECT_EQ(conv1.param(0).decay_mult(), 1.0f);
  EXPECT_EQ(conv1.param(1).decay_mult(), 0.0f);
  EXPECT_TRUE(conv1.param(1).has_decay_mult());

  const LayerParameter& pool1 = net.layer(3);
  EXPECT_EQ(pool1.pooling_param().pool(), PoolingParameter::MAX);
  EXPECT_EQ(pool1.pooling_param().kernel_size(), 2u);
  EXPECT_EQ(pool1.pooling_param().stride(), 2u);
  EXPECT_EQ(pool1.param_size(), 0);

  const LayerParameter& ip2 = net.layer(8);
  EXPECT_EQ(ip2.inner_product_param().num_output(), 10u);
  EXPECT_EQ(ip2.param(1).lr_mult(), 2.0f);
  EXPECT_EQ(ip2.param(1).decay_mult(), 0.0f);

  const LayerParameter& relu = net.layer(7);
  EXPECT_EQ(relu.bottom(0), "ip1");
  EXPECT_EQ(relu.top(0), "ip1");  // in place

  EXPECT_EQ(net.layer(9).include(0).phase(), TEST);
  const LayerParameter& loss = net.layer(10);
  ASSERT_EQ(loss.bottom_size(), 2);
  EXPECT_EQ(loss.bottom(1), "label");
}

TEST(UpgradeNet, V1ParamNamesShareModeAndLossWeight) {
  NetParameter net = parse_net(R"(
    layers {
      name: "ip" type: INNER_PRODUCT bottom: "x" top: "y"
      param: "w" param: "b" blob_share_mode: PERMISSIVE
      blobs_lr: 3 loss_weight: 0.5
      inner_product_param { num_output: 7 }
      blobs { shape { dim: 7 } data: 1 data: 2 data: 3 data: 4 data: 5 data: 6 data: 7 }
    })");
  upgrade_net(&net, "test.prototxt");
  ASSERT_EQ(net.layer_size(), 1);
  const LayerParameter& l = net.layer(0);
  ASSERT_EQ(l.param_size(), 2);
  EXPECT_EQ(l.param(0).name(), "w");
  EXPECT_EQ(l.param(1).name(), "b");
  EXPECT_EQ(l.param(0).share_mode(), ParamSpec::PERMISSIVE);
  EXPECT_FALSE(l.param(1).has_share_mode());
  EXPECT_EQ(l.param(0).lr_mult(), 3.0f);
  EXPECT_FALSE(l.param(1).has_lr_mult());
  ASSERT_EQ(l.loss_weight_size(), 1);
  EXPECT_EQ(l.loss_weight(0), 0.5f);
  ASSERT_EQ(l.blobs_size(), 1);
  EXPECT_EQ(l.blobs(0).data(6), 7.0f);
  EXPECT_EQ(l.inner_product_param().num_output(), 7u);
}

TEST(UpgradeNet, V1LayerWithoutTypeNamesTheLayer) {
  NetParameter net = parse_net(R"(layers { name: "mystery" bottom: "x" top: "y" })");
  const std::string msg = error_of([&] { upgrade_net(&net, "old.prototxt"); });
  EXPECT_EQ(msg.rfind("old.prototxt: ", 0), 0u) << msg;
  EXPECT_NE(msg.find("'mystery'"), std::string::npos) << msg;
}

TEST(UpgradeNet, UnknownV1EnumIsAParseErrorWithLine) {
  NetParameter net;
  const std::string msg = error_of([&] {
    read_text_proto_string("layers {\n  name: \"a\"\n  type: WARP_DRIVE\n}\n", "v1.prototxt", &net);
  });
  // At the value itself, though the parser notices only at the next token (line 4).
  EXPECT_EQ(msg.rfind("v1.prototxt:3:9: ", 0), 0u) << msg;
  EXPECT_NE(msg.find("WARP_DRIVE"), std::string::npos) << msg;
}

TEST(UpgradeNet, MixedV1AndCurrentLayersIsAnError) {
  NetParameter net = parse_net(R"(
    layer { name: "a" type: "ReLU" bottom: "x" top: "x" }
    layers { name: "b" type: RELU bottom: "x" top: "x" })");
  const std::string msg = error_of([&] { upgrade_net(&net, "mix.prototxt"); });
  EXPECT_NE(msg.find("mix.prototxt"), std::string::npos) << msg;
}

TEST(UpgradeNet, V0NetWithPaddingLayer) {
  NetParameter net = parse_net(R"(
    name: "v0"
    layers { layer { name: "data" type: "data" source: "db" batchsize: 8 scale: 0.5 }
             top: "data" top: "label" }
    layers { layer { name: "pad1" type: "padding" pad: 2 } bottom: "data" top: "pad1" }
    layers { layer { name: "conv1" type: "conv" num_output: 4 kernelsize: 5 stride: 2 group: 2
                     blobs_lr: 1 blobs_lr: 2 weight_decay: 1 weight_decay: 0 }
             bottom: "pad1" top: "conv1" }
    layers { layer { name: "pool1" type: "pool" pool: AVE kernelsize: 3 stride: 2 }
             bottom: "conv1" top: "pool1" }
    layers { layer { name: "fc" type: "innerproduct" num_output: 10 biasterm: false }
             bottom: "pool1" top: "fc" })");
  ASSERT_TRUE(net_needs_upgrade(net));
  upgrade_net(&net, "v0.prototxt");
  ASSERT_EQ(net.layer_size(), 4);  // the padding layer is folded into conv1
  const LayerParameter& data = net.layer(0);
  EXPECT_EQ(data.type(), "Data");
  EXPECT_EQ(data.data_param().source(), "db");
  EXPECT_EQ(data.data_param().batch_size(), 8u);
  EXPECT_EQ(data.transform_param().scale(), 0.5f);
  const LayerParameter& conv = net.layer(1);
  EXPECT_EQ(conv.type(), "Convolution");
  EXPECT_EQ(conv.bottom(0), "data");
  ASSERT_EQ(conv.convolution_param().pad_size(), 1);
  EXPECT_EQ(conv.convolution_param().pad(0), 2u);
  EXPECT_EQ(conv.convolution_param().kernel_size(0), 5u);
  EXPECT_EQ(conv.convolution_param().stride(0), 2u);
  EXPECT_EQ(conv.convolution_param().group(), 2u);
  EXPECT_EQ(conv.convolution_param().num_output(), 4u);
  ASSERT_EQ(conv.param_size(), 2);
  EXPECT_EQ(conv.param(1).lr_mult(), 2.0f);
  EXPECT_EQ(conv.param(1).decay_mult(), 0.0f);
  const LayerParameter& pool = net.layer(2);
  EXPECT_EQ(pool.type(), "Pooling");
  EXPECT_EQ(pool.pooling_param().pool(), PoolingParameter::AVE);
  EXPECT_EQ(pool.pooling_param().kernel_size(), 3u);
  EXPECT_EQ(net.layer(3).type(), "InnerProduct");
  EXPECT_FALSE(net.layer(3).inner_product_param().bias_term());
  EXPECT_FALSE(net_needs_upgrade(net));
}

TEST(UpgradeNet, V0FieldOfTheWrongTypeIsAnError) {
  NetParameter net = parse_net(R"(
    layers { layer { name: "r" type: "relu" kernelsize: 3 } bottom: "x" top: "y" })");
  const std::string msg = error_of([&] { upgrade_net(&net, "v0.prototxt"); });
  EXPECT_NE(msg.find("'r'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("kernelsize"), std::string::npos) << msg;
}

TEST(UpgradeNet, InputDimBecomesInputLayer) {
  NetParameter net = parse_net(R"(
    name: "deploy"
    input: "data"
    input_dim: 10 input_dim: 3 input_dim: 227 input_dim: 227
    input: "im_info"
    input_dim: 1 input_dim: 3 input_dim: 1 input_dim: 1
    layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
            convolution_param { num_output: 96 kernel_size: 11 } })");
  ASSERT_TRUE(net_needs_upgrade(net));
  upgrade_net(&net, "deploy.prototxt");
  EXPECT_EQ(net.input_size(), 0);
  EXPECT_EQ(net.input_dim_size(), 0);
  ASSERT_EQ(net.layer_size(), 2);
  const LayerParameter& input = net.layer(0);
  EXPECT_EQ(input.type(), "Input");
  EXPECT_EQ(input.name(), "input");
  ASSERT_EQ(input.top_size(), 2);
  EXPECT_EQ(input.top(0), "data");
  EXPECT_EQ(input.top(1), "im_info");
  ASSERT_EQ(input.input_param().shape_size(), 2);
  const std::vector<int64_t> dims0(input.input_param().shape(0).dim().begin(),
                                   input.input_param().shape(0).dim().end());
  EXPECT_EQ(dims0, (std::vector<int64_t>{10, 3, 227, 227}));
  EXPECT_EQ(input.input_param().shape(1).dim(1), 3);
  EXPECT_EQ(net.layer(1).name(), "conv1");
  EXPECT_FALSE(net_needs_upgrade(net));
}

TEST(UpgradeNet, InputShapeBecomesInputLayer) {
  NetParameter net = parse_net(R"(
    input: "data" input_shape { dim: 1 dim: 1 dim: 28 dim: 28 }
    layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip" })");
  upgrade_net(&net, "d.prototxt");
  ASSERT_EQ(net.layer_size(), 2);
  EXPECT_EQ(net.layer(0).type(), "Input");
  EXPECT_EQ(net.layer(0).input_param().shape(0).dim(2), 28);
  EXPECT_EQ(net.input_shape_size(), 0);
}

TEST(UpgradeNet, WrongInputDimCountIsAnError) {
  NetParameter net = parse_net(R"(input: "data" input_dim: 1 input_dim: 3 input_dim: 28)");
  const std::string msg = error_of([&] { upgrade_net(&net, "d.prototxt"); });
  EXPECT_NE(msg.find("d.prototxt"), std::string::npos) << msg;
  EXPECT_NE(msg.find("got 3"), std::string::npos) << msg;
}

TEST(UpgradeNet, BatchNormFrozenParamSpecsAreDropped) {
  NetParameter net = parse_net(R"(
    layer { name: "bn" type: "BatchNorm" bottom: "x" top: "x"
            param { lr_mult: 0 } param { lr_mult: 0 } param { lr_mult: 0 } })");
  EXPECT_TRUE(net_needs_upgrade(net));
  upgrade_net(&net, "bn.prototxt");
  EXPECT_EQ(net.layer(0).param_size(), 0);
}

TEST(UpgradeSolver, SolverTypeBecomesTypeString) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"SGD", "SGD"},         {"NESTEROV", "Nesterov"}, {"ADAGRAD", "AdaGrad"},
      {"RMSPROP", "RMSProp"}, {"ADADELTA", "AdaDelta"}, {"ADAM", "Adam"}};
  for (const auto& [old_name, new_name] : cases) {
    SolverParameter solver;
    read_text_proto_string("base_lr: 0.01 solver_type: " + old_name, "s.prototxt", &solver);
    ASSERT_TRUE(solver_needs_upgrade(solver));
    upgrade_solver(&solver);
    EXPECT_EQ(solver.type(), new_name);
    EXPECT_FALSE(solver.has_solver_type());
    EXPECT_FALSE(solver_needs_upgrade(solver));
    EXPECT_FLOAT_EQ(solver.base_lr(), 0.01f);
  }
}

TEST(UpgradeSolver, ConflictingTypesAreAnError) {
  SolverParameter solver;
  read_text_proto_string("solver_type: ADAM type: \"SGD\"", "s.prototxt", &solver);
  const std::string msg = error_of([&] { upgrade_solver(&solver, "s.prototxt"); });
  EXPECT_NE(msg.find("s.prototxt"), std::string::npos) << msg;
  EXPECT_NE(msg.find("ADAM"), std::string::npos) << msg;

  SolverParameter same;
  read_text_proto_string("solver_type: NESTEROV type: \"Nesterov\"", "s.prototxt", &same);
  upgrade_solver(&same);
  EXPECT_EQ(same.type(), "Nesterov");
}

TEST(UpgradeSolver, InlineV1NetIsUpgradedToo) {
  SolverParameter solver;
  read_text_proto_string("net_param { layers { name: \"r\" type: RELU bottom: \"x\" top: \"x\" } }",
                         "s.prototxt", &solver);
  EXPECT_TRUE(solver_needs_upgrade(solver));
  upgrade_solver(&solver);
  ASSERT_EQ(solver.net_param().layer_size(), 1);
  EXPECT_EQ(solver.net_param().layer(0).type(), "ReLU");
}

}  // namespace
}  // namespace crema
