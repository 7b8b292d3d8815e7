// Tests of the batchnorm primitives on the CPU against a naive double-precision reference, and
// of the reference's backward formula against central differences.
#include "primitives/batchnorm.h"

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

const TypedTolerance kTol = {{1e-11, 1e-10}, {2e-5, 2e-4}};

using Shape = test::Nchw;
// Odd sizes, N = 1, 1x1 planes, and real layer shapes (resnet50:bn2a_branch2a, cifar-sized).
const Shape kShapes[] = {{2, 3, 4, 5}, {1, 5, 3, 3},  {4, 1, 1, 1},
                         {3, 7, 1, 1}, {2, 64, 7, 7}, {5, 2, 1, 9}};

// The oracle: per-channel statistics and formulas of batchnorm.h, in double with plain loops.
struct Ref {
  std::vector<double> mean, var, inv_std, y;
};

template <typename T>
Ref ref_training(const Shape& s, const std::vector<T>& x, double eps) {
  Ref r;
  const size_t hw = size_t(s.h) * s.w;
  const double m = double(s.n) * double(hw);
  r.y.resize(x.size());
  for (int c = 0; c < s.c; ++c) {
    double sum = 0;
    for (int n = 0; n < s.n; ++n)
      for (size_t i = 0; i < hw; ++i) sum += double(x[(size_t(n) * s.c + c) * hw + i]);
    const double mean = sum / m;
    double sq = 0;
    for (int n = 0; n < s.n; ++n)
      for (size_t i = 0; i < hw; ++i) {
        const double d = double(x[(size_t(n) * s.c + c) * hw + i]) - mean;
        sq += d * d;
      }
    const double var = sq / m;
    r.mean.push_back(mean);
    r.var.push_back(var);
    r.inv_std.push_back(1 / std::sqrt(var + eps));
    for (int n = 0; n < s.n; ++n)
      for (size_t i = 0; i < hw; ++i) {
        const size_t j = (size_t(n) * s.c + c) * hw + i;
        r.y[j] = (double(x[j]) - mean) / std::sqrt(var + eps);
      }
  }
  return r;
}

// dx = inv_std * (dy - mean(dy) - y * mean(dy * y)), per channel.
std::vector<double> ref_bwd_training(const Shape& s, const Ref& r, const std::vector<double>& dy) {
  const size_t hw = size_t(s.h) * s.w;
  const double m = double(s.n) * double(hw);
  std::vector<double> dx(dy.size());
  for (int c = 0; c < s.c; ++c) {
    double a = 0, b = 0;
    for (int n = 0; n < s.n; ++n)
      for (size_t i = 0; i < hw; ++i) {
        const size_t j = (size_t(n) * s.c + c) * hw + i;
        a += dy[j];
        b += dy[j] * r.y[j];
      }
    for (int n = 0; n < s.n; ++n)
      for (size_t i = 0; i < hw; ++i) {
        const size_t j = (size_t(n) * s.c + c) * hw + i;
        dx[j] = r.inv_std[size_t(c)] * (dy[j] - a / m - r.y[j] * b / m);
      }
  }
  return dx;
}

template <typename T>
std::vector<double> to_double(const std::vector<T>& v) {
  return std::vector<double>(v.begin(), v.end());
}

CREMA_FLOAT_TYPED_TEST_SUITE(BatchNormTest);

