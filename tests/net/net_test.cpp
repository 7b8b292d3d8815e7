// Net construction: split insertion, in-place layers, phase/level/stage rules, shared
// parameters, loss weights, backward decisions, weight copy, and the errors of a bad graph.
#include "core/net.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/net_graph.h"
#include "layers/layer_registry.h"
#include "net_text.h"
#include "primitives/handle.h"
#include "test_util.h"

namespace crema {
namespace {

using test::parse_net;

// A data source of 4 samples with 3 features, a classifier and a loss; `extra` layers follow.
std::string small_net(const std::string& extra = "") {
  return R"(
    name: "small"
    layer { name: "data" type: "DummyData" top: "data" top: "label"
      dummy_data_param {
        shape { dim: 4 dim: 3 } shape { dim: 4 }
        data_filler { type: "gaussian" std: 1 } data_filler { type: "constant" value: 1 } } }
    layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip"
      inner_product_param { num_output: 2 weight_filler { type: "gaussian" std: 0.1 } } }
    layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
  )" + extra;
}

TEST(NetGraph, InsertsSplitForTopUsedTwice) {
  const NetParameter p = insert_splits(parse_net(small_net(R"(
    layer { name: "acc" type: "Accuracy" bottom: "ip" bottom: "label" top: "acc" })")));
  // "ip" feeds loss and acc, "label" feeds loss and acc: two splits.
  ASSERT_EQ(p.layer_size(), 6);
  EXPECT_EQ(p.layer(0).type(), "DummyData");
  EXPECT_EQ(p.layer(1).type(), "Split") << "label split follows the data layer";
  EXPECT_EQ(p.layer(1).name(), "label_data_1_split");
  EXPECT_EQ(p.layer(3).name(), "ip_ip_0_split");
  EXPECT_EQ(p.layer(4).bottom(0), "ip_ip_0_split_0");
  EXPECT_EQ(p.layer(4).bottom(1), "label_data_1_split_0");
  EXPECT_EQ(p.layer(5).bottom(0), "ip_ip_0_split_1");
  EXPECT_EQ(p.layer(5).bottom(1), "label_data_1_split_1");
}

// The Net makes its layers through the factory it is given: here one that records the types it
// is asked for and refuses InnerProduct, before handing the rest to the registry.
std::vector<std::string> g_made;
std::unique_ptr<Layer<float>> recording_factory(const LayerParameter& lp, Device device) {
  g_made.push_back(lp.type());
  if (lp.type() == "InnerProduct") fail("this factory makes no InnerProduct");
  return create_layer<float>(lp, device);
}

TEST(NetFactory, LayersComeFromTheGivenFactory) {
  g_made.clear();
  NetParameter p = parse_net(small_net());
  try {
    Net<float> net(p, TRAIN, Device::kCPU, &recording_factory);
    FAIL() << "the factory's refusal did not stop the net";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("this factory makes no InnerProduct"), std::string::npos)
        << e.what();
  }
  ASSERT_FALSE(g_made.empty());
  EXPECT_EQ(g_made.back(), "InnerProduct");
}

TEST(NetGraph, UnknownBottomIsAnError) {
  const NetParameter p = parse_net(R"(
    layer { name: "a" type: "ReLU" bottom: "nowhere" top: "a" })");
  try {
    insert_splits(p);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bottom \"nowhere\""), std::string::npos) << e.what();
  }
}

