// crema's lock around libhdf5, shared by hdf5_io.cpp and hdf5_check.cpp.
#pragma once

#include <cstdint>
#include <mutex>

namespace crema::hdf5::internal {

// Every entry point holds it while it calls the library, so that no other thread is inside
// libhdf5 when check_in_child forks: the checking process would otherwise inherit the library's
// own lock held by a thread it does not have. That process, whose one thread has a new id,
// cannot take the lock its parent's thread held at the fork; it takes none.
class ApiLock {
 public:
  ApiLock();

 private:
  std::unique_lock<std::recursive_mutex> lock_;
};

// Marks this process as the checking process (no locking, no checks of its own).
void become_checking_process();
bool is_checking_process();
// In the checking process, raises its memory limit by bytes: the data a read is about to hold
// (each read may map a fixed overhead beyond its data). Elsewhere it does nothing.
void allow_data(uint64_t bytes);

}  // namespace crema::hdf5::internal