TYPED_TEST(BatchNormTest, TrainingMatchesReference) {
  using T = TypeParam;
  Handle h;
  const BatchNormDesc bd{1e-3};
  for (const Shape& s : kShapes) {
    SCOPED_TRACE(::testing::Message() << s);
    // An offset mean and a spread per channel, so the statistics are not trivially 0 and 1.
    const auto [d, n, x, dy] = test::nchw_inputs<T>(s, 41, -1.0, 3.0);
    const Ref r = ref_training(s, x, bd.eps);
    auto y = poisoned<T>(n), mean = poisoned<T>(size_t(s.c)), var = poisoned<T>(size_t(s.c)),
         inv_std = poisoned<T>(size_t(s.c));
    batchnorm_fwd_training(h, bd, d, x.data(), d, y.data(), mean.data(), var.data(),
                           inv_std.data());
    EXPECT_TRUE(all_close(y, r.y, kTol.of<T>()));
    EXPECT_TRUE(all_close(mean, r.mean, kTol.of<T>()));
    EXPECT_TRUE(all_close(var, r.var, kTol.of<T>()));
    EXPECT_TRUE(all_close(inv_std, r.inv_std, kTol.of<T>()));
    auto dx = poisoned<T>(n);
    batchnorm_bwd_training(h, bd, d, y.data(), dy.data(), inv_std.data(), d, dx.data());
    EXPECT_TRUE(all_close(dx, ref_bwd_training(s, r, to_double(dy)), kTol.of<T>()));
  }
}

TYPED_TEST(BatchNormTest, InferenceMatchesReference) {
  using T = TypeParam;
  Handle h;
  const BatchNormDesc bd{1e-5};
  const Shape s{3, 4, 2, 5};
  const size_t hw = 10;
  const auto [d, n, x, dy] = test::nchw_inputs<T>(s, 51, -2.0, 2.0);
  const auto mean = random_vector<T>(4, 53, -0.5, 0.5);
  const auto var = random_vector<T>(4, 54, 0.1, 2.0);
  std::vector<double> y_ref(n), dx_ref(n);
  for (size_t j = 0; j < n; ++j) {
    const size_t c = (j / hw) % 4;
    const double sd = std::sqrt(double(var[c]) + bd.eps);
    y_ref[j] = (double(x[j]) - double(mean[c])) / sd;
    dx_ref[j] = double(dy[j]) / sd;
  }
  auto y = poisoned<T>(n), dx = poisoned<T>(n);
  batchnorm_fwd_inference(h, bd, d, x.data(), d, y.data(), mean.data(), var.data());
  EXPECT_TRUE(all_close(y, y_ref, kTol.of<T>()));
  batchnorm_bwd_inference(h, bd, d, dy.data(), var.data(), d, dx.data());
  EXPECT_TRUE(all_close(dx, dx_ref, kTol.of<T>()));
}

// The backward formula itself, checked against central differences of the reference forward:
// the oracle must be right too.
TEST(BatchNormReference, BackwardIsTheGradientOfForward) {
  const Shape s{3, 2, 2, 3};
  const size_t n = 36;
  const auto x = random_vector<double>(n, 61, -1.0, 2.0);
  const auto w = random_vector<double>(n, 62);
  const double eps = 1e-4, step = 1e-6;
  const auto dx = ref_bwd_training(s, ref_training(s, x, eps), w);
  auto f = [&](const std::vector<double>& v) {
    const Ref r = ref_training(s, v, eps);
    double sum = 0;
    for (size_t j = 0; j < n; ++j) sum += r.y[j] * w[j];
    return sum;
  };
  EXPECT_TRUE(all_close(dx, test::numeric_gradient(f, x, step), {1e-7, 1e-6}));
}

// beta = 1 accumulates; alpha scales the operation only.
TYPED_TEST(BatchNormTest, BlendAccumulates) {
  using T = TypeParam;
  Handle h;
  const BatchNormDesc bd;
  const Shape s{2, 3, 3, 2};
  const auto [d, n, x, dy] = test::nchw_inputs<T>(s, 71, -1.0, 2.0);
  const auto y0 = random_vector<T>(n, 73), dx0 = random_vector<T>(n, 74);
  const Ref r = ref_training(s, x, bd.eps);
  const auto dx_op = ref_bwd_training(s, r, to_double(dy));
  std::vector<double> y_ref(n), dx_ref(n);
  for (size_t j = 0; j < n; ++j) {
    y_ref[j] = 0.5 * r.y[j] + double(y0[j]);
    dx_ref[j] = 2.0 * dx_op[j] + double(dx0[j]);
  }
  std::vector<T> y_exact(r.y.begin(), r.y.end()), inv_std(r.inv_std.begin(), r.inv_std.end());
  auto y = y0, dx = dx0;
  batchnorm_fwd_training(h, bd, d, x.data(), d, y.data(), nullptr, nullptr, nullptr, {0.5, 1});
  EXPECT_TRUE(all_close(y, y_ref, kTol.of<T>()));
  batchnorm_bwd_training(h, bd, d, y_exact.data(), dy.data(), inv_std.data(), d, dx.data(), {2, 1});
  EXPECT_TRUE(all_close(dx, dx_ref, kTol.of<T>()));
}

