// The CPU allocator refuses what the machine cannot hold, with the sizes, before allocating; a CPU
// handle's side stream is the handle itself; its stopwatch reads the wall clock.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "primitives/handle.h"

namespace crema::prim {
namespace {

std::string refusal(size_t bytes) {
  try {
    device_free(Device::kCPU, device_alloc(Device::kCPU, bytes));
  } catch (const PrimError& e) {
    return e.what();
  }
  return "";
}

// On the CPU what was called between start and stop has finished: the wall clock is its time.
TEST(HostMemory, CpuStopwatchReadsTheWallClock) {
  Handle h(Device::kCPU);
  Stopwatch watch(h);
  watch.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const double ms = watch.stop_ms();
  EXPECT_GE(ms, 5.0);
  EXPECT_LT(ms, 5000.0);
}

// The CPU runs every primitive to completion in order: nothing to run beside.
TEST(HostMemory, CpuHandleIsItsOwnSide) {
  Handle h(Device::kCPU);
  EXPECT_EQ(&h.side(), &h);
  const uint64_t generation = h.workspace_generation();
  h.fork();
  h.join();
  EXPECT_EQ(h.workspace_generation(), generation);
}

TEST(HostMemory, LimitCountsWhatIsHeld) {
  set_host_memory_limit(size_t(8) << 20);
  void* held = device_alloc(Device::kCPU, size_t(4) << 20);
  EXPECT_EQ(refusal(size_t(8) << 20),
            "cannot allocate 8 MiB on the cpu: 4 MiB of the 8 MiB limit already held");
  EXPECT_EQ(refusal(size_t(4) << 20), "");  // exactly up to the limit
  device_free(Device::kCPU, held);
  EXPECT_EQ(refusal(size_t(8) << 20), "");
  set_host_memory_limit(0);
  EXPECT_EQ(refusal(size_t(64) << 20), "");
}

TEST(HostMemory, MoreThanTheMachineHasIsRefusedBeforeAllocating) {
  const std::string why = refusal(size_t(1) << 50);  // 1 PiB
  EXPECT_EQ(why.rfind("cannot allocate 1073741824 MiB on the cpu", 0), 0u) << why;
}

}  // namespace
}  // namespace crema::prim
