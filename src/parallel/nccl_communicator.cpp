// Replicas on GPUs of one process, through NCCL: collectives queue on the caller's stream; the
// host-side agreement goes through a rendezvous of the replicas' threads. Without NCCL in the
// build the factory says so.
#include "core/errors.h"
#include "parallel/communicator.h"

#ifdef CREMA_WITH_NCCL
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <mutex>

#include "parallel/rendezvous.h"
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

class NcclCommunicator : public Communicator {
 public:
  NcclCommunicator(std::shared_ptr<NcclGroup> group, int rank)
      : Communicator(rank, int(group->comms.size())),
        group_(std::move(group)),
        comm_(group_->comms[size_t(rank)]) {}

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

  int agree_max(int value) override {
    Rendezvous& meet = *group_->meet;
    meet.values[size_t(rank())] = value;
    meet.wait();
    const int64_t m = *std::max_element(meet.values.begin(), meet.values.end());
    meet.wait();
    return int(m);
  }

  void abort() override { group_->abort(); }

 private:
  std::shared_ptr<NcclGroup> group_;
  ncclComm_t comm_;
};

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
    out.push_back(std::make_unique<NcclCommunicator>(group, int(r)));
  return out;
}

#else

bool nccl_available() { return false; }

std::vector<std::unique_ptr<Communicator>> make_nccl_communicators(const std::vector<int>&) {
  fail(
      "crema was built without NCCL, so it trains on one GPU; configure with "
      "-DCREMA_NCCL_ROOT=<dir with include/nccl.h and lib/libnccl.so.2> for several");
}

#endif

}  // namespace crema