// In place: y is x forward, dx is dy backward.
TYPED_TEST(BatchNormTest, InPlace) {
  using T = TypeParam;
  Handle h;
  const BatchNormDesc bd;
  const Shape s{4, 3, 2, 2};
  const auto [d, n, x, dy] = test::nchw_inputs<T>(s, 81, -1.0, 2.0);
  const Ref r = ref_training(s, x, bd.eps);
  auto buf = x;
  std::vector<T> inv_std(3);
  batchnorm_fwd_training(h, bd, d, buf.data(), d, buf.data(), nullptr, nullptr, inv_std.data());
  EXPECT_TRUE(all_close(buf, r.y, kTol.of<T>()));
  auto grad = dy;
  batchnorm_bwd_training(h, bd, d, buf.data(), grad.data(), inv_std.data(), d, grad.data());
  EXPECT_TRUE(all_close(grad, ref_bwd_training(s, r, to_double(dy)), kTol.of<T>()));
}

// ---- the fused forms: BatchNorm, then gamma * x_hat + beta, then ReLU --------------------------

struct Epi {
  std::vector<double> gamma, beta;  // empty: 1 and 0
  bool relu;
  double slope;
  double g(int c) const { return gamma.empty() ? 1.0 : gamma[size_t(c)]; }
  double z(double xh, int c) const { return g(c) * xh + (beta.empty() ? 0.0 : beta[size_t(c)]); }
  double fwd(double xh, int c) const {
    const double v = z(xh, c);
    return relu && v <= 0 ? slope * v : v;
  }
  double grad(double xh, double dy, int c) const { return relu && z(xh, c) <= 0 ? slope * dy : dy; }
};

// The three Caffe layers in a row, in double: dz from the ReLU, dgamma and dbeta from Scale,
// and BatchNorm's dx from gamma * dz.
struct FusedRef {
  std::vector<double> y, dgamma, dbeta, dx;
};
FusedRef ref_fused(const Shape& s, const Ref& r, const Epi& e, const std::vector<double>& dy) {
  const size_t hw = size_t(s.h) * s.w;
  FusedRef f{std::vector<double>(dy.size()),
             std::vector<double>(size_t(s.c)),
             std::vector<double>(size_t(s.c)),
             {}};
  std::vector<double> dscaled(dy.size());
  for (size_t j = 0; j < dy.size(); ++j) {
    const int c = int((j / hw) % size_t(s.c));
    f.y[j] = e.fwd(r.y[j], c);
    const double dz = e.grad(r.y[j], dy[j], c);
    f.dgamma[size_t(c)] += dz * r.y[j];
    f.dbeta[size_t(c)] += dz;
    dscaled[j] = e.g(c) * dz;
  }
  f.dx = ref_bwd_training(s, r, dscaled);
  return f;
}

const Epi kEpilogues[] = {
    {{0.5, -1.25, 2.0, 0.75, 1.5, -0.5, 1.0}, {0.25, -0.5, 0.1, 1.0, -2.0, 0.3, 0.0}, true, 0.0},
    {{1.5, -0.5, 0.75, 2.0, 0.5, 1.0, -1.0}, {}, false, 0.0},
    {{}, {0.5, -0.25, 0.0, 0.1, -0.1, 0.2, 0.3}, true, 0.1},
};

// A ReLU's output is about half zeros, which must match as much as the rest.
template <typename T>
Tolerance relu_tol() {
  return {kTol.of<T>().abs, kTol.of<T>().rel, true};
}

