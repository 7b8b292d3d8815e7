// The net and the helpers of the activation-memory tests (net_memory_test.cpp on the CPU,
// net_memory_cuda_test.cpp on the GPU).
#pragma once

#include <gtest/gtest.h>

#include <limits>
#include <map>
#include <set>
#include <string>

#include "core/net.h"
#include "net_text.h"
#include "primitives/handle.h"

namespace crema::test {

// Layers that declare their data uses, in the arrangements that change them: in place and
// not; MAX and AVE pooling; SUM, PROD and MAX sums; a Flatten with layers between it and its
// consumer; an Accuracy on a Split top without a backward. The data that no backward reads
// (ForwardOnlyDataIsNotReadByBackward lists it) covers a ResNet's conv, BatchNorm, Scale branch
// into a sum, and the inputs of MAX sums, Concat, Sigmoid, TanH, Softmax and the loss.
inline const char* const kMixedNet = R"(
  layer { name: "data" type: "DummyData" top: "data" top: "label"
    dummy_data_param { shape { dim: 4 dim: 3 dim: 8 dim: 8 } shape { dim: 4 }
      data_filler { type: "gaussian" std: 1 } data_filler { type: "constant" value: 1 } } }
  layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
    convolution_param { num_output: 4 kernel_size: 3 pad: 1 bias_term: false
      weight_filler { type: "gaussian" std: 0.3 } } }
  layer { name: "bn1" type: "BatchNorm" bottom: "conv1" top: "conv1" }
  layer { name: "scale1" type: "Scale" bottom: "conv1" top: "conv1"
    scale_param { bias_term: true filler { type: "constant" value: 1.5 } } }
  layer { name: "relu1" type: "ReLU" bottom: "conv1" top: "conv1" }
  layer { name: "conv2" type: "Convolution" bottom: "conv1" top: "conv2"
    convolution_param { num_output: 4 kernel_size: 3 pad: 1 bias_term: false
      weight_filler { type: "gaussian" std: 0.3 } } }
  layer { name: "bn2" type: "BatchNorm" bottom: "conv2" top: "conv2" }
  layer { name: "scale2" type: "Scale" bottom: "conv2" top: "conv2"
    scale_param { bias_term: true filler { type: "gaussian" std: 1 } } }
  layer { name: "sum" type: "Eltwise" bottom: "conv1" bottom: "conv2" top: "sum" }
  layer { name: "prod" type: "Eltwise" bottom: "sum" bottom: "conv1" top: "prod"
    eltwise_param { operation: PROD } }
  layer { name: "conv5" type: "Convolution" bottom: "conv1" top: "conv5"
    convolution_param { num_output: 4 kernel_size: 3 pad: 1
      weight_filler { type: "gaussian" std: 0.3 } } }
  layer { name: "mx" type: "Eltwise" bottom: "prod" bottom: "conv5" top: "mx"
    eltwise_param { operation: MAX } }
  layer { name: "conv3" type: "Convolution" bottom: "mx" top: "conv3"
    convolution_param { num_output: 4 kernel_size: 3 pad: 1
      weight_filler { type: "gaussian" std: 0.3 } } }
  layer { name: "sig" type: "Sigmoid" bottom: "conv3" top: "sig" }
  layer { name: "conv4" type: "Convolution" bottom: "mx" top: "conv4"
    convolution_param { num_output: 4 kernel_size: 3 pad: 1
      weight_filler { type: "gaussian" std: 0.3 } } }
  layer { name: "th" type: "TanH" bottom: "conv4" top: "th" }
  layer { name: "norm" type: "LRN" bottom: "sig" top: "norm" lrn_param { local_size: 3 } }
  layer { name: "cat" type: "Concat" bottom: "norm" bottom: "th" top: "cat" }
  layer { name: "pmax" type: "Pooling" bottom: "cat" top: "pmax"
    pooling_param { pool: MAX kernel_size: 3 stride: 2 } }
  layer { name: "pave" type: "Pooling" bottom: "cat" top: "pave"
    pooling_param { pool: AVE kernel_size: 2 stride: 2 } }
  layer { name: "flat" type: "Flatten" bottom: "pave" top: "flat" }
  layer { name: "scale3" type: "Scale" bottom: "pmax" top: "scale3"
    scale_param { filler { type: "gaussian" std: 1 } } }
  layer { name: "ip1" type: "InnerProduct" bottom: "scale3" top: "ip1"
    inner_product_param { num_output: 5 weight_filler { type: "gaussian" std: 0.3 } } }
  layer { name: "cat2" type: "Concat" bottom: "ip1" bottom: "flat" top: "cat2" }
  layer { name: "ip2" type: "InnerProduct" bottom: "cat2" top: "ip2"
    inner_product_param { num_output: 5 weight_filler { type: "gaussian" std: 0.3 } } }
  layer { name: "relu2" type: "ReLU" bottom: "ip2" top: "relu2" relu_param { negative_slope: 0.1 } }
  layer { name: "soft" type: "Softmax" bottom: "relu2" top: "soft" }
  layer { name: "ip3" type: "InnerProduct" bottom: "soft" top: "ip3"
    inner_product_param { num_output: 3 weight_filler { type: "gaussian" std: 0.3 } } }
  layer { name: "accuracy" type: "Accuracy" bottom: "ip3" bottom: "label" top: "accuracy" }
  layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip3" bottom: "label" top: "loss" })";

