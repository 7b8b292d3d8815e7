// GPU memory plumbing: an impossible allocation is a clear error, not a crash; pinned host
// memory, asynchronous copies on two streams and events move data in the right order, as do a
// handle's fork and join with its side stream, replayed from a graph too; the peak allocation
// figure counts what was held; the stopwatch waits for the work it times and counts the GPU's
// time, not the host's.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "cuda_test_util.h"
#include "primitives/blas.h"
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

// stop_ms waits for what was queued since start: the copy back has landed when it returns. Kernels
// the host queues with a pause between them run back to back once the stream's 1 ms hold ends,
// so the pause does not count (plain events around them would measure it). That needs the host
// to have queued them within the hold, which a loaded machine may not: the check takes the first
// of a few tries in which it did.
TEST(MemoryCuda, StopwatchWaitsAndCountsTheGpusTime) {
  CREMA_SKIP_WITHOUT_GPU();
  Handle h(Device::kCUDA);
  Stopwatch watch(h);
  const size_t n = size_t(1) << 22;
  DeviceBuffer buf(Device::kCUDA, n * sizeof(float));
  std::vector<float, PinnedAllocator<float>> back(n, -1.0f);
  watch.start();
  fill(h, DataType::kFloat32, int64_t(n), 3.0, buf.get());
  memcpy_async(h, back.data(), Device::kCPU, buf.get(), Device::kCUDA, n * sizeof(float));
  EXPECT_GT(watch.stop_ms(), 0.0);
  EXPECT_TRUE(std::all_of(back.begin(), back.end(), [](float v) { return v == 3.0f; }));

  const auto since = [](auto t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  for (int attempt = 0; attempt < 20; ++attempt) {
    const auto t0 = std::chrono::steady_clock::now();
    watch.start();
    fill(h, DataType::kFloat32, 1, 1.0, buf.get());
    std::this_thread::sleep_for(std::chrono::microseconds(300));
    fill(h, DataType::kFloat32, 1, 2.0, buf.get());
    const double queued_ms = since(t0);
    const double gpu_ms = watch.stop_ms();
    const double host_ms = since(t0);
    if (queued_ms > 0.8) continue;
    EXPECT_LT(gpu_ms, 0.5 * host_ms) << "gpu " << gpu_ms << " ms, host " << host_ms << " ms";
    return;
  }
  GTEST_SKIP() << "the host never queued the kernels within the stream's hold";
}

// Main writes a, the side copies a to b, main copies b back: without the fork the side's copy
// would overtake the fill of 64 MiB, without the join main's read would overtake the copy.
TEST(MemoryCuda, SideStreamForkAndJoinOrderTheWork) {
  CREMA_SKIP_WITHOUT_GPU();
  Handle h(Device::kCUDA);
  ASSERT_NE(&h.side(), &h);
  EXPECT_EQ(&h.side().algo_cache(), &h.algo_cache());  // the side's algorithm picks are h's
  const size_t n = size_t(1) << 24;
  DeviceBuffer a(Device::kCUDA, n * sizeof(float)), b(Device::kCUDA, n * sizeof(float));
  std::vector<float, PinnedAllocator<float>> back(n);
  auto queue = [&](float value) {
    fill(h, DataType::kFloat32, int64_t(n), value, a.get());
    h.fork();
    memcpy_async(h.side(), b.get(), Device::kCUDA, a.get(), Device::kCUDA, n * sizeof(float));
    h.join();
  };
  auto read_back = [&](float value, const char* how) {
    memcpy_async(h, back.data(), Device::kCPU, b.get(), Device::kCUDA, n * sizeof(float));
    h.synchronize();
    const auto wrong = std::find_if(back.begin(), back.end(), [&](float v) { return v != value; });
    EXPECT_EQ(wrong, back.end()) << how << ": " << *wrong << " at " << (wrong - back.begin());
  };
  for (int round = 1; round <= 3; ++round) {
    queue(float(round));
    read_back(float(round), "queued");
  }
  StreamGraph graph;
  graph.record(h, [&] { queue(7.0f); });
  graph.replay(h);
  read_back(7.0f, "replayed");
  // A workspace the side grows makes recorded work stale, as one h grows does.
  const uint64_t generation = h.workspace_generation();
  h.side().workspace(h.side().workspace_size() + 4096);
  EXPECT_NE(h.workspace_generation(), generation);
}

}  // namespace
}  // namespace crema::prim
