// Net::share_activation_memory: a training step with shared activation memory equals the plain
// net's bit for bit, buffers are reused, a gradient some consumer never writes stays zero, and
// every layer's data-use declaration holds (what it calls forward-only, backward never reads).
// Net::share_inference_memory: forward-only nets share more and plan no gradients.
#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <set>
#include <string>
#include <utility>

#include "net_memory_util.h"

namespace crema {
namespace {

using test::mixed_net;
using test::Twins;

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

// The arena reused memory: some distinct activations share bytes.
void expect_reuse(const Net<double>& net) { EXPECT_GT(overlapping_pairs(net), 0); }

TEST(NetMemory, SharedMemoryLeavesTheStepUnchanged) {
  Twins<double> t(mixed_net(), Device::kCPU);
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
  Net<double> net(mixed_net(), TRAIN, Device::kCPU);
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

// A net that only runs forward: data live until their last forward read, so even what training
// keeps for backward (conv1, read by ReLU's, the convolutions' and PROD's backward) makes room;
// the outputs equal the plain net's bit for bit, and no gradient memory is planned.
TEST(NetMemory, InferenceSharesDataUntilTheLastForwardRead) {
  Twins<double> t(mixed_net(), Device::kCPU, TEST);
  Net<double>& plain = t.plain;
  Net<double>& shared = t.other;
  shared.share_inference_memory();
  prim::Handle h;
  for (int pass = 0; pass < 2; ++pass) {
    const double loss = plain.forward(h);
    shared.blob_by_name("data")->copy_from(*plain.blob_by_name("data"));
    EXPECT_EQ(shared.forward_range(h, 1, shared.num_layers() - 1), loss) << "pass " << pass;
    for (size_t o = 0; o < plain.output_blobs().size(); ++o)
      EXPECT_EQ(plain.output_blobs()[o]->data_vector(), shared.output_blobs()[o]->data_vector());
  }
  // conv1's bytes hold a later activation's data; no gradient lies in the data's memory.
  const auto range = [](const Tensor<double>& t, const double* p) {
    return std::pair(reinterpret_cast<const char*>(p),
                     reinterpret_cast<const char*>(p) + t.bytes());
  };
  const auto overlap = [](auto a, auto b) { return a.first < b.second && b.first < a.second; };
  const Tensor<double>& conv1 = *shared.blob_by_name("conv1");
  int sharing = 0;
  for (const auto& b : shared.blobs()) {
    if (b->data_buffer() != conv1.data_buffer())
      sharing += overlap(range(*b, b->data()), range(conv1, conv1.data()));
    if (!b->diff_buffer()) continue;
    for (const auto& c : shared.blobs()) {
      EXPECT_FALSE(overlap(range(*b, b->diff()), range(*c, c->data()))) << "a gradient was planned";
    }
  }
  EXPECT_GT(sharing, 0);
}

// The other layers with declared data uses (more_net(), rest_net()): the step unchanged with
// shared memory, memory reused, and their forward-only data unread by backward.
TEST(NetMemory, MoreLayersKeepTheStepAndTheirDeclarations) {
  EXPECT_EQ(test::check_declarations<double>(test::more_net(), Device::kCPU, expect_reuse),
            test::kMoreNetForwardOnly);
}

TEST(NetMemory, RemainingLayersKeepTheStepAndTheirDeclarations) {
  EXPECT_EQ(test::check_declarations<double>(test::rest_net(), Device::kCPU, expect_reuse),
            test::kRestNetForwardOnly);
}

// What a layer declares forward-only is overwritten with NaN between forward and backward: the
// gradients stay those of the untouched net. A layer whose backward read such data would
// spread the NaN (or fail on the null pointer it then gets).
TEST(NetMemory, ForwardOnlyDataIsNotReadByBackward) {
  Twins<double> t(mixed_net(), Device::kCPU);
  prim::Handle h;
  std::set<std::string> poisoned;
  t.step(h, 0, [&] { poisoned = test::poison_forward_only(t.other); });
  // Poisoned: the forward-only data of every kind in the net (and ip3's two Split views).
  EXPECT_EQ(poisoned.size(), 11u);
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