// More layers that declare their data uses: PReLU in place and not, MVN, Tile, Crop, Reduction,
// Embed, and the Euclidean and sigmoid cross-entropy losses. Forward-only data here: MVN's and
// Tile's outputs and the two Reduction outputs the sum reads.
inline const char* const kMoreNet = R"(
  layer { name: "data" type: "DummyData" top: "data" top: "label" top: "ids" top: "target"
    top: "odds"
    dummy_data_param { shape { dim: 4 dim: 3 dim: 8 dim: 8 } shape { dim: 4 } shape { dim: 4 dim: 5 }
      shape { dim: 4 } shape { dim: 4 dim: 3 }
      data_filler { type: "gaussian" std: 1 } data_filler { type: "constant" value: 1 }
      data_filler { type: "constant" value: 2 } data_filler { type: "constant" value: 0.3 }
      data_filler { type: "constant" value: 0.5 } } }
  layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
    convolution_param { num_output: 4 kernel_size: 3 pad: 1
      weight_filler { type: "gaussian" std: 0.3 } } }
  layer { name: "prelu1" type: "PReLU" bottom: "conv1" top: "conv1" }
  layer { name: "conv2" type: "Convolution" bottom: "conv1" top: "conv2"
    convolution_param { num_output: 4 kernel_size: 3 pad: 1
      weight_filler { type: "gaussian" std: 0.3 } } }
  layer { name: "prelu2" type: "PReLU" bottom: "conv2" top: "p2" }
  layer { name: "mvn" type: "MVN" bottom: "p2" top: "mvn" }
  layer { name: "tile" type: "Tile" bottom: "mvn" top: "tile" tile_param { axis: 1 tiles: 2 } }
  layer { name: "crop" type: "Crop" bottom: "tile" bottom: "conv1" top: "crop"
    crop_param { axis: 1 offset: 2 offset: 0 offset: 0 } }
  layer { name: "red" type: "Reduction" bottom: "crop" top: "red"
    reduction_param { operation: SUMSQ axis: 1 coeff: 0.01 } }
  layer { name: "emb" type: "Embed" bottom: "ids" top: "emb"
    embed_param { input_dim: 10 num_output: 3 weight_filler { type: "gaussian" std: 1 } } }
  layer { name: "emb_sum" type: "Reduction" bottom: "emb" top: "emb_sum" reduction_param { axis: 1 } }
  layer { name: "s" type: "Eltwise" bottom: "red" bottom: "emb_sum" top: "s" }
  layer { name: "euclid" type: "EuclideanLoss" bottom: "s" bottom: "target" top: "euclid" }
  layer { name: "ip" type: "InnerProduct" bottom: "crop" top: "ip"
    inner_product_param { num_output: 3 weight_filler { type: "gaussian" std: 0.3 } } }
  layer { name: "softmax_loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "sl" }
  layer { name: "sigmoid_loss" type: "SigmoidCrossEntropyLoss" bottom: "ip" bottom: "odds"
    top: "scl" })";

