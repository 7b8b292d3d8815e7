// Fork-join helper of the CPU backend: a process-wide pool of worker threads, started on first
// use and grown to the largest task count asked for. A LeNet iteration makes ~15 parallel calls
// of 0.1-3 ms; starting threads per call cost ~30-60 us each. Workers spin briefly after a job
// before sleeping, since the next call usually follows within microseconds.
#include "primitives/cpu/parallel.h"

#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace crema::prim {
namespace {

thread_local bool in_task = false;

class Pool {
 public:
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      generation_.fetch_add(1);
    }
    wake_.notify_all();
    for (auto& w : workers_) w.join();
  }

  // Runs fn(0..tasks-1) with the caller taking tasks too; one job at a time.
  void run(int tasks, const std::function<void(int)>& fn) {
    std::lock_guard<std::mutex> job_lock(job_mu_);
    while (int(workers_.size()) < tasks - 1) workers_.emplace_back([this] { work(); });
    {
      // No worker may still be inside the previous job while its fields are rewritten; workers
      // join a job only under mu_, so once active_ is 0 here none can.
      std::unique_lock<std::mutex> lock(mu_);
      while (active_.load() != 0) {
        lock.unlock();
        std::this_thread::yield();
        lock.lock();
      }
      fn_ = &fn;
      tasks_ = tasks;
      first_error_ = nullptr;
      pending_.store(tasks);
      next_.store(0);
      generation_.fetch_add(1);
    }
    wake_.notify_all();
    take_tasks();
    while (pending_.load() > 0) std::this_thread::yield();
    if (first_error_) std::rethrow_exception(first_error_);
  }

 private:
  void take_tasks() {
    const bool outer = in_task;
    in_task = true;
    for (int t = next_.fetch_add(1); t < tasks_; t = next_.fetch_add(1)) {
      try {
        (*fn_)(t);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu_);
        if (!first_error_) first_error_ = std::current_exception();
      }
      pending_.fetch_sub(1);
    }
    in_task = outer;
  }

  void work() {
    uint64_t seen = 0;
    for (;;) {
      // The next job usually follows within microseconds: spin a while before sleeping.
      for (int i = 0; i < 2000 && generation_.load() == seen; ++i) std::this_thread::yield();
      {
        std::unique_lock<std::mutex> lock(mu_);
        wake_.wait(lock, [&] { return generation_.load() != seen; });
        if (stop_) return;
        seen = generation_.load();
        active_.fetch_add(1);
      }
      take_tasks();
      active_.fetch_sub(1);
    }
  }

  std::mutex job_mu_;  // one job at a time
  std::mutex mu_;      // guards joining a job, the job's fields, first_error_, stop_
  std::condition_variable wake_;
  std::vector<std::thread> workers_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> active_{0};   // workers inside take_tasks
  std::atomic<int> next_{0};     // next task index to take
  std::atomic<int> pending_{0};  // tasks not finished
  bool stop_ = false;
  const std::function<void(int)>* fn_ = nullptr;
  int tasks_ = 0;
  std::exception_ptr first_error_;
};

}  // namespace

bool inside_parallel_for() { return in_task; }

void parallel_for(int tasks, const std::function<void(int)>& fn) {
  // A task that calls parallel_for again runs the inner tasks itself: the pool runs one job.
  if (tasks <= 1 || in_task) {
    for (int t = 0; t < tasks; ++t) fn(t);
    return;
  }
  static Pool pool;
  pool.run(tasks, fn);
}

}  // namespace crema::prim
