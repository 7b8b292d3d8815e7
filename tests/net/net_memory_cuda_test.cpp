// Activation memory on the GPU: the mixed net's training step with its activations in one arena
// equals the plain net's bit for bit (the CUDA kernels use no float atomics), and with the
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

}  // namespace
}  // namespace crema
