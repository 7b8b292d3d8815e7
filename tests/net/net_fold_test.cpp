// Folding at inference: in a forward-only net a Convolution takes the in-place BatchNorm with
// stored statistics and the per-channel Scale after it into its weights and bias (and a plain
// ReLU into its epilogue). The folded net gives the outputs of the layers apart, to float
// re-association, whatever the bias, groups and layers after the BatchNorm, and follows changes
// to any of the layers' blobs; nets that run backward or normalize by the batch do not fold.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "core/errors.h"
#include "core/net.h"
#include "net_text.h"
#include "primitives/handle.h"
#include "test_util.h"

namespace crema {
namespace {

using test::parse_net;

const std::string kScale = R"(
  layer { name: "scale" type: "Scale" bottom: "conv" top: "conv"
    scale_param { bias_term: true filler { type: "gaussian" std: 1 }
      bias_filler { type: "gaussian" std: 1 } } })";
const std::string kRelu = R"(
  layer { name: "relu" type: "ReLU" bottom: "conv" top: "conv" })";
const std::string kLeakyRelu = R"(
  layer { name: "relu" type: "ReLU" bottom: "conv" top: "conv" relu_param { negative_slope: 0.1 } })";

// data -> `head` (a Convolution with `conv_options`, or the layer given) -> BatchNorm (with
// `bn_options`) -> `after` -> InnerProduct "ip", the output.
std::string net_text(const std::string& conv_options, const std::string& after,
                     const std::string& bn_options = "", const std::string& head = "") {
  const std::string conv = R"(
    layer { name: "conv" type: "Convolution" bottom: "data" top: "conv"
      convolution_param { num_output: 6 kernel_size: 3 pad: 1 )" +
                           conv_options + R"(
        weight_filler { type: "gaussian" std: 0.3 } bias_filler { type: "gaussian" std: 0.3 } } })";
  return R"(
    layer { name: "data" type: "DummyData" top: "data"
      dummy_data_param { shape { dim: 3 dim: 4 dim: 6 dim: 6 }
        data_filler { type: "gaussian" std: 1 } } })" +
         (head.empty() ? conv : head) + R"(
    layer { name: "bn" type: "BatchNorm" bottom: "conv" top: "conv" )" +
         bn_options + " }" + after + R"(
    layer { name: "ip" type: "InnerProduct" bottom: "conv" top: "ip"
      inner_product_param { num_output: 3 weight_filler { type: "gaussian" std: 0.3 } } })";
}

int index_of(const Net<double>& net, const std::string& name) {
  const auto& names = net.layer_names();
  const auto at = std::find(names.begin(), names.end(), name);
  return at == names.end() ? -1 : int(at - names.begin());
}

// Running sums that differ per channel, with a running weight of 2 (so the stored averages are
// the sums halved).
void set_statistics(Net<double>& net, double shift) {
  auto& blobs = net.layer_by_name("bn")->blobs();
  for (int64_t c = 0; c < blobs[0]->count(); ++c) {
    blobs[0]->mutable_data()[c] = 0.3 * double(c) - 0.5 + shift;
    blobs[1]->mutable_data()[c] = 0.5 + 0.25 * double(c) + shift;
  }
  blobs[2]->fill_data(2.0);
}

// The same net twice, TEST phase, with the same weights and statistics; `folded` declared
// forward-only (where it folds), `apart` with every layer on its own.
struct FoldedAndApart {
  Net<double> folded, apart;
  prim::Handle h;
  explicit FoldedAndApart(const std::string& text)
      : folded(parse_net(text), TEST, Device::kCPU), apart(parse_net(text), TEST, Device::kCPU) {
    apart.unfuse();
    NetParameter trained;
    folded.to_proto(&trained);
    apart.copy_trained_layers_from(trained);
    for (auto* net : {&folded, &apart}) set_statistics(*net, 0);
    folded.share_inference_memory();
  }
  int absorbed_by(const std::string& layer) const {
    return folded.absorbed_by(index_of(folded, layer));
  }
  // One forward of each on the folded net's data: the outputs agree.
  void expect_same_output() {
    folded.forward(h);
    apart.blob_by_name("data")->copy_from(*folded.blob_by_name("data"));
    apart.forward_range(h, 1, apart.num_layers() - 1);
    EXPECT_TRUE(test::all_close(folded.blob_by_name("ip")->data_vector(),
                                apart.blob_by_name("ip")->data_vector(), {1e-12, 1e-10, true}));
  }
};

