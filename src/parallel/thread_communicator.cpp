// Replicas as threads of one process on the CPU: each collective shows its buffers in the
// rendezvous slots, and for the sums each replica adds up one slice of every buffer over all
// replicas, in rank order, and writes the result to all of them.
#include <cstring>

#include "core/errors.h"
#include "parallel/communicator.h"
#include "parallel/rendezvous.h"

namespace crema {
namespace {

size_t element_bytes(prim::DataType dtype) {
  CREMA_REQUIRE(dtype == prim::DataType::kFloat32 || dtype == prim::DataType::kFloat64,
                "the CPU communicator sums float32 and float64 only");
  return dtype == prim::DataType::kFloat64 ? 8 : 4;
}

template <typename T>
void sum_slice(const std::vector<std::span<const CommBuffer>>& all, size_t b, int64_t lo,
               int64_t hi) {
  for (int64_t i = lo; i < hi; ++i) {
    T s = static_cast<const T*>(all[0][b].data)[i];
    for (size_t r = 1; r < all.size(); ++r) s += static_cast<const T*>(all[r][b].data)[i];
    for (const auto& buffers : all) static_cast<T*>(buffers[b].data)[i] = s;
  }
}

class ThreadCommunicator : public Communicator {
 public:
  ThreadCommunicator(std::shared_ptr<Rendezvous> meet, int rank)
      : Communicator(rank, meet->count()), meet_(std::move(meet)) {}

  void all_reduce_sum(Handle& h, prim::DataType dtype,
                      std::span<const CommBuffer> buffers) override {
    CREMA_REQUIRE(h.device() == prim::Device::kCPU, "the thread communicator runs on the CPU");
    const bool doubles = element_bytes(dtype) == 8;
    const std::vector<std::span<const CommBuffer>> all = show(buffers);
    for (size_t b = 0; b < buffers.size(); ++b) {
      const int64_t n = buffers[b].count;
      const int64_t lo = n * rank() / size(), hi = n * (rank() + 1) / size();
      if (doubles)
        sum_slice<double>(all, b, lo, hi);
      else
        sum_slice<float>(all, b, lo, hi);
    }
    meet_->wait();  // nobody reads or frees a buffer before every slice is written
  }

  void broadcast(Handle& h, prim::DataType dtype, std::span<const CommBuffer> buffers,
                 int root) override {
    CREMA_REQUIRE(h.device() == prim::Device::kCPU, "the thread communicator runs on the CPU");
    const size_t bytes = element_bytes(dtype);
    const std::vector<std::span<const CommBuffer>> all = show(buffers);
    if (rank() != root)
      for (size_t b = 0; b < buffers.size(); ++b)
        std::memcpy(buffers[b].data, all[size_t(root)][b].data, size_t(buffers[b].count) * bytes);
    meet_->wait();
  }

  int agree_max(int value) override { return int(meet_->agree_max(rank(), value)); }

  void abort() override { meet_->abort(); }

 private:
  // Shows this replica's buffers to the others and returns everyone's, checked to match. What
  // the slots point to is the callers' own list, alive until the collective's last wait.
  std::vector<std::span<const CommBuffer>> show(std::span<const CommBuffer> buffers) {
    meet_->pointers[size_t(rank())] = buffers.data();
    meet_->values[size_t(rank())] = int64_t(buffers.size());
    meet_->wait();
    std::vector<std::span<const CommBuffer>> all;
    for (int r = 0; r < size(); ++r)
      all.emplace_back(static_cast<const CommBuffer*>(meet_->pointers[size_t(r)]),
                       size_t(meet_->values[size_t(r)]));
    for (const auto& other : all) {
      bool same = other.size() == buffers.size();
      for (size_t b = 0; same && b < buffers.size(); ++b) same = other[b].count == buffers[b].count;
      CREMA_REQUIRE(same, "the replicas' buffers differ in number or size");
    }
    return all;
  }

  std::shared_ptr<Rendezvous> meet_;
};

}  // namespace

std::vector<std::unique_ptr<Communicator>> make_thread_communicators(int count) {
  CREMA_REQUIRE(count >= 1, "a run needs at least one replica, got ", count);
  auto meet = std::make_shared<Rendezvous>(count);
  std::vector<std::unique_ptr<Communicator>> out;
  for (int r = 0; r < count; ++r) out.push_back(std::make_unique<ThreadCommunicator>(meet, r));
  return out;
}

}  // namespace crema
