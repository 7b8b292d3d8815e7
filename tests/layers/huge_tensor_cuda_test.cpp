// Tensors of 3 G elements (past 2^31 and 2^32) on the GPU against the CPU: forward and backward
// of ReLU (a flat 1-d tensor, split into descriptor sizes), Scale with bias (per-channel
// broadcast and reductions), max Pooling and Softmax over an N x C x H x W tensor, and the
// f32 -> bf16 -> f32 conversion. Every element is compared, positions past 2^31 and 2^32 are
// also checked against the formula, and the checksums must agree. Needs about 50 GB of GPU
// memory and 70 GB of host memory, and a few minutes; skipped where the machine has less.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/tensor.h"
#include "cuda_test_util.h"
#include "layers/gradient_checker.h"
#include "primitives/tensor_copy.h"
#include "primitives/view.h"

namespace crema {
namespace {

constexpr int64_t kN = 3, kC = 1000, kH = 1000, kW = 1000;
constexpr int64_t kCount = kN * kC * kH * kW;  // 3e9
constexpr int64_t k2g = int64_t(1) << 31, k4g = int64_t(1) << 32;

int threads() { return int(std::max(1u, std::thread::hardware_concurrency())); }

// fn(begin, end) over [0, n) split across the host's cores.
void parallel_chunks(int64_t n, const std::function<void(int, int64_t, int64_t)>& fn) {
  const int t = threads();
  std::vector<std::thread> pool;
  for (int i = 0; i < t; ++i) pool.emplace_back([&, i] { fn(i, n * i / t, n * (i + 1) / t); });
  for (auto& th : pool) th.join();
}

uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Values k / 1024 with |k| < 8192, exact in float and bf16-rounding-stable in ordering; the low
// two bits of k are the parities of the element's row and column, so the four values of every
// 2 x 2 window differ and max pooling has no ties (whose choice could differ between devices).
float value_at(int64_t i, uint64_t seed) {
  const int base = int(mix(uint64_t(i) * 2 + seed) % 4096) - 2048;
  const int code = int((i / kW) % 2) * 2 + int(i % 2);
  return float(base * 4 + code) / 1024.0f;
}

void fill(float* p, int64_t n, uint64_t seed) {
  parallel_chunks(n, [&](int, int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) p[i] = value_at(i, seed);
  });
}

// Positions to check against the formula: both sides of 2^31 and 2^32, the last element, and a
// few between.
std::vector<int64_t> sample_positions(int64_t n) {
  std::vector<int64_t> s = {0, k2g - 1, k2g, k2g + 1, k4g - 1, k4g, k4g + 1, n - 1};
  for (int64_t i = 1; i < 64; ++i) s.push_back(int64_t(mix(uint64_t(i)) % uint64_t(n)));
  s.erase(std::remove_if(s.begin(), s.end(), [&](int64_t i) { return i >= n; }), s.end());
  return s;
}

// Every element of gpu (copied back) against cpu: |g - c| <= atol + rtol |c|; the checksums
// must agree as well, and the reference must not be mostly zeros past 2^31.
void expect_close(const std::string& what, const std::vector<float>& gpu, const float* cpu,
                  int64_t n, double atol, double rtol) {
  ASSERT_EQ(int64_t(gpu.size()), n) << what;
  const int t = threads();
  std::vector<int64_t> bad(size_t(t), 0), first(size_t(t), -1), high_nonzero(size_t(t), 0);
  std::vector<double> sum_g(size_t(t), 0), sum_c(size_t(t), 0), worst(size_t(t), 0);
  parallel_chunks(n, [&](int k, int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const double g = gpu[size_t(i)], c = cpu[i], err = std::fabs(g - c);
      sum_g[size_t(k)] += g;
      sum_c[size_t(k)] += c;
      if (i >= k2g && c != 0) ++high_nonzero[size_t(k)];
      if (!(err <= atol + rtol * std::fabs(c))) {
        if (bad[size_t(k)]++ == 0) first[size_t(k)] = i;
      }
      if (err > worst[size_t(k)] || std::isnan(err)) worst[size_t(k)] = err;
    }
  });
  int64_t total_bad = 0, first_bad = -1, nonzero = 0;
  double sg = 0, sc = 0, max_err = 0;
  for (int k = 0; k < t; ++k) {
    total_bad += bad[size_t(k)];
    if (first_bad < 0) first_bad = first[size_t(k)];
    nonzero += high_nonzero[size_t(k)];
    sg += sum_g[size_t(k)];
    sc += sum_c[size_t(k)];
    max_err = std::max(max_err, worst[size_t(k)]);
  }
  std::printf("%s: %lld elements, %lld mismatches, max abs error %g, checksum gpu %.9g cpu %.9g\n",
              what.c_str(), (long long)n, (long long)total_bad, max_err, sg, sc);
  EXPECT_EQ(total_bad, 0) << what << ": first mismatch at " << first_bad << ": gpu "
                          << (first_bad >= 0 ? gpu[size_t(first_bad)] : 0.0f) << " cpu "
                          << (first_bad >= 0 ? cpu[first_bad] : 0.0f);
  EXPECT_NEAR(sg, sc, 1e-6 * std::max(1.0, std::fabs(sc)) + 1e-3 * n * atol) << what;
  if (n > k2g) {
    EXPECT_GT(nonzero, (n - k2g) / 10) << what << ": the reference is mostly zeros";
  }
}