TEST(NetGraph, RulesFilterByPhaseLevelAndStage) {
  NetParameter p = parse_net(R"(
    state { phase: TEST level: 2 stage: "deploy" }
    layer { name: "train_only" type: "ReLU" include { phase: TRAIN } }
    layer { name: "test_only" type: "ReLU" include { phase: TEST } }
    layer { name: "level3" type: "ReLU" include { min_level: 3 } }
    layer { name: "level2" type: "ReLU" include { min_level: 1 max_level: 2 } }
    layer { name: "staged" type: "ReLU" include { stage: "deploy" } }
    layer { name: "not_deploy" type: "ReLU" include { not_stage: "deploy" } }
    layer { name: "excluded" type: "ReLU" exclude { phase: TEST } }
    layer { name: "always" type: "ReLU" })");
  const NetParameter f = filter_net(p);
  std::vector<std::string> names;
  for (const auto& l : f.layer()) names.push_back(l.name());
  EXPECT_EQ(names, (std::vector<std::string>{"test_only", "level2", "staged", "always"}));
  p.mutable_layer(0)->add_exclude()->set_phase(TEST);
  EXPECT_THROW(filter_net(p), Error) << "include and exclude together";
}

TEST(Net, BuildsWiresAndInfersShapes) {
  Net<float> net(parse_net(small_net()), TRAIN, Device::kCPU);
  EXPECT_EQ(net.num_layers(), 3);
  EXPECT_EQ(net.blob_by_name("ip")->shape(), (std::vector<int64_t>{4, 2}));
  ASSERT_EQ(net.output_blob_names().size(), 1u);
  EXPECT_EQ(net.output_blob_names()[0], "loss");
  EXPECT_EQ(net.output_loss_weights()[0], 1.0f);
  ASSERT_EQ(net.learnable_params().size(), 2u) << "weight and bias";
  prim::Handle h;
  const float loss = net.forward(h);
  EXPECT_GT(loss, 0.0f);
  EXPECT_NEAR(loss, net.blob_by_name("loss")->data_vector()[0], 1e-6);
  EXPECT_TRUE(net.layer_need_backward()[1]);
  EXPECT_FALSE(net.layer_need_backward()[0]) << "the data layer has nothing to learn";
}

TEST(Net, InPlaceLayerSharesItsBlob) {
  Net<float> net(parse_net(R"(
    layer { name: "data" type: "DummyData" top: "data" top: "label"
      dummy_data_param { shape { dim: 4 dim: 3 } shape { dim: 4 }
        data_filler { type: "gaussian" std: 1 } data_filler { type: "constant" value: 1 } } }
    layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip"
      inner_product_param { num_output: 2 weight_filler { type: "gaussian" std: 1 } } }
    layer { name: "relu" type: "ReLU" bottom: "ip" top: "ip" }
    layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" })"),
                 TRAIN, Device::kCPU);
  EXPECT_EQ(net.bottom_vecs()[2][0], net.top_vecs()[2][0]);
  EXPECT_EQ(net.top_vecs()[2][0], net.bottom_vecs()[3][0]) << "the loss reads the relu output";
  EXPECT_EQ(net.blobs().size(), 4u) << "data, label, ip, loss";
  prim::Handle h;
  net.forward(h);
  for (float v : net.blob_by_name("ip")->data_vector()) EXPECT_GE(v, 0.0f);
}

// The loss layer takes the weight from the Net on the host (its top feeds no other layer): loss
// and gradient must scale exactly as Caffe's read of the top's diff would make them.
TEST(Net, LossWeightScalesTheLossAndTheGradient) {
  Net<double> plain(parse_net(small_net()), TRAIN, Device::kCPU);
  NetParameter p = parse_net(small_net());
  p.mutable_layer(2)->add_loss_weight(2.5);
  Net<double> weighted(p, TRAIN, Device::kCPU);
  weighted.share_trained_layers_with(plain);
  prim::Handle h;
  const double loss = plain.forward(h);
  // DummyData with a gaussian filler refills each forward: copy the same data in.
  weighted.blob_by_name("data")->copy_from(*plain.blob_by_name("data"));
  EXPECT_NEAR(weighted.forward_range(h, 1, weighted.num_layers() - 1), 2.5 * loss, 1e-9);
  plain.backward(h);
  weighted.backward(h);
  const auto a = plain.blob_by_name("ip")->diff_vector();
  const auto b = weighted.blob_by_name("ip")->diff_vector();
  ASSERT_EQ(a.size(), b.size());
  double norm = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_NEAR(b[i], 2.5 * a[i], 1e-12);
    norm += std::fabs(a[i]);
  }
  EXPECT_GT(norm, 0.0);
  EXPECT_EQ(weighted.layer_by_name("loss")->top_loss_weight(0, *weighted.blob_by_name("loss")),
            2.5);
}

