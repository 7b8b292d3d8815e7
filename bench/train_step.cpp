// Benchmark of whole training iterations (data, forward, backward, regularization and update),
// the number a user waits for. Builds the solver from a solver prototxt, runs warm-up steps,
// times each following step separately and prints the median, mean and fastest milliseconds per
// iteration plus the peak resident memory of the process (and, on a GPU, the peak GPU memory
// the run allocated). On one GPU it then runs as many steps again in one call, as training
// does, and prints their mean ("back to back": the host waits once, at the end).
//
//   train_step --solver=models/lenet_fashion/lenet_solver.prototxt [--iterations=200]
//              [--warmup=20] [--gpu=N | --gpus=0,1] [--precision=P] [--unfused] [--autotune]
//              [--nocuda_graph] [--channels_last]
//
// --gpus trains one replica per GPU (solver/data_parallel.h, batch_size per GPU) and times the
// steps between the root replica's polls. Started by mpirun, it trains one replica per process
// (on the GPU of its rank on the machine) the same way.
#include <gflags/gflags.h>
#include <glog/logging.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "core/precision.h"
#include "core/replica.h"
#include "core/upgrade_proto.h"
#include "primitives/blas_kernels.h"
#include "primitives/handle.h"
#include "solver/data_parallel.h"
#include "solver/solver.h"

DEFINE_string(solver, "models/lenet_fashion/lenet_solver.prototxt", "solver prototxt");
DEFINE_int32(iterations, 200, "timed iterations");
DEFINE_int32(warmup, 20, "untimed iterations first");
DEFINE_int32(gpu, -1, "train on this GPU (default: the CPU)");
DEFINE_string(gpus, "", "data-parallel replicas on these GPUs (ids separated by commas)");
DEFINE_string(precision, "", "fp32, tf32, bf16 or fp16 over the net's own precision fields");
DEFINE_bool(unfused, false, "run every layer apart (Net::unfuse): what the fusions buy");
DEFINE_bool(channels_last, false,
            "store 4-d activations NHWC where every layer touching them can "
            "(Net::set_channels_last; GPU only)");
DEFINE_bool(cuda_graph, true, "replay each step from a CUDA graph where the net allows it");
DEFINE_bool(autotune, false,
            "time the convolution algorithms in the warm-up (Handle::set_conv_autotune)");

int main(int argc, char** argv) {
  crema::prim::prepare_blas_process(argv);
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  google::InitGoogleLogging(argv[0]);
  FLAGS_minloglevel = 2;  // the solver's own progress lines would disturb the timing
  try {
    crema::SolverParameter param = crema::load_solver_param(FLAGS_solver);
    if (!FLAGS_precision.empty()) crema::apply_precision_flag(FLAGS_precision, &param);
    param.clear_test_interval();
    param.clear_test_iter();
    param.clear_test_net();
    param.clear_test_net_param();
    param.clear_test_state();
    param.set_test_initialization(false);
    param.set_snapshot(0);
    param.set_snapshot_after_train(false);
    param.set_display(0);
    param.set_max_iter(FLAGS_warmup + FLAGS_iterations);
    std::vector<double> ms;
    double final_loss = 0;
    double back_to_back = 0;  // ms per step of one step(iterations) call (one GPU)
    size_t workspace = 0;     // the handle's workspace after the run (one GPU)
    int replicas = 1;
    bool report = true;  // the root process prints
    crema::Device device = FLAGS_gpu >= 0 ? crema::Device::kCUDA : crema::Device::kCPU;
    if (!FLAGS_gpus.empty() || crema::launched_by_mpi()) {
      crema::DataParallelRun run{param, FLAGS_solver, crema::Device::kCUDA, {}, "", {}, {}, {}};
      std::stringstream ids(FLAGS_gpus);
      for (std::string id; std::getline(ids, id, ',');) run.device_ids.push_back(std::stoi(id));
      device = crema::Device::kCUDA;
      replicas = int(run.device_ids.size());
      std::vector<std::unique_ptr<crema::Communicator>> comms;
      if (crema::launched_by_mpi()) {  // one replica here, on the GPU of this local rank
        const crema::MpiWorld world = crema::mpi_init();
        run.device_ids = {world.local_rank};
        replicas = world.size;
        comms.push_back(crema::make_mpi_communicator(device, world.local_rank));
        report = world.rank == 0;
      }
      run.prepare = [](crema::Solver<float>& solver) {
        if (FLAGS_channels_last) solver.net().set_channels_last(true);
        solver.net().fill_inputs_uniform(1234 + uint32_t(crema::this_replica().rank));
        if (FLAGS_unfused) solver.net().unfuse();
      };
      // The root polls once per step, after its update: the time between polls is a step.
      std::vector<std::chrono::steady_clock::time_point> polls;
      run.actions = [&polls]() {
        polls.push_back(std::chrono::steady_clock::now());
        return crema::SolverAction::kNone;
      };
      run.finished = [&final_loss](crema::Solver<float>& solver) {
        if (crema::this_replica().rank == 0) final_loss = double(solver.last_loss());
      };
      if (comms.empty())
        crema::train_data_parallel(run);
      else
        crema::train_replicas(run, std::move(comms));
      for (size_t i = size_t(FLAGS_warmup); i < polls.size(); ++i)
        ms.push_back(std::chrono::duration<double, std::milli>(polls[i] - polls[i - 1]).count());
    } else {
      crema::prim::Handle handle(device, std::max(FLAGS_gpu, 0));
      handle.set_conv_autotune(FLAGS_autotune);
      auto solver = crema::create_solver<float>(param, device, handle, FLAGS_solver);
      solver->set_cuda_graph(FLAGS_cuda_graph);
      if (FLAGS_channels_last) solver->net().set_channels_last(true);
      solver->net().fill_inputs_uniform(1234);  // nets fed by Input layers would see zeros
      if (FLAGS_unfused) solver->net().unfuse();
      solver->step(FLAGS_warmup);
      handle.synchronize();
      for (int i = 0; i < FLAGS_iterations; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        solver->step(1);
        handle.synchronize();
        ms.push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count());
      }
      final_loss = double(solver->last_loss());
      // The same number of steps back to back, as training runs them: one wait at the end.
      const auto t0 = std::chrono::steady_clock::now();
      solver->step(FLAGS_iterations);
      handle.synchronize();
      back_to_back =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() /
          FLAGS_iterations;
      workspace = handle.workspace_size();
    }
    if (!report) return 0;
    std::vector<double> sorted = ms;
    std::sort(sorted.begin(), sorted.end());
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    std::printf("solver %s, %d timed iterations after %d warm-up\n", FLAGS_solver.c_str(),
                FLAGS_iterations, FLAGS_warmup);
    std::printf(
        "ms/iter: median %.2f  mean %.2f  min %.2f  (final loss %.4f)\n", sorted[sorted.size() / 2],
        std::accumulate(ms.begin(), ms.end(), 0.0) / double(ms.size()), sorted.front(), final_loss);
    if (back_to_back > 0) std::printf("ms/iter back to back: %.3f\n", back_to_back);
    if (replicas > 1)
      std::printf("replicas %d: %.1f steps/s\n", replicas, 1000.0 / sorted[sorted.size() / 2]);
    std::printf("peak resident memory: %.1f MiB\n", double(usage.ru_maxrss) / 1024.0);
    if (workspace > 0) std::printf("workspace: %.1f MiB\n", double(workspace) / 1048576.0);
    if (device == crema::Device::kCUDA)
      std::printf("peak GPU memory allocated: %.1f MiB\n",
                  double(crema::prim::cuda_peak_allocated_bytes()) / 1048576.0);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "train_step: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
