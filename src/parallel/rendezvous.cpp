// The replicas' barrier.
#include "parallel/rendezvous.h"

#include <algorithm>

#include "core/errors.h"

namespace crema {

void Rendezvous::wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  CREMA_REQUIRE(!aborted_, "another replica failed");
  const uint64_t generation = generation_;
  if (++arrived_ == count_) {
    arrived_ = 0;
    ++generation_;
    cv_.notify_all();
    return;
  }
  cv_.wait(lock, [&] { return generation_ != generation || aborted_; });
  CREMA_REQUIRE(generation_ != generation, "another replica failed");
}

int64_t Rendezvous::agree_max(int rank, int64_t value) {
  values[size_t(rank)] = value;
  wait();
  const int64_t m = *std::max_element(values.begin(), values.end());
  wait();  // every thread has read the values before they are written again
  return m;
}

void Rendezvous::abort() {
  std::lock_guard<std::mutex> lock(mutex_);
  aborted_ = true;
  cv_.notify_all();
}

}  // namespace crema
