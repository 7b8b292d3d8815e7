// One thread per replica.
#include "solver/data_parallel.h"

#include <glog/logging.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>

#include "core/errors.h"
#include "core/replica.h"
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

std::string replica_name(const DataParallelRun& run, int rank, int device_id) {
  return run.device == Device::kCUDA
             ? detail::make_message("replica ", rank, " (GPU ", device_id, ")")
             : detail::make_message("replica ", rank);
}

size_t bucket_bytes(const DataParallelRun& run) {
  CREMA_REQUIRE(run.param.reduce_bucket_mb() > 0, "solver ", run.source_name,
                ": reduce_bucket_mb must be positive, got ", run.param.reduce_bucket_mb());
  return size_t(double(run.param.reduce_bucket_mb()) * (1 << 20));
}

// Every replica must end with the root's weights: the sums give each replica the same bits, so a
// difference is a fault of the run, said rather than saved. Compares a 31-bit FNV-1a hash of the
// parameters the solver updates (not those with lr_mult 0, such as BatchNorm's statistics, which
// each replica gathers from its own batches, as in Caffe) by its largest and smallest value over
// the replicas.
void check_same_weights(Communicator& comm, const Net<float>& net) {
  uint64_t hash = 1469598103934665603ull;
  for (size_t i = 0; i < net.learnable_params().size(); ++i) {
    if (net.params_lr()[i] == 0) continue;
    for (float v : net.learnable_params()[i]->data_vector()) {
      uint32_t bits;
      std::memcpy(&bits, &v, sizeof bits);
      hash = (hash ^ bits) * 1099511628211ull;
    }
  }
  const int mine = int(hash & 0x7fffffff);
  const int most = comm.agree_max(mine), least = -comm.agree_max(-mine);
  CREMA_REQUIRE(most == least, "the replicas' weights differ after training");
  if (comm.rank() == 0)
    LOG(INFO) << "The " << comm.size() << " replicas end with the same weights (hash " << mine
              << ")";
}

}  // namespace

void train_data_parallel(const DataParallelRun& run) {
  CREMA_REQUIRE(!run.device_ids.empty(), "data-parallel training needs at least one device");
  bucket_bytes(run);  // bad settings fail before any communicator exists
  train_replicas(run, run.device == Device::kCUDA
                          ? make_nccl_communicators(run.device_ids)
                          : make_thread_communicators(int(run.device_ids.size())));
}

void train_replicas(const DataParallelRun& run, std::vector<std::unique_ptr<Communicator>> comms) {
  CREMA_REQUIRE(!comms.empty() && comms.size() == run.device_ids.size(),
                "one communicator per local replica");
  const size_t bucket = bucket_bytes(run);
  const int n = comms[0]->size();
  const bool several_processes = comms.size() < size_t(n);
  if (comms[0]->rank() == 0)
    LOG(INFO) << "Training " << n << " replicas, gradients summed in buckets of "
              << run.param.reduce_bucket_mb() << " MiB"
              << (run.param.layer_wise_reduce() ? " during backward" : " after backward");
  std::mutex failure_mutex;
  std::string failure;
  std::mutex prepare_mutex;  // prepare() runs on one replica at a time
  const auto replica = [&](size_t local) {
    Communicator& comm = *comms[local];
    const int rank = comm.rank(), device_id = run.device_ids[local];
    set_this_replica({rank, n});
    try {
      Handle h(run.device, device_id);
      if (run.device == Device::kCPU)
        h.set_cpu_threads(std::max(1, h.cpu_threads() / int(comms.size())));
      auto solver =
          create_solver<float>(replica_param(run.param, rank), run.device, h, run.source_name);
      GradientReducer<float> reducer(comm, h, bucket, run.param.layer_wise_reduce());
      solver->set_reducer(&reducer);
      if (rank == 0 && run.actions) solver->set_action_source(run.actions);
      if (run.prepare) {
        std::lock_guard<std::mutex> lock(prepare_mutex);
        run.prepare(*solver);
      }
      solver->solve(run.resume_file);
      check_same_weights(comm, solver->net());
      if (run.finished) run.finished(*solver);
    } catch (const std::exception& e) {
      const std::string what = replica_name(run, rank, device_id) + ": " + e.what();
      {
        std::lock_guard<std::mutex> lock(failure_mutex);
        if (failure.empty()) failure = what;
      }
      if (several_processes) std::fprintf(stderr, "crema: error: %s\n", what.c_str());
      comm.abort();
    }
  };
  std::vector<std::thread> threads;
  for (size_t i = 0; i < comms.size(); ++i) threads.emplace_back(replica, i);
  for (std::thread& t : threads) t.join();
  if (!failure.empty()) fail(failure);
}

}  // namespace crema
