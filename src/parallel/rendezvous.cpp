// The replicas' barrier.
#include "parallel/rendezvous.h"

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

void Rendezvous::abort() {
  std::lock_guard<std::mutex> lock(mutex_);
  aborted_ = true;
  cv_.notify_all();
}

}  // namespace crema