// A layer built twice from the same text, on the CPU and on the GPU, with its bottoms and tops.
struct Pair {
  std::unique_ptr<Layer<float>> cpu_layer, gpu_layer;
  test::TensorSet<float> cpu_bottom, cpu_top;
  std::vector<std::unique_ptr<Tensor<float>>> gpu_owned;
  std::vector<Tensor<float>*> gpu_bottom, gpu_top;
  prim::Handle cpu{Device::kCPU}, gpu{Device::kCUDA};

  Pair(const std::string& text, const std::vector<int64_t>& shape) {
    cpu.set_cpu_threads(threads());
    cpu_layer = create_layer<float>(test::layer_param(text), Device::kCPU);
    gpu_layer = create_layer<float>(test::layer_param(text), Device::kCUDA);
    Tensor<float>* x = cpu_bottom.add();
    x->reshape(shape);
    fill(x->mutable_data(), x->count(), 1);
    cpu_top.add();
    gpu_owned.push_back(std::make_unique<Tensor<float>>(shape, Device::kCUDA));
    gpu_owned.back()->copy_from(*x);
    gpu_bottom.push_back(gpu_owned.back().get());
    gpu_owned.push_back(std::make_unique<Tensor<float>>(Device::kCUDA));
    gpu_top.push_back(gpu_owned.back().get());
    cpu_layer->setup(*cpu_bottom, *cpu_top);
    gpu_layer->setup(gpu_bottom, gpu_top);
    // The same parameters on both sides (each layer filled its own).
    for (size_t k = 0; k < cpu_layer->blobs().size(); ++k)
      gpu_layer->blobs()[k]->copy_from(*cpu_layer->blobs()[k]);
  }

  void forward() {
    cpu_layer->forward(cpu, *cpu_bottom, *cpu_top);
    gpu_layer->forward(gpu, gpu_bottom, gpu_top);
    gpu.synchronize();
  }

  // Backward from the same top gradient on both sides.
  void backward() {
    Tensor<float>* dy = cpu_top[0];
    fill(dy->mutable_diff(), dy->count(), 2);
    gpu_top[0]->copy_from(*dy, /*copy_diff=*/true);
    cpu_layer->backward(cpu, *cpu_top, {true}, *cpu_bottom);
    gpu_layer->backward(gpu, gpu_top, {true}, gpu_bottom);
    gpu.synchronize();
  }
};

bool machine_fits(int64_t gpu_bytes, int64_t host_bytes) {
  return int64_t(prim::device_total_bytes(Device::kCUDA)) >= gpu_bytes &&
         int64_t(prim::device_total_bytes(Device::kCPU)) >= host_bytes;
}

// Holds an exclusive lock on a file in the temporary folder while it lives, so these tests run one
// at a time under `ctest -j` too: machine_fits counts one test's memory, and three side by side
// were killed for host memory on a 128 GiB machine.
class OneAtATime {
 public:
  OneAtATime() {
    const std::string path =
        (std::filesystem::temp_directory_path() / "crema-huge-tensor-test.lock").string();
    fd_ = ::open(path.c_str(), O_CREAT | O_RDWR, 0666);
    if (fd_ >= 0) ::flock(fd_, LOCK_EX);
  }
  ~OneAtATime() {
    if (fd_ >= 0) ::close(fd_);  // closing releases the lock
  }
  OneAtATime(const OneAtATime&) = delete;
  OneAtATime& operator=(const OneAtATime&) = delete;

