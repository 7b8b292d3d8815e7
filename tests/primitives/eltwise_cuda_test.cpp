// eltwise_fwd / eltwise_bwd on CUDA against the CPU implementation: sum with and without
// coefficients, product (stable and fast gradients), max with the argmax, both blends, f32 and
// f64, in-place forward, and more inputs than travel in the kernel's arguments (the device
// pointer-table path). Integer inputs make sums, products and maxima exact.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "primitives/eltwise.h"

namespace crema::prim {
namespace {

template <typename T>
void check(EltwiseOp op, int K, int64_t n, bool coeff, bool stable, Blend blend, bool ints) {
  SCOPED_TRACE("op " + std::to_string(int(op)) + " K " + std::to_string(K) + " n " +
               std::to_string(n) + (coeff ? " coeff" : "") + (stable ? "" : " fast") + " beta " +
               std::to_string(blend.beta) + (ints ? " ints" : "") +
               (sizeof(T) == 8 ? " f64" : " f32"));
  const size_t un = size_t(n);
  EltwiseDesc ed;
  ed.dtype = sizeof(T) == 8 ? DataType::kFloat64 : DataType::kFloat32;
  ed.op = op;
  ed.n = n;
  ed.num_inputs = K;
  ed.stable_prod_grad = stable;
  if (coeff)
    for (int k = 0; k < K; ++k) ed.coeff.push_back(k % 3 == 0 ? -1.5 : 0.25 * (k + 1));
  const test::Tolerance tol = ints             ? test::Tolerance{0, 0, true}
                              : sizeof(T) == 8 ? test::Tolerance{1e-12, 1e-12, true}
                                               : test::Tolerance{1e-6, 1e-5, true};
  Handle cpu(Device::kCPU), gpu(Device::kCUDA);
  std::vector<std::vector<T>> x;
  std::vector<DeviceBuffer> gx;
  std::vector<const void*> xp, gxp;
  for (int k = 0; k < K; ++k) {
    // Away from zero so the fast product gradient (dy * y / x) is well conditioned.
    auto v = ints ? random_int_vector<T>(un, 10 + k, 1, 3) : random_vector<T>(un, 10 + k, 0.5, 1.5);
    for (size_t i = 0; i < un; i += 3) v[i] = -v[i];
    x.push_back(v);
  }
  for (int k = 0; k < K; ++k) {
    gx.push_back(to_gpu(x[size_t(k)]));
    xp.push_back(x[size_t(k)].data());
    gxp.push_back(gx.back().get());
  }
  const auto y0 = blend.beta == 0 ? test::poisoned<T>(un) : random_int_vector<T>(un, 5);
  std::vector<T> y = y0;
  std::vector<int32_t> arg(un, -1);
  eltwise_fwd(cpu, ed, xp.data(), y.data(), op == EltwiseOp::kMax ? arg.data() : nullptr, blend);
  DeviceBuffer g_y = to_gpu(y0), g_arg = to_gpu(std::vector<int32_t>(un, -1));
  eltwise_fwd(gpu, ed, gxp.data(), g_y.get(),
              op == EltwiseOp::kMax ? static_cast<int32_t*>(g_arg.get()) : nullptr, blend);
  EXPECT_TRUE(all_close(from_gpu<T>(gpu, g_y, un), y, tol)) << "forward";
  if (op == EltwiseOp::kMax) {
    EXPECT_EQ(from_gpu<int32_t>(gpu, g_arg, un), arg);
  }

  // Backward for the first, a middle and the last input; y from a plain forward.
  std::vector<T> yplain(un);
  eltwise_fwd(cpu, ed, xp.data(), yplain.data(), arg.data());
  const auto dy = ints ? random_int_vector<T>(un, 7) : random_vector<T>(un, 7);
  const DeviceBuffer g_dy = to_gpu(dy), g_yplain = to_gpu(yplain), g_arg2 = to_gpu(arg);
  for (int input : {0, K / 2, K - 1}) {
    const auto dx0 = blend.beta == 0 ? test::poisoned<T>(un) : random_int_vector<T>(un, 8);
    std::vector<T> dx = dx0;
    std::vector<void*> dxp(static_cast<size_t>(K)),
        g_dxp(static_cast<size_t>(K));  // this input only
    dxp[size_t(input)] = dx.data();
    eltwise_bwd(cpu, ed, xp.data(), yplain.data(), dy.data(), arg.data(), dxp.data(), blend);
    DeviceBuffer g_dx = to_gpu(dx0);
    g_dxp[size_t(input)] = g_dx.get();
    eltwise_bwd(gpu, ed, gxp.data(), g_yplain.get(), g_dy.get(),
                static_cast<const int32_t*>(g_arg2.get()), g_dxp.data(), blend);
    EXPECT_TRUE(all_close(from_gpu<T>(gpu, g_dx, un), dx, tol)) << "backward input " << input;
  }
}

template <typename T>
void check_all() {
  // n = 4096 with up to 4 inputs takes the 16-byte vector kernels of kSum.
  for (int K : {1, 2, 3, 4, 16, 17, 40})
    for (int64_t n : {int64_t(1), int64_t(37), int64_t(4096), int64_t(100003)})
      for (Blend b : {Blend{}, Blend{2, 0.5}})
        for (bool ints : {true, false}) {
          check<T>(EltwiseOp::kSum, K, n, false, true, b, ints);
          check<T>(EltwiseOp::kSum, K, n, true, true, b, ints);
          check<T>(EltwiseOp::kProd, K, n, false, true, b, ints);
          check<T>(EltwiseOp::kProd, K, n, false, false, b, ints);
          check<T>(EltwiseOp::kMax, K, n, false, true, b, ints);
        }
}

// kSum with the fused ReLU, every input's gradient from one call, in place on input 0 (dy is
// dx[0]): the vector kernels (n = 4096, K <= 4) and the per-input ones.
template <typename T>
void check_fused_relu(int K, int64_t n, Blend blend) {
  SCOPED_TRACE("K " + std::to_string(K) + " n " + std::to_string(n) + " beta " +
               std::to_string(blend.beta) + (sizeof(T) == 8 ? " f64" : " f32"));
  const size_t un = size_t(n);
  EltwiseDesc ed;
  ed.dtype = sizeof(T) == 8 ? DataType::kFloat64 : DataType::kFloat32;
  ed.n = n;
  ed.num_inputs = K;
  ed.relu = true;
  ed.negative_slope = 0.125;
  for (int k = 0; k < K; ++k) ed.coeff.push_back(k % 2 ? -0.5 : 1.5);
  const test::Tolerance tol =
      sizeof(T) == 8 ? test::Tolerance{1e-12, 1e-12, true} : test::Tolerance{1e-6, 1e-5, true};
  Handle cpu(Device::kCPU), gpu(Device::kCUDA);
  std::vector<std::vector<T>> x;
  std::vector<DeviceBuffer> gx;
  std::vector<const void*> xp, gxp;
  for (int k = 0; k < K; ++k) {
    x.push_back(random_vector<T>(un, 20 + k));
    gx.push_back(to_gpu(x.back()));
  }
  for (int k = 0; k < K; ++k) {
    xp.push_back(x[size_t(k)].data());
    gxp.push_back(gx[size_t(k)].get());
  }
  const auto y0 = blend.beta == 0 ? test::poisoned<T>(un) : random_vector<T>(un, 30);
  std::vector<T> y = y0;
  DeviceBuffer g_y = to_gpu(y0);
  eltwise_fwd(cpu, ed, xp.data(), y.data(), nullptr, blend);
  eltwise_fwd(gpu, ed, gxp.data(), g_y.get(), nullptr, blend);
  EXPECT_TRUE(all_close(from_gpu<T>(gpu, g_y, un), y, tol)) << "forward";

  std::vector<T> yplain(un);
  eltwise_fwd(cpu, ed, xp.data(), yplain.data(), nullptr);
  const DeviceBuffer g_yplain = to_gpu(yplain);
  const auto dy = random_vector<T>(un, 31);
  std::vector<std::vector<T>> dx;
  std::vector<DeviceBuffer> g_dx;
  std::vector<void*> dxp, g_dxp;
  for (int k = 0; k < K; ++k) {
    // Input 1 is not wanted; input 0's gradient is dy itself.
    dx.push_back(k == 0 ? dy : blend.beta == 0 ? test::poisoned<T>(un) : random_vector<T>(un, 32));
    g_dx.push_back(to_gpu(dx.back()));
  }
  for (int k = 0; k < K; ++k) {
    dxp.push_back(k == 1 ? nullptr : dx[size_t(k)].data());
    g_dxp.push_back(k == 1 ? nullptr : g_dx[size_t(k)].get());
  }
  eltwise_bwd(cpu, ed, nullptr, yplain.data(), dx[0].data(), nullptr, dxp.data(), blend);
  eltwise_bwd(gpu, ed, nullptr, g_yplain.get(), g_dx[0].get(), nullptr, g_dxp.data(), blend);
  for (int k = 0; k < K; ++k) {
    if (k == 1) continue;  // not wanted
    EXPECT_TRUE(all_close(from_gpu<T>(gpu, g_dx[size_t(k)], un), dx[size_t(k)], tol))
        << "backward input " << k;
  }
}

TEST(EltwiseCuda, SumWithFusedReluMatchesCpu) {
  CREMA_SKIP_WITHOUT_GPU();
  for (int K : {1, 2, 3, 4, 17})
    for (int64_t n : {int64_t(37), int64_t(4096)})
      for (Blend b : {Blend{}, Blend{2, 0.5}}) {
        check_fused_relu<float>(K, n, b);
        check_fused_relu<double>(K, n, b);
      }
}

TEST(EltwiseCuda, MatchesCpuF32) {
  CREMA_SKIP_WITHOUT_GPU();
  check_all<float>();
}

TEST(EltwiseCuda, MatchesCpuF64) {
  CREMA_SKIP_WITHOUT_GPU();
  check_all<double>();
}

// y aliasing an input: each element is read before it is written.
TEST(EltwiseCuda, InPlaceForward) {
  CREMA_SKIP_WITHOUT_GPU();
  const int64_t n = 5001;
  const auto a = random_int_vector<float>(size_t(n), 1), b = random_int_vector<float>(size_t(n), 2);
  EltwiseDesc ed{DataType::kFloat32, EltwiseOp::kSum, n, 2, {2.0, -1.0}, true};
  Handle cpu(Device::kCPU), gpu(Device::kCUDA);
  std::vector<float> ref = a;
  const void* xp[2] = {ref.data(), b.data()};
  eltwise_fwd(cpu, ed, xp, ref.data(), nullptr);
  DeviceBuffer ga = to_gpu(a), gb = to_gpu(b);
  const void* gxp[2] = {ga.get(), gb.get()};
  eltwise_fwd(gpu, ed, gxp, ga.get(), nullptr);
  EXPECT_TRUE(all_close(from_gpu<float>(gpu, ga, size_t(n)), ref, test::Tolerance{0, 0, true}));
}

}  // namespace
}  // namespace crema::prim
