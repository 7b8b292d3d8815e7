// BatchEngine alone: batches come out in the order read whatever order the workers finish in;
// a failed record stops the engine after the batches read before it, with the first error in
// record order, rethrown on every later call; destroying the engine with batches in flight, or
// with workers in the middle of records, returns promptly; the workers' idle time is counted.
#include "data/batch_engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

#include "core/errors.h"
#include "data/data_test_util.h"

namespace crema {
namespace {

// Hooks whose records are the numbers 0, 1, 2, ...; process writes the number into its place
// after a delay that makes later records finish first, and fails on fail_at (a crema::Error) or
// throw_at (a std::runtime_error).
struct CountingSource {
  std::atomic<uint64_t> next{0};
  std::atomic<int> processed{0};
  uint64_t fail_at = UINT64_MAX, throw_at = UINT64_MAX, read_fail_at = UINT64_MAX;
  int delay_us = 0;

  BatchEngine::Hooks hooks() {
    BatchEngine::Hooks h;
    h.begin_batch = [](HostBatch* b) {
      b->data.assign(4, -1.f);
      b->label.assign(4, -1.f);
    };
    h.read = [this](SourceRecord* r) {
      r->number = next++;
      if (r->number == read_fail_at) fail("reader: record ", r->number, " unreadable");
    };
    h.process = [this](int, const SourceRecord& r, int slot, HostBatch* b) {
      // Early records of a batch sleep longest: the workers finish them last.
      if (delay_us > 0)
        std::this_thread::sleep_for(std::chrono::microseconds(delay_us * int(4 - r.number % 4)));
      if (r.number == fail_at) fail("record ", r.number, " is corrupt");
      if (r.number == throw_at) throw std::runtime_error("library failure");
      b->data[size_t(slot)] = float(r.number);
      b->label[size_t(slot)] = float(r.number % 4);
      ++processed;
    };
    return h;
  }
};

std::vector<float> take(BatchEngine& e) {
  HostBatch* b = e.next();
  std::vector<float> out(b->data.begin(), b->data.end());
  e.release(b);
  return out;
}

TEST(BatchEngine, DeliversBatchesInReadOrderWithManyWorkers) {
  for (int workers : {1, 2, 5}) {
    CountingSource src;
    src.delay_us = 50;
    BatchEngine engine(3, 4, workers, src.hooks());
    EXPECT_EQ(engine.workers(), workers);
    for (int b = 0; b < 12; ++b) {
      const float base = float(b * 4);
      EXPECT_EQ(take(engine), (std::vector<float>{base, base + 1, base + 2, base + 3}))
          << "batch " << b << " with " << workers << " workers";
    }
  }
}

TEST(BatchEngine, AWorkersErrorArrivesAfterTheBatchesBeforeIt) {
  CountingSource src;
  src.delay_us = 20;
  src.fail_at = 9;  // batch 2, place 1
  BatchEngine engine(4, 4, 3, src.hooks());
  EXPECT_EQ(take(engine)[0], 0.f);
  EXPECT_EQ(take(engine)[0], 4.f);
  EXPECT_EQ(test::error_of([&] { engine.next(); }), "record 9 is corrupt");
  // The engine stays failed: the same error again, never a hang.
  EXPECT_EQ(test::error_of([&] { engine.next(); }), "record 9 is corrupt");
}

TEST(BatchEngine, TheFirstErrorInRecordOrderWins) {
  // Records 8 and 10 both fail; 10 sleeps less, so its worker fails first.
  for (int rep = 0; rep < 5; ++rep) {
    CountingSource src;
    src.delay_us = 200;
    src.fail_at = 8;
    src.throw_at = 10;
    BatchEngine engine(2, 4, 4, src.hooks());
    take(engine);
    take(engine);
    EXPECT_EQ(test::error_of([&] { engine.next(); }), "record 8 is corrupt");
  }
}

TEST(BatchEngine, TheReadersErrorAndForeignExceptionsBecomeOneLine) {
  CountingSource reader_fails;
  reader_fails.read_fail_at = 5;
  BatchEngine a(2, 4, 2, reader_fails.hooks());
  take(a);
  EXPECT_EQ(test::error_of([&] { a.next(); }), "reader: record 5 unreadable");

  CountingSource throws;
  throws.throw_at = 2;
  BatchEngine b(2, 4, 2, throws.hooks());
  EXPECT_EQ(test::error_of([&] { b.next(); }), "data prefetch failed: library failure");
}

TEST(BatchEngine, StopsPromptlyWithBatchesInFlight) {
  const auto start = std::chrono::steady_clock::now();
  {
    // Never consumed: every batch in flight is full and the reader waits for a free one.
    CountingSource idle;
    BatchEngine engine(4, 4, 3, idle.hooks());
    while (idle.processed < 16) std::this_thread::yield();
  }
  {
    // Slow records: workers are in the middle of them when the engine goes; one batch is held
    // by the consumer and never released.
    CountingSource slow;
    slow.delay_us = 2000;
    BatchEngine engine(3, 4, 2, slow.hooks());
    HostBatch* held = engine.next();
    EXPECT_EQ(held->data[0], 0.f);
  }
  {
    // A failed engine, destroyed without its error being asked for.
    CountingSource failing;
    failing.fail_at = 0;
    BatchEngine engine(3, 4, 2, failing.hooks());
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 5.0);
}

TEST(BatchEngine, CountsTheWorkersTimeWithoutRecords) {
  using std::chrono::milliseconds;
  {
    // Never consumed: once the one batch is done, the three workers have nothing to do.
    CountingSource idle;
    BatchEngine engine(1, 4, 3, idle.hooks());
    while (idle.processed < 4) std::this_thread::yield();
    std::this_thread::sleep_for(milliseconds(100));  // the last worker back to waiting
    const auto wall0 = std::chrono::steady_clock::now();
    const auto idle0 = engine.workers_idle();
    std::this_thread::sleep_for(milliseconds(50));
    const auto idle1 = engine.workers_idle();
    const auto wall = std::chrono::steady_clock::now() - wall0;
    EXPECT_GE(idle1 - idle0, 3 * milliseconds(50));
    EXPECT_LE(idle1 - idle0, 3 * wall);
  }
  {
    // Both workers in the middle of records: no idle time accrues.
    std::atomic<int> inside{0};
    std::atomic<bool> go{false};
    BatchEngine::Hooks h;
    h.begin_batch = [](HostBatch* b) { b->data.assign(4, 0.f); };
    h.read = [](SourceRecord*) {};
    h.process = [&](int, const SourceRecord&, int, HostBatch*) {
      ++inside;
      while (!go) std::this_thread::sleep_for(milliseconds(1));
    };
    BatchEngine engine(1, 4, 2, h);
    while (inside < 2) std::this_thread::yield();
    const auto idle0 = engine.workers_idle();
    std::this_thread::sleep_for(milliseconds(30));
    EXPECT_EQ(engine.workers_idle(), idle0);
    go = true;
  }
}

TEST(BatchEngine, DefaultWorkersLeaveACorePerTrainingThread) {
  const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
  EXPECT_EQ(default_decode_workers(1), std::max(1, cores - 1));
  EXPECT_GE(default_decode_workers(cores * 2), 1);
  EXPECT_EQ(default_decode_workers(2), std::max(1, (cores - 2) / 2));
}

}  // namespace
}  // namespace crema
