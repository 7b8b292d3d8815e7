// dropout_fwd/bwd on CUDA against the CPU implementation: for the same Handle seed and call
// sequence the CUDA mask equals the CPU mask bit for bit, also when a call starts or ends inside
// a Philox block (counts not multiples of 4), and y and dx agree exactly; f32 and f64, with and
// without scale_train.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "cuda_test_util.h"
#include "primitives/dropout.h"

namespace crema::prim {
namespace {

template <typename T>
void check_sequence(double ratio, bool scale_train, uint64_t seed) {
  SCOPED_TRACE(::testing::Message() << "ratio " << ratio << (scale_train ? " scaled" : "")
                                    << " seed " << seed << (sizeof(T) == 8 ? " f64" : " f32"));
  constexpr DataType t = sizeof(T) == 8 ? DataType::kFloat64 : DataType::kFloat32;
  Handle cpu(Device::kCPU), gpu(Device::kCUDA);
  cpu.set_seed(seed);
  gpu.set_seed(seed);
  // Odd counts leave the stream mid-block, so the next call starts inside one: the calls of four
  // or more elements start at every word of a block (1000 at stream position 6, 4096 at 1011,
  // 12 at 782886, 64 at 782900, 40 at 782965), and 777777 and 5 end with a scalar tail.
  int call = 0;
  for (int64_t n : {int64_t(1), int64_t(5), int64_t(1000), int64_t(3), int64_t(2), int64_t(4096),
                    int64_t(777777), int64_t(2), int64_t(12), int64_t(2), int64_t(64), int64_t(1),
                    int64_t(40)}) {
    SCOPED_TRACE(::testing::Message() << "call " << call++ << " count " << n);
    const DropoutDesc dd{t, n, ratio, scale_train};
    const auto x = random_vector<T>(size_t(n), 61 + call, 0.5, 2.0);
    const auto dy = random_vector<T>(size_t(n), 71 + call, 0.5, 2.0);
    const size_t count = static_cast<size_t>(n);
    std::vector<T> y(count), dx(count);
    std::vector<uint8_t> mask(count, 7);
    dropout_fwd(cpu, dd, x.data(), y.data(), mask.data());
    dropout_bwd(cpu, dd, dy.data(), mask.data(), dx.data());

    DeviceBuffer gx = to_gpu(x), gy = to_gpu(test::poisoned<T>(size_t(n)));
    DeviceBuffer gm = to_gpu(std::vector<uint8_t>(size_t(n), 7));
    dropout_fwd(gpu, dd, gx.get(), gy.get(), static_cast<uint8_t*>(gm.get()));
    DeviceBuffer gdy = to_gpu(dy), gdx = to_gpu(test::poisoned<T>(size_t(n)));
    dropout_bwd(gpu, dd, gdy.get(), static_cast<const uint8_t*>(gm.get()), gdx.get());

    const auto m_gpu = from_gpu<uint8_t>(gpu, gm, size_t(n));
    const auto y_gpu = from_gpu<T>(gpu, gy, size_t(n));
    const auto dx_gpu = from_gpu<T>(gpu, gdx, size_t(n));
    int64_t bad_mask = 0, bad_y = 0, bad_dx = 0, kept = 0;
    for (size_t i = 0; i < size_t(n); ++i) {
      bad_mask += m_gpu[i] != mask[i];
      bad_y += !(y_gpu[i] == y[i]);
      bad_dx += !(dx_gpu[i] == dx[i]);
      kept += mask[i] == 1;
    }
    EXPECT_EQ(bad_mask, 0);
    EXPECT_EQ(bad_y, 0);
    EXPECT_EQ(bad_dx, 0);
    if (n >= 1000) {  // not a vacuous all-kept or all-dropped comparison
      EXPECT_GT(kept, 0);
      EXPECT_LT(kept, n);
    }
  }
}

// Views that start one element into their buffers (no 16-byte alignment) take the scalar
// kernels and still equal the CPU.
TEST(DropoutCuda, UnalignedViewsEqualCpu) {
  CREMA_SKIP_WITHOUT_GPU();
  Handle cpu(Device::kCPU), gpu(Device::kCUDA);
  const int64_t n = 1001;
  const size_t count = size_t(n);
  const DropoutDesc dd{DataType::kFloat32, n, 0.5, true};
  const auto x = random_vector<float>(count + 1, 81, 0.5, 2.0);
  std::vector<float> y(count);
  std::vector<uint8_t> mask(count);
  dropout_fwd(cpu, dd, x.data() + 1, y.data(), mask.data());
  std::vector<float> dx(count);
  dropout_bwd(cpu, dd, x.data() + 1, mask.data(), dx.data());

  DeviceBuffer gx = to_gpu(x), gy = to_gpu(test::poisoned<float>(count + 1));
  DeviceBuffer gm = to_gpu(std::vector<uint8_t>(count + 1, 7));
  DeviceBuffer gdx = to_gpu(test::poisoned<float>(count + 1));
  const float* x1 = static_cast<const float*>(gx.get()) + 1;
  uint8_t* m1 = static_cast<uint8_t*>(gm.get()) + 1;
  dropout_fwd(gpu, dd, x1, static_cast<float*>(gy.get()) + 1, m1);
  dropout_bwd(gpu, dd, x1, m1, static_cast<float*>(gdx.get()) + 1);
  const auto y_gpu = from_gpu<float>(gpu, gy, count + 1);
  const auto m_gpu = from_gpu<uint8_t>(gpu, gm, count + 1);
  const auto dx_gpu = from_gpu<float>(gpu, gdx, count + 1);
  int64_t bad = 0, kept = 0;
  for (size_t i = 0; i < count; ++i) {
    bad += m_gpu[i + 1] != mask[i] || !(y_gpu[i + 1] == y[i]) || !(dx_gpu[i + 1] == dx[i]);
    kept += mask[i];
  }
  EXPECT_EQ(bad, 0);
  EXPECT_EQ(m_gpu[0], 7) << "wrote before the view";
  EXPECT_GT(kept, 0);
  EXPECT_LT(kept, n);
}

TEST(DropoutCuda, MaskAndOutputsEqualCpuBitForBit) {
  CREMA_SKIP_WITHOUT_GPU();
  for (double ratio : {0.1, 0.5, 0.8})
    for (bool scale_train : {true, false})
      for (uint64_t seed : {uint64_t(1234), uint64_t(0xFFFFFFFF00000001ull)}) {
        check_sequence<float>(ratio, scale_train, seed);
        check_sequence<double>(ratio, scale_train, seed);
      }
}

}  // namespace
}  // namespace crema::prim
