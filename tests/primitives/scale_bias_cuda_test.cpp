// Broadcast scale and bias on CUDA against the CPU implementation: forward (scale only, bias
// only, both), data gradient and the per-channel scale and bias gradients, both blends, f32 and
// f64, on the CPU tests' shapes and real layer shapes (ResNet-50 Scale after BatchNorm, an
// InnerProduct bias with inner 1, a wide bias that takes the thread-per-channel path).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "primitives/scale_bias.h"

namespace crema::prim {
namespace {

struct Shape {
  const char* name;
  int64_t outer, channels, inner;
};

const Shape kShapes[] = {
    {"small", 2, 3, 5},
    {"one", 1, 1, 1},
    {"inner1", 4, 6, 1},
    {"outer1", 1, 5, 17},
    {"odd", 3, 7, 33},
    {"resnet50:scale_conv1", 2, 64, 12544},
    {"resnet50:scale5c", 2, 2048, 49},
    {"caffenet:fc8_bias", 64, 1000, 1},
    {"wide_bias", 8, 4096, 1},
    {"one_channel_long", 3, 1, 70001},
};

template <typename T>
void check(const Shape& s, Blend blend) {
  SCOPED_TRACE(std::string(s.name) + " beta " + std::to_string(blend.beta) +
               (sizeof(T) == 8 ? " f64" : " f32"));
  const ScaleBiasDesc sd{sizeof(T) == 8 ? DataType::kFloat64 : DataType::kFloat32, s.outer,
                         s.channels, s.inner};
  const size_t n = size_t(sd.count()), C = size_t(s.channels);
  const test::Tolerance tol =
      sizeof(T) == 8 ? test::Tolerance{1e-12, 1e-11, true} : test::Tolerance{1e-5, 1e-5, true};
  Handle cpu(Device::kCPU), gpu(Device::kCUDA);
  const auto x = random_vector<T>(n, 1), dy = random_vector<T>(n, 2);
  const auto scale = random_vector<T>(C, 3, 0.5, 1.5), bias = random_vector<T>(C, 4);
  const DeviceBuffer gx = to_gpu(x), gdy = to_gpu(dy), gs = to_gpu(scale), gb = to_gpu(bias);
  auto prior = [&](size_t len, uint64_t seed) {
    return blend.beta == 0 ? test::poisoned<T>(len) : random_vector<T>(len, seed);
  };
  for (int which = 0; which < 3; ++which) {  // scale and bias, scale only, bias only
    const bool use_s = which != 2, use_b = which != 1;
    std::vector<T> ref = prior(n, 5);
    DeviceBuffer gy = to_gpu(ref);
    scale_bias_fwd(cpu, sd, x.data(), use_s ? scale.data() : nullptr, use_b ? bias.data() : nullptr,
                   ref.data(), blend);
    scale_bias_fwd(gpu, sd, gx.get(), use_s ? gs.get() : nullptr, use_b ? gb.get() : nullptr,
                   gy.get(), blend);
    EXPECT_TRUE(all_close(from_gpu<T>(gpu, gy, n), ref, tol)) << "fwd " << which;
  }
  {
    std::vector<T> ref = prior(n, 6);
    DeviceBuffer gdx = to_gpu(ref);
    scale_bias_bwd_data(cpu, sd, dy.data(), scale.data(), ref.data(), blend);
    scale_bias_bwd_data(gpu, sd, gdy.get(), gs.get(), gdx.get(), blend);
    EXPECT_TRUE(all_close(from_gpu<T>(gpu, gdx, n), ref, tol)) << "bwd_data";
  }
  {
    std::vector<T> ref = prior(C, 7);
    DeviceBuffer gds = to_gpu(ref);
    scale_bias_bwd_scale(cpu, sd, dy.data(), x.data(), ref.data(), blend);
    scale_bias_bwd_scale(gpu, sd, gdy.get(), gx.get(), gds.get(), blend);
    EXPECT_TRUE(all_close(from_gpu<T>(gpu, gds, C), ref, tol)) << "bwd_scale";
  }
  {
    std::vector<T> ref = prior(C, 8);
    DeviceBuffer gdb = to_gpu(ref);
    scale_bias_bwd_bias(cpu, sd, dy.data(), ref.data(), blend);
    scale_bias_bwd_bias(gpu, sd, gdy.get(), gdb.get(), blend);
    EXPECT_TRUE(all_close(from_gpu<T>(gpu, gdb, C), ref, tol)) << "bwd_bias";
  }
}

TEST(ScaleBiasCuda, MatchesCpu) {
  CREMA_SKIP_WITHOUT_GPU();
  for (const Shape& s : kShapes)
    for (Blend b : {Blend{}, Blend{0.5, 1.0}, Blend{2.0, -0.5}}) {
      check<float>(s, b);
      check<double>(s, b);
    }
}

// The gradient sums are deterministic: the same call twice gives the same bits.
TEST(ScaleBiasCuda, ReductionsRepeatBitForBit) {
  CREMA_SKIP_WITHOUT_GPU();
  const ScaleBiasDesc sd{DataType::kFloat32, 16, 64, 3136};
  const auto dy = random_vector<float>(size_t(sd.count()), 1);
  Handle gpu(Device::kCUDA);
  DeviceBuffer gdy = to_gpu(dy), a(Device::kCUDA, 64 * 4), b(Device::kCUDA, 64 * 4);
  scale_bias_bwd_bias(gpu, sd, gdy.get(), a.get());
  scale_bias_bwd_bias(gpu, sd, gdy.get(), b.get());
  EXPECT_EQ(from_gpu<float>(gpu, a, 64), from_gpu<float>(gpu, b, 64));
}

}  // namespace
}  // namespace crema::prim
