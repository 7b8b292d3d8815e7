// place_values: values whose lifetimes overlap never overlap in memory, memory is reused once a
// value's last step has passed, a small value fills a gap that larger ones leave, and offsets
// keep the alignment.
#include "core/memory_plan.h"

#include <gtest/gtest.h>

#include <vector>

namespace crema {
namespace {

// True when no two values live at the same step share a byte.
bool disjoint(const std::vector<Lifetime>& v, const std::vector<size_t>& at) {
  for (size_t a = 0; a < v.size(); ++a)
    for (size_t b = a + 1; b < v.size(); ++b) {
      const bool in_time = v[a].first <= v[b].last && v[b].first <= v[a].last;
      const bool in_space = at[a] < at[b] + v[b].bytes && at[b] < at[a] + v[a].bytes;
      if (in_time && in_space) return false;
    }
  return true;
}

TEST(MemoryPlan, AChainNeedsTwoNeighbours) {
  // A chain's gradients: each lives from its consumer's backward to its producer's.
  std::vector<Lifetime> v;
  for (int i = 0; i < 10; ++i) v.push_back({i, i + 1, size_t(100 + i)});
  const std::vector<size_t> at = place_values(v, 1);
  EXPECT_TRUE(disjoint(v, at));
  EXPECT_EQ(arena_bytes(v, at), 109u + 108u);
  EXPECT_EQ(peak_live_bytes(v), 109u + 108u);
}

TEST(MemoryPlan, OverlappingValuesGetDisjointBytes) {
  const std::vector<Lifetime> v = {{0, 5, 10}, {1, 4, 20}, {2, 3, 30}, {5, 6, 40}};
  const std::vector<size_t> at = place_values(v, 1);
  EXPECT_TRUE(disjoint(v, at));
  // Step 5 holds the first and the last value ("last" is inclusive): 50 bytes; steps 2-3 hold
  // the first three: 60.
  EXPECT_EQ(peak_live_bytes(v), 60u);
  EXPECT_EQ(arena_bytes(v, at), 60u);
}

TEST(MemoryPlan, ASmallValueFillsTheGapOfAFinishedOne) {
  // 400 bytes live throughout; 300 bytes until step 1; then 200 and 100 from step 2 on. The 200
  // and the 100 both fit where the 300 was, beside the 400: 700 bytes, the peak.
  const std::vector<Lifetime> v = {{0, 9, 400}, {0, 1, 300}, {2, 9, 200}, {2, 9, 100}};
  const std::vector<size_t> at = place_values(v, 1);
  EXPECT_TRUE(disjoint(v, at));
  EXPECT_EQ(arena_bytes(v, at), 700u);
  // Two separate buffers per value would take 1000 bytes; buffer reuse without offsets, 900.
}

TEST(MemoryPlan, OffsetsKeepTheAlignment) {
  const std::vector<Lifetime> v = {{0, 3, 1000}, {1, 2, 3}, {1, 2, 517}, {2, 4, 64}};
  const std::vector<size_t> at = place_values(v, 512);
  EXPECT_TRUE(disjoint(v, at));
  for (size_t o : at) EXPECT_EQ(o % 512, 0u);
}

TEST(MemoryPlan, ManyValuesStayDisjointAndNearThePeak) {
  // A forward that keeps every other value for a backward, then gradients: a network's shape.
  std::vector<Lifetime> v;
  const int n = 40;
  for (int i = 0; i < n; ++i) {
    const size_t bytes = size_t(1000 * (1 + (i * 7) % 5));
    v.push_back({i, i % 2 ? i + 1 : 2 * n - 1 - i, bytes});  // data
    v.push_back({2 * n - 2 - i, 2 * n - 1 - i, bytes});      // its gradient
  }
  const std::vector<size_t> at = place_values(v, 16);
  EXPECT_TRUE(disjoint(v, at));
  EXPECT_GE(arena_bytes(v, at), peak_live_bytes(v));
  EXPECT_LE(arena_bytes(v, at), peak_live_bytes(v) * 5 / 4);
}

TEST(MemoryPlan, NoValuesNoBytes) {
  EXPECT_TRUE(place_values({}, 512).empty());
  EXPECT_EQ(arena_bytes({}, {}), 0u);
  EXPECT_EQ(peak_live_bytes({}), 0u);
}

}  // namespace
}  // namespace crema
