// Activation memory on the GPU: the training steps of the two test nets with their activations in
// one arena equal the plain nets' bit for bit (the CUDA kernels use no float atomics), and with the
// forward-only data overwritten by NaN before backward (no CUDA kernel reads what its layer
// declares forward-only).
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "cuda_test_util.h"
#include "net_memory_util.h"

namespace crema {
namespace {

TEST(NetMemoryCuda, SharedMemoryLeavesTheStepUnchanged) {
  CREMA_SKIP_WITHOUT_GPU();
  test::Twins<float> t(test::mixed_net(), Device::kCUDA);
  t.other.share_activation_memory();
  prim::Handle h(Device::kCUDA);
  for (int pass = 0; pass < 2; ++pass) t.step(h, pass, [] {});
}

TEST(NetMemoryCuda, ForwardOnlyDataIsNotReadByBackward) {
  CREMA_SKIP_WITHOUT_GPU();
  test::Twins<float> t(test::mixed_net(), Device::kCUDA);
  prim::Handle h(Device::kCUDA);
  std::set<std::string> poisoned;
  t.step(h, 0, [&] { poisoned = test::poison_forward_only(t.other); });
  EXPECT_EQ(poisoned.size(), 11u);  // as on the CPU (net_memory_test.cpp lists them)
}

// The layers of the second net (PReLU, MVN, Tile, Crop, Reduction, Embed, two more losses) on the
// GPU: the step unchanged in the arena, and their forward-only data unread by backward.
TEST(NetMemoryCuda, MoreLayersKeepTheStepAndTheirDeclarations) {
  CREMA_SKIP_WITHOUT_GPU();
  prim::Handle h(Device::kCUDA);
  {
    test::Twins<float> t(test::more_net(), Device::kCUDA);
    t.other.share_activation_memory();
    for (int pass = 0; pass < 2; ++pass) t.step(h, pass, [] {});
  }
  test::Twins<float> t(test::more_net(), Device::kCUDA);
  std::set<std::string> poisoned;
  t.step(h, 0, [&] { poisoned = test::poison_forward_only(t.other); });
  EXPECT_EQ(poisoned, (std::set<std::string>{"emb_sum", "mvn", "red", "tile"}));
}

// And the remaining declared layers (rest_net()).
TEST(NetMemoryCuda, RemainingLayersKeepTheStepAndTheirDeclarations) {
  CREMA_SKIP_WITHOUT_GPU();
  prim::Handle h(Device::kCUDA);
  {
    test::Twins<float> t(test::rest_net(), Device::kCUDA);
    t.other.share_activation_memory();
    for (int pass = 0; pass < 2; ++pass) t.step(h, pass, [] {});
  }
  test::Twins<float> t(test::rest_net(), Device::kCUDA);
  std::set<std::string> poisoned;
  t.step(h, 0, [&] { poisoned = test::poison_forward_only(t.other); });
  // conv1 and c, each with the two Split views that feed its two readers.
  EXPECT_EQ(poisoned, (std::set<std::string>{"c", "c_ip_c_0_split_0", "c_ip_c_0_split_1", "conv1",
                                             "conv1_conv1_0_split_0", "conv1_conv1_0_split_1"}));
}

}  // namespace
}  // namespace crema
