// Shape inference on real model files: LeNet (current and V1 format) and the reference
// CaffeNet, whose published shapes and parameter count are known.
#include <gtest/gtest.h>

#include <string>

#include "core/errors.h"
#include "core/net.h"
#include "core/proto_io.h"
#include "core/upgrade_proto.h"
#include "primitives/handle.h"

namespace crema {
namespace {

std::string model_path(const std::string& rel) { return std::string(CREMA_SOURCE_DIR) + "/" + rel; }

std::vector<int64_t> shape_of(const Net<float>& net, const std::string& blob) {
  return net.blob_by_name(blob)->shape();
}

int64_t learnable_count(const Net<float>& net) {
  int64_t n = 0;
  for (const auto* p : net.learnable_params()) n += p->count();
  return n;
}

TEST(ModelShapes, LeNetDeploy) {
  Net<float> net(load_net_param_text(model_path("models/lenet_fashion/lenet_deploy.prototxt")),
                 TEST, Device::kCPU);
  EXPECT_EQ(shape_of(net, "conv1"), (std::vector<int64_t>{64, 20, 24, 24}));
  EXPECT_EQ(shape_of(net, "pool1"), (std::vector<int64_t>{64, 20, 12, 12}));
  EXPECT_EQ(shape_of(net, "conv2"), (std::vector<int64_t>{64, 50, 8, 8}));
  EXPECT_EQ(shape_of(net, "pool2"), (std::vector<int64_t>{64, 50, 4, 4}));
  EXPECT_EQ(shape_of(net, "ip1"), (std::vector<int64_t>{64, 500}));
  EXPECT_EQ(shape_of(net, "prob"), (std::vector<int64_t>{64, 10}));
  // 20*25+20 + 50*20*25+50 + 500*800+500 + 10*500+10
  EXPECT_EQ(learnable_count(net), 431080);
  prim::Handle h;
  net.forward(h);
  const std::vector<float> prob = net.blob_by_name("prob")->data_vector();
  double row = 0;
  for (int c = 0; c < 10; ++c) row += prob[c];
  EXPECT_NEAR(row, 1.0, 1e-5);
}

// The same LeNet written in the V1 format of old model zoos, with net-level input dims.
TEST(ModelShapes, LeNetV1Upgrades) {
  const std::string v1 = R"(
    name: "LeNet"
    input: "data"
    input_dim: 64 input_dim: 1 input_dim: 28 input_dim: 28
    layers { name: "conv1" type: CONVOLUTION bottom: "data" top: "conv1"
      blobs_lr: 1 blobs_lr: 2
      convolution_param { num_output: 20 kernel_size: 5 weight_filler { type: "xavier" } } }
    layers { name: "pool1" type: POOLING bottom: "conv1" top: "pool1"
      pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
    layers { name: "conv2" type: CONVOLUTION bottom: "pool1" top: "conv2"
      blobs_lr: 1 blobs_lr: 2
      convolution_param { num_output: 50 kernel_size: 5 weight_filler { type: "xavier" } } }
    layers { name: "pool2" type: POOLING bottom: "conv2" top: "pool2"
      pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
    layers { name: "ip1" type: INNER_PRODUCT bottom: "pool2" top: "ip1"
      blobs_lr: 1 blobs_lr: 2
      inner_product_param { num_output: 500 weight_filler { type: "xavier" } } }
    layers { name: "relu1" type: RELU bottom: "ip1" top: "ip1" }
    layers { name: "ip2" type: INNER_PRODUCT bottom: "ip1" top: "ip2"
      blobs_lr: 1 blobs_lr: 2
      inner_product_param { num_output: 10 weight_filler { type: "xavier" } } }
    layers { name: "prob" type: SOFTMAX bottom: "ip2" top: "prob" })";
  NetParameter param;
  read_text_proto_string(v1, "v1_lenet", &param);
  ASSERT_TRUE(net_needs_upgrade(param));
  upgrade_net(&param, "v1_lenet");
  Net<float> net(param, TEST, Device::kCPU);
  EXPECT_EQ(shape_of(net, "conv1"), (std::vector<int64_t>{64, 20, 24, 24}));
  EXPECT_EQ(shape_of(net, "prob"), (std::vector<int64_t>{64, 10}));
  EXPECT_EQ(std::string(net.layer_by_name("conv1")->type()), "Convolution");
  EXPECT_EQ(net.params_lr()[1], 2.0f);
  EXPECT_EQ(learnable_count(net), 431080);
}

TEST(ModelShapes, CaffeNetDeploy) {
  Net<float> net(load_net_param_text(model_path("models/caffenet/deploy.prototxt")), TEST,
                 Device::kCPU);
  EXPECT_EQ(shape_of(net, "conv1"), (std::vector<int64_t>{10, 96, 55, 55}));
  EXPECT_EQ(shape_of(net, "pool1"), (std::vector<int64_t>{10, 96, 27, 27}));
  EXPECT_EQ(shape_of(net, "norm1"), (std::vector<int64_t>{10, 96, 27, 27}));
  EXPECT_EQ(shape_of(net, "conv2"), (std::vector<int64_t>{10, 256, 27, 27}));
  EXPECT_EQ(shape_of(net, "pool2"), (std::vector<int64_t>{10, 256, 13, 13}));
  EXPECT_EQ(shape_of(net, "conv5"), (std::vector<int64_t>{10, 256, 13, 13}));
  EXPECT_EQ(shape_of(net, "pool5"), (std::vector<int64_t>{10, 256, 6, 6}));
  EXPECT_EQ(shape_of(net, "fc6"), (std::vector<int64_t>{10, 4096}));
  EXPECT_EQ(shape_of(net, "fc8"), (std::vector<int64_t>{10, 1000}));
  EXPECT_EQ(learnable_count(net), 60965224);
}

}  // namespace
}  // namespace crema
