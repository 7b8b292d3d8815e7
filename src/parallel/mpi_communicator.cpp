// Replicas as processes of an MPI run: on the CPU MPI's collectives carry the data; on GPUs NCCL
// does (nccl_communicator.cpp) and MPI only starts it and carries the host's agreement.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/errors.h"
#include "parallel/communicator.h"

#ifdef CREMA_WITH_MPI
#include <mpi.h>
#endif

namespace crema {

bool launched_by_mpi() {
  // Open MPI, then MPICH, Intel MPI and Slurm's PMI.
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}) {
    const char* v = std::getenv(name);
    if (v && std::atoi(v) > 1) return true;
  }
  return false;
}

#ifdef CREMA_WITH_MPI
namespace {

void check_mpi(int r, const char* what) {
  CREMA_REQUIRE(r == MPI_SUCCESS, "MPI ", what, " failed (error ", r, ")");
}

MPI_Datatype mpi_type(prim::DataType dtype) {
  switch (dtype) {
    case prim::DataType::kFloat32:
      return MPI_FLOAT;
    case prim::DataType::kFloat64:
      return MPI_DOUBLE;
    default:
      fail("MPI collectives take float32 or float64 buffers");
  }
}

// MPI counts are int: a buffer of 2^31 elements or more goes in pieces of this many.
constexpr int64_t kMaxChunk = int64_t(1) << 30;

class MpiCommunicator : public Communicator {
 public:
  MpiCommunicator(int rank, int size) : Communicator(rank, size) {}

  void all_reduce_sum(Handle& h, prim::DataType dtype,
                      std::span<const CommBuffer> buffers) override {
    CREMA_REQUIRE(h.device() == prim::Device::kCPU, "MPI's collectives run on the CPU here");
    const size_t elem = prim::dtype_size(dtype);
    for (const CommBuffer& b : buffers)
      for (int64_t at = 0; at < b.count; at += kMaxChunk)
        check_mpi(MPI_Allreduce(MPI_IN_PLACE, static_cast<char*>(b.data) + size_t(at) * elem,
                                int(std::min(kMaxChunk, b.count - at)), mpi_type(dtype), MPI_SUM,
                                MPI_COMM_WORLD),
                  "all-reduce");
  }

  void broadcast(Handle& h, prim::DataType dtype, std::span<const CommBuffer> buffers,
                 int root) override {
    CREMA_REQUIRE(h.device() == prim::Device::kCPU, "MPI's collectives run on the CPU here");
    const size_t elem = prim::dtype_size(dtype);
    for (const CommBuffer& b : buffers)
      for (int64_t at = 0; at < b.count; at += kMaxChunk)
        check_mpi(MPI_Bcast(static_cast<char*>(b.data) + size_t(at) * elem,
                            int(std::min(kMaxChunk, b.count - at)), mpi_type(dtype), root,
                            MPI_COMM_WORLD),
                  "broadcast");
  }

  int agree_max(int value) override {
    int out = 0;
    check_mpi(MPI_Allreduce(&value, &out, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD), "agreement");
    return out;
  }
  void abort() override { MPI_Abort(MPI_COMM_WORLD, 1); }
};

}  // namespace

MpiWorld mpi_init() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    // Each replica's thread calls MPI from one thread only; the prefetch threads never do.
    check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "init");
    std::atexit([] {
      int finalized = 0;
      MPI_Finalized(&finalized);
      if (!finalized) MPI_Finalize();
    });
  }
  MpiWorld w;
  check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &w.rank), "rank");
  check_mpi(MPI_Comm_size(MPI_COMM_WORLD, &w.size), "size");
  MPI_Comm node;
  check_mpi(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, w.rank, MPI_INFO_NULL, &node),
            "split by node");
  check_mpi(MPI_Comm_rank(node, &w.local_rank), "local rank");
  MPI_Comm_free(&node);
  return w;
}

std::unique_ptr<Communicator> make_mpi_communicator(prim::Device device, int device_id) {
  const MpiWorld w = mpi_init();
  if (device == prim::Device::kCUDA) return make_nccl_mpi_communicator(w, device_id);
  return std::make_unique<MpiCommunicator>(w.rank, w.size);
}

#else

MpiWorld mpi_init() {
  fail("crema was built without MPI; install Open MPI (Debian: libopenmpi-dev) and rebuild");
}

std::unique_ptr<Communicator> make_mpi_communicator(prim::Device, int) {
  mpi_init();
  return nullptr;
}

#endif

}  // namespace crema
