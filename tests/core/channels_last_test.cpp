// Channels-last storage on the CPU side: a tensor stored NHWC describes itself so to primitives
// and keeps its host copies in NCHW order; copies between layouts reorder, shared memory needs
// one layout; the plan keeps the region between the layers that convert.
#include <gtest/gtest.h>

#include <vector>

#include "core/errors.h"
#include "core/storage_plan.h"
#include "core/tensor.h"

namespace crema {
namespace {

TEST(ChannelsLast, HostCopiesStayInNchwOrder) {
  Tensor<float> t({2, 3, 1, 2});
  t.set_channels_last(true);
  EXPECT_TRUE(t.desc().is_packed_nhwc());
  std::vector<float> nchw(12);
  for (size_t i = 0; i < nchw.size(); ++i) nchw[i] = float(i);
  t.set_data(nchw);
  EXPECT_EQ(t.data_vector(), nchw);
  // In memory: image 0's pixel 0 holds channels 0, 1, 2 (values 0, 2, 4), then pixel 1 (1, 3, 5).
  const float* stored = t.data();
  EXPECT_EQ((std::vector<float>(stored, stored + 6)), (std::vector<float>{0, 2, 4, 1, 3, 5}));

  Tensor<float> plain({2, 3, 1, 2});
  plain.copy_from(t);  // reorders
  EXPECT_EQ(plain.data_vector(), nchw);
  EXPECT_EQ((std::vector<float>(plain.data(), plain.data() + 6)),
            (std::vector<float>{0, 1, 2, 3, 4, 5}));
  EXPECT_THROW(plain.share_data(t), Error);
  t.set_channels_last(false);
  EXPECT_TRUE(t.desc().is_packed_nchw());
}

StorageLayer layer(StorageSupport s, std::vector<int> bottoms, std::vector<int> tops) {
  return StorageLayer{s, prim::DataType::kFloat32, std::move(bottoms), std::move(tops)};
}

// data(0) -> conv(1) -> bn(1) -> relu(1) -> split(1 -> 2, 3) -> conv(4); sum(3, 4 -> 5) ->
// global pool(6, 1x1) -> ip(7) -> loss(8)
std::vector<StorageLayer> residual_net(StorageSupport pool) {
  using S = StorageSupport;
  return {layer(S::kNone, {}, {0}),        layer(S::kMixed, {0}, {1}),
          layer(S::kUniform, {1}, {1}),    layer(S::kUniform, {1}, {1}),
          layer(S::kUniform, {1}, {2, 3}), layer(S::kMixed, {2}, {4}),
          layer(S::kUniform, {3, 4}, {5}), layer(pool, {5}, {6}),
          layer(S::kNone, {6}, {7}),       layer(S::kNone, {7}, {8})};
}

TEST(ChannelsLast, PlanKeepsTheRegionBetweenConvertingLayers) {
  // Candidates: the 4-d blobs with planes larger than 1x1 (not the pooled 1x1, the scores, the
  // loss).
  const std::vector<bool> candidates{true, true, true, true, true, true, false, false, false};
  // The data layer keeps its output NCHW; the first convolution converts; the pooling reads NHWC
  // and writes its 1x1 output NCHW.
  EXPECT_EQ(plan_channels_last(residual_net(StorageSupport::kMixed), candidates),
            (std::vector<bool>{false, true, true, true, true, true, false, false, false}));
  // A pooling that needs one layout for both sides turns the whole region back to NCHW.
  EXPECT_EQ(plan_channels_last(residual_net(StorageSupport::kUniform), candidates),
            std::vector<bool>(9, false));
}

}  // namespace
}  // namespace crema
