// share_buffers: values whose lifetimes overlap never share a buffer, a buffer is reused once its
// value's last step has passed, and a value takes the best-fitting free buffer.
#include "core/memory_plan.h"

#include <gtest/gtest.h>

#include <vector>

namespace crema {
namespace {

// True when no two values of one buffer overlap in time.
bool disjoint(const std::vector<Lifetime>& v, const std::vector<int>& plan) {
  for (size_t a = 0; a < v.size(); ++a)
    for (size_t b = a + 1; b < v.size(); ++b)
      if (plan[a] == plan[b] && v[a].first <= v[b].last && v[b].first <= v[a].last) return false;
  return true;
}

TEST(MemoryPlan, AChainNeedsTwoBuffers) {
  // A chain's gradients: each lives from its consumer's backward to its producer's.
  std::vector<Lifetime> v;
  for (int i = 0; i < 10; ++i) v.push_back({i, i + 1, size_t(100 + i)});
  const std::vector<int> plan = share_buffers(v);
  EXPECT_TRUE(disjoint(v, plan));
  EXPECT_EQ(buffer_bytes(v, plan).size(), 2u);
}

TEST(MemoryPlan, OverlappingValuesGetTheirOwnBuffers) {
  const std::vector<Lifetime> v = {{0, 5, 10}, {1, 4, 20}, {2, 3, 30}, {5, 6, 40}};
  const std::vector<int> plan = share_buffers(v);
  EXPECT_TRUE(disjoint(v, plan));
  EXPECT_NE(plan[0], plan[1]);
  EXPECT_NE(plan[1], plan[2]);
  EXPECT_NE(plan[0], plan[3]) << "the last step of one and the first of the other coincide";
  EXPECT_EQ(buffer_bytes(v, plan).size(), 3u) << "the last value reuses a freed buffer";
}

TEST(MemoryPlan, TakesTheSmallestFreeBufferThatFits) {
  // Two buffers free at step 2 (of 1000 and 100 bytes): a 50-byte value takes the 100-byte one,
  // and a 5000-byte value then grows the 1000-byte one rather than opening a third.
  const std::vector<Lifetime> v = {{0, 1, 1000}, {0, 1, 100}, {2, 3, 50}, {2, 3, 5000}};
  const std::vector<int> plan = share_buffers(v);
  EXPECT_EQ(plan[2], plan[1]);
  EXPECT_EQ(plan[3], plan[0]);
  const std::vector<size_t> bytes = buffer_bytes(v, plan);
  ASSERT_EQ(bytes.size(), 2u);
  EXPECT_EQ(bytes[size_t(plan[0])], 5000u);
  EXPECT_EQ(bytes[size_t(plan[1])], 100u);
}

TEST(MemoryPlan, NoValuesNoBuffers) {
  EXPECT_TRUE(share_buffers({}).empty());
  EXPECT_TRUE(buffer_bytes({}, {}).empty());
}

}  // namespace
}  // namespace crema