template <typename T>
std::vector<T> channel_values(const std::vector<double>& v, int c) {
  std::vector<T> out;
  for (int i = 0; i < c; ++i) out.push_back(T(v[size_t(i) % v.size()]));
  return out;
}

TYPED_TEST(BatchNormTest, FusedTrainingMatchesTheLayersInARow) {
  using T = TypeParam;
  Handle h;
  const BatchNormDesc bd{1e-3};
  for (const Shape& s : kShapes)
    for (const Epi& e0 : kEpilogues)
      for (bool in_place : {false, true}) {
        SCOPED_TRACE(::testing::Message()
                     << s << (e0.relu ? " relu" : "") << (in_place ? " in place" : ""));
        const auto [d, n, x, dy] = test::nchw_inputs<T>(s, 91, -1.0, 3.0);
        const size_t C = size_t(s.c);
        // Per-channel values for this channel count (the table holds 7, cycled).
        Epi e = e0;
        std::vector<T> gamma, beta;
        if (!e.gamma.empty()) gamma = channel_values<T>(e.gamma, s.c);
        if (!e.beta.empty()) beta = channel_values<T>(e.beta, s.c);
        e.gamma.assign(gamma.begin(), gamma.end());
        e.beta.assign(beta.begin(), beta.end());
        const BatchNormEpilogue ep{gamma.empty() ? nullptr : gamma.data(),
                                   beta.empty() ? nullptr : beta.data(), e.relu, e.slope};
        const Ref r = ref_training(s, x, bd.eps);
        const FusedRef f = ref_fused(s, r, e, to_double(dy));

        auto y = in_place ? x : poisoned<T>(n), x_hat = poisoned<T>(n);
        auto inv_std = poisoned<T>(C);
        batchnorm_fwd_training_fused(h, bd, ep, d, in_place ? y.data() : x.data(), d, y.data(),
                                     x_hat.data(), nullptr, nullptr, inv_std.data());
        EXPECT_TRUE(all_close(y, f.y, relu_tol<T>())) << "y";
        EXPECT_TRUE(all_close(x_hat, r.y, kTol.of<T>())) << "x_hat";
        EXPECT_TRUE(all_close(inv_std, r.inv_std, kTol.of<T>())) << "inv_std";

        // The parameter gradients accumulate onto what is there.
        const auto dgamma0 = random_vector<T>(C, 93), dbeta0 = random_vector<T>(C, 94);
        auto dgamma = dgamma0, dbeta = dbeta0;
        std::vector<double> dgamma_ref(C), dbeta_ref(C);
        for (size_t c = 0; c < C; ++c) {
          dgamma_ref[c] = double(dgamma0[c]) + f.dgamma[c];
          dbeta_ref[c] = double(dbeta0[c]) + f.dbeta[c];
        }
        auto dx = in_place ? dy : poisoned<T>(n);
        batchnorm_bwd_training_fused(h, bd, ep, d, x_hat.data(), in_place ? dx.data() : dy.data(),
                                     inv_std.data(), dgamma.data(), dbeta.data(), d, dx.data());
        EXPECT_TRUE(all_close(dx, f.dx, kTol.of<T>())) << "dx";
        EXPECT_TRUE(all_close(dgamma, dgamma_ref, kTol.of<T>())) << "dgamma";
        EXPECT_TRUE(all_close(dbeta, dbeta_ref, kTol.of<T>())) << "dbeta";
      }
}

