// tensor_copy on CUDA against the CPU implementation: the CPU tests' views (concat and slice
// windows, crop, tile broadcast, a 6-d permutation, a scalar) plus real layer sizes (GoogLeNet's
// inception concat, an NCHW -> NHWC transpose of a ResNet-50 activation, a packed copy), every
// blend, f32 and f64. A copy and integer blends are exact, so the comparison is too; the
// elements of y outside the view must be left alone. Conversions to and from bf16 and f16 must
// store the CPU's bits.
#include <gtest/gtest.h>

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "primitives/tensor_copy.h"
#include "tensor_copy_cases.h"

namespace crema::prim {
namespace {

using Case = test::CopyCase;

// The CPU test's cases, then layer-sized ones.
std::vector<Case> cases(DataType t) {
  std::vector<Case> c = test::unit_copy_cases(t);
  // googlenet:inception_3a/output: the 3x3 branch (2, 128, 28, 28) into the 256-channel top at
  // channel 64.
  {
    ViewDesc y = ViewDesc::packed(t, {2, 128, 28 * 28});
    y.stride[0] = 256 * 28 * 28;
    c.push_back({"googlenet:inception_3a/concat", ViewDesc::packed(t, {2, 128, 28 * 28}), y,
                 2 * 128 * 784, 2 * 256 * 784, 64 * 784});
  }
  // resnet50:res2 activation (4, 64, 56, 56) NCHW -> NHWC.
  {
    ViewDesc x = ViewDesc::packed(t, {4, 64, 56, 56});
    ViewDesc y = x;
    y.stride[0] = 64 * 56 * 56;
    y.stride[1] = 1;
    y.stride[2] = 56 * 64;
    y.stride[3] = 64;
    c.push_back({"resnet50:res2_nhwc", x, y, x.count(), x.count(), 0});
  }
  c.push_back({"packed_large", ViewDesc::packed(t, {3, 1000003}), ViewDesc::packed(t, {3, 1000003}),
               3000009, 3000009, 0});
  return c;
}

template <typename T>
void check_all() {
  const DataType t = sizeof(T) == 8 ? DataType::kFloat64 : DataType::kFloat32;
  const Blend blends[] = {{1, 0}, {-0.5, 0}, {1, 1}, {2, -0.25}};
  Handle cpu(Device::kCPU), gpu(Device::kCUDA);
  int seed = 1;
  for (const Case& k : cases(t))
    for (const Blend& b : blends) {
      SCOPED_TRACE(k.name + " alpha " + std::to_string(b.alpha) + " beta " +
                   std::to_string(b.beta) + (sizeof(T) == 8 ? " f64" : " f32"));
      const auto x = random_int_vector<T>(size_t(k.xlen), seed++, -100, 100);
      const auto y0 = random_int_vector<T>(size_t(k.ylen), seed++, -100, 100);
      std::vector<T> ref = y0;
      tensor_copy(cpu, k.x, x.data(), k.y, ref.data() + k.yoff, b);
      DeviceBuffer gx = to_gpu(x), gy = to_gpu(y0);
      tensor_copy(gpu, k.x, gx.get(), k.y, static_cast<T*>(gy.get()) + k.yoff, b);
      EXPECT_TRUE(all_close(from_gpu<T>(gpu, gy, size_t(k.ylen)), ref, {0, 0, true}));
    }
}

TEST(TensorCopyCuda, MatchesCpuF32) {
  CREMA_SKIP_WITHOUT_GPU();
  check_all<float>();
}

TEST(TensorCopyCuda, MatchesCpuF64) {
  CREMA_SKIP_WITHOUT_GPU();
  check_all<double>();
}

// beta 0 never reads y: a NaN-poisoned y is fully overwritten.
TEST(TensorCopyCuda, BetaZeroOverwritesPoison) {
  CREMA_SKIP_WITHOUT_GPU();
  Handle gpu(Device::kCUDA);
  ViewDesc x = ViewDesc::packed(DataType::kFloat32, {5, 7, 9});
  ViewDesc y = x;  // a transpose of the last two axes
  y.stride[1] = 1;
  y.stride[2] = 7;
  const auto xv = random_int_vector<float>(315, 3, 1, 9);
  std::vector<float> ref(315);
  Handle cpu(Device::kCPU);
  tensor_copy(cpu, x, xv.data(), y, ref.data(), {3, 0});
  DeviceBuffer gx = to_gpu(xv), gy = to_gpu(test::poisoned<float>(315));
  tensor_copy(gpu, x, gx.get(), y, gy.get(), {3, 0});
  EXPECT_TRUE(all_close(from_gpu<float>(gpu, gy, 315), ref, {0, 0}));
}

// The index of the first element whose bits differ, or -1.
template <typename T>
int64_t first_difference(const std::vector<T>& a, const std::vector<T>& b) {
  for (size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(T)) != 0) return int64_t(i);
  return -1;
}

// f32 -> bf16 / f16 -> f32 on the GPU, plain and blended: bit for bit the CPU's result, over
// ties, subnormals, overflow to infinity, signed zeros and values of every exponent. (NaN is left
// out: the payload GPU arithmetic gives a NaN is not the CPU's.)
TEST(TensorCopyCuda, ConversionsMatchCpuBitForBit) {
  CREMA_SKIP_WITHOUT_GPU();
  Handle cpu(Device::kCPU), gpu(Device::kCUDA);
  std::vector<float> x = {1 + 0x1p-8f,  1 + 0x3p-8f,  1 + 0x1p-8f + 0x1p-20f,
                          1 + 0x1p-11f, 1 + 0x3p-11f, 65504,
                          65519,        65520,        1e5f,
                          FLT_MAX,      -INFINITY,    -0.0f,
                          0x1p-14f,     0x1p-24f,     0x3p-25f,
                          0x1p-25f,     0x1p-133f,    0x3p-134f,
                          0x1p-149f};
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> mantissa(-2, 2);
  for (int e = -30; e <= 17; ++e)  // f16's range and a little beyond, densely
    for (int k = 0; k < 64; ++k) x.push_back(std::ldexp(mantissa(rng), e));
  while (x.size() < 8192) {  // every fp32 exponent: random bit patterns, NaN excepted
    const float f = std::bit_cast<float>(uint32_t(rng()));
    if (!std::isnan(f)) x.push_back(f);
  }
  const int64_t n = int64_t(x.size());
  const auto y0 = test::random_vector<float>(size_t(n), 11, -4, 4);
  const ViewDesc vf = ViewDesc::packed(DataType::kFloat32, {n});
  for (DataType t : {DataType::kBFloat16, DataType::kFloat16}) {
    const ViewDesc vh = ViewDesc::packed(t, {n});
    std::vector<uint16_t> h0(x.size());  // the starting halves, read when beta != 0
    tensor_copy(cpu, vf, y0.data(), vh, h0.data());
    for (const Blend& b : {Blend{1, 0}, Blend{2, 1}}) {
      SCOPED_TRACE(std::string(dtype_name(t)) + " alpha " + std::to_string(b.alpha) + " beta " +
                   std::to_string(b.beta));
      std::vector<uint16_t> half = h0;
      tensor_copy(cpu, vf, x.data(), vh, half.data(), b);
      DeviceBuffer gx = to_gpu(x), gh = to_gpu(h0);
      tensor_copy(gpu, vf, gx.get(), vh, gh.get(), b);
      const auto ghalf = from_gpu<uint16_t>(gpu, gh, size_t(n));
      const int64_t i = first_difference(ghalf, half);
      EXPECT_EQ(i, -1) << "x " << x[size_t(i)] << ": gpu " << ghalf[size_t(i)] << ", cpu "
                       << half[size_t(i)];
      // And back, from the same halves.
      std::vector<float> back = y0;
      tensor_copy(cpu, vh, half.data(), vf, back.data(), b);
      DeviceBuffer gb = to_gpu(y0);
      tensor_copy(gpu, vh, gh.get(), vf, gb.get(), b);
      const auto gback = from_gpu<float>(gpu, gb, size_t(n));
      const int64_t j = first_difference(gback, back);
      EXPECT_EQ(j, -1) << "half " << half[size_t(j)] << ": gpu " << gback[size_t(j)] << ", cpu "
                       << back[size_t(j)];
    }
  }
}

}  // namespace
}  // namespace crema::prim
