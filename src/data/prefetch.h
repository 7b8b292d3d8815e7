// Prefetcher: a background thread that fills host batches ahead of their use. `depth` batches
// circulate between a free queue and a ready queue: the thread takes a free batch, fills it with
// the given function and queues it as ready; the consumer takes ready batches in order and hands
// them back. An exception in the fill function stops the thread; the consumer receives the
// batches filled before it, then the error, rethrown as crema::Error. The destructor stops and
// joins the thread.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "primitives/handle.h"

namespace crema {

struct HostBatch {
  // Pinned where a GPU is visible, so that uploads can run asynchronously.
  std::vector<float, prim::PinnedAllocator<float>> data;
  std::vector<float, prim::PinnedAllocator<float>> label;
  // For layers on a GPU: the batch's device copy, uploaded on the prefetch thread's stream
  // (`uploaded` marks its end), and `consumed` marking the end of the copy into the layer's tops,
  // after which the batch may be refilled.
  prim::DeviceBuffer device_data, device_label;
  prim::Event uploaded, consumed;
  // Where the layer's source stood once the batch was filled: records passed and the
  // transformer's generator (what a snapshot taken after the batch was used records).
  uint64_t records_after = 0;
  std::mt19937_64 transform_random_after;
};

class Prefetcher {
 public:
  // fill(batch, self) writes one batch; it may poll self.stopping() to give up early during
  // shutdown.
  using Fill = std::function<void(HostBatch* batch, const Prefetcher& self)>;

  Prefetcher(size_t depth, Fill fill);
  ~Prefetcher();
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  // Blocks until the next batch is ready and returns it; the batch stays the caller's until
  // release(). Throws the fill function's error (as crema::Error) once no ready batch remains.
  HostBatch* next();
  void release(HostBatch* batch);

  bool stopping() const;

 private:
  void run();

  Fill fill_;
  std::vector<HostBatch> batches_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<HostBatch*> free_, ready_;
  std::exception_ptr error_;
  bool stop_ = false;
  bool done_ = false;  // the thread has exited
  std::thread thread_;
};

}  // namespace crema