TYPED_TEST(BatchNormTest, FusedInferenceMatchesTheLayersInARow) {
  using T = TypeParam;
  Handle h;
  const BatchNormDesc bd{1e-5};
  const Shape s{3, 7, 2, 5};
  const TensorDesc d = s.desc(dtype_of<T>());
  const size_t n = size_t(d.count()), hw = 10;
  const auto x = random_vector<T>(n, 95, -2.0, 2.0);
  const auto mean = random_vector<T>(7, 96, -0.5, 0.5);
  const auto var = random_vector<T>(7, 97, 0.1, 2.0);
  for (const Epi& e0 : kEpilogues) {
    Epi e = e0;
    std::vector<T> gamma(e.gamma.begin(), e.gamma.end()), beta(e.beta.begin(), e.beta.end());
    const BatchNormEpilogue ep{gamma.empty() ? nullptr : gamma.data(),
                               beta.empty() ? nullptr : beta.data(), e.relu, e.slope};
    std::vector<double> y_ref(n);
    for (size_t j = 0; j < n; ++j) {
      const int c = int((j / hw) % 7);
      y_ref[j] = e.fwd((double(x[j]) - double(mean[c])) / std::sqrt(double(var[c]) + bd.eps), c);
    }
    auto y = poisoned<T>(n);
    batchnorm_fwd_inference_fused(h, bd, ep, d, x.data(), d, y.data(), mean.data(), var.data());
    EXPECT_TRUE(all_close(y, y_ref, relu_tol<T>())) << (e.relu ? "relu" : "no relu");
  }
}

// The fused oracle against central differences of its forward, in x, gamma and beta.
TEST(BatchNormReference, FusedBackwardIsTheGradientOfForward) {
  const Shape s{3, 2, 2, 3};
  const size_t n = 36;
  const auto x = random_vector<double>(n, 98, -1.0, 2.0);
  const auto w = random_vector<double>(n, 99);
  const double eps = 1e-4, step = 1e-6;
  const Epi e{{0.75, -1.5}, {0.2, -0.1}, true, 0.05};
  const FusedRef f = ref_fused(s, ref_training(s, x, eps), e, w);
  auto loss = [&](const std::vector<double>& v, const Epi& ev) {
    const FusedRef g = ref_fused(s, ref_training(s, v, eps), ev, w);
    double sum = 0;
    for (size_t j = 0; j < n; ++j) sum += g.y[j] * w[j];
    return sum;
  };
  const auto numeric =
      test::numeric_gradient([&](const std::vector<double>& v) { return loss(v, e); }, x, step);
  EXPECT_TRUE(all_close(f.dx, numeric, {1e-7, 1e-6}));
  for (int c = 0; c < 2; ++c) {
    Epi p = e, m = e;
    p.gamma[size_t(c)] += step;
    m.gamma[size_t(c)] -= step;
    EXPECT_NEAR(f.dgamma[size_t(c)], (loss(x, p) - loss(x, m)) / (2 * step), 1e-6);
    p = e;
    m = e;
    p.beta[size_t(c)] += step;
    m.beta[size_t(c)] -= step;
    EXPECT_NEAR(f.dbeta[size_t(c)], (loss(x, p) - loss(x, m)) / (2 * step), 1e-6);
  }
}