TEST(NetFold, ConvolutionFoldsBatchNormScaleAndRelu) {
  for (const std::string conv : {"", "bias_term: false", "group: 2"})
    for (const std::string& after : {kScale + kRelu, kScale, kRelu, std::string()}) {
      SCOPED_TRACE("conv {" + conv + "} then" + after);
      FoldedAndApart t(net_text(conv, after));
      const int conv_index = index_of(t.folded, "conv");
      EXPECT_EQ(t.absorbed_by("bn"), conv_index);
      if (after.find("Scale") != std::string::npos) {
        EXPECT_EQ(t.absorbed_by("scale"), conv_index);
      }
      if (after.find("ReLU") != std::string::npos) {
        EXPECT_EQ(t.absorbed_by("relu"), conv_index);
      }
      t.expect_same_output();
      t.expect_same_output();  // new data, the same folded weights
    }
}

// A leaky ReLU is no epilogue of the convolution: it runs on its own after the folded layers.
TEST(NetFold, LeakyReluRunsApart) {
  FoldedAndApart t(net_text("", kScale + kLeakyRelu));
  EXPECT_EQ(t.absorbed_by("scale"), index_of(t.folded, "conv"));
  EXPECT_EQ(t.absorbed_by("relu"), -1);
  t.expect_same_output();
}

// The folded weights are made at every forward, so they follow new weights, statistics and
// scales (a test net sharing the training net's weights, a user's edit).
TEST(NetFold, FollowsChangesToTheBlobs) {
  FoldedAndApart t(net_text("", kScale + kRelu));
  t.expect_same_output();
  for (auto* net : {&t.folded, &t.apart}) {
    set_statistics(*net, 0.7);
    for (const char* layer : {"conv", "scale"})
      for (auto& blob : net->layer_by_name(layer)->blobs())
        for (int64_t i = 0; i < blob->count(); ++i)
          blob->mutable_data()[i] = blob->data()[i] * 1.5 + 0.01 * double(i % 7);
  }
  t.expect_same_output();
}

// Nothing folds where a backward may run (TRAIN here; a TEST net with a loss until it is
// declared forward-only, net_test.cpp), where the BatchNorm normalizes by the batch, or after a
// layer that is not a Convolution: there the BatchNorm takes the Scale and ReLU itself.
TEST(NetFold, OnlyForwardOnlyConvolutionsWithStoredStatisticsFold) {
  {
    Net<double> net(parse_net(net_text("", kScale + kLeakyRelu)), TRAIN, Device::kCPU);
    EXPECT_EQ(net.absorbed_by(index_of(net, "bn")), -1);
  }
  {
    FoldedAndApart t(net_text("", kScale + kRelu, "batch_norm_param { use_global_stats: false }"));
    EXPECT_EQ(t.absorbed_by("bn"), -1);
  }
  FoldedAndApart t(net_text("", kScale + kLeakyRelu, "", R"(
    layer { name: "conv" type: "Pooling" bottom: "data" top: "conv"
      pooling_param { pool: AVE kernel_size: 3 pad: 1 stride: 1 } })"));
  const int bn = index_of(t.folded, "bn");
  EXPECT_EQ(t.absorbed_by("bn"), -1);
  EXPECT_EQ(t.absorbed_by("scale"), bn);
  EXPECT_EQ(t.absorbed_by("relu"), bn);
  t.expect_same_output();
}

}  // namespace
}  // namespace crema