// The remaining layers with declared data uses: BatchReindex, SPP, Im2col, ArgMax and the
// contrastive, hinge, multinomial logistic and infogain losses. Forward-only data here: conv1
// (read by BatchReindex and Im2col) and c (read by the infogain loss and ArgMax).
inline const char* const kRestNet = R"(
  layer { name: "data" type: "DummyData" top: "data" top: "label" top: "sim" top: "order"
    top: "H"
    dummy_data_param { shape { dim: 4 dim: 3 dim: 6 dim: 6 } shape { dim: 4 } shape { dim: 4 }
      shape { dim: 4 } shape { dim: 3 dim: 3 }
      data_filler { type: "gaussian" std: 1 } data_filler { type: "constant" value: 1 }
      data_filler { type: "constant" value: 1 } data_filler { type: "constant" value: 2 }
      data_filler { type: "constant" value: 0.5 } } }
  layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
    convolution_param { num_output: 4 kernel_size: 3 pad: 1
      weight_filler { type: "gaussian" std: 0.3 } } }
  layer { name: "reidx" type: "BatchReindex" bottom: "conv1" bottom: "order" top: "re" }
  layer { name: "spp" type: "SPP" bottom: "re" top: "spp" spp_param { pyramid_height: 2 } }
  layer { name: "col" type: "Im2col" bottom: "conv1" top: "col"
    convolution_param { kernel_size: 3 stride: 3 } }
  layer { name: "ip_a" type: "InnerProduct" bottom: "spp" top: "a"
    inner_product_param { num_output: 3 weight_filler { type: "gaussian" std: 0.3 } } }
  layer { name: "ip_b" type: "InnerProduct" bottom: "col" top: "b"
    inner_product_param { num_output: 3 weight_filler { type: "gaussian" std: 0.3 } } }
  layer { name: "ip_c" type: "InnerProduct" bottom: "spp" top: "c"
    inner_product_param { num_output: 3 weight_filler { type: "gaussian" std: 0.3 } } }
  layer { name: "contrastive" type: "ContrastiveLoss" bottom: "a" bottom: "b" bottom: "sim"
    top: "cl" contrastive_loss_param { margin: 1 } }
  layer { name: "hinge" type: "HingeLoss" bottom: "a" bottom: "label" top: "hl" }
  layer { name: "prob" type: "Softmax" bottom: "b" top: "prob" }
  layer { name: "mlog" type: "MultinomialLogisticLoss" bottom: "prob" bottom: "label" top: "ml" }
  layer { name: "info" type: "InfogainLoss" bottom: "c" bottom: "label" bottom: "H" top: "il" }
  layer { name: "am" type: "ArgMax" bottom: "c" top: "am" })";

inline NetParameter mixed_net() { return parse_net(kMixedNet); }
inline NetParameter more_net() { return parse_net(kMoreNet); }
inline NetParameter rest_net() { return parse_net(kRestNet); }
// The blobs of more_net() and rest_net() whose data backward never reads (each forward-only
// input with the Split views that feed its readers).
inline const std::set<std::string> kMoreNetForwardOnly = {"emb_sum", "mvn", "red", "tile"};
inline const std::set<std::string> kRestNetForwardOnly = {
    "c",     "c_ip_c_0_split_0",      "c_ip_c_0_split_1",
    "conv1", "conv1_conv1_0_split_0", "conv1_conv1_0_split_1"};