 private:
  int fd_ = -1;
};

#define SKIP_UNLESS_FITS(gpu_gb, host_gb)                                                         \
  CREMA_SKIP_WITHOUT_GPU();                                                                       \
  if (!machine_fits(int64_t(gpu_gb) << 30, int64_t(host_gb) << 30))                               \
    GTEST_SKIP() << "needs " << gpu_gb << " GiB of GPU and " << host_gb << " GiB of host memory"; \
  [[maybe_unused]] const OneAtATime one_at_a_time

TEST(HugeTensor, ReluFlat3GElements) {
  SKIP_UNLESS_FITS(50, 72);
  Pair p("type: 'ReLU'", {kCount});
  p.forward();
  const float* x = p.cpu_bottom[0]->data();
  const float* y = p.cpu_top[0]->data();
  {
    const std::vector<float> gy = p.gpu_top[0]->data_vector();
    for (const int64_t i : sample_positions(kCount)) {
      EXPECT_EQ(y[i], std::max(x[i], 0.0f)) << "cpu at " << i;
      EXPECT_EQ(gy[size_t(i)], std::max(x[i], 0.0f)) << "gpu at " << i;
    }
    expect_close("relu forward", gy, y, kCount, 0, 0);
  }
  p.backward();
  const float* dy = p.cpu_top[0]->diff();
  const float* dx = p.cpu_bottom[0]->diff();
  const std::vector<float> gdx = p.gpu_bottom[0]->diff_vector();
  for (const int64_t i : sample_positions(kCount)) {
    EXPECT_EQ(dx[i], x[i] > 0 ? dy[i] : 0.0f) << "cpu at " << i;
    EXPECT_EQ(gdx[size_t(i)], x[i] > 0 ? dy[i] : 0.0f) << "gpu at " << i;
  }
  expect_close("relu backward", gdx, dx, kCount, 0, 0);
}

TEST(HugeTensor, ScaleWithBiasPerChannel) {
  SKIP_UNLESS_FITS(50, 72);
  Pair p(R"(type: 'Scale' scale_param { axis: 1 bias_term: true
           filler { type: 'uniform' min: 0.5 max: 1.5 }
           bias_filler { type: 'uniform' min: -1 max: 1 } })",
         {kN, kC, kH, kW});
  p.forward();
  const float* x = p.cpu_bottom[0]->data();
  const float* s = p.cpu_layer->blobs()[0]->data();
  const float* b = p.cpu_layer->blobs()[1]->data();
  {
    const std::vector<float> gy = p.gpu_top[0]->data_vector();
    for (const int64_t i : sample_positions(kCount)) {
      const int64_t c = i / (kH * kW) % kC;
      EXPECT_NEAR(gy[size_t(i)], x[i] * s[c] + b[c], 1e-5) << "gpu at " << i;
    }
    expect_close("scale forward", gy, p.cpu_top[0]->data(), kCount, 1e-5, 1e-5);
  }
  p.backward();
  expect_close("scale backward (dx)", p.gpu_bottom[0]->diff_vector(), p.cpu_bottom[0]->diff(),
               kCount, 1e-5, 1e-5);
  // Per-channel sums of 3 M terms each: summation orders differ.
  for (size_t k = 0; k < 2; ++k)
    expect_close(k == 0 ? "scale backward (d scale)" : "scale backward (d bias)",
                 p.gpu_layer->blobs()[k]->diff_vector(), p.cpu_layer->blobs()[k]->diff(), kC, 1e-2,
                 1e-5);
}

TEST(HugeTensor, MaxPooling2x2) {
  SKIP_UNLESS_FITS(40, 60);
  Pair p("type: 'Pooling' pooling_param { pool: MAX kernel_size: 2 stride: 2 }", {kN, kC, kH, kW});
  p.forward();
  const int64_t out = kCount / 4;
  const float* x = p.cpu_bottom[0]->data();
  {
    const std::vector<float> gy = p.gpu_top[0]->data_vector();
    // Output o = ((n C + c) P + i) Q + j reads x rows 2i, 2i + 1 and columns 2j, 2j + 1.
    for (const int64_t i : sample_positions(kCount)) {
      const int64_t o = i / 4, q = o % (kW / 2), plane_row = o / (kW / 2);
      const int64_t x0 = plane_row * 2 * kW + q * 2;
      const float m = std::max(std::max(x[x0], x[x0 + 1]), std::max(x[x0 + kW], x[x0 + kW + 1]));
      EXPECT_EQ(gy[size_t(o)], m) << "gpu at output " << o;
    }
    expect_close("max pool forward", gy, p.cpu_top[0]->data(), out, 0, 0);
  }
  p.backward();
  expect_close("max pool backward", p.gpu_bottom[0]->diff_vector(), p.cpu_bottom[0]->diff(), kCount,
               0, 0);
}