TEST(Net, SharedParametersShareMemoryAndAccumulate) {
  const NetParameter p = parse_net(R"(
    layer { name: "data" type: "DummyData" top: "data" top: "label"
      dummy_data_param { shape { dim: 2 dim: 3 } shape { dim: 2 }
        data_filler { type: "constant" value: 1 } data_filler { type: "constant" value: 0 } } }
    layer { name: "ip1" type: "InnerProduct" bottom: "data" top: "ip1"
      param { name: "w" } param { name: "b" }
      inner_product_param { num_output: 3 weight_filler { type: "gaussian" std: 0.1 } } }
    layer { name: "ip2" type: "InnerProduct" bottom: "ip1" top: "ip2"
      param { name: "w" } param { name: "b" }
      inner_product_param { num_output: 3 weight_filler { type: "gaussian" std: 0.1 } } }
    layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip2" bottom: "label" top: "loss" })");
  Net<float> net(p, TRAIN, Device::kCPU);
  EXPECT_EQ(net.params().size(), 4u);
  EXPECT_EQ(net.learnable_params().size(), 2u);
  Layer<float>* ip1 = net.layer_by_name("ip1");
  Layer<float>* ip2 = net.layer_by_name("ip2");
  EXPECT_EQ(ip1->blobs()[0]->data(), ip2->blobs()[0]->data());
  EXPECT_EQ(ip1->blobs()[0]->diff(), ip2->blobs()[0]->diff());
  prim::Handle h;
  net.forward(h);
  net.backward(h);
  double sum = 0;
  for (float v : ip1->blobs()[0]->diff_vector()) sum += std::fabs(v);
  EXPECT_GT(sum, 0.0) << "both uses accumulate into the one shared gradient";

  NetParameter bad(p);
  bad.mutable_layer(2)->mutable_inner_product_param()->set_num_output(4);
  try {
    Net<float> mismatched(bad, TRAIN, Device::kCPU);
    FAIL() << "shape mismatch of a shared parameter accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("shared parameter \"w\""), std::string::npos);
  }
}

TEST(Net, LrMultZeroStopsGradientsBelow) {
  NetParameter p = parse_net(small_net());
  auto* ip = p.mutable_layer(1);
  ip->add_param()->set_lr_mult(0);
  ip->add_param()->set_lr_mult(0);
  Net<float> net(p, TRAIN, Device::kCPU);
  // Nothing below the loss learns, so nothing needs backward at all (as in Caffe).
  EXPECT_FALSE(net.layer_need_backward()[1]);
  EXPECT_FALSE(net.layer_need_backward()[2]);
  EXPECT_EQ(net.params_lr()[0], 0.0f);
  p.set_force_backward(true);
  Net<float> forced(p, TRAIN, Device::kCPU);
  EXPECT_TRUE(forced.layer_need_backward()[1]);
  EXPECT_TRUE(forced.layer_need_backward()[2]);
}

TEST(Net, ForceBackwardReachesTheData) {
  NetParameter p = parse_net(small_net());
  p.set_force_backward(true);
  Net<double> net(p, TRAIN, Device::kCPU);
  prim::Handle h;
  net.forward(h);
  net.backward(h);
  double sum = 0;
  for (double v : net.blob_by_name("data")->diff_vector()) sum += std::fabs(v);
  EXPECT_GT(sum, 0.0);
}

