// Where the threads of one process's replicas meet: a reusable barrier, with one slot per thread
// for what it shows the others between two meetings. abort() releases every waiter with an error,
// so a replica that fails never leaves the others waiting.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <vector>

namespace crema {

class Rendezvous {
 public:
  explicit Rendezvous(int count) : pointers(size_t(count)), values(size_t(count)), count_(count) {}

  int count() const { return count_; }
  // Blocks until all count threads called it as many times; throws crema::Error once aborted.
  void wait();
  void abort();
  // The largest of the values the count threads offer (rank: the caller's slot); blocks until all
  // offered one.
  int64_t agree_max(int rank, int64_t value);

  // Slot r belongs to replica r; the others may read it after the wait that follows its write
  // and before the next one.
  std::vector<const void*> pointers;
  std::vector<int64_t> values;

 private:
  const int count_;
  std::mutex mutex_;
  std::condition_variable cv_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
  bool aborted_ = false;
};

}  // namespace crema
