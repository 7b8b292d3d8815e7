// BLAS-style primitives on CUDA against the CPU implementation: GEMM/GEMV every transpose and
// blend, GEMM with and without a bias and a ReLU, on aligned and unaligned operands (integer data:
// exact; real data: within float rounding), level-1 operations and the reductions at small, odd and
// large lengths, bias add/reduce packed and NHWC, f32 and f64.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "primitives/blas.h"
#include "primitives/common/dtype_visit.h"

namespace crema::prim {
namespace {

constexpr Tolerance kExact{0.0, 0.0, true};

template <typename T>
std::vector<T> data(size_t n, uint64_t seed, bool integer) {
  return integer ? test::random_int_vector<T>(n, seed) : test::random_vector<T>(n, seed);
}

template <typename T>
Tolerance tol_of(bool integer) {
  if (integer) return kExact;
  // Absolute slack for sums of up to ~1000 products of magnitude <= 1 rounded in another order.
  return sizeof(T) == 8 ? Tolerance{1e-12, 1e-10, true} : Tolerance{1e-4, 1e-5, true};
}

template <typename T>
void check_gemm(int m, int n, int k, bool integer, MathMode math = MathMode::kFP32,
                Tolerance real_tol = {}) {
  Handle cpu(Device::kCPU), gpu(Device::kCUDA);
  const auto a = data<T>(size_t(m) * k, 1, integer), b = data<T>(size_t(k) * n, 2, integer);
  const auto c0 = data<T>(size_t(m) * n, 3, integer), bias = data<T>(size_t(n), 4, integer);
  DeviceBuffer ga = to_gpu(a), gb = to_gpu(b), gbias = to_gpu(bias);
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (auto [alpha, beta] : {std::pair{1.0, 0.0}, {2.0, 1.0}, {-1.0, 3.0}, {0.0, 2.0}})
        for (auto [with_bias, relu] :
             {std::pair{false, false}, {true, false}, {false, true}, {true, true}}) {
          SCOPED_TRACE(::testing::Message()
                       << "gemm " << m << "x" << n << "x" << k << " ta=" << ta << " tb=" << tb
                       << " alpha=" << alpha << " beta=" << beta << (sizeof(T) == 8 ? " f64" : "")
                       << " " << math_name(math) << (with_bias ? " bias" : "")
                       << (relu ? " relu" : ""));
          const Trans xa = ta ? Trans::kYes : Trans::kNo, xb = tb ? Trans::kYes : Trans::kNo;
          std::vector<T> c = beta == 0 ? test::poisoned<T>(c0.size()) : c0;
          DeviceBuffer gc = to_gpu(c);
          gemm(cpu, dtype_of<T>(), xa, xb, m, n, k, alpha, a.data(), b.data(), beta, c.data(),
               MathMode::kFP32, GemmEpilogue{with_bias ? bias.data() : nullptr, relu});
          gemm(gpu, dtype_of<T>(), xa, xb, m, n, k, alpha, ga.get(), gb.get(), beta, gc.get(), math,
               GemmEpilogue{with_bias ? gbias.get() : nullptr, relu});
          const Tolerance tol = integer || math == MathMode::kFP32 ? tol_of<T>(integer) : real_tol;
          EXPECT_TRUE(all_close(from_gpu<T>(gpu, gc, c.size()), c, tol));
        }
}

TEST(BlasCuda, GemmMatchesCpu) {
  CREMA_SKIP_WITHOUT_GPU();
  check_gemm<float>(7, 13, 5, true);
  check_gemm<double>(7, 13, 5, true);
  check_gemm<float>(129, 257, 65, true);
  check_gemm<float>(129, 257, 65, false);
  check_gemm<double>(61, 33, 300, false);
  check_gemm<float>(1, 1000, 3, false);
  check_gemm<float>(5, 4, 0, true);  // empty product: C = beta * C, zeros for beta 0
  // A B^T with few outputs runs a warp per output (LeNet's ip2; depth not a multiple of 32; the
  // largest output count and depth it takes), and one past that goes to cuBLAS (cuBLASLt with an
  // epilogue).
  for (bool integer : {true, false}) {
    check_gemm<float>(64, 10, 500, integer);
    check_gemm<double>(64, 10, 500, integer);
    check_gemm<float>(4096, 1, 2048, integer);
    check_gemm<float>(65, 64, 33, integer);
  }
}

// Operands one element past an aligned address: cuBLASLt is told their alignment (4 bytes) and
// picks a kernel that takes it (A B, not the warp-per-output A B^T); a bias placed so is added
// apart, after cuBLAS's product.
TEST(BlasCuda, GemmOnUnalignedOperandsMatchesCpu) {
  CREMA_SKIP_WITHOUT_GPU();
  Handle cpu(Device::kCPU), gpu(Device::kCUDA);
  const int m = 33, n = 65, k = 17;
  const auto a = test::random_int_vector<float>(size_t(m) * k + 1, 1);
  const auto b = test::random_int_vector<float>(size_t(k) * n + 1, 2);
  const auto bias = test::random_int_vector<float>(size_t(n) + 1, 3);
  DeviceBuffer ga = to_gpu(a), gb = to_gpu(b), gbias = to_gpu(bias);
  auto past = [](const DeviceBuffer& d) { return static_cast<float*>(d.get()) + 1; };
  for (bool bias_aligned : {true, false}) {
    SCOPED_TRACE(bias_aligned ? "bias aligned" : "bias unaligned");
    std::vector<float> c(size_t(m) * n + 1, 0.0f);
    DeviceBuffer gc = to_gpu(c);
    const float* gb0 = bias_aligned ? static_cast<const float*>(gbias.get()) : past(gbias);
    gemm(cpu, DataType::kFloat32, Trans::kNo, Trans::kNo, m, n, k, 1.0, a.data() + 1, b.data() + 1,
         0.0, c.data() + 1, MathMode::kFP32,
         GemmEpilogue{bias.data() + (bias_aligned ? 0 : 1), true});
    gemm(gpu, DataType::kFloat32, Trans::kNo, Trans::kNo, m, n, k, 1.0, past(ga), past(gb), 0.0,
         past(gc), MathMode::kFP32, GemmEpilogue{gb0, true});
    EXPECT_TRUE(all_close(from_gpu<float>(gpu, gc, c.size()), c, kExact));
  }
}

// Tensor-core math: integers in [-3, 3] are exact in every format, so results match exactly;
// real data in [-1, 1] drifts by about u * sqrt(k) (u = 2^-11 for TF32 and FP16, 2^-8 for BF16),
// allowed 8 times over, with alpha up to 3 and beta up to 3 scaling it.
TEST(BlasCuda, GemmTensorCoreMathMatchesCpu) {
  CREMA_SKIP_WITHOUT_GPU();
  for (MathMode math : {MathMode::kTF32, MathMode::kBF16, MathMode::kFP16}) {
    const double u = math == MathMode::kBF16 ? 0x1p-8 : 0x1p-11;
    check_gemm<float>(129, 257, 65, true, math);
    check_gemm<float>(129, 257, 65, false, math, {3 * 8 * u * std::sqrt(65.0), 0, true});
    check_gemm<double>(61, 33, 300, false, math, {1e-12, 1e-10, true});  // strict for f64
  }
}

TEST(BlasCuda, GemmEmptyOutputIsANoOp) {
  CREMA_SKIP_WITHOUT_GPU();
  Handle gpu(Device::kCUDA);
  DeviceBuffer c = to_gpu(std::vector<float>{5.0f});
  gemm(gpu, DataType::kFloat32, Trans::kNo, Trans::kNo, 0, 1, 3, 1.0, nullptr, nullptr, 0.0,
       c.get());
  EXPECT_EQ(from_gpu<float>(gpu, c, 1)[0], 5.0f);
}

template <typename T>
void check_gemv(int m, int n, bool integer) {
  Handle cpu(Device::kCPU), gpu(Device::kCUDA);
  const auto a = data<T>(size_t(m) * n, 4, integer);
  DeviceBuffer ga = to_gpu(a);
  for (bool ta : {false, true})
    for (auto [alpha, beta] : {std::pair{2.0, 0.0}, {2.0, -1.0}, {1.0, 1.0}}) {
      SCOPED_TRACE(::testing::Message() << "gemv " << m << "x" << n << " ta=" << ta
                                        << " beta=" << beta << (sizeof(T) == 8 ? " f64" : ""));
      const int xl = ta ? m : n, yl = ta ? n : m;
      const auto x = data<T>(xl, 5, integer);
      std::vector<T> y = beta == 0 ? test::poisoned<T>(yl) : data<T>(yl, 6, integer);
      DeviceBuffer gx = to_gpu(x), gy = to_gpu(y);
      const Trans t = ta ? Trans::kYes : Trans::kNo;
      gemv(cpu, dtype_of<T>(), t, m, n, alpha, a.data(), x.data(), beta, y.data());
      gemv(gpu, dtype_of<T>(), t, m, n, alpha, ga.get(), gx.get(), beta, gy.get());
      EXPECT_TRUE(all_close(from_gpu<T>(gpu, gy, y.size()), y, tol_of<T>(integer)));
    }
}

TEST(BlasCuda, GemvMatchesCpu) {
  CREMA_SKIP_WITHOUT_GPU();
  check_gemv<float>(9, 6, true);
  check_gemv<double>(9, 6, true);
  check_gemv<float>(300, 1025, false);
  check_gemv<double>(1025, 300, false);
}

template <typename T>
void check_level1(int64_t n) {
  SCOPED_TRACE(::testing::Message() << "n=" << n << (sizeof(T) == 8 ? " f64" : " f32"));
  Handle cpu(Device::kCPU), gpu(Device::kCUDA);
  const DataType t = dtype_of<T>();
  const auto x = test::random_int_vector<T>(size_t(n), 7);
  const auto y0 = test::random_int_vector<T>(size_t(n), 8);
  DeviceBuffer gx = to_gpu(x);
  auto run = [&](const std::vector<T>& start, auto&& op, const char* what) {
    std::vector<T> y = start;
    DeviceBuffer gy = to_gpu(start);
    op(cpu, x.data(), y.data());
    op(gpu, gx.get(), gy.get());
    EXPECT_TRUE(all_close(from_gpu<T>(gpu, gy, y.size()), y, kExact)) << what;
  };
  run(
      y0, [&](Handle& h, const void* xx, void* yy) { axpy(h, t, n, 3.0, xx, yy); }, "axpy");
  run(
      y0, [&](Handle& h, const void* xx, void* yy) { axpby(h, t, n, 2.0, xx, -3.0, yy); }, "axpby");
  run(
      y0, [&](Handle& h, const void* xx, void* yy) { axpby(h, t, n, 0.5, xx, 1.0, yy); },
      "axpby beta 1");
  run(
      test::poisoned<T>(size_t(n)),
      [&](Handle& h, const void* xx, void* yy) { axpby(h, t, n, 2.0, xx, 0.0, yy); },
      "axpby beta 0");
  run(
      y0, [&](Handle& h, const void*, void* yy) { scal(h, t, n, -2.0, yy); }, "scal");
  run(
      test::poisoned<T>(size_t(n)),
      [&](Handle& h, const void*, void* yy) { scal(h, t, n, 0.0, yy); }, "scal 0");
  run(
      test::poisoned<T>(size_t(n)),
      [&](Handle& h, const void*, void* yy) { fill(h, t, n, 2.5, yy); }, "fill");
  DeviceBuffer gy = to_gpu(y0);
  // Integer data: every partial sum is exact in double, so the summation order cannot matter.
  EXPECT_EQ(dot(gpu, t, n, gx.get(), gy.get()), dot(cpu, t, n, x.data(), y0.data()));
  EXPECT_EQ(asum(gpu, t, n, gx.get()), asum(cpu, t, n, x.data()));
  // dot_into leaves its blend on the device: beta 0 over NaN, then an accumulation.
  const double d = dot(cpu, t, n, x.data(), y0.data());
  DeviceBuffer sum = to_gpu(std::vector<double>{std::nan("")});
  dot_into(gpu, t, n, gx.get(), gy.get(), 0.5, 0.0, static_cast<double*>(sum.get()));
  EXPECT_EQ(from_gpu<double>(gpu, sum, 1)[0], 0.5 * d) << "dot_into beta 0";
  dot_into(gpu, t, n, gx.get(), gy.get(), 2.0, 1.0, static_cast<double*>(sum.get()));
  EXPECT_EQ(from_gpu<double>(gpu, sum, 1)[0], 2.0 * d + 0.5 * d) << "dot_into beta 1";
  // Real data: the same reduction within double rounding.
  const auto xr = test::random_vector<T>(size_t(n), 9), yr = test::random_vector<T>(size_t(n), 10);
  DeviceBuffer gxr = to_gpu(xr), gyr = to_gpu(yr);
  const double want = dot(cpu, t, n, xr.data(), yr.data());
  EXPECT_NEAR(dot(gpu, t, n, gxr.get(), gyr.get()), want, 1e-9 * (1 + std::fabs(want)));
  const double want_asum = asum(cpu, t, n, xr.data());
  EXPECT_NEAR(asum(gpu, t, n, gxr.get()), want_asum, 1e-9 * (1 + want_asum));
}

TEST(BlasCuda, Level1MatchesCpu) {
  CREMA_SKIP_WITHOUT_GPU();
  for (int64_t n : {int64_t(1), int64_t(37), int64_t(256), int64_t(100003), int64_t(1) << 22}) {
    check_level1<float>(n);
    check_level1<double>(n);
  }
}

// The list fill over 20 targets (two launches of at most 16): each target exactly, the element
// after it (a guard inside the same buffer) untouched.
TEST(BlasCuda, ListFillWritesEachTargetExactly) {
  CREMA_SKIP_WITHOUT_GPU();
  Handle gpu(Device::kCUDA);
  const std::vector<int64_t> sizes = {1,  1023, 1024, 1025, 0,  5000, 100003, 7,     2048, 3,
                                      40, 31,   500,  20,   50, 800,  1,      65537, 2,    10};
  std::vector<DeviceBuffer> bufs;
  std::vector<FillTarget> targets;
  for (int64_t n : sizes) {
    bufs.push_back(to_gpu(std::vector<double>(size_t(n) + 1, -7.0)));
    targets.push_back({n, bufs.back().get()});
  }
  fill(gpu, DataType::kFloat64, 2.5, targets.data(), targets.size());
  for (size_t i = 0; i < sizes.size(); ++i) {
    const std::vector<double> got = from_gpu<double>(gpu, bufs[i], size_t(sizes[i]) + 1);
    std::vector<double> want(got.size(), 2.5);
    want.back() = -7.0;
    EXPECT_EQ(got, want) << "target " << i << " of " << sizes[i] << " elements";
  }
}

TEST(BlasCuda, EmptyLengthsAreNoOps) {
  CREMA_SKIP_WITHOUT_GPU();
  Handle gpu(Device::kCUDA);
  DeviceBuffer b = to_gpu(std::vector<float>{4.0f});
  axpby(gpu, DataType::kFloat32, 0, 2.0, b.get(), 0.0, b.get());
  scal(gpu, DataType::kFloat32, 0, 0.0, b.get());
  fill(gpu, DataType::kFloat32, 0, 1.0, b.get());
  EXPECT_EQ(dot(gpu, DataType::kFloat32, 0, b.get(), b.get()), 0.0);
  EXPECT_EQ(asum(gpu, DataType::kFloat32, 0, b.get()), 0.0);
  EXPECT_EQ(from_gpu<float>(gpu, b, 1)[0], 4.0f);
}

TensorDesc nhwc_of(const TensorDesc& d) {
  TensorDesc t = d;
  t.stride_c = 1;
  t.stride_w = d.c;
  t.stride_h = int64_t(d.w) * d.c;
  t.stride_n = int64_t(d.h) * d.w * d.c;
  return t;
}

template <typename T>
void check_bias(const TensorDesc& d) {
  SCOPED_TRACE(::testing::Message()
               << d.n << "x" << d.c << "x" << d.h << "x" << d.w << " strides " << d.stride_c << ","
               << d.stride_w << (sizeof(T) == 8 ? " f64" : " f32"));
  Handle cpu(Device::kCPU), gpu(Device::kCUDA);
  const size_t n = size_t(d.count());
  const auto y0 = test::random_int_vector<T>(n, 9);
  const auto b = test::random_int_vector<T>(size_t(d.c), 10, 1, 5);
  DeviceBuffer gb = to_gpu(b);

  std::vector<T> y = y0;
  DeviceBuffer gy = to_gpu(y0);
  bias_add(cpu, d, y.data(), b.data(), 2.0);
  bias_add(gpu, d, gy.get(), gb.get(), 2.0);
  EXPECT_TRUE(all_close(from_gpu<T>(gpu, gy, n), y, kExact)) << "bias_add";

  DeviceBuffer gg = to_gpu(y0);
  for (Blend blend : {Blend{}, Blend{2.0, 1.0}, Blend{-0.5, 3.0}}) {
    std::vector<T> db = blend.beta == 0 ? test::poisoned<T>(size_t(d.c)) : b;
    DeviceBuffer gdb = to_gpu(db);
    bias_bwd(cpu, d, y0.data(), db.data(), blend);
    bias_bwd(gpu, d, gg.get(), gdb.get(), blend);
    EXPECT_TRUE(all_close(from_gpu<T>(gpu, gdb, db.size()), db, kExact))
        << "bias_bwd beta " << blend.beta;
  }
}

TEST(BlasCuda, BiasAddAndReduceMatchCpu) {
  CREMA_SKIP_WITHOUT_GPU();
  for (const TensorDesc& d : {TensorDesc::nchw(DataType::kFloat32, 3, 4, 5, 6),
                              TensorDesc::nchw(DataType::kFloat32, 2, 64, 56, 56),
                              TensorDesc::nchw(DataType::kFloat32, 64, 20, 24, 24),
                              TensorDesc::nchw(DataType::kFloat32, 5, 1000, 1, 1),
                              // many channels of one value per row: blocks of 32 channels,
                              // warps over the rows (7 rows, fewer than the warps;
                              // caffenet:fc6's bias; 2500 channels, the last block partial;
                              // 2100 rows in three parts, the last one short)
                              TensorDesc::nchw(DataType::kFloat32, 7, 4096, 1, 1),
                              TensorDesc::nchw(DataType::kFloat32, 256, 4096, 1, 1),
                              TensorDesc::nchw(DataType::kFloat32, 100, 2500, 1, 1),
                              TensorDesc::nchw(DataType::kFloat32, 2100, 2048, 1, 1),
                              // short channels: threads take channels, each summing one
                              // slice of the batch
                              TensorDesc::nchw(DataType::kFloat32, 100, 2500, 3, 3)}) {
    for (const TensorDesc& v : {d, nhwc_of(d)}) {
      TensorDesc f = v;
      check_bias<float>(f);
      f.dtype = DataType::kFloat64;
      check_bias<double>(f);
    }
  }
}

}  // namespace
}  // namespace crema::prim
