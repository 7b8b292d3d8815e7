// Tests of act_fwd/act_bwd on the CPU against a naive double-precision reference.
#include "primitives/activation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "prim_test_util.h"
#include "primitives/common/dtype_visit.h"
#include "problems.h"
#include "test_util.h"

namespace crema::prim {
namespace {

const TypedTolerance kTol = {{1e-12, 1e-10}, {1e-6, 1e-5}};

// The oracle: the formulas of activation.h in double, one element at a time, written out
// directly (no shared helpers with the library).
double ln_base(double base) { return base == -1 ? 1.0 : std::log(base); }

double ref_fwd(const ActDesc& ad, double x) {
  const double u = ad.shift + ad.scale * x;
  switch (ad.mode) {
    case ActMode::kRelu:
      return x > 0 ? x : ad.relu_negative_slope * x;
    case ActMode::kSigmoid:
      return 1.0 / (1.0 + std::exp(-x));
    case ActMode::kTanh:
      return std::tanh(x);
    case ActMode::kElu:
      return x > 0 ? x : ad.elu_alpha * (std::exp(x) - 1);
    case ActMode::kAbsVal:
      return std::fabs(x);
    case ActMode::kPower:
      return std::pow(u, ad.power);
    case ActMode::kExp:
      return std::pow(ad.base == -1 ? std::exp(1.0) : ad.base, u);
    case ActMode::kLog:
      return std::log(u) / ln_base(ad.base);
    case ActMode::kBnll:
      return std::log(1 + std::exp(x));
    case ActMode::kThreshold:
      return x > ad.threshold ? 1.0 : 0.0;
    case ActMode::kClip:
      return x < ad.clip_min ? ad.clip_min : x > ad.clip_max ? ad.clip_max : x;
    case ActMode::kSwish:
      return x / (1 + std::exp(-ad.swish_beta * x));
  }
  return 0;
}

double ref_bwd(const ActDesc& ad, double x, double dy) {
  const double y = ref_fwd(ad, x);
  const double u = ad.shift + ad.scale * x;
  switch (ad.mode) {
    case ActMode::kRelu:
      return x > 0 ? dy : ad.relu_negative_slope * dy;
    case ActMode::kSigmoid:
      return dy * y * (1 - y);
    case ActMode::kTanh:
      return dy * (1 - y * y);
    case ActMode::kElu:
      return x > 0 ? dy : dy * ad.elu_alpha * std::exp(x);
    case ActMode::kAbsVal:
      return x > 0 ? dy : x < 0 ? -dy : 0.0;
    case ActMode::kPower:
      return dy * ad.power * ad.scale * std::pow(u, ad.power - 1);
    case ActMode::kExp:
      return dy * y * ln_base(ad.base) * ad.scale;
    case ActMode::kLog:
      return dy * ad.scale / (u * ln_base(ad.base));
    case ActMode::kBnll:
      return dy / (1 + std::exp(-x));
    case ActMode::kThreshold:
      return 0;
    case ActMode::kClip:
      return x >= ad.clip_min && x <= ad.clip_max ? dy : 0.0;
    case ActMode::kSwish: {
      const double s = 1 / (1 + std::exp(-ad.swish_beta * x));
      return dy * (s + ad.swish_beta * x * s * (1 - s));
    }
  }
  return 0;
}

ActDesc mode(ActMode m) {
  ActDesc ad;
  ad.mode = m;
  return ad;
}
ActDesc affine(ActMode m, double power, double scale, double shift, double base) {
  ActDesc ad = mode(m);
  ad.power = power;
  ad.scale = scale;
  ad.shift = shift;
  ad.base = base;
  return ad;
}

// Every mode, with parameters away from the defaults where a mode has them. Inputs are drawn
// from [-2, 4]: the log and fractional-power cases shift u = shift + scale * x to stay positive.
std::vector<ActDesc> all_modes() {
  std::vector<ActDesc> v = {{ActMode::kRelu, 0.0},
                            {ActMode::kRelu, 0.1},
                            {ActMode::kSigmoid, 0.0},
                            {ActMode::kTanh, 0.0},
                            mode(ActMode::kElu),
                            mode(ActMode::kElu),
                            mode(ActMode::kAbsVal),
                            affine(ActMode::kPower, 1.5, 0.5, 3.0, -1),
                            affine(ActMode::kPower, 2.0, -1.5, 0.5, -1),
                            affine(ActMode::kPower, 1.0, 0.7, -0.2, -1),
                            affine(ActMode::kPower, -0.5, 2.0, 5.0, -1),
                            affine(ActMode::kExp, 1, 1, 0, -1),
                            affine(ActMode::kExp, 1, 0.5, 0.3, 2.0),
                            affine(ActMode::kLog, 1, 1, 3, -1),
                            affine(ActMode::kLog, 1, 2, 5, 10.0),
                            mode(ActMode::kBnll),
                            mode(ActMode::kClip),
                            mode(ActMode::kSwish),
                            mode(ActMode::kSwish),
                            mode(ActMode::kThreshold)};
  v[5].elu_alpha = 0.4;
  v[16].clip_min = -1.5;
  v[16].clip_max = 3.0;
  v[18].swish_beta = 2.5;
  v[19].threshold = -0.5;
  return v;
}

std::string describe(const ActDesc& ad) {
  return ::testing::PrintToString(int(ad.mode)) + " p" + std::to_string(ad.power) + " s" +
         std::to_string(ad.scale) + " t" + std::to_string(ad.shift) + " b" +
         std::to_string(ad.base);
}

using Shape = test::Nchw;
const Shape kShapes[] = {{1, 1, 1, 1}, {1, 3, 5, 7}, {2, 7, 3, 1}, {3, 1, 11, 13}};

CREMA_FLOAT_TYPED_TEST_SUITE(ActTest);

// Inputs lean positive so that plain ReLU's output is not mostly zeros (a vacuous comparison).
TYPED_TEST(ActTest, ForwardAndBackwardMatchReference) {
  using T = TypeParam;
  Handle h;
  for (const ActDesc& ad : all_modes()) {
    for (const Shape& s : kShapes) {
      SCOPED_TRACE(::testing::Message() << "mode " << describe(ad) << " slope "
                                        << ad.relu_negative_slope << " shape " << s);
      const TensorDesc d = s.desc(dtype_of<T>());
      const size_t n = size_t(d.count());
      const auto x = random_vector<T>(n, 11, -2.0, 4.0);
      const auto dy = random_vector<T>(n, 12, -1.0, 1.0);
      std::vector<double> y_ref(n), dx_ref(n);
      for (size_t i = 0; i < n; ++i) {
        y_ref[i] = ref_fwd(ad, double(x[i]));
        dx_ref[i] = ref_bwd(ad, double(x[i]), double(dy[i]));
      }
      auto y = poisoned<T>(n);
      act_fwd(h, ad, d, x.data(), d, y.data());
      EXPECT_TRUE(all_close(y, y_ref, kTol.of<T>()));
      if (!act_has_bwd(ad)) continue;
      auto dx = poisoned<T>(n);
      act_bwd(h, ad, d, y.data(), dy.data(), d, x.data(), dx.data());
      EXPECT_TRUE(all_close(dx, dx_ref, kTol.of<T>()));
    }
  }
}

// beta = 1 accumulates into what the output held; alpha scales the operation only.
TYPED_TEST(ActTest, BlendAccumulates) {
  using T = TypeParam;
  Handle h;
  const Blend blend{0.5, 1.0};
  for (const ActDesc& ad : all_modes()) {
    SCOPED_TRACE(::testing::Message() << "mode " << describe(ad));
    const TensorDesc d = TensorDesc::nchw(dtype_of<T>(), 2, 3, 5, 3);
    const size_t n = size_t(d.count());
    const auto x = random_vector<T>(n, 21, -2.0, 4.0);
    const auto dy = random_vector<T>(n, 22);
    const auto y0 = random_vector<T>(n, 23);
    const auto dx0 = random_vector<T>(n, 24);
    std::vector<double> y_ref(n), dx_ref(n);
    std::vector<T> y_exact(n);
    for (size_t i = 0; i < n; ++i) {
      y_ref[i] = 0.5 * ref_fwd(ad, double(x[i])) + double(y0[i]);
      dx_ref[i] = 0.5 * ref_bwd(ad, double(x[i]), double(dy[i])) + double(dx0[i]);
      y_exact[i] = T(ref_fwd(ad, double(x[i])));
    }
    auto y = y0;
    act_fwd(h, ad, d, x.data(), d, y.data(), blend);
    EXPECT_TRUE(all_close(y, y_ref, kTol.of<T>()));
    if (!act_has_bwd(ad)) continue;
    auto dx = dx0;
    act_bwd(h, ad, d, y_exact.data(), dy.data(), d, x.data(), dx.data(), blend);
    EXPECT_TRUE(all_close(dx, dx_ref, kTol.of<T>()));
  }
}

// In-place layers: x, y share a buffer forward, dy, dx share one backward, and a backward that
// reads x then sees the output: right for the modes reading y only and for the sign-reading
// relu and elu (slope, alpha >= 0); the others cannot run in place.
bool in_place_ok(const ActDesc& ad) {
  return act_has_bwd(ad) &&
         (!act_bwd_reads_x(ad) || ad.mode == ActMode::kRelu || ad.mode == ActMode::kElu);
}

TYPED_TEST(ActTest, InPlace) {
  using T = TypeParam;
  Handle h;
  for (const ActDesc& ad : all_modes()) {
    if (!in_place_ok(ad)) continue;
    SCOPED_TRACE(::testing::Message() << "mode " << describe(ad));
    const TensorDesc d = TensorDesc::nchw(dtype_of<T>(), 1, 5, 7, 9);
    const size_t n = size_t(d.count());
    const auto x = random_vector<T>(n, 31, -2.0, 4.0);
    const auto dy = random_vector<T>(n, 32);
    std::vector<double> y_ref(n), dx_ref(n);
    for (size_t i = 0; i < n; ++i) {
      y_ref[i] = ref_fwd(ad, double(x[i]));
      dx_ref[i] = ref_bwd(ad, double(x[i]), double(dy[i]));
    }
    auto buf = x;
    act_fwd(h, ad, d, buf.data(), d, buf.data());
    EXPECT_TRUE(all_close(buf, y_ref, kTol.of<T>()));
    auto grad = dy;
    act_bwd(h, ad, d, buf.data(), grad.data(), d, buf.data(), grad.data());
    EXPECT_TRUE(all_close(grad, dx_ref, kTol.of<T>()));
  }
}

TEST(ActErrors, MismatchedDescriptorsThrow) {
  Handle h;
  std::vector<float> a(24), b(24);
  test::expect_mismatched_descriptors_refused([&](const TensorDesc& x, const TensorDesc& y) {
    act_fwd(h, ActDesc{}, x, a.data(), y, b.data());
  });
}

// Which buffers each mode's gradient reads is part of the contract the layers rely on.
TEST(ActContract, ReadsXAndY) {
  EXPECT_TRUE(act_bwd_reads_y(mode(ActMode::kSigmoid)));
  EXPECT_FALSE(act_bwd_reads_x(mode(ActMode::kSigmoid)));
  EXPECT_TRUE(act_bwd_reads_x(mode(ActMode::kAbsVal)));
  EXPECT_TRUE(act_bwd_reads_x(mode(ActMode::kClip)));
  EXPECT_TRUE(act_bwd_reads_y(mode(ActMode::kBnll)));
  EXPECT_FALSE(act_bwd_reads_x(mode(ActMode::kBnll)));
  EXPECT_FALSE(act_bwd_reads_x(affine(ActMode::kPower, 1, 3, 1, -1)));
  EXPECT_TRUE(act_bwd_reads_x(affine(ActMode::kPower, 2, 3, 1, -1)));
  EXPECT_FALSE(act_has_bwd(mode(ActMode::kThreshold)));
}

// A null x or y where the mode reads it is an error, not a crash; the unread one may be null.
TEST(ActErrors, MissingInputsAndNoGradient) {
  Handle h;
  const TensorDesc d = TensorDesc::nchw(DataType::kFloat32, 1, 1, 1, 4);
  std::vector<float> x{1, -2, 3, -4}, y(4), dy(4, 1.0f), dx(4);
  EXPECT_THROW(act_bwd(h, mode(ActMode::kAbsVal), d, y.data(), dy.data(), d, nullptr, dx.data()),
               PrimError);
  EXPECT_THROW(act_bwd(h, mode(ActMode::kExp), d, nullptr, dy.data(), d, x.data(), dx.data()),
               PrimError);
  act_bwd(h, mode(ActMode::kAbsVal), d, nullptr, dy.data(), d, x.data(), dx.data());
  EXPECT_EQ(dx, (std::vector<float>{1, -1, 1, -1}));
  try {
    act_bwd(h, mode(ActMode::kThreshold), d, y.data(), dy.data(), d, x.data(), dx.data());
    ADD_FAILURE() << "no error";
  } catch (const PrimError& e) {
    EXPECT_NE(std::string(e.what()).find("no gradient"), std::string::npos) << e.what();
  }
}

// Element-wise on any dense layout both tensors share: channels last runs as flat memory; a pair
// of mixed layouts is refused.
TEST(ActLayouts, ChannelsLastPairsRunAndMixedPairsThrow) {
  Handle h;
  const TensorDesc nhwc = TensorDesc::nhwc(DataType::kFloat32, 1, 2, 1, 2);
  const TensorDesc nchw = TensorDesc::nchw(DataType::kFloat32, 1, 2, 1, 2);
  std::vector<float> x{1, -2, 3, -4}, y(4);
  act_fwd(h, mode(ActMode::kRelu), nhwc, x.data(), nhwc, y.data());
  EXPECT_EQ(y, (std::vector<float>{1, 0, 3, 0}));
  EXPECT_THROW(act_fwd(h, mode(ActMode::kRelu), nchw, x.data(), nhwc, y.data()), PrimError);
}

TEST(ActErrors, BadParametersThrow) {
  Handle h;
  const TensorDesc d = TensorDesc::nchw(DataType::kFloat32, 1, 1, 1, 2);
  std::vector<float> x{1, 2}, y(2);
  EXPECT_THROW(act_fwd(h, affine(ActMode::kExp, 1, 1, 0, -2.0), d, x.data(), d, y.data()),
               PrimError);
  EXPECT_THROW(act_fwd(h, affine(ActMode::kLog, 1, 1, 0, 1.0), d, x.data(), d, y.data()),
               PrimError);
  ActDesc clip = mode(ActMode::kClip);
  clip.clip_min = 2;
  clip.clip_max = 1;
  EXPECT_THROW(act_fwd(h, clip, d, x.data(), d, y.data()), PrimError);
  ActDesc bad = mode(ActMode::kElu);
  bad.elu_alpha = std::nan("");
  EXPECT_THROW(act_fwd(h, bad, d, x.data(), d, y.data()), PrimError);
}

}  // namespace
}  // namespace crema::prim
