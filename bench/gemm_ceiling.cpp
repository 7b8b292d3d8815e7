// The CPU GEMM ceiling: GFLOP/s of prim::gemm (OpenBLAS) on the shapes LeNet's layers produce
// and on a large square problem, so layer timings can be read as a fraction of what the BLAS
// reaches on this machine. Median of many repeats after warm-up, random data.
//
//   gemm_ceiling [--repeats=50]
#include <gflags/gflags.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <vector>

#include "primitives/blas.h"
#include "primitives/blas_kernels.h"
#include "primitives/handle.h"

DEFINE_int32(repeats, 50, "timed repeats per shape");

namespace {

struct Shape {
  const char* name;
  crema::prim::Trans ta, tb;
  int m, n, k;
};

}  // namespace

int main(int argc, char** argv) {
  crema::prim::prepare_blas_process(argv);
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  using crema::prim::Trans;
  const Shape shapes[] = {
      {"square 1024", Trans::kNo, Trans::kNo, 1024, 1024, 1024},
      {"lenet:conv2 fwd (chunk of 64)", Trans::kNo, Trans::kNo, 50, 4096, 500},
      {"lenet:conv2 bwd data", Trans::kYes, Trans::kNo, 500, 4096, 50},
      {"lenet:conv2 bwd filter", Trans::kNo, Trans::kYes, 50, 500, 4096},
      {"lenet:conv2 fwd (one image)", Trans::kNo, Trans::kNo, 50, 64, 500},
      {"lenet:conv1 fwd (chunk of 64)", Trans::kNo, Trans::kNo, 20, 36864, 25},
      {"lenet:ip1 fwd", Trans::kNo, Trans::kYes, 64, 500, 800},
  };
  crema::prim::Handle h;
  std::mt19937 gen(1);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::printf("%-32s %6s %6s %6s %10s %10s\n", "shape", "M", "N", "K", "ms", "GFLOP/s");
  for (const Shape& s : shapes) {
    std::vector<float> a(size_t(s.m) * s.k), b(size_t(s.k) * s.n), c(size_t(s.m) * s.n);
    for (auto* v : {&a, &b})
      for (float& x : *v) x = dist(gen);
    std::vector<double> ms;
    for (int r = 0; r < FLAGS_repeats + 5; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      crema::prim::gemm(h, crema::prim::DataType::kFloat32, s.ta, s.tb, s.m, s.n, s.k, 1.0,
                        a.data(), b.data(), 0.0, c.data());
      const double t =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (r >= 5) ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    const double med = ms[ms.size() / 2];
    std::printf("%-32s %6d %6d %6d %10.3f %10.1f\n", s.name, s.m, s.n, s.k, med,
                2.0 * s.m * s.n * s.k / med / 1e6);
  }
  return 0;
}