TEST(HugeTensor, SoftmaxOverChannels) {
  SKIP_UNLESS_FITS(50, 72);
  Pair p("type: 'Softmax' softmax_param { axis: 1 }", {kN, kC, kH, kW});
  p.forward();
  const float* x = p.cpu_bottom[0]->data();
  {
    const std::vector<float> gy = p.gpu_top[0]->data_vector();
    const int64_t inner = kH * kW;
    for (const int64_t i : sample_positions(kCount)) {
      const int64_t n = i / (kC * inner), at = i % inner;
      double mx = -1e30, sum = 0;
      for (int64_t c = 0; c < kC; ++c) mx = std::max(mx, double(x[(n * kC + c) * inner + at]));
      for (int64_t c = 0; c < kC; ++c) sum += std::exp(double(x[(n * kC + c) * inner + at]) - mx);
      const double ref = std::exp(double(x[i]) - mx) / sum;
      EXPECT_NEAR(gy[size_t(i)], ref, 1e-6 + 1e-5 * ref) << "gpu at " << i;
    }
    expect_close("softmax forward", gy, p.cpu_top[0]->data(), kCount, 1e-6, 1e-5);
  }
  p.backward();
  // dx = y (dy - sum dy y): the 1000-term sum's rounding, scaled by y, against small differences.
  expect_close("softmax backward", p.gpu_bottom[0]->diff_vector(), p.cpu_bottom[0]->diff(), kCount,
               2e-5, 1e-4);
}

TEST(HugeTensor, Bf16RoundTrip) {
  SKIP_UNLESS_FITS(40, 60);
  using prim::DataType;
  prim::Handle cpu(Device::kCPU), gpu(Device::kCUDA);
  cpu.set_cpu_threads(threads());
  const size_t n = size_t(kCount);
  std::vector<float> x(n);
  // Values that bf16 rounds (more than 8 significant bits) past 2^31 as well.
  parallel_chunks(kCount, [&](int, int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) x[size_t(i)] = value_at(i, 3) * 1.00390625f + 1e-3f;
  });
  const prim::ViewDesc f32 = prim::ViewDesc::packed(DataType::kFloat32, {kCount});
  const prim::ViewDesc b16 = prim::ViewDesc::packed(DataType::kBFloat16, {kCount});
  std::vector<uint16_t> half_cpu(n);
  std::vector<float> back_cpu(n);
  prim::tensor_copy(cpu, f32, x.data(), b16, half_cpu.data());
  prim::tensor_copy(cpu, b16, half_cpu.data(), f32, back_cpu.data());
  std::vector<float> back_gpu;
  {
    prim::DeviceBuffer gx = to_gpu(x), gh(Device::kCUDA, n * 2), gb(Device::kCUDA, n * 4);
    prim::tensor_copy(gpu, f32, gx.get(), b16, gh.get());
    prim::tensor_copy(gpu, b16, gh.get(), f32, gb.get());
    back_gpu = from_gpu<float>(gpu, gb, n);
  }
  int64_t rounded = 0;
  for (const int64_t i : sample_positions(kCount)) {
    EXPECT_EQ(back_gpu[size_t(i)], back_cpu[size_t(i)]) << "at " << i;
    EXPECT_NEAR(back_gpu[size_t(i)], x[size_t(i)], std::fabs(x[size_t(i)]) / 128) << "at " << i;
    rounded += back_gpu[size_t(i)] != x[size_t(i)];
  }
  EXPECT_GT(rounded, 0) << "the samples were not rounded: the conversion went untested";
  expect_close("f32 -> bf16 -> f32", back_gpu, back_cpu.data(), kCount, 0, 0);
}

}  // namespace
}  // namespace crema
