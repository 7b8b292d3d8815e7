// BatchEngine: one reader thread, a pool of decode workers, batches delivered in read order.
#include "data/batch_engine.h"

#include <glog/logging.h>
#include <sched.h>

#include <algorithm>

#include "core/errors.h"

namespace crema {
namespace {

// Runs a thread's start hook (if any); returns what it threw, for the thread's loop to report in
// its first batch.
std::exception_ptr run_thread_start(const std::function<void()>& thread_start) {
  try {
    if (thread_start) thread_start();
  } catch (...) {
    return std::current_exception();
  }
  return nullptr;
}

}  // namespace

BatchEngine::BatchEngine(size_t depth, int batch_size, int workers, Hooks hooks)
    : batch_size_(batch_size), hooks_(std::move(hooks)), slots_(depth) {
  CHECK(depth > 0 && batch_size > 0 && workers > 0);
  for (Slot& s : slots_) {
    s.records.resize(size_t(batch_size));
    free_.push_back(&s);
  }
  // Threads start last, once every member they touch exists; if starting one fails (out of
  // threads), those already started are stopped and joined before the error leaves.
  try {
    reader_ = std::thread([this] { read_loop(); });
    for (int w = 0; w < workers; ++w) workers_.emplace_back([this, w] { work_loop(w); });
  } catch (...) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    reader_cv_.notify_all();
    worker_cv_.notify_all();
    if (reader_.joinable()) reader_.join();
    for (std::thread& t : workers_) t.join();
    throw;
  }
}

BatchEngine::~BatchEngine() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  reader_cv_.notify_all();
  worker_cv_.notify_all();
  consumer_cv_.notify_all();
  reader_.join();
  for (std::thread& t : workers_) t.join();
}

void BatchEngine::fail_locked(Slot* slot, int place, std::exception_ptr err) {
  if (!slot->error || place < slot->error_place) {
    slot->error = err;
    slot->error_place = place;
  }
  reader_failed_ = true;
}

bool BatchEngine::settle_locked(Slot* slot) {
  if (!slot->read_done || slot->pending != 0 || slot->finished) return false;
  if (slot->error || !hooks_.finish) {
    slot->finished = true;
    consumer_cv_.notify_all();
    return false;
  }
  return true;
}

void BatchEngine::run_finish(Slot* slot) {
  std::exception_ptr err;
  try {
    std::lock_guard<std::mutex> finish_lock(finish_mutex_);
    hooks_.finish(&slot->batch);
  } catch (...) {
    err = std::current_exception();
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (err) fail_locked(slot, batch_size_, err);
  slot->finished = true;
  consumer_cv_.notify_all();
}

void BatchEngine::read_loop() {
  const std::exception_ptr start_error = run_thread_start(hooks_.thread_start);
  for (;;) {
    Slot* slot = nullptr;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      reader_cv_.wait(lock, [this] { return stop_ || reader_failed_ || !free_.empty(); });
      if (stop_ || reader_failed_) return;
      slot = free_.front();
      free_.pop_front();
      slot->pending = 0;
      slot->read_done = false;
      slot->finished = false;
      slot->error = nullptr;
      in_flight_.push_back(slot);
    }
    int place = 0;
    try {
      if (start_error) std::rethrow_exception(start_error);
      if (hooks_.begin_batch) hooks_.begin_batch(&slot->batch);
      for (; place < batch_size_; ++place) {
        {
          std::lock_guard<std::mutex> lock(mutex_);
          if (stop_) return;
        }
        hooks_.read(&slot->records[size_t(place)]);
        {
          std::lock_guard<std::mutex> lock(mutex_);
          ++slot->pending;
          jobs_.push_back({slot, place});
        }
        worker_cv_.notify_one();
      }
      if (hooks_.end_read) hooks_.end_read(&slot->batch);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      fail_locked(slot, place, std::current_exception());
    }
    bool finish = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      slot->read_done = true;
      // The workers may have processed every record already: then the batch completes here.
      finish = settle_locked(slot);
    }
    if (finish) run_finish(slot);
  }
}

void BatchEngine::work_loop(int worker) {
  const std::exception_ptr start_error = run_thread_start(hooks_.thread_start);
  for (;;) {
    Job job{};
    {
      std::unique_lock<std::mutex> lock(mutex_);
      const auto ready = [this] { return stop_ || !jobs_.empty(); };
      if (!ready()) {
        count_idle_locked(+1);
        worker_cv_.wait(lock, ready);
        count_idle_locked(-1);
      }
      if (stop_) return;
      job = jobs_.front();
      jobs_.pop_front();
    }
    std::exception_ptr err = start_error;
    if (!err) {
      try {
        hooks_.process(worker, job.slot->records[size_t(job.place)], job.place, &job.slot->batch);
      } catch (...) {
        err = std::current_exception();
      }
    }
    bool finish = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (err) fail_locked(job.slot, job.place, err);
      --job.slot->pending;
      finish = settle_locked(job.slot);
    }
    // This worker completed the batch: its finishing step (the upload) runs here, outside the
    // engine's lock, one batch at a time.
    if (finish) run_finish(job.slot);
  }
}

void BatchEngine::count_idle_locked(int change) {
  const auto now = std::chrono::steady_clock::now();
  idle_ += idle_workers_ * (now - idle_since_);
  idle_since_ = now;
  idle_workers_ += change;
}

std::chrono::nanoseconds BatchEngine::workers_idle() {
  std::lock_guard<std::mutex> lock(mutex_);
  count_idle_locked(0);
  return std::chrono::duration_cast<std::chrono::nanoseconds>(idle_);
}

HostBatch* BatchEngine::next() {
  std::exception_ptr err;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    consumer_cv_.wait(
        lock, [this] { return failed_ || (!in_flight_.empty() && in_flight_.front()->finished); });
    if (!failed_) {
      Slot* slot = in_flight_.front();
      in_flight_.pop_front();
      if (!slot->error) return &slot->batch;
      failed_ = slot->error;
    }
    err = failed_;
  }
  rethrow(err);
}

void BatchEngine::release(HostBatch* batch) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (Slot& s : slots_)
      if (&s.batch == batch) free_.push_back(&s);
  }
  reader_cv_.notify_one();
}

void BatchEngine::rethrow(std::exception_ptr err) {
  try {
    std::rethrow_exception(err);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    // Out of memory or a library exception: still one line for the user, never an abort.
    fail("data prefetch failed: ", e.what());
  } catch (...) {
  }
  fail("data prefetch failed with an unknown error");
}

int usable_cores() {
#ifdef __linux__
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) == 0) return std::max(1, CPU_COUNT(&allowed));
#endif
  return int(std::max(1u, std::thread::hardware_concurrency()));
}

int default_decode_workers(int replicas) {
  const int cores = usable_cores();
  const int trainers = std::max(1, replicas);
  return std::max(1, (cores - trainers) / trainers);
}

}  // namespace crema
