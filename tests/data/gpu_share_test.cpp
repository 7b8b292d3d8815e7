// GpuShare, AUTO's share of each batch for the GPU decoder: it grows while the consumer waits
// and the GPU side has time, shrinks while the consumer waits on a saturated GPU side, gives a
// step back after a quiet stretch, and holds each change while the batches in flight pass.
#include <gtest/gtest.h>

#include "data/gpu_batch_decoder.h"

namespace crema {
namespace {

constexpr int kBatch = 256, kStep = kBatch / 16, kSettle = 4;
constexpr double kInterval = 10;  // ms between the consumer's batches

// Updates `times` times with the same reading.
void take(GpuShare* share, int times, double waited_ms, double busy_ms) {
  for (int i = 0; i < times; ++i) share->update(waited_ms, kInterval, busy_ms);
}

TEST(GpuShare, ANetThatNeverWaitsLeavesTheGpuOut) {
  GpuShare share(kBatch, kSettle, 0);
  take(&share, 1000, 0.01, 0);
  EXPECT_EQ(share.places(), 0);
}

TEST(GpuShare, WaitsGiveTheGpuAStepPerSettledBatch) {
  GpuShare share(kBatch, kSettle, 0);
  take(&share, kSettle, 5, 0);  // the batches in flight at the start count nothing
  EXPECT_EQ(share.places(), 0);
  take(&share, 1, 5, 0);
  EXPECT_EQ(share.places(), kStep);
  take(&share, kSettle, 5, 0);  // held while the batches made before the change pass
  EXPECT_EQ(share.places(), kStep);
  take(&share, 1, 5, 0);
  EXPECT_EQ(share.places(), 2 * kStep);
  take(&share, 100 * (kSettle + 1), 5, 0);
  EXPECT_EQ(share.places(), kBatch);  // at most the whole batch
}

TEST(GpuShare, WaitsOnASaturatedGpuGiveTheCpuAStep) {
  GpuShare share(kBatch, kSettle, kBatch);
  take(&share, kSettle + 1, 5, 0.95 * kInterval);
  EXPECT_EQ(share.places(), kBatch - kStep);
  take(&share, kSettle + 1, 5, 0.85 * kInterval);  // time to spare again: back to the GPU
  EXPECT_EQ(share.places(), kBatch);
}

TEST(GpuShare, AQuietStretchGivesAStepBack) {
  GpuShare share(kBatch, kSettle, 8 * kStep);
  take(&share, kSettle, 0, 0);
  take(&share, GpuShare::kQuietBatches - 1, 0, 0);
  EXPECT_EQ(share.places(), 8 * kStep);
  take(&share, 1, 0, 0);
  EXPECT_EQ(share.places(), 7 * kStep);
  // A wait starts the count again.
  take(&share, kSettle, 0, 0);
  take(&share, GpuShare::kQuietBatches - 1, 0, 0);
  take(&share, 1, 5, 0);
  EXPECT_EQ(share.places(), 8 * kStep);
  take(&share, kSettle + GpuShare::kQuietBatches - 1, 0, 0);
  EXPECT_EQ(share.places(), 8 * kStep);
  take(&share, 1, 0, 0);
  EXPECT_EQ(share.places(), 7 * kStep);
}

TEST(GpuShare, SmallBatchesStepOnePlace) {
  GpuShare share(4, 1, 0);
  take(&share, 2, 5, 0);
  EXPECT_EQ(share.places(), 1);
}

}  // namespace
}  // namespace crema
