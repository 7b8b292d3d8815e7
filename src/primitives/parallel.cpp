// Fork-join helper of the CPU backend. Threads are started per call: a training iteration makes
// a handful of parallel calls of milliseconds each, so the ~20 us start cost does not matter and
// no pool has to outlive its work.
#include "primitives/parallel.h"

#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace crema::prim {

void parallel_for(int tasks, const std::function<void(int)>& fn) {
  if (tasks <= 1) {
    fn(0);
    return;
  }
  std::exception_ptr first;
  std::mutex mu;
  const auto guarded = [&](int t) {
    try {
      fn(t);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu);
      if (!first) first = std::current_exception();
    }
  };
  std::vector<std::thread> workers;
  workers.reserve(size_t(tasks - 1));
  for (int t = 1; t < tasks; ++t) workers.emplace_back(guarded, t);
  guarded(0);
  for (auto& w : workers) w.join();
  if (first) std::rethrow_exception(first);
}

}  // namespace crema::prim