// Two nets of the same definition, phase and weights on one device; `other` is the one under
// test.
template <typename Dtype>
struct Twins {
  Net<Dtype> plain, other;
  Twins(const NetParameter& p, Device device, Phase phase = TRAIN)
      : plain(p, phase, device), other(p, phase, device) {
    NetParameter trained;
    plain.to_proto(&trained);
    other.copy_trained_layers_from(trained);
  }
  // Runs forward on both, the second from the first's data; `between` runs before the second's
  // backward. Compares the losses and the parameters' gradients, bit for bit.
  template <typename F>
  void step(prim::Handle& h, int pass, F between) {
    const Dtype loss = plain.forward(h);
    other.blob_by_name("data")->copy_from(*plain.blob_by_name("data"));
    EXPECT_EQ(other.forward_range(h, 1, other.num_layers() - 1), loss) << "pass " << pass;
    between();
    plain.backward(h);
    other.backward(h);
    for (size_t k = 0; k < plain.params().size(); ++k)
      EXPECT_EQ(plain.params()[k]->diff_vector(), other.params()[k]->diff_vector())
          << "parameter " << k << ", pass " << pass;
  }
};

// Overwrites with NaN the data of every blob that all its layers declare forward-only (views
// count with the blob they view), after a forward of `net`; returns the blobs' names.
template <typename Dtype>
std::set<std::string> poison_forward_only(Net<Dtype>& net) {
  using Use = DataUse;
  std::map<const prim::DeviceBuffer*, bool> dead;  // per data buffer
  const auto note = [&](const Tensor<Dtype>* b, Use use, bool runs_backward) {
    const bool ok = use == Use::kForward || (use == Use::kBackward && !runs_backward);
    auto [it, fresh] = dead.emplace(b->data_buffer(), ok);
    if (!fresh) it->second = it->second && ok;
  };
  for (int i = 0; i < net.num_layers(); ++i) {
    const Layer<Dtype>& layer = *net.layers()[size_t(i)];
    const bool input = net.bottom_vecs()[size_t(i)].empty();
    const bool back = net.layer_need_backward()[size_t(i)];
    for (size_t j = 0; j < net.top_vecs()[size_t(i)].size(); ++j)
      note(net.top_vecs()[size_t(i)][j], input ? Use::kUnknown : layer.top_data_use(int(j)), back);
    for (size_t j = 0; j < net.bottom_vecs()[size_t(i)].size(); ++j)
      note(net.bottom_vecs()[size_t(i)][j], layer.bottom_data_use(int(j)), back);
  }
  for (const Tensor<Dtype>* out : net.output_blobs()) dead[out->data_buffer()] = false;
  std::set<std::string> poisoned;
  for (size_t k = 0; k < net.blobs().size(); ++k)
    if (dead[net.blobs()[k]->data_buffer()]) {
      net.blobs()[k]->fill_data(std::numeric_limits<Dtype>::quiet_NaN());
      poisoned.insert(net.blob_names()[k]);
    }
  return poisoned;
}

// The declarations of p's layers, both ways: two steps with the activations in one arena equal
// the plain net's (`inspect` then sees the arena's net), and the data that poison_forward_only
// overwrites before backward leaves the gradients unchanged. Returns what it overwrote.
template <typename Dtype, typename F>
std::set<std::string> check_declarations(const NetParameter& p, Device device, F inspect) {
  prim::Handle h(device);
  {
    Twins<Dtype> t(p, device);
    t.other.share_activation_memory();
    for (int pass = 0; pass < 2; ++pass) t.step(h, pass, [] {});
    inspect(t.other);
  }
  Twins<Dtype> t(p, device);
  std::set<std::string> poisoned;
  t.step(h, 0, [&] { poisoned = poison_forward_only(t.other); });
  return poisoned;
}

}  // namespace crema::test
