// act_fwd/act_bwd on CUDA against the CPU implementation, every mode, both blends, f32 and f64,
// in place and out of place.
#include <gtest/gtest.h>

#include <vector>

#include "cuda_test_util.h"
#include "primitives/activation.h"

namespace crema::prim {
namespace {

struct Case {
  const char* name;
  ActDesc ad;
  double lo, hi;  // input range where the mode is defined
};

std::vector<Case> cases() {
  std::vector<Case> c;
  auto add = [&](const char* name, ActMode m, double lo, double hi, auto&& set) {
    ActDesc ad;
    ad.mode = m;
    set(ad);
    c.push_back({name, ad, lo, hi});
  };
  auto none = [](ActDesc&) {};
  add("relu", ActMode::kRelu, -2, 2, none);
  add("leaky_relu", ActMode::kRelu, -2, 2, [](ActDesc& a) { a.relu_negative_slope = 0.1; });
  add("sigmoid", ActMode::kSigmoid, -6, 6, none);
  add("tanh", ActMode::kTanh, -3, 3, none);
  add("elu", ActMode::kElu, -3, 3, [](ActDesc& a) { a.elu_alpha = 0.7; });
  add("absval", ActMode::kAbsVal, -2, 2, none);
  add("power_affine", ActMode::kPower, -2, 2, [](ActDesc& a) { a.scale = 0.5, a.shift = 1; });
  add("power_square", ActMode::kPower, -2, 2,
      [](ActDesc& a) { a.power = 2, a.scale = 1.5, a.shift = -0.5; });
  add("power_general", ActMode::kPower, 0.1, 2,
      [](ActDesc& a) { a.power = 1.7, a.scale = 2, a.shift = 0.5; });
  add("exp", ActMode::kExp, -2, 2, [](ActDesc& a) { a.base = 2, a.scale = 0.5, a.shift = 1; });
  add("log", ActMode::kLog, 0.1, 3, [](ActDesc& a) { a.scale = 2, a.shift = 0.5; });
  add("bnll", ActMode::kBnll, -8, 8, none);
  add("threshold", ActMode::kThreshold, -1, 1, [](ActDesc& a) { a.threshold = 0.2; });
  add("clip", ActMode::kClip, -2, 2, [](ActDesc& a) { a.clip_min = -0.5, a.clip_max = 0.8; });
  add("swish", ActMode::kSwish, -4, 4, [](ActDesc& a) { a.swish_beta = 1.3; });
  return c;
}

template <typename T>
void check_mode(const Case& k, Blend blend, bool in_place) {
  SCOPED_TRACE(std::string(k.name) + (in_place ? " in place" : "") +
               (blend.beta != 0 ? " beta" : "") + (sizeof(T) == 8 ? " f64" : " f32"));
  constexpr DataType t = sizeof(T) == 8 ? DataType::kFloat64 : DataType::kFloat32;
  const TensorDesc d = TensorDesc::nchw(t, 3, 7, 11, 13);  // odd sizes: partial blocks
  const size_t n = size_t(d.count());
  const auto x = random_vector<T>(n, 1, k.lo, k.hi);
  const auto y0 = random_vector<T>(n, 2);  // prior y for beta != 0
  const auto dy = random_vector<T>(n, 3);
  const auto dx0 = random_vector<T>(n, 4);
  const test::Tolerance tol =
      sizeof(T) == 8 ? test::Tolerance{1e-12, 1e-11, true} : test::Tolerance{1e-6, 1e-5, true};
  Handle cpu(Device::kCPU), gpu(Device::kCUDA);

  // Forward.
  std::vector<T> y_ref = in_place ? x : y0;
  act_fwd(cpu, k.ad, d, in_place ? y_ref.data() : x.data(), d, y_ref.data(), blend);
  DeviceBuffer gx = to_gpu(x), gy = to_gpu(in_place ? x : y0);
  act_fwd(gpu, k.ad, d, in_place ? gy.get() : gx.get(), d, gy.get(), blend);
  EXPECT_TRUE(all_close(from_gpu<T>(gpu, gy, n), y_ref, tol));

  if (!act_has_bwd(k.ad)) return;
  // Backward, from the forward output of a plain (alpha 1, beta 0) pass.
  std::vector<T> y(n);
  act_fwd(cpu, k.ad, d, x.data(), d, y.data());
  std::vector<T> dx_ref = in_place ? dy : dx0;
  act_bwd(cpu, k.ad, d, y.data(), in_place ? dx_ref.data() : dy.data(), d, x.data(), dx_ref.data(),
          blend);
  DeviceBuffer g_y = to_gpu(y), g_dy = to_gpu(dy), g_dx = to_gpu(in_place ? dy : dx0);
  act_bwd(gpu, k.ad, d, g_y.get(), in_place ? g_dx.get() : g_dy.get(), d, gx.get(), g_dx.get(),
          blend);
  EXPECT_TRUE(all_close(from_gpu<T>(gpu, g_dx, n), dx_ref, tol));
}

TEST(ActivationCuda, EveryModeMatchesCpu) {
  CREMA_SKIP_WITHOUT_GPU();
  for (const Case& k : cases())
    for (bool in_place : {false, true})
      for (Blend blend : {Blend{}, Blend{0.5, -1.5}}) {
        check_mode<float>(k, blend, in_place);
        check_mode<double>(k, blend, in_place);
      }
}

}  // namespace
}  // namespace crema::prim
