// The all-reduce ceiling of data-parallel training: the median time of summing B bytes of fp32
// over the GPUs through crema's NCCL communicators, and the bus bandwidth it implies,
// 2(n-1)/n x B / t (NCCL's own measure: what each GPU's slowest link carried). The default sizes
// are the fp32 gradients of CaffeNet (61.0 M parameters) and ResNet-50 (25.6 M), the ring model's
// inputs in docs/scale-out.md.
//
//   allreduce_bus --gpus=0,1,2,3 [--mib=232.7,97.7,25] [--iterations=20] [--warmup=5]
#include <gflags/gflags.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "parallel/communicator.h"
#include "primitives/handle.h"

DEFINE_string(gpus, "0,1", "the GPUs (ids separated by commas)");
DEFINE_string(mib, "232.7,97.7,25", "buffer sizes in MiB (CaffeNet's and ResNet-50's gradients)");
DEFINE_int32(iterations, 20, "timed all-reduces per size");
DEFINE_int32(warmup, 5, "untimed all-reduces first");

namespace {

std::vector<double> parse_list(const std::string& text) {
  std::vector<double> out;
  std::stringstream list(text);
  for (std::string item; std::getline(list, item, ',');) out.push_back(std::stod(item));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  try {
    std::vector<int> gpus;
    for (double id : parse_list(FLAGS_gpus)) gpus.push_back(int(id));
    const std::vector<double> sizes = parse_list(FLAGS_mib);
    auto comms = crema::make_nccl_communicators(gpus);
    const int n = int(gpus.size());
    std::vector<std::vector<double>> ms(sizes.size());  // the root's
    std::vector<std::thread> threads;
    for (int r = 0; r < n; ++r) {
      threads.emplace_back([&, r] {
        crema::prim::Handle h(crema::prim::Device::kCUDA, gpus[size_t(r)]);
        for (size_t s = 0; s < sizes.size(); ++s) {
          const int64_t count = int64_t(sizes[s] * (1 << 20) / 4);
          crema::prim::DeviceBuffer buf(crema::prim::Device::kCUDA, size_t(count) * 4);
          crema::prim::device_memset_zero(crema::prim::Device::kCUDA, buf.get(), buf.bytes());
          const crema::CommBuffer b{buf.get(), count};
          for (int i = 0; i < FLAGS_warmup + FLAGS_iterations; ++i) {
            const auto t0 = std::chrono::steady_clock::now();
            comms[size_t(r)]->all_reduce_sum(h, crema::prim::DataType::kFloat32, {&b, 1});
            h.synchronize();
            const double t =
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                    .count();
            if (r == 0 && i >= FLAGS_warmup) ms[s].push_back(t);
          }
        }
      });
    }
    for (std::thread& t : threads) t.join();
    std::printf("| GPUs | MiB | median ms | bus GB/s |\n|---|--:|--:|--:|\n");
    for (size_t s = 0; s < sizes.size(); ++s) {
      std::sort(ms[s].begin(), ms[s].end());
      const double t = ms[s][ms[s].size() / 2];
      const double bus = 2.0 * (n - 1) / n * sizes[s] * (1 << 20) / (t * 1e-3) / 1e9;
      std::printf("| %d | %.1f | %.3f | %.1f |\n", n, sizes[s], t, bus);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "allreduce_bus: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
