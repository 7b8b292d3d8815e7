// Data-parallel training, as `caffe train --gpu=0,1`: one replica of the solver per device, each
// on a thread of its own with its own net, handle and data. The replicas start from the root's
// weights, read disjoint records (record i of a training data layer goes to replica i mod n, so
// each batch_size is per replica and the step's batch is n times it), and before each update sum
// their gradients (GradientReducer: buckets overlapping the backward) and divide by n, so every
// replica applies the same update to the same weights (checked at the end: a run whose replicas
// differ is an error). Only the root (replica 0) tests, displays and snapshots; every step
// follows the root's requests (signals); a replica that fails stops the others, and the first
// failure is what the run throws.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "crema.pb.h"
#include "parallel/communicator.h"
#include "solver/solver.h"

namespace crema {

struct DataParallelRun {
  SolverParameter param;
  std::string source_name;  // the solver file: errors, the default snapshot prefix
  Device device = Device::kCPU;
  // One replica per entry: GPU ids on CUDA; on the CPU only their number counts (threads sharing
  // host memory, what the tests use).
  std::vector<int> device_ids;
  std::string resume_file;  // a .solverstate, restored by every replica
  // Run on each replica's thread once its solver is built, before training (weights to copy,
  // flags), one replica at a time.
  std::function<void(Solver<float>&)> prepare;
  // The root's requests, polled once per step.
  std::function<SolverAction()> actions;
  // Run on each replica's thread after training.
  std::function<void(Solver<float>&)> finished;
};

// Trains one replica per entry of run.device_ids on threads of this process. Throws
// crema::Error naming the replica that failed first.
void train_data_parallel(const DataParallelRun& run);
// The same for the replicas of this process in a run that may span processes: replica i runs
// on run.device_ids[i] with comms[i], whose rank and size place it in the run (mpirun: one
// replica per process, make_mpi_communicator). Where the run spans processes, a failing replica
// prints its error ("crema: error: replica R: ...") before its communicator ends the run.
void train_replicas(const DataParallelRun& run, std::vector<std::unique_ptr<Communicator>> comms);

}  // namespace crema
