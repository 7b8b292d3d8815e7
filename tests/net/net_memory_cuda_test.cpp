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

// The layers of the other two nets (more_net(), rest_net()) on the GPU: the step unchanged in the
// arena, and their forward-only data unread by backward.
TEST(NetMemoryCuda, MoreLayersKeepTheStepAndTheirDeclarations) {
  CREMA_SKIP_WITHOUT_GPU();
  EXPECT_EQ(test::check_declarations<float>(test::more_net(), Device::kCUDA, [](auto&) {}),
            test::kMoreNetForwardOnly);
}

TEST(NetMemoryCuda, RemainingLayersKeepTheStepAndTheirDeclarations) {
  CREMA_SKIP_WITHOUT_GPU();
  EXPECT_EQ(test::check_declarations<float>(test::rest_net(), Device::kCUDA, [](auto&) {}),
            test::kRestNetForwardOnly);
}

}  // namespace
}  // namespace crema
