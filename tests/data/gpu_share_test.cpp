// GpuShare, AUTO's share of each batch for the GPU decoder: it grows by the places the busy
// decode workers fell short of while the consumer waited and the GPU side has time, shrinks while
// the consumer waits on a saturated GPU side, leaves waits that are neither side's alone, gives a
// step back after a quiet stretch, holds each change while the batches in flight pass, and undoes
// a change that made the consumer's intervals longer.
#include <gtest/gtest.h>

#include "data/gpu_batch_decoder.h"

namespace crema {
namespace {

constexpr int kBatch = 256, kStep = kBatch / 16, kSettle = 4;
// Batches from a change (or the start) to the next reading that may change the share: those in
// flight, then the new share's trial.
constexpr int kAfter = kSettle + GpuShare::kTrial;
constexpr double kInterval = 10;  // ms between the consumer's batches

// Updates `times` times with the same reading; the workers always busy unless said.
void take(GpuShare* share, int times, double waited_ms, double busy_ms, double workers_idle = 0,
          double interval_ms = kInterval) {
  for (int i = 0; i < times; ++i) share->update(waited_ms, interval_ms, busy_ms, workers_idle);
}

TEST(GpuShare, ANetThatNeverWaitsLeavesTheGpuOut) {
  GpuShare share(kBatch, kSettle, 0);
  take(&share, 1000, 0.01, 0);
  EXPECT_EQ(share.places(), 0);
}

TEST(GpuShare, AWaitGivesTheGpuThePlacesTheWorkersFallShortOf) {
  GpuShare share(kBatch, kSettle, 4 * kStep);
  take(&share, kAfter - 1, 5, 1);  // the batches in flight at the start count nothing
  EXPECT_EQ(share.places(), 4 * kStep);
  take(&share, 1, 5, 1);  // the workers made half of their 192 places in time: the GPU takes 96
  EXPECT_EQ(share.places(), 10 * kStep);
  take(&share, kAfter - 1, 5, 1);  // the batches made before the change, then its trial
  EXPECT_EQ(share.places(), 10 * kStep);
  take(&share, 1, 5, 1);  // half of the CPU's 96
  EXPECT_EQ(share.places(), 13 * kStep);
  take(&share, 100 * kAfter, 5, 1);
  EXPECT_EQ(share.places(), kBatch);  // at most the whole batch
}

TEST(GpuShare, WhereTheGpusCostIsUnknownItTakesOneStep) {
  GpuShare share(kBatch, kSettle, 0);
  take(&share, kAfter, 9, 0.2);  // the workers fell short by nine tenths of the batch
  EXPECT_EQ(share.places(), kStep);
  // No finish timed in the interval (each set nvJPEG up for its new size): one step again.
  take(&share, kAfter, 9, 0);
  EXPECT_EQ(share.places(), 2 * kStep);
}

TEST(GpuShare, TheGpuTakesNoMorePlacesThanItHasRoomFor) {
  // The consumer computes 5 ms of its 10 ms interval and waits the rest: the workers made half
  // of their 192 places in time. At 2.25 ms for its 64 places the GPU has room for 64 more
  // before its finishes fill 90% of those 5 ms, not for the 96 the workers fell short of.
  GpuShare share(kBatch, kSettle, 4 * kStep);
  take(&share, kAfter, 5, 2.25);
  EXPECT_EQ(share.places(), 8 * kStep);
  take(&share, kAfter, 5, 4.25);  // room for 7.5 places: one step, the least
  EXPECT_EQ(share.places(), 9 * kStep);
  take(&share, kAfter, 5, 6);  // no room: still one step, as the workers are the slower
  EXPECT_EQ(share.places(), 10 * kStep);
}

TEST(GpuShare, AConsumerThatComputesNothingGivesTheGpuOneStepAtATime) {
  // It waits its whole interval, which alone would hand the GPU the whole batch, past the point
  // where the two sides are balanced.
  GpuShare share(kBatch, kSettle, 4 * kStep);
  take(&share, kAfter, kInterval, 1);
  EXPECT_EQ(share.places(), 5 * kStep);
}

TEST(GpuShare, AShortWaitGivesTheGpuOneStepInWholeSteps) {
  GpuShare share(kBatch, kSettle, 0);
  take(&share, kAfter, 0.6, 0);  // 6% of the interval: 15.4 places, one step
  EXPECT_EQ(share.places(), kStep);
  take(&share, kAfter, 1.0, 1);  // 10% of the CPU's 240 places: 24, two steps
  EXPECT_EQ(share.places(), 3 * kStep);
}

TEST(GpuShare, WaitsWithIdleWorkersAreNotTheDecodersAndCountAsQuiet) {
  // A net that runs ahead of its GPU waits for each batch's buffers to come back, a whole step,
  // while the workers have time to spare: the GPU decoding places would not shorten that.
  GpuShare share(kBatch, kSettle, 0);
  take(&share, 1000, 0.9 * kInterval, 0, 0.85);
  EXPECT_EQ(share.places(), 0);
  GpuShare holding(kBatch, kSettle, 8 * kStep);
  take(&holding, kAfter - 1 + GpuShare::kQuietBatches - 1, 0.9 * kInterval, 0, 0.85);
  EXPECT_EQ(holding.places(), 8 * kStep);
  take(&holding, 1, 0.9 * kInterval, 0, 0.85);
  EXPECT_EQ(holding.places(), 7 * kStep);
  // Workers idle just under a tenth of their time are short.
  take(&share, 1, 5, 0, 0.09);
  EXPECT_EQ(share.places(), kStep);
}

TEST(GpuShare, WaitsOnASaturatedGpuGiveTheCpuAStep) {
  GpuShare share(kBatch, kSettle, kBatch);
  take(&share, kAfter, 5, 0.95 * kInterval);
  EXPECT_EQ(share.places(), kBatch - kStep);
  take(&share, kAfter, 5, 0.8 * kInterval);  // time to spare again: back to the GPU
  EXPECT_EQ(share.places(), kBatch);
}

TEST(GpuShare, FinishesThatFillShrinkingIntervalsAreSaturation) {
  // Each interval shorter than the last and filled by its finish: against the mean interval
  // alone, which lags above the current one, that read as time to spare.
  GpuShare share(kBatch, kSettle, 8 * kStep);
  for (int i = 0; i < kAfter; ++i) {
    const double interval = 14 - i;
    share.update(interval - 0.1, interval, interval - 0.1, 0);
  }
  EXPECT_EQ(share.places(), 7 * kStep);
}

TEST(GpuShare, AShortIntervalAfterALongWaitIsNoSaturation) {
  // After a long wait the consumer takes the next batch at once, and the finish of that batch,
  // the pipeline's last stage, fills the short interval.
  GpuShare share(kBatch, kSettle, 4 * kStep);
  take(&share, kAfter - 1, 0, 0);
  share.update(0.6, 1.0, 0.95, 0);
  EXPECT_EQ(share.places(), 5 * kStep);  // the workers are short, by a step against the mean
}

TEST(GpuShare, AQuietStretchGivesAStepBack) {
  GpuShare share(kBatch, kSettle, 8 * kStep);
  take(&share, kAfter - 1, 0, 0);
  take(&share, GpuShare::kQuietBatches - 1, 0, 0);
  EXPECT_EQ(share.places(), 8 * kStep);
  take(&share, 1, 0, 0);
  EXPECT_EQ(share.places(), 7 * kStep);
  // A wait starts the count again.
  take(&share, kAfter - 1, 0, 0);
  take(&share, GpuShare::kQuietBatches - 1, 0, 0);
  take(&share, 1, 0.6, 0);
  EXPECT_EQ(share.places(), 8 * kStep);
  take(&share, kAfter - 1 + GpuShare::kQuietBatches - 1, 0, 0);
  EXPECT_EQ(share.places(), 8 * kStep);
  take(&share, 1, 0, 0);
  EXPECT_EQ(share.places(), 7 * kStep);
}

TEST(GpuShare, AChangeThatSlowsTheConsumerIsUndoneAndBoundsTheShare) {
  GpuShare share(kBatch, kSettle, 4 * kStep);
  take(&share, kAfter, 5, 1);  // the workers are short: 10 steps
  ASSERT_EQ(share.places(), 10 * kStep);
  // With 10 steps the batches come 5% further apart (nvJPEG took that from the consumer's own
  // work): back to 4 steps, the most for a while, however long the waits.
  take(&share, kSettle, 5, 1);
  take(&share, GpuShare::kTrial, 5, 1, 0, 1.05 * kInterval);
  EXPECT_EQ(share.places(), 4 * kStep);
  take(&share, 10 * kAfter, 5, 1);
  EXPECT_EQ(share.places(), 4 * kStep);
  // The bound lifts after kBoundBatches readings.
  take(&share, GpuShare::kBoundBatches, 5, 1);
  EXPECT_GT(share.places(), 4 * kStep);
}

TEST(GpuShare, AChangeWithinTheMarginStands) {
  GpuShare share(kBatch, kSettle, 4 * kStep);
  take(&share, kAfter, 5, 1);
  take(&share, kSettle, 5, 1);
  take(&share, GpuShare::kTrial, 0, 1, 0, 1.02 * kInterval);  // no waits: no further change
  EXPECT_EQ(share.places(), 10 * kStep);
}

TEST(GpuShare, AStepBackThatSlowsTheConsumerIsUndone) {
  // A quiet stretch gives a step back; the consumer then waits longer between batches: the
  // GPU's places were needed after all, and the share keeps them.
  GpuShare share(kBatch, kSettle, 8 * kStep);
  take(&share, kAfter - 1 + GpuShare::kQuietBatches, 0, 0);
  ASSERT_EQ(share.places(), 7 * kStep);
  take(&share, kSettle, 0, 0);
  take(&share, GpuShare::kTrial, 0, 0, 0, 1.1 * kInterval);
  EXPECT_EQ(share.places(), 8 * kStep);
  take(&share, kAfter + 2 * GpuShare::kQuietBatches, 0, 0);
  EXPECT_EQ(share.places(), 8 * kStep);
}

TEST(GpuShare, SmallBatchesStepOnePlace) {
  GpuShare share(4, 1, 0);
  take(&share, 1 + GpuShare::kTrial, 0.6, 0);
  EXPECT_EQ(share.places(), 1);
}

}  // namespace
}  // namespace crema
