// GPU memory plumbing: an impossible allocation is a clear error, not a crash; pinned host
// memory, asynchronous copies on two streams and events move data in the right order; the peak
// allocation figure counts what was held.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "primitives/handle.h"

namespace crema::prim {
namespace {

TEST(MemoryCuda, OutOfMemoryIsAClearError) {
  CREMA_SKIP_WITHOUT_GPU();
  try {
    DeviceBuffer huge(Device::kCUDA, size_t(1) << 40);  // 1 TiB
    FAIL() << "a 1 TiB allocation succeeded";
  } catch (const PrimError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("cudaMalloc of 1048576 MiB failed"), std::string::npos) << what;
    EXPECT_NE(what.find("MiB free"), std::string::npos) << what;
  }
  // The failure is not sticky: the device still works.
  DeviceBuffer small(Device::kCUDA, 1024);
  EXPECT_NE(small.get(), nullptr);
}

TEST(MemoryCuda, AsyncCopiesOrderedByEventsAcrossStreams) {
  CREMA_SKIP_WITHOUT_GPU();
  Handle upload(Device::kCUDA), compute(Device::kCUDA);
  const size_t n = size_t(1) << 22;  // 16 MiB: long enough for a missing wait to show
  std::vector<float, PinnedAllocator<float>> host(n), back(n, -1.0f);
  std::iota(host.begin(), host.end(), 0.0f);
  DeviceBuffer staged(Device::kCUDA, n * sizeof(float)), top(Device::kCUDA, n * sizeof(float));
  Event uploaded, consumed;
  for (int round = 0; round < 3; ++round) {
    for (size_t i = 0; i < n; i += 4097) host[i] = float(round * 1000 + int(i % 1000));
    memcpy_async(upload, staged.get(), Device::kCUDA, host.data(), Device::kCPU, n * sizeof(float));
    uploaded.record(upload);
    uploaded.wait(compute);
    memcpy_async(compute, top.get(), Device::kCUDA, staged.get(), Device::kCUDA, n * sizeof(float));
    memcpy_async(compute, back.data(), Device::kCPU, top.get(), Device::kCUDA, n * sizeof(float));
    consumed.record(compute);
    consumed.synchronize();
    ASSERT_TRUE(std::equal(back.begin(), back.end(), host.begin())) << "round " << round;
  }
  EXPECT_GE(cuda_peak_allocated_bytes(), 2 * n * sizeof(float));
}

}  // namespace
}  // namespace crema::prim
