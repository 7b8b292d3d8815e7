// Replicas on GPUs of one process, through NCCL: collectives queue on the caller's stream; the
// host-side agreement goes through a rendezvous of the replicas' threads. Without NCCL in the
// build the factory says so.
#include "core/errors.h"
#include "parallel/communicator.h"

#ifdef CREMA_WITH_NCCL
#include <cuda_runtime.h>
#include <nccl.h>

#include <mutex>

#include "parallel/rendezvous.h"
#ifdef CREMA_WITH_MPI
#include <mpi.h>
#endif
#endif

namespace crema {

#ifdef CREMA_WITH_NCCL
namespace {

void check_nccl(ncclResult_t r, const char* what) {
  CREMA_REQUIRE(r == ncclSuccess, "NCCL ", what, ": ", ncclGetErrorString(r));
}

ncclDataType_t nccl_type(prim::DataType dtype) {
  switch (dtype) {
    case prim::DataType::kFloat32:
      return ncclFloat32;
    case prim::DataType::kFloat64:
      return ncclFloat64;
    default:
      fail("NCCL collectives take float32 or float64 buffers");
  }
}

cudaStream_t stream_of(Handle& h) {
  CREMA_REQUIRE(h.device() == prim::Device::kCUDA, "NCCL collectives run on a CUDA handle");
  return static_cast<cudaStream_t>(h.stream());
}

// The communicators of one run: a failing replica aborts all of them at once, which frees the
// others' kernels waiting for it.
struct NcclGroup {
  std::vector<ncclComm_t> comms;
  std::shared_ptr<Rendezvous> meet;
  std::once_flag aborted;
  bool was_aborted = false;

  void abort() {
    std::call_once(aborted, [&] {
      was_aborted = true;
      meet->abort();
      for (ncclComm_t c : comms) ncclCommAbort(c);
    });
  }
  ~NcclGroup() {
    if (!was_aborted)
      for (ncclComm_t c : comms) ncclCommDestroy(c);
  }
};

// The collectives; the subclasses say how the host agrees and how a run is aborted.
class NcclCommunicator : public Communicator {
 public:
  NcclCommunicator(int rank, int size, ncclComm_t comm) : Communicator(rank, size), comm_(comm) {}

  void all_reduce_sum(Handle& h, prim::DataType dtype,
                      std::span<const CommBuffer> buffers) override {
    cudaStream_t s = stream_of(h);
    check_nccl(ncclGroupStart(), "group start");
    for (const CommBuffer& b : buffers)
      check_nccl(
          ncclAllReduce(b.data, b.data, size_t(b.count), nccl_type(dtype), ncclSum, comm_, s),
          "all-reduce");
    check_nccl(ncclGroupEnd(), "all-reduce");
  }

  void broadcast(Handle& h, prim::DataType dtype, std::span<const CommBuffer> buffers,
                 int root) override {
    cudaStream_t s = stream_of(h);
    check_nccl(ncclGroupStart(), "group start");
    for (const CommBuffer& b : buffers)
      check_nccl(ncclBroadcast(b.data, b.data, size_t(b.count), nccl_type(dtype), root, comm_, s),
                 "broadcast");
    check_nccl(ncclGroupEnd(), "broadcast");
  }

 protected:
  ncclComm_t comm_;
};

// Threads of one process: the host agrees through their rendezvous.
class ThreadNcclCommunicator : public NcclCommunicator {
 public:
  ThreadNcclCommunicator(std::shared_ptr<NcclGroup> group, int rank)
      : NcclCommunicator(rank, int(group->comms.size()), group->comms[size_t(rank)]),
        group_(std::move(group)) {}

  int agree_max(int value) override { return int(group_->meet->agree_max(rank(), value)); }

  void abort() override { group_->abort(); }

 private:
  std::shared_ptr<NcclGroup> group_;
};

#ifdef CREMA_WITH_MPI
// One process of an MPI run: MPI carries the NCCL id and the host's agreement.
class MpiNcclCommunicator : public NcclCommunicator {
 public:
  MpiNcclCommunicator(int rank, int size, ncclComm_t comm) : NcclCommunicator(rank, size, comm) {}
  ~MpiNcclCommunicator() override { ncclCommDestroy(comm_); }

  int agree_max(int value) override {
    int out = 0;
    CREMA_REQUIRE(MPI_Allreduce(&value, &out, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD) == MPI_SUCCESS,
                  "MPI agreement failed");
    return out;
  }

  void abort() override {
    ncclCommAbort(comm_);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
};
#endif

}  // namespace

bool nccl_available() { return true; }

std::vector<std::unique_ptr<Communicator>> make_nccl_communicators(
    const std::vector<int>& device_ids) {
  CREMA_REQUIRE(!device_ids.empty(), "a run needs at least one GPU");
  auto group = std::make_shared<NcclGroup>();
  group->comms.resize(device_ids.size());
  group->meet = std::make_shared<Rendezvous>(int(device_ids.size()));
  check_nccl(ncclCommInitAll(group->comms.data(), int(device_ids.size()), device_ids.data()),
             "init");
  std::vector<std::unique_ptr<Communicator>> out;
  for (size_t r = 0; r < device_ids.size(); ++r)
    out.push_back(std::make_unique<ThreadNcclCommunicator>(group, int(r)));
  return out;
}

std::unique_ptr<Communicator> make_nccl_mpi_communicator(const MpiWorld& w, int device_id) {
#ifdef CREMA_WITH_MPI
  ncclUniqueId id;
  if (w.rank == 0) check_nccl(ncclGetUniqueId(&id), "unique id");
  CREMA_REQUIRE(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD) == MPI_SUCCESS,
                "MPI broadcast of the NCCL id failed");
  prim::cuda_set_current_device(device_id);
  ncclComm_t comm = nullptr;
  check_nccl(ncclCommInitRank(&comm, w.size, id, w.rank), "init");
  return std::make_unique<MpiNcclCommunicator>(w.rank, w.size, comm);
#else
  (void)w;
  (void)device_id;
  fail("crema was built without MPI; install Open MPI (Debian: libopenmpi-dev) and rebuild");
#endif
}

#else

namespace {

[[noreturn]] void no_nccl() {
  fail(
      "crema was built without NCCL, so it trains on one GPU; configure with "
      "-DCREMA_NCCL_ROOT=<dir with include/nccl.h and lib/libnccl.so.2> for several");
}

}  // namespace

bool nccl_available() { return false; }

std::vector<std::unique_ptr<Communicator>> make_nccl_communicators(const std::vector<int>&) {
  no_nccl();
}

std::unique_ptr<Communicator> make_nccl_mpi_communicator(const MpiWorld&, int) { no_nccl(); }

#endif

}  // namespace crema