TEST(Net, CopyTrainedLayersChecksShapes) {
  Net<float> a(parse_net(small_net()), TRAIN, Device::kCPU);
  NetParameter trained;
  a.to_proto(&trained);
  Net<float> b(parse_net(small_net()), TRAIN, Device::kCPU);
  b.copy_trained_layers_from(trained);
  EXPECT_EQ(a.layer_by_name("ip")->blobs()[0]->data_vector(),
            b.layer_by_name("ip")->blobs()[0]->data_vector());
  NetParameter wide = parse_net(small_net());
  wide.mutable_layer(1)->mutable_inner_product_param()->set_num_output(5);
  Net<float> c(wide, TRAIN, Device::kCPU);
  try {
    c.copy_trained_layers_from(trained);
    FAIL() << "weights of another shape accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("layer ip"), std::string::npos) << e.what();
  }
}

// The weights a user names must fill something: an empty file (a 0-byte .caffemodel parses as
// an empty net) and a file whose layers are all named differently are errors naming the file;
// a partial match reports what it copied, ignored and left on its fillers.
TEST(Net, WeightsThatCopyNothingAreAnError) {
  const std::string two_ip = small_net(R"(
    layer { name: "ip2" type: "InnerProduct" bottom: "ip" top: "ip2"
      inner_product_param { num_output: 2 weight_filler { type: "gaussian" std: 0.1 } } })");
  Net<float> net(parse_net(two_ip), TRAIN, Device::kCPU);
  auto error_of = [&](const NetParameter& trained) -> std::string {
    try {
      require_weights_copied(net.copy_trained_layers_from(trained), "w.caffemodel");
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(error_of(NetParameter()), "w.caffemodel: holds no layer with weights");

  NetParameter trained;
  net.to_proto(&trained);
  NetParameter renamed = trained;
  for (LayerParameter& l : *renamed.mutable_layer()) l.set_name("old_" + l.name());
  EXPECT_EQ(error_of(renamed),
            "w.caffemodel: none of its layers with weights (old_ip, old_ip2) is a layer of the "
            "net (the net's: ip, ip2)");

  // Fine-tuning: ip copied, ip2 renamed in the file.
  NetParameter partial = trained;
  for (LayerParameter& l : *partial.mutable_layer())
    if (l.name() == "ip2") l.set_name("ip2_old");
  const WeightsCopy copy = net.copy_trained_layers_from(partial);
  EXPECT_EQ(copy.copied, std::vector<std::string>{"ip"});
  EXPECT_EQ(copy.unfilled, std::vector<std::string>{"ip2"});
  EXPECT_EQ(copy.ignored, std::vector<std::string>{"ip2_old"});
  EXPECT_EQ(error_of(partial), "");  // a warning, not an error
  EXPECT_EQ(error_of(trained), "");
}

// Loaded weights must be finite: a NaN would make every later output NaN (and Accuracy count
// NaN scores as right). The error names the layer, blob and value, and nothing is copied from
// that blob on.
TEST(Net, NonFiniteWeightsAreAnError) {
  Net<float> net(parse_net(small_net()), TRAIN, Device::kCPU);
  NetParameter trained;
  net.to_proto(&trained);
  trained.mutable_layer(1)->mutable_blobs(1)->set_data(1, std::nanf(""));
  try {
    net.copy_trained_layers_from(trained);
    FAIL() << "NaN weights accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "layer ip, blob 1: value 1 is not finite; trained weights must be finite numbers");
  }
  trained.mutable_layer(1)->mutable_blobs(1)->set_data(1, INFINITY);
  EXPECT_THROW(net.copy_trained_layers_from(trained), Error);
}

// A ResNet block's head: conv, then BatchNorm, Scale and ReLU in place on its output (the
// Scale and ReLU on scale_top: out of place where it is not "conv").
std::string bn_chain_net(const std::string& scale_param = "bias_term: true",
                         const std::string& scale_top = "conv") {
  return R"(
    layer { name: "data" type: "DummyData" top: "data" top: "label"
      dummy_data_param { shape { dim: 4 dim: 3 dim: 5 dim: 5 } shape { dim: 4 }
        data_filler { type: "gaussian" std: 1 } data_filler { type: "constant" value: 1 } } }
    layer { name: "conv" type: "Convolution" bottom: "data" top: "conv"
      convolution_param { num_output: 4 kernel_size: 3 bias_term: false
        weight_filler { type: "gaussian" std: 0.3 } } }
    layer { name: "bn" type: "BatchNorm" bottom: "conv" top: "conv" }
    layer { name: "scale" type: "Scale" bottom: "conv" top: ")" +
         scale_top + R"("
      scale_param { )" +
         scale_param +
         R"( filler { type: "gaussian" std: 1 } bias_filler { type: "gaussian" std: 1 } } }
    layer { name: "relu" type: "ReLU" bottom: ")" +
         scale_top + R"(" top: ")" + scale_top + R"(" relu_param { negative_slope: 0.1 } }
    layer { name: "ip" type: "InnerProduct" bottom: ")" +
         scale_top + R"(" top: "ip"
      inner_product_param { num_output: 3 weight_filler { type: "gaussian" std: 0.3 } } }
    layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" })";
}

// conv, BatchNorm, Scale and ReLU all in place (a ResNet's chain), run apart: the Scale takes its
// input for the scale gradient from BatchNorm's copy of its output instead of a copy of its own,
// and the gradients equal those of the same net with the Scale out of place, bit for bit.
TEST(Net, InPlaceScaleUsesTheCopyBatchNormKeeps) {
  Net<double> in_place(parse_net(bn_chain_net()), TRAIN, Device::kCPU);
  Net<double> apart(parse_net(bn_chain_net("bias_term: true", "scaled")), TRAIN, Device::kCPU);
  in_place.unfuse();
  NetParameter trained;
  in_place.to_proto(&trained);
  apart.copy_trained_layers_from(trained);
  const Tensor<double>* kept = in_place.layer_by_name("bn")->kept_top(0);
  ASSERT_NE(kept, nullptr);
  prim::Handle h;
  for (int step = 0; step < 2; ++step) {
    const double loss = in_place.forward(h);
    apart.blob_by_name("data")->copy_from(*in_place.blob_by_name("data"));
    EXPECT_EQ(apart.forward_range(h, 1, apart.num_layers() - 1), loss);
    EXPECT_EQ(kept->data_vector(), apart.blob_by_name("conv")->data_vector())
        << "BatchNorm keeps its output, the Scale's input";
    in_place.backward(h);
    apart.backward(h);
    for (size_t k = 0; k < in_place.params().size(); ++k)
      EXPECT_EQ(in_place.params()[k]->diff_vector(), apart.params()[k]->diff_vector())
          << "parameter " << k << ", pass " << step;
  }
  // The Scale reads that copy: with it zeroed, the scale's gradient (sum of dy * x) is zero.
  in_place.forward(h);
  const_cast<Tensor<double>*>(kept)->fill_data(0);
  Layer<double>* scale = in_place.layer_by_name("scale");
  scale->blobs()[0]->fill_diff(0);
  in_place.backward(h);
  for (double v : scale->blobs()[0]->diff_vector()) EXPECT_EQ(v, 0.0);
  // With statistics from the stored averages (TEST), BatchNorm keeps nothing.
  Net<double> test(parse_net(bn_chain_net()), TEST, Device::kCPU);
  EXPECT_EQ(test.layer_by_name("bn")->kept_top(0), nullptr);
}

int layer_index(const Net<double>& net, const std::string& name) {
  const auto& names = net.layer_names();
  return int(std::find(names.begin(), names.end(), name) - names.begin());
}

// Twin nets with the same weights and inputs, the second running its layers apart.
struct FusedAndApart {
  Net<double> fused, apart;
  explicit FusedAndApart(const std::string& text, Phase phase = TRAIN)
      : fused(parse_net(text), phase, Device::kCPU), apart(parse_net(text), phase, Device::kCPU) {
    apart.unfuse();
    NetParameter trained;
    fused.to_proto(&trained);
    apart.copy_trained_layers_from(trained);
  }
  // One forward (and backward in TRAIN) of each on the fused net's data; returns both losses.
  std::pair<double, double> step(prim::Handle& h, bool backward) {
    const double loss = fused.forward(h);
    apart.blob_by_name("data")->copy_from(*fused.blob_by_name("data"));
    const double loss_apart = apart.forward_range(h, 1, apart.num_layers() - 1);
    if (backward) {
      fused.backward(h);
      apart.backward(h);
    }
    return {loss, loss_apart};
  }
  // Two training steps of each: the losses, the blob `top` and every parameter's data (the
  // running statistics change with each forward) and gradient agree to float re-association.
  void expect_same_steps(const std::string& top) {
    prim::Handle h;
    const test::Tolerance tol{1e-12, 1e-10, true};
    for (int pass = 0; pass < 2; ++pass) {
      SCOPED_TRACE(::testing::Message() << "pass " << pass);
      const auto [loss, loss_apart] = step(h, true);
      EXPECT_NEAR(loss, loss_apart, 1e-12 * std::fabs(loss_apart));
      EXPECT_TRUE(test::all_close(fused.blob_by_name(top)->data_vector(),
                                  apart.blob_by_name(top)->data_vector(), tol))
          << top;
      for (size_t k = 0; k < fused.params().size(); ++k) {
        EXPECT_TRUE(test::all_close(fused.params()[k]->data_vector(),
                                    apart.params()[k]->data_vector(), tol))
            << "parameter " << k;
        EXPECT_TRUE(test::all_close(fused.params()[k]->diff_vector(),
                                    apart.params()[k]->diff_vector(), tol))
            << "gradient of parameter " << k;
      }
    }
  }
};

// The BatchNorm runs the Scale and the ReLU after it (one pass over the data instead of three):
// the same outputs, gradients (the Scale's blobs' included) and running statistics as the layers
// apart, to float re-association.
TEST(Net, BatchNormRunsTheScaleAndReluAfterItFused) {
  for (const std::string scale : {"bias_term: true", "bias_term: false"}) {
    SCOPED_TRACE(scale);
    FusedAndApart t(bn_chain_net(scale));
    const int bn = layer_index(t.fused, "bn");
    EXPECT_EQ(t.fused.absorbed_by(bn), -1);
    EXPECT_EQ(t.fused.absorbed_by(bn + 1), bn) << "scale";
    EXPECT_EQ(t.fused.absorbed_by(bn + 2), bn) << "relu";
    EXPECT_EQ(t.fused.group_end(bn), bn + 2);
    EXPECT_EQ(t.apart.absorbed_by(bn + 1), -1);
    t.expect_same_steps("conv");
  }
}

// A residual block: conv, BatchNorm, Scale, ReLU, conv, then the shortcut sum and its in-place
// ReLU (the Split of conv_a's output sums two gradients).
std::string residual_net() {
  return R"(
    layer { name: "data" type: "DummyData" top: "data" top: "label"
      dummy_data_param { shape { dim: 4 dim: 3 dim: 6 dim: 6 } shape { dim: 4 }
        data_filler { type: "gaussian" std: 1 } data_filler { type: "constant" value: 1 } } }
    layer { name: "conv_a" type: "Convolution" bottom: "data" top: "conv_a"
      convolution_param { num_output: 4 kernel_size: 3 pad: 1 bias_term: false
        weight_filler { type: "gaussian" std: 0.3 } } }
    layer { name: "bn_a" type: "BatchNorm" bottom: "conv_a" top: "conv_a" }
    layer { name: "scale_a" type: "Scale" bottom: "conv_a" top: "conv_a"
      scale_param { bias_term: true filler { type: "gaussian" std: 1 } } }
    layer { name: "relu_a" type: "ReLU" bottom: "conv_a" top: "conv_a" }
    layer { name: "conv_b" type: "Convolution" bottom: "conv_a" top: "conv_b"
      convolution_param { num_output: 4 kernel_size: 3 pad: 1 bias_term: false
        weight_filler { type: "gaussian" std: 0.3 } } }
    layer { name: "sum" type: "Eltwise" bottom: "conv_a" bottom: "conv_b" top: "sum"
      eltwise_param { coeff: 1 coeff: -0.5 } }
    layer { name: "relu_sum" type: "ReLU" bottom: "sum" top: "sum" }
    layer { name: "ip" type: "InnerProduct" bottom: "sum" top: "ip"
      inner_product_param { num_output: 3 weight_filler { type: "gaussian" std: 0.3 } } }
    layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" })";
}

// The shortcut sum runs the ReLU after it: one pass forward, and backward writes both inputs'
// gradients from one read of dy and y.
TEST(Net, EltwiseRunsTheReluAfterItFused) {
  FusedAndApart t(residual_net());
  const int sum = layer_index(t.fused, "sum");
  EXPECT_EQ(t.fused.absorbed_by(sum + 1), sum);
  EXPECT_EQ(t.fused.absorbed_by(layer_index(t.fused, "relu_a")), layer_index(t.fused, "bn_a"));
  t.expect_same_steps("sum");
}

// A convolution and an inner product run the ReLU after them in their epilogue (with the bias);
// a leaky ReLU stays apart.
TEST(Net, ConvolutionAndInnerProductRunTheReluAfterThemFused) {
  for (const std::string slope : {"0", "0.1"}) {
    SCOPED_TRACE(slope);
    const std::string relu_param = "relu_param { negative_slope: " + slope + " }";
    FusedAndApart t(R"(
      layer { name: "data" type: "DummyData" top: "data" top: "label"
        dummy_data_param { shape { dim: 4 dim: 3 dim: 6 dim: 6 } shape { dim: 4 }
          data_filler { type: "gaussian" std: 1 } data_filler { type: "constant" value: 1 } } }
      layer { name: "conv" type: "Convolution" bottom: "data" top: "conv"
        convolution_param { num_output: 4 kernel_size: 3 pad: 1
          weight_filler { type: "gaussian" std: 0.3 } bias_filler { type: "gaussian" std: 0.3 } } }
      layer { name: "relu" type: "ReLU" bottom: "conv" top: "conv" )" +
                    relu_param + R"( }
      layer { name: "ip" type: "InnerProduct" bottom: "conv" top: "ip"
        inner_product_param { num_output: 5 weight_filler { type: "gaussian" std: 0.3 }
          bias_filler { type: "gaussian" std: 0.3 } } }
      layer { name: "ip_relu" type: "ReLU" bottom: "ip" top: "ip" )" +
                    relu_param + R"( }
      layer { name: "ip2" type: "InnerProduct" bottom: "ip" top: "ip2"
        inner_product_param { num_output: 3 weight_filler { type: "gaussian" std: 0.3 } } }
      layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip2" bottom: "label" top: "loss" })");
    const int conv = layer_index(t.fused, "conv"), ip = layer_index(t.fused, "ip");
    EXPECT_EQ(t.fused.absorbed_by(conv + 1), slope == "0" ? conv : -1);
    EXPECT_EQ(t.fused.absorbed_by(ip + 1), slope == "0" ? ip : -1);
    t.expect_same_steps("ip");
  }
}

// A forward that stops between the BatchNorm and its Scale sees the BatchNorm's own output: the
// group runs apart from then on, and still matches.
TEST(Net, ARangeThatSplitsAFusedGroupRunsItApart) {
  FusedAndApart t(bn_chain_net());
  const int bn = layer_index(t.fused, "bn");
  prim::Handle h;
  t.fused.forward_range(h, 0, bn);
  EXPECT_EQ(t.fused.absorbed_by(bn + 1), -1);
  EXPECT_EQ(t.fused.absorbed_by(bn + 2), -1);
  const auto conv = t.fused.blob_by_name("conv")->data_vector();
  double sum = 0;
  for (double v : conv) sum += v;
  EXPECT_NEAR(sum, 0.0, 1e-9) << "normalized only: every channel's mean is 0";
  const auto [loss, loss_apart] = t.step(h, true);
  EXPECT_NEAR(loss, loss_apart, 1e-12 * std::fabs(loss_apart));
}

// With the stored statistics (TEST), BatchNorm fuses once the net is declared forward-only.
TEST(Net, ForwardOnlyNetFusesBatchNormWithStoredStatistics) {
  FusedAndApart t(bn_chain_net(), TEST);
  const int bn = layer_index(t.fused, "bn");
  EXPECT_EQ(t.fused.absorbed_by(bn + 1), -1) << "a backward could still run";
  t.fused.share_inference_memory();
  // The convolution before it folds the BatchNorm and its Scale (net_fold_test.cpp); the leaky
  // ReLU runs on its own.
  EXPECT_EQ(t.fused.absorbed_by(bn), bn - 1);
  EXPECT_EQ(t.fused.absorbed_by(bn + 1), bn - 1);
  EXPECT_EQ(t.fused.absorbed_by(bn + 2), -1);
  // Statistics that make the stored averages matter: mean sums 1, variance sums 2, weight 2.
  for (auto* net : {&t.fused, &t.apart}) {
    auto& blobs = net->layer_by_name("bn")->blobs();
    blobs[0]->fill_data(1.0);
    blobs[1]->fill_data(2.0);
    blobs[2]->fill_data(2.0);
  }
  prim::Handle h;
  // The forward-only memory plan reuses the activations: the loss is what keeps its value.
  const auto [loss, loss_apart] = t.step(h, false);
  EXPECT_NEAR(loss, loss_apart, 1e-12 * std::fabs(loss_apart));
}

// Only a learned scale of the channels fuses (here the scale runs over axis 0, the batch), and a
// ReLU is not taken past a layer that was not.
TEST(Net, OnlyAScaleOfTheChannelsIsFused) {
  Net<double> net(parse_net(bn_chain_net("axis: 0 num_axes: 1")), TRAIN, Device::kCPU);
  const int bn = layer_index(net, "bn");
  EXPECT_EQ(net.absorbed_by(bn + 1), -1);
  EXPECT_EQ(net.absorbed_by(bn + 2), -1);
}

TEST(Net, BadGraphsGiveOneClearError) {
  const auto message_of = [](const std::string& text) -> std::string {
    try {
      Net<float> net(parse_net(text), TRAIN, Device::kCPU);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(message_of(small_net(R"(layer { name: "r" type: "ReLU" bottom: "nope" top: "r" })"))
                .find("\"nope\" is not produced"),
            std::string::npos);
  EXPECT_NE(message_of(small_net(R"(layer { name: "x" type: "NoSuchLayer" bottom: "ip" })"))
                .find("NoSuchLayer"),
            std::string::npos);
  // Labels of 4 samples against 3 predictions: a shape mismatch between layers.
  const std::string mismatch = message_of(R"(
    layer { name: "data" type: "DummyData" top: "data" top: "label"
      dummy_data_param { shape { dim: 3 dim: 5 } shape { dim: 4 } } }
    layer { name: "loss" type: "SoftmaxWithLoss" bottom: "data" bottom: "label" top: "loss" })");
  EXPECT_NE(mismatch.find("layer loss"), std::string::npos) << mismatch;
  // A 7x7 kernel on a 5x5 input without padding.
  const std::string kernel = message_of(R"(
    layer { name: "data" type: "Input" top: "data"
      input_param { shape { dim: 1 dim: 1 dim: 5 dim: 5 } } }
    layer { name: "conv" type: "Convolution" bottom: "data" top: "conv"
      convolution_param { num_output: 2 kernel_size: 7 } })");
  EXPECT_NE(kernel.find("layer conv"), std::string::npos) << kernel;
  // Two layers writing the same top.
  EXPECT_NE(message_of(small_net(R"(
    layer { name: "again" type: "InnerProduct" bottom: "data" top: "ip"
      inner_product_param { num_output: 2 } })"))
                .find("already produced"),
            std::string::npos);
}

}  // namespace
}  // namespace crema
