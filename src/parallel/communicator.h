// Collectives among the replicas of data-parallel training: gradients summed over the replicas,
// the root's weights copied to the others, and host-side agreement on what the step does next.
// Two implementations: threads of one process sharing host memory (CPU replicas; what CI tests)
// and NCCL (one GPU per replica). Every replica calls the same collectives in the same order
// with the same buffer counts.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "primitives/handle.h"
#include "primitives/types.h"

namespace crema {

using prim::Handle;

// count values of the collective's data type at data, on the replica's device.
struct CommBuffer {
  void* data;
  int64_t count;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  int rank() const { return rank_; }
  int size() const { return size_; }

  // Replaces every buffer by its sum over the replicas, queued on h's stream as one group (on a
  // CPU handle, finished on return). The sums are ordered by rank, so each replica gets the same
  // bits.
  virtual void all_reduce_sum(Handle& h, prim::DataType dtype,
                              std::span<const CommBuffer> buffers) = 0;
  // Copies root's buffers over every other replica's, queued on h's stream.
  virtual void broadcast(Handle& h, prim::DataType dtype, std::span<const CommBuffer> buffers,
                         int root) = 0;
  // The largest of the replicas' values, on the host: blocks until every replica offered one.
  virtual int agree_max(int value) = 0;
  // Called by a replica that fails: the others' pending and later collectives throw
  // crema::Error instead of waiting for it forever.
  virtual void abort() = 0;

 protected:
  Communicator(int rank, int size) : rank_(rank), size_(size) {}

 private:
  int rank_, size_;
};

// count communicators for count threads of this process, replicas on the CPU.
std::vector<std::unique_ptr<Communicator>> make_thread_communicators(int count);
// One NCCL communicator per GPU of device_ids (replica i on device_ids[i]), for threads of this
// process. Throws crema::Error in a build without NCCL (configure with -DCREMA_NCCL_ROOT).
std::vector<std::unique_ptr<Communicator>> make_nccl_communicators(
    const std::vector<int>& device_ids);
// Whether this build can run several GPUs (it was built with NCCL).
bool nccl_available();

// Processes started by an MPI launcher (mpirun -np N crema train ...), one replica each.
struct MpiWorld {
  int rank = 0;        // in the run
  int size = 1;        // processes in the run
  int local_rank = 0;  // among the processes on this machine: which GPU to take
};
// Whether an MPI launcher started this process among others (read from the environment: no MPI
// call is made).
bool launched_by_mpi();
// Initializes MPI once (finalized at exit) and says where this process stands. Throws
// crema::Error in a build without MPI (configure where Open MPI is installed; CREMA_MPI).
MpiWorld mpi_init();
// This process's communicator among the MPI world's processes: NCCL on GPU device_id for CUDA
// (the NCCL id sent over MPI), MPI's own collectives on the CPU; host agreement goes over MPI.
// abort() ends the whole run (MPI_Abort): report the error first.
std::unique_ptr<Communicator> make_mpi_communicator(prim::Device device, int device_id);
// Its CUDA half, in the NCCL build (make_mpi_communicator calls it with its world).
std::unique_ptr<Communicator> make_nccl_mpi_communicator(const MpiWorld& world, int device_id);

}  // namespace crema
