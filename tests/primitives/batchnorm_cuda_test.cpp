// Batch normalization on CUDA against the CPU implementation: training and inference, forward
// and backward, both blends, in place, the fused forms, f32 and f64, packed NCHW and channels
// last, on the CPU tests' shapes and ResNet-50's BatchNorm sizes (batch cut to 2). The statistics
// outputs are compared too; the inputs have a mean far from 0 so a one-pass variance would fail.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "primitives/batchnorm.h"

namespace crema::prim {
namespace {

struct Shape {
  const char* name;
  int n, c, h, w;
};

const Shape kShapes[] = {
    {"2x3x4x5", 2, 3, 4, 5},
    {"1x5x3x3", 1, 5, 3, 3},
    {"4x1x1x1", 4, 1, 1, 1},
    {"3x7x1x1", 3, 7, 1, 1},
    {"2x64x7x7", 2, 64, 7, 7},
    {"5x2x1x9", 5, 2, 1, 9},
    {"resnet50:bn_conv1", 2, 64, 112, 112},
    {"resnet50:bn2a_branch2c", 2, 256, 56, 56},
    {"resnet50:bn3a_branch2a", 2, 128, 28, 28},
    {"resnet50:bn4a_branch1", 2, 1024, 14, 14},
    {"resnet50:bn5c_branch2c", 2, 2048, 7, 7},
    {"one_channel_long", 8, 1, 150, 151},
    {"features_2500", 64, 2500, 1, 1},  // blocks of 32 channels, warps over rows
    {"features_rows_in_parts", 1100, 2048, 1, 1},
};

// The shape packed NCHW, or channels last (where the CUDA channel sums walk rows of adjacent
// channels; the CPU's loops take one value a plane).
template <typename T>
TensorDesc desc_of(const Shape& s, bool nhwc) {
  const DataType t = sizeof(T) == 8 ? DataType::kFloat64 : DataType::kFloat32;
  return nhwc ? TensorDesc::nhwc(t, s.n, s.c, s.h, s.w) : TensorDesc::nchw(t, s.n, s.c, s.h, s.w);
}

template <typename T>
test::Tolerance tolerance() {
  return sizeof(T) == 8 ? test::Tolerance{1e-11, 1e-10, true} : test::Tolerance{2e-5, 2e-4, true};
}

const BatchNormDesc bd{1e-5};

// Running statistics for inference, on both devices.
template <typename T>
struct RunningStats {
  std::vector<T> mean, var;
  DeviceBuffer gmean, gvar;
  RunningStats(size_t channels, uint64_t seed)
      : mean(random_vector<T>(channels, seed, 2.0, 4.0)),
        var(random_vector<T>(channels, seed + 1, 0.1, 2.0)),
        gmean(to_gpu(mean)),
        gvar(to_gpu(var)) {}
};

template <typename T>
void check(const Shape& s, Blend blend, bool in_place, bool nhwc) {
  SCOPED_TRACE(std::string(s.name) + " beta " + std::to_string(blend.beta) +
               (in_place ? " in place" : "") + (sizeof(T) == 8 ? " f64" : " f32") +
               (nhwc ? " nhwc" : ""));
  const TensorDesc d = desc_of<T>(s, nhwc);
  const size_t n = size_t(d.count()), C = size_t(s.c);
  const test::Tolerance tol = tolerance<T>();
  Handle cpu(Device::kCPU), gpu(Device::kCUDA);
  const auto x = random_vector<T>(n, 1, 2.0, 4.0), dy = random_vector<T>(n, 2);
  auto prior = [&](size_t len, uint64_t seed) {
    return blend.beta == 0 ? test::poisoned<T>(len) : random_vector<T>(len, seed);
  };

  // Training forward, with the statistics.
  std::vector<T> y = in_place ? x : prior(n, 3), mean(C), var(C), inv_std(C);
  DeviceBuffer gx = to_gpu(x), gy = to_gpu(y), gm = to_gpu(test::poisoned<T>(C)),
               gv = to_gpu(test::poisoned<T>(C)), gi = to_gpu(test::poisoned<T>(C));
  batchnorm_fwd_training(cpu, bd, d, in_place ? y.data() : x.data(), d, y.data(), mean.data(),
                         var.data(), inv_std.data(), blend);
  batchnorm_fwd_training(gpu, bd, d, in_place ? gy.get() : gx.get(), d, gy.get(), gm.get(),
                         gv.get(), gi.get(), blend);
  EXPECT_TRUE(all_close(from_gpu<T>(gpu, gy, n), y, tol)) << "fwd_training y";
  EXPECT_TRUE(all_close(from_gpu<T>(gpu, gm, C), mean, tol)) << "mean";
  EXPECT_TRUE(all_close(from_gpu<T>(gpu, gv, C), var, tol)) << "var";
  EXPECT_TRUE(all_close(from_gpu<T>(gpu, gi, C), inv_std, tol)) << "inv_std";

  // Training backward from a plain forward's y.
  std::vector<T> yp(n);
  batchnorm_fwd_training(cpu, bd, d, x.data(), d, yp.data(), nullptr, nullptr, inv_std.data());
  const DeviceBuffer gyp = to_gpu(yp), ginv = to_gpu(inv_std);
  std::vector<T> dx = in_place ? dy : prior(n, 4);
  DeviceBuffer gdx = to_gpu(dx), gdy = to_gpu(dy);
  batchnorm_bwd_training(cpu, bd, d, yp.data(), in_place ? dx.data() : dy.data(), inv_std.data(), d,
                         dx.data(), blend);
  batchnorm_bwd_training(gpu, bd, d, gyp.get(), in_place ? gdx.get() : gdy.get(), ginv.get(), d,
                         gdx.get(), blend);
  EXPECT_TRUE(all_close(from_gpu<T>(gpu, gdx, n), dx, tol)) << "bwd_training";

  // Inference with given statistics.
  const RunningStats<T> rs(C, 5);
  std::vector<T> yi = prior(n, 7);
  DeviceBuffer gyi = to_gpu(yi);
  batchnorm_fwd_inference(cpu, bd, d, x.data(), d, yi.data(), rs.mean.data(), rs.var.data(), blend);
  batchnorm_fwd_inference(gpu, bd, d, gx.get(), d, gyi.get(), rs.gmean.get(), rs.gvar.get(), blend);
  EXPECT_TRUE(all_close(from_gpu<T>(gpu, gyi, n), yi, tol)) << "fwd_inference";
  std::vector<T> dxi = prior(n, 8);
  DeviceBuffer gdxi = to_gpu(dxi);
  batchnorm_bwd_inference(cpu, bd, d, dy.data(), rs.var.data(), d, dxi.data(), blend);
  batchnorm_bwd_inference(gpu, bd, d, gdy.get(), rs.gvar.get(), d, gdxi.get(), blend);
  EXPECT_TRUE(all_close(from_gpu<T>(gpu, gdxi, n), dxi, tol)) << "bwd_inference";
}

TEST(BatchNormCuda, MatchesCpu) {
  CREMA_SKIP_WITHOUT_GPU();
  for (const Shape& s : kShapes)
    for (Blend b : {Blend{}, Blend{0.5, -1.5}})
      for (bool in_place : {false, true}) {
        if (in_place && b.beta != 0) continue;  // in place means the prior y is x itself
        for (bool nhwc : {false, true}) {
          check<float>(s, b, in_place, nhwc);
          check<double>(s, b, in_place, nhwc);
        }
      }
}

// The fused forms (gamma, beta, ReLU) against the CPU's, in place and not.
template <typename T>
void check_fused(const Shape& s, bool relu, bool in_place, bool nhwc) {
  SCOPED_TRACE(std::string(s.name) + (relu ? " relu" : "") + (in_place ? " in place" : "") +
               (sizeof(T) == 8 ? " f64" : " f32") + (nhwc ? " nhwc" : ""));
  const TensorDesc d = desc_of<T>(s, nhwc);
  const size_t n = size_t(d.count()), C = size_t(s.c);
  const test::Tolerance tol = tolerance<T>();
  Handle cpu(Device::kCPU), gpu(Device::kCUDA);
  const auto x = random_vector<T>(n, 11, 2.0, 4.0), dy = random_vector<T>(n, 12);
  const auto gamma = random_vector<T>(C, 13, -2.0, 2.0), beta = random_vector<T>(C, 14);
  const DeviceBuffer ggamma = to_gpu(gamma), gbeta = to_gpu(beta);
  const BatchNormEpilogue ep{gamma.data(), beta.data(), relu, 0.05};
  const BatchNormEpilogue gep{ggamma.get(), gbeta.get(), relu, 0.05};

  std::vector<T> y = in_place ? x : test::poisoned<T>(n), x_hat(n), inv_std(C);
  DeviceBuffer gx = to_gpu(x), gy = to_gpu(y), gxh = to_gpu(test::poisoned<T>(n)),
               gi = to_gpu(test::poisoned<T>(C));
  batchnorm_fwd_training_fused(cpu, bd, ep, d, in_place ? y.data() : x.data(), d, y.data(),
                               x_hat.data(), nullptr, nullptr, inv_std.data());
  batchnorm_fwd_training_fused(gpu, bd, gep, d, in_place ? gy.get() : gx.get(), d, gy.get(),
                               gxh.get(), nullptr, nullptr, gi.get());
  EXPECT_TRUE(all_close(from_gpu<T>(gpu, gy, n), y, tol)) << "fwd y";
  EXPECT_TRUE(all_close(from_gpu<T>(gpu, gxh, n), x_hat, tol)) << "fwd x_hat";
  EXPECT_TRUE(all_close(from_gpu<T>(gpu, gi, C), inv_std, tol)) << "fwd inv_std";

  // Backward from the CPU's x_hat, so both start from the same values.
  const DeviceBuffer gxh_cpu = to_gpu(x_hat), ginv = to_gpu(inv_std);
  auto dgamma = random_vector<T>(C, 15), dbeta = random_vector<T>(C, 16);
  DeviceBuffer gdgamma = to_gpu(dgamma), gdbeta = to_gpu(dbeta);
  std::vector<T> dx = in_place ? dy : test::poisoned<T>(n);
  DeviceBuffer gdx = to_gpu(dx), gdy = to_gpu(dy);
  batchnorm_bwd_training_fused(cpu, bd, ep, d, x_hat.data(), in_place ? dx.data() : dy.data(),
                               inv_std.data(), dgamma.data(), dbeta.data(), d, dx.data());
  batchnorm_bwd_training_fused(gpu, bd, gep, d, gxh_cpu.get(), in_place ? gdx.get() : gdy.get(),
                               ginv.get(), gdgamma.get(), gdbeta.get(), d, gdx.get());
  EXPECT_TRUE(all_close(from_gpu<T>(gpu, gdx, n), dx, tol)) << "bwd dx";
  EXPECT_TRUE(all_close(from_gpu<T>(gpu, gdgamma, C), dgamma, tol)) << "bwd dgamma";
  EXPECT_TRUE(all_close(from_gpu<T>(gpu, gdbeta, C), dbeta, tol)) << "bwd dbeta";

  const RunningStats<T> rs(C, 17);
  std::vector<T> yi = test::poisoned<T>(n);
  DeviceBuffer gyi = to_gpu(yi);
  batchnorm_fwd_inference_fused(cpu, bd, ep, d, x.data(), d, yi.data(), rs.mean.data(),
                                rs.var.data());
  batchnorm_fwd_inference_fused(gpu, bd, gep, d, gx.get(), d, gyi.get(), rs.gmean.get(),
                                rs.gvar.get());
  EXPECT_TRUE(all_close(from_gpu<T>(gpu, gyi, n), yi, tol)) << "fwd_inference";
}

TEST(BatchNormCuda, FusedMatchesCpu) {
  CREMA_SKIP_WITHOUT_GPU();
  for (const Shape& s : kShapes)
    for (bool relu : {false, true})
      for (bool in_place : {false, true})
        for (bool nhwc : {false, true}) {
          check_fused<float>(s, relu, in_place, nhwc);
          check_fused<double>(s, relu, in_place, nhwc);
        }
}

// Statistics outputs are optional.
TEST(BatchNormCuda, NullStatisticsOutputs) {
  CREMA_SKIP_WITHOUT_GPU();
  const TensorDesc d = TensorDesc::nchw(DataType::kFloat32, 3, 4, 5, 6);
  const auto x = random_vector<float>(360, 1);
  Handle cpu(Device::kCPU), gpu(Device::kCUDA);
  std::vector<float> y(360);
  batchnorm_fwd_training(cpu, BatchNormDesc{}, d, x.data(), d, y.data(), nullptr, nullptr, nullptr);
  DeviceBuffer gx = to_gpu(x), gy(Device::kCUDA, 360 * 4);
  batchnorm_fwd_training(gpu, BatchNormDesc{}, d, gx.get(), d, gy.get(), nullptr, nullptr, nullptr);
  EXPECT_TRUE(all_close(from_gpu<float>(gpu, gy, 360), y, {2e-5, 2e-4}));
}

}  // namespace
}  // namespace crema::prim
