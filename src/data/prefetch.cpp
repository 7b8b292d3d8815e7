// Prefetcher thread and its two queues.
#include "data/prefetch.h"

#include "core/errors.h"

namespace crema {

Prefetcher::Prefetcher(size_t depth, Fill fill) : fill_(std::move(fill)), batches_(depth) {
  for (HostBatch& b : batches_) free_.push_back(&b);
  thread_ = std::thread([this] { run(); });
}

Prefetcher::~Prefetcher() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

bool Prefetcher::stopping() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stop_;
}

void Prefetcher::run() {
  for (;;) {
    HostBatch* batch = nullptr;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [this] { return stop_ || !free_.empty(); });
      if (stop_) break;
      batch = free_.front();
      free_.pop_front();
    }
    try {
      fill_(batch, *this);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      error_ = std::current_exception();
      break;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ready_.push_back(batch);
    }
    cv_.notify_all();
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    done_ = true;
  }
  cv_.notify_all();
}

HostBatch* Prefetcher::next() {
  std::exception_ptr error;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [this] { return !ready_.empty() || done_; });
    if (!ready_.empty()) {
      HostBatch* batch = ready_.front();
      ready_.pop_front();
      return batch;
    }
    error = error_;
  }
  if (!error) fail("data prefetch thread stopped");
  try {
    std::rethrow_exception(error);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    // Out of memory or a library exception: still one line for the user, never an abort.
    fail("data prefetch failed: ", e.what());
  } catch (...) {
  }
  fail("data prefetch failed with an unknown error");
}

void Prefetcher::release(HostBatch* batch) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back(batch);
  }
  cv_.notify_all();
}

}  // namespace crema