// Channels-last tensors (channel_view: N*H*W rows of C values) give the NCHW results, permuted:
// the fused training pair and inference, in double; a pair of mixed layouts is refused.
TEST(BatchNormLayouts, ChannelsLastIsNchwPermuted) {
  Handle h;
  const Shape s{3, 5, 2, 4};
  const size_t n = 120, C = 5;
  const TensorDesc nchw = TensorDesc::nchw(DataType::kFloat64, s.n, s.c, s.h, s.w);
  const TensorDesc nhwc = TensorDesc::nhwc(DataType::kFloat64, s.n, s.c, s.h, s.w);
  auto to_nhwc = [&](const std::vector<double>& v) { return test::laid_out(v, nhwc); };
  const BatchNormDesc bd{1e-3};
  const auto x = random_vector<double>(n, 71, -1.0, 3.0), dy = random_vector<double>(n, 72);
  const auto gamma = random_vector<double>(C, 73), beta = random_vector<double>(C, 74);
  const auto mean = random_vector<double>(C, 75), var = random_vector<double>(C, 76, 0.1, 2.0);
  const BatchNormEpilogue ep{gamma.data(), beta.data(), true, 0.1};
  struct Out {
    std::vector<double> y, x_hat, inv_std, dx, dgamma, dbeta, yi;
  };
  auto run = [&](const TensorDesc& d, const std::vector<double>& xs,
                 const std::vector<double>& dys) {
    Out o{std::vector<double>(n), std::vector<double>(n),      std::vector<double>(C),
          std::vector<double>(n), std::vector<double>(C, 0.0), std::vector<double>(C, 0.0),
          std::vector<double>(n)};
    batchnorm_fwd_training_fused(h, bd, ep, d, xs.data(), d, o.y.data(), o.x_hat.data(), nullptr,
                                 nullptr, o.inv_std.data());
    batchnorm_bwd_training_fused(h, bd, ep, d, o.x_hat.data(), dys.data(), o.inv_std.data(),
                                 o.dgamma.data(), o.dbeta.data(), d, o.dx.data());
    batchnorm_fwd_inference_fused(h, bd, ep, d, xs.data(), d, o.yi.data(), mean.data(), var.data());
    return o;
  };
  const Out a = run(nchw, x, dy), b = run(nhwc, to_nhwc(x), to_nhwc(dy));
  const Tolerance t{1e-12, 1e-12};
  EXPECT_TRUE(all_close(b.y, to_nhwc(a.y), t)) << "y";
  EXPECT_TRUE(all_close(b.x_hat, to_nhwc(a.x_hat), t)) << "x_hat";
  EXPECT_TRUE(all_close(b.inv_std, a.inv_std, t)) << "inv_std";
  EXPECT_TRUE(all_close(b.dx, to_nhwc(a.dx), t)) << "dx";
  EXPECT_TRUE(all_close(b.dgamma, a.dgamma, t)) << "dgamma";
  EXPECT_TRUE(all_close(b.dbeta, a.dbeta, t)) << "dbeta";
  EXPECT_TRUE(all_close(b.yi, to_nhwc(a.yi), t)) << "inference y";
  std::vector<double> y(n);
  EXPECT_THROW(
      batchnorm_fwd_inference(h, bd, nchw, x.data(), nhwc, y.data(), mean.data(), var.data()),
      PrimError);
}

TEST(BatchNormErrors, BadDescriptorsThrow) {
  Handle h;
  std::vector<float> a(24), b(24), m(2), v(2, 1.0f);
  const TensorDesc x = TensorDesc::nchw(DataType::kFloat32, 2, 2, 3, 2);
  EXPECT_THROW(batchnorm_fwd_training(h, BatchNormDesc{-1}, x, a.data(), x, b.data(), m.data(),
                                      v.data(), nullptr),
               PrimError);
  EXPECT_THROW(batchnorm_fwd_inference(h, BatchNormDesc{}, x, a.data(),
                                       TensorDesc::nchw(DataType::kFloat32, 2, 2, 2, 3), b.data(),
                                       m.data(), v.data()),
               PrimError);
  EXPECT_THROW(
      batchnorm_fwd_inference(h, BatchNormDesc{}, x, a.data(), x, b.data(), nullptr, v.data()),
      PrimError);
  TensorDesc strided = x;
  strided.stride_n = 24;
  EXPECT_THROW(
      batchnorm_bwd_inference(h, BatchNormDesc{}, strided, a.data(), v.data(), strided, b.data()),
      PrimError);
  try {
    batchnorm_bwd_training(h, BatchNormDesc{}, x, a.data(), b.data(), nullptr, x, a.data());
    ADD_FAILURE() << "no error";
  } catch (const PrimError& e) {
    EXPECT_NE(std::string(e.what()).find("inv_std"), std::string::npos) << e.what();
  }
  const BatchNormEpilogue bad{nullptr, nullptr, true, std::nan("")};
  EXPECT_THROW(batchnorm_fwd_training_fused(h, BatchNormDesc{}, bad, x, a.data(), x, b.data(),
                                            nullptr, nullptr, nullptr, nullptr),
               PrimError);
  EXPECT_THROW(batchnorm_bwd_training_fused(h, BatchNormDesc{}, BatchNormEpilogue{}, x, a.data(),
                                            b.data(), v.data(), nullptr, nullptr, x, nullptr),
               PrimError);
}

}  // namespace
}  // namespace crema::prim
