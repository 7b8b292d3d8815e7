// Net::share_activation_memory: a training step with shared activation memory equals the plain
// net's bit for bit, buffers are reused, a gradient some consumer never writes stays zero, and
// every layer's data-use declaration holds (what it calls forward-only, backward never reads).
#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "core/net.h"
#include "primitives/handle.h"

namespace crema {
namespace {

NetParameter parse_net(const std::string& text) {
  NetParameter p;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &p)) << text;
  return p;
}

// Layers that declare their data uses, in the arrangements that change them: in place and
// not; MAX and AVE pooling; SUM, PROD and MAX sums; a Flatten with layers between it and its
// consumer; an Accuracy on a Split top without a backward. The data that no backward reads
// (ForwardOnlyDataIsNotReadByBackward lists it) covers a ResNet's conv, BatchNorm, Scale branch
// into a sum, and the inputs of MAX sums, Concat, Sigmoid, TanH, Softmax and the loss.
const char* const kMixedNet = R"(
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

// Two nets of the same definition and weights.
struct Twins {
  Net<double> plain, other;
  explicit Twins(const NetParameter& p)
      : plain(p, TRAIN, Device::kCPU), other(p, TRAIN, Device::kCPU) {
    NetParameter trained;
    plain.to_proto(&trained);
    other.copy_trained_layers_from(trained);
  }
  // Runs forward on both, the second from the first's data; `between` runs before the second's
  // backward. Compares the losses and the parameters' gradients, bit for bit.
  template <typename F>
  void step(prim::Handle& h, int pass, F between) {
    const double loss = plain.forward(h);
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

// Pairs of distinct byte ranges among the activations' data and diffs that overlap (views,
// which have the same range, count once).
int overlapping_pairs(const Net<double>& net) {
  std::set<std::pair<const char*, size_t>> ranges;
  for (const auto& b : net.blobs())
    for (const double* p : {b->data(), b->diff()})
      if (b->bytes() > 0) ranges.insert({reinterpret_cast<const char*>(p), b->bytes()});
  int pairs = 0;
  for (auto a = ranges.begin(); a != ranges.end(); ++a)
    for (auto c = std::next(a); c != ranges.end(); ++c)
      pairs += c->first < a->first + a->second && a->first < c->first + c->second;
  return pairs;
}

TEST(NetMemory, SharedMemoryLeavesTheStepUnchanged) {
  Twins t(parse_net(kMixedNet));
  t.other.share_activation_memory();
  prim::Handle h;
  for (int pass = 0; pass < 2; ++pass)  // the second pass finds the buffers holding old values
    t.step(h, pass, [] {});
  // Memory is reused: distinct activations' byte ranges overlap, which they never do alone.
  EXPECT_EQ(overlapping_pairs(t.plain), 0);
  EXPECT_GT(overlapping_pairs(t.other), 5);
  // The Split top the Accuracy layer reads: its gradient is never written and stays zero.
  const auto& names = t.other.layer_names();
  const size_t accuracy = size_t(std::find(names.begin(), names.end(), "accuracy") - names.begin());
  ASSERT_LT(accuracy, names.size());
  const auto unused = t.other.bottom_vecs()[accuracy][0]->diff_vector();
  EXPECT_TRUE(std::all_of(unused.begin(), unused.end(), [](double v) { return v == 0; }));
}

// The data of a residual branch (conv, BatchNorm, Scale in place) that only the sum's forward
// reads is dead after that forward: a later activation takes its buffer.
TEST(NetMemory, DataNoBackwardReadsMakesRoom) {
  Net<double> net(parse_net(kMixedNet), TRAIN, Device::kCPU);
  net.share_activation_memory();
  const Tensor<double>& branch = *net.blob_by_name("conv2");
  const auto* begin = reinterpret_cast<const char*>(branch.data());
  const auto* end = begin + branch.bytes();
  int sharing = 0;
  for (const auto& b : net.blobs()) {
    if (b.get() == &branch) continue;
    for (const double* p : {b->data(), b->diff()}) {
      const auto* q = reinterpret_cast<const char*>(p);
      sharing += q < end && begin < q + b->bytes();
    }
  }
  EXPECT_GT(sharing, 0);
}

// What a layer declares forward-only is overwritten with NaN between forward and backward: the
// gradients stay those of the untouched net. A layer whose backward read such data would
// spread the NaN (or fail on the null pointer it then gets).
TEST(NetMemory, ForwardOnlyDataIsNotReadByBackward) {
  using Use = Layer<double>::DataUse;
  Twins t(parse_net(kMixedNet));
  Net<double>& net = t.other;
  // Per data buffer (views share one): whether every use is declared and none in backward.
  std::map<const prim::DeviceBuffer*, bool> dead;
  const auto note = [&](const Tensor<double>* b, Use use, bool runs_backward) {
    const bool ok = use == Use::kForward || (use == Use::kBackward && !runs_backward);
    auto [it, fresh] = dead.emplace(b->data_buffer(), ok);
    if (!fresh) it->second = it->second && ok;
  };
  prim::Handle h;
  net.forward(h);  // allocates every buffer
  for (int i = 0; i < net.num_layers(); ++i) {
    const Layer<double>& layer = *net.layers()[size_t(i)];
    const bool input = net.bottom_vecs()[size_t(i)].empty();
    const bool back = net.layer_need_backward()[size_t(i)];
    for (size_t j = 0; j < net.top_vecs()[size_t(i)].size(); ++j)
      note(net.top_vecs()[size_t(i)][j], input ? Use::kUnknown : layer.top_data_use(int(j)), back);
    for (size_t j = 0; j < net.bottom_vecs()[size_t(i)].size(); ++j)
      note(net.bottom_vecs()[size_t(i)][j], layer.bottom_data_use(int(j)), back);
  }
  for (const Tensor<double>* out : net.output_blobs()) dead[out->data_buffer()] = false;
  std::set<std::string> poisoned;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  t.step(h, 0, [&] {
    for (size_t k = 0; k < net.blobs().size(); ++k)
      if (dead[net.blobs()[k]->data_buffer()]) {
        net.blobs()[k]->fill_data(nan);
        poisoned.insert(net.blob_names()[k]);
      }
  });
  // Poisoned: the forward-only data of every kind in the net.
  for (const char* name :
       {"conv2", "conv3", "conv4", "conv5", "ip1", "pave", "flat", "relu2", "ip3"})
    EXPECT_TRUE(poisoned.count(name)) << name << " was kept";
  // Kept: what some backward reads (ReLU's, PROD's, convolution's, Sigmoid's, LRN's, TanH's,
  // MAX pooling's, a Scale's out of place, InnerProduct's and Softmax's data).
  for (const char* name : {"conv1", "sum", "prod", "mx", "sig", "norm", "th", "cat", "pmax",
                           "scale3", "cat2", "ip2", "soft"})
    EXPECT_FALSE(poisoned.count(name)) << name << " was poisoned";
}

}  // namespace
}  // namespace crema
