// MemoryData layer: batches of the arrays handed to set_input, in order with wrap-around, use
// through a Net, and the errors of missing or ill-sized input.
#include "layers/memory_data_layer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "core/errors.h"
#include "core/net.h"
#include "core/proto_io.h"
#include "data_test_util.h"
#include "layers/layer_registry.h"

namespace crema {
namespace {

using test::error_of;

LayerParameter memory_param(int batch, int c, int h, int w) {
  LayerParameter p;
  p.set_name("mem");
  p.set_type("MemoryData");
  MemoryDataParameter* m = p.mutable_memory_data_param();
  m->set_batch_size(batch);
  m->set_channels(c);
  m->set_height(h);
  m->set_width(w);
  return p;
}

TEST(MemoryDataLayer, BatchesInOrderWithWrapAround) {
  MemoryDataLayer<double> layer(memory_param(2, 1, 2, 3), Device::kCPU);
  Tensor<double> data, label;
  layer.setup({}, {&data, &label});
  EXPECT_EQ(data.shape(), (std::vector<int64_t>{2, 1, 2, 3}));
  EXPECT_EQ(label.shape(), (std::vector<int64_t>{2}));
  const int n = 6;
  std::vector<double> x(n * 6), y(n);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.5 * double(i) - 3;
  for (int i = 0; i < n; ++i) y[i] = 100 + i;
  layer.set_input(x.data(), y.data(), n);
  x.assign(x.size(), -1);  // the layer keeps its own copy
  Handle h;
  for (int iter = 0; iter < 5; ++iter) {  // 10 examples: wraps after the third batch
    layer.forward(h, {}, {&data, &label});
    const int first = (iter * 2) % n;
    EXPECT_EQ(label.data_vector(), (std::vector<double>{100.0 + first, 101.0 + first}));
    const std::vector<double> d = data.data_vector();
    for (int j = 0; j < 12; ++j) ASSERT_EQ(d[j], 0.5 * double(first * 6 + j) - 3) << iter;
  }
  EXPECT_EQ(layer.position(), 4);
  // New input starts over at its first example.
  std::vector<double> x2(12, 7), y2{1, 2};
  layer.set_input(x2.data(), y2.data(), 2);
  layer.forward(h, {}, {&data, &label});
  EXPECT_EQ(data.data_vector(), std::vector<double>(12, 7));
  EXPECT_EQ(label.data_vector(), (std::vector<double>{1, 2}));
}

TEST(MemoryDataLayer, FeedsANetThroughLayerByName) {
  const std::vector<std::string> types = layer_types();
  if (std::find(types.begin(), types.end(), "MemoryData") == types.end())
    GTEST_SKIP() << "MemoryData is not in the layer registry yet";
  NetParameter np;
  read_text_proto_string(R"(
    layer { name: "data" type: "MemoryData" top: "data" top: "label"
      memory_data_param { batch_size: 2 channels: 1 height: 1 width: 3 } }
    layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip"
      inner_product_param { num_output: 2 weight_filler { type: "constant" value: 1 } } }
    layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" })",
                         "memory_net", &np);
  Net<float> net(np, TRAIN, Device::kCPU);
  auto* input = dynamic_cast<MemoryDataLayer<float>*>(net.layer_by_name("data"));
  ASSERT_NE(input, nullptr);
  const std::vector<float> x{1, 2, 3, 4, 5, 6}, y{0, 1};
  input->set_input(x.data(), y.data(), 2);
  Handle h;
  const float loss = net.forward(h);
  // Equal weights give equal scores: the loss is log(2) for any labels.
  EXPECT_NEAR(loss, std::log(2.0f), 1e-6);
  EXPECT_EQ(net.blob_by_name("ip")->data_vector(), (std::vector<float>{6, 6, 15, 15}));
}

TEST(MemoryDataLayer, Errors) {
  Tensor<float> data, label;
  MemoryDataLayer<float> layer(memory_param(2, 1, 1, 2), Device::kCPU);
  layer.setup({}, {&data, &label});
  Handle h;
  EXPECT_EQ(error_of([&] {
              layer.forward(h, {}, {&data, &label});
            }),
            "layer mem (MemoryData): forward without input: hand the layer its examples with "
            "set_input() first");
  const std::vector<float> x(6, 1), y(3, 0);
  EXPECT_EQ(error_of([&] { layer.set_input(x.data(), y.data(), 3); }),
            "layer mem (MemoryData): set_input: the number of examples (3) must be a positive "
            "multiple of batch_size 2");
  EXPECT_NE(error_of([&] { layer.set_input(x.data(), nullptr, 2); }).find("no labels array"),
            std::string::npos);
  EXPECT_NE(error_of([&] { layer.set_input(nullptr, y.data(), 2); }).find("no data array"),
            std::string::npos);

  EXPECT_NE(
      error_of([&] {
        MemoryDataLayer<float>(memory_param(2, 0, 1, 1), Device::kCPU).setup({}, {&data, &label});
      }).find("batch_size, channels, height and width must all be positive; got 2, 0, 1, 1"),
      std::string::npos);
  EXPECT_NE(error_of([&] {
              MemoryDataLayer<float>(memory_param(1 << 16, 1 << 16, 1 << 16, 1 << 16), Device::kCPU)
                  .setup({}, {&data, &label});
            }).find("exceeds the tensor limit"),
            std::string::npos);
  LayerParameter p = memory_param(2, 1, 1, 2);
  p.mutable_transform_param()->set_scale(2);
  EXPECT_NE(error_of([&] {
              MemoryDataLayer<float>(p, Device::kCPU).setup({}, {&data, &label});
            }).find("transform_param does not apply to MemoryData"),
            std::string::npos);
  // With only a data top, labels are not needed.
  MemoryDataLayer<float> data_only(memory_param(2, 1, 1, 2), Device::kCPU);
  data_only.setup({}, {&data});
  data_only.set_input(x.data(), nullptr, 2);
  data_only.forward(h, {}, {&data});
  EXPECT_EQ(data.data_vector(), std::vector<float>(4, 1));
}

}  // namespace
}  // namespace crema
