// One thread per replica.
#include "solver/data_parallel.h"

#include <glog/logging.h>

#include <algorithm>
#include <mutex>
#include <thread>

#include "core/errors.h"
#include "core/replica.h"
#include "parallel/communicator.h"
#include "parallel/gradient_reducer.h"

namespace crema {
namespace {

// What replica r runs: the root's solver, without what only the root does.
SolverParameter replica_param(const SolverParameter& param, int rank) {
  SolverParameter p = param;
  if (rank == 0) return p;
  p.clear_test_net();
  p.clear_test_net_param();
  p.clear_test_iter();
  p.clear_test_state();
  p.set_test_interval(0);
  p.set_display(0);
  p.set_snapshot(0);
  p.set_snapshot_after_train(false);
  return p;
}

std::string replica_name(const DataParallelRun& run, int rank) {
  return run.device == Device::kCUDA
             ? detail::make_message("replica ", rank, " (GPU ", run.device_ids[size_t(rank)], ")")
             : detail::make_message("replica ", rank);
}

}  // namespace

void train_data_parallel(const DataParallelRun& run) {
  const int n = int(run.device_ids.size());
  CREMA_REQUIRE(n >= 1, "data-parallel training needs at least one device");
  CREMA_REQUIRE(run.param.reduce_bucket_mb() > 0, "solver ", run.source_name,
                ": reduce_bucket_mb must be positive, got ", run.param.reduce_bucket_mb());
  const size_t bucket_bytes = size_t(double(run.param.reduce_bucket_mb()) * (1 << 20));
  std::vector<std::unique_ptr<Communicator>> comms = run.device == Device::kCUDA
                                                         ? make_nccl_communicators(run.device_ids)
                                                         : make_thread_communicators(n);
  LOG(INFO) << "Training " << n << " replicas, gradients summed in buckets of "
            << run.param.reduce_bucket_mb() << " MiB"
            << (run.param.layer_wise_reduce() ? " during backward" : " after backward");
  std::mutex failure_mutex;
  std::string failure;
  std::mutex prepare_mutex;  // prepare() runs on one replica at a time
  const auto replica = [&](int rank) {
    set_this_replica({rank, n});
    try {
      Handle h(run.device, run.device_ids[size_t(rank)]);
      if (run.device == Device::kCPU) h.set_cpu_threads(std::max(1, h.cpu_threads() / n));
      auto solver =
          create_solver<float>(replica_param(run.param, rank), run.device, h, run.source_name);
      GradientReducer<float> reducer(*comms[size_t(rank)], h, bucket_bytes,
                                     run.param.layer_wise_reduce());
      solver->set_reducer(&reducer);
      if (rank == 0 && run.actions) solver->set_action_source(run.actions);
      if (run.prepare) {
        std::lock_guard<std::mutex> lock(prepare_mutex);
        run.prepare(*solver);
      }
      solver->solve(run.resume_file);
      h.synchronize();
      if (run.finished) run.finished(*solver);
    } catch (const std::exception& e) {
      {
        std::lock_guard<std::mutex> lock(failure_mutex);
        if (failure.empty()) failure = replica_name(run, rank) + ": " + e.what();
      }
      comms[size_t(rank)]->abort();
    }
  };
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) threads.emplace_back(replica, r);
  for (std::thread& t : threads) t.join();
  if (!failure.empty()) fail(failure);
}

}  // namespace crema
