// Tests of lrn_fwd/lrn_bwd on the CPU against a naive double-precision reference; the
// reference's own gradient is checked by central differences.
#include "primitives/lrn.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "doc_tables.h"
#include "prim_test_util.h"
#include "primitives/common/dtype_visit.h"
#include "problems.h"
#include "test_util.h"

namespace crema::prim {
namespace {

const TypedTolerance kTol = {{1e-12, 1e-10}, {2e-6, 2e-5}};

using Shape = test::Nchw;

// ---- the oracle: the formulas of lrn.h with plain loops, one element at a time --------------

// Calls f(q) for every input index q in the window of output index p (n, c, y, x), clipped to
// the tensor: the channel window across channels, the spatial square within a channel.
template <typename F>
void for_window(const LrnDesc& ld, const Shape& s, int n, int c, int y, int x, F f) {
  const int r = ld.local_size / 2;
  auto idx = [&](int cc, int yy, int xx) {
    return ((int64_t(n) * s.c + cc) * s.h + yy) * s.w + xx;
  };
  if (ld.mode == LrnMode::kAcrossChannels) {
    for (int cc = c - r; cc <= c + r; ++cc)
      if (cc >= 0 && cc < s.c) f(idx(cc, y, x));
  } else {
    for (int yy = y - r; yy <= y + r; ++yy)
      for (int xx = x - r; xx <= x + r; ++xx)
        if (yy >= 0 && yy < s.h && xx >= 0 && xx < s.w) f(idx(c, yy, xx));
  }
}

// alpha's divisor: n across channels, n * n within (Caffe's AVE pooling counts the padding).
double alpha_over(const LrnDesc& ld) {
  const double n = ld.local_size;
  return ld.alpha / (ld.mode == LrnMode::kAcrossChannels ? n : n * n);
}

template <typename F>
void for_each_index(const Shape& s, F f) {
  int64_t p = 0;
  for (int n = 0; n < s.n; ++n)
    for (int c = 0; c < s.c; ++c)
      for (int y = 0; y < s.h; ++y)
        for (int x = 0; x < s.w; ++x) f(p++, n, c, y, x);
}

std::vector<double> ref_scale(const LrnDesc& ld, const Shape& s, const std::vector<double>& x) {
  std::vector<double> scale(x.size());
  for_each_index(s, [&](int64_t p, int n, int c, int y, int xx) {
    double sum = 0;
    for_window(ld, s, n, c, y, xx, [&](int64_t q) { sum += x[q] * x[q]; });
    scale[p] = ld.k + alpha_over(ld) * sum;
  });
  return scale;
}

std::vector<double> ref_fwd(const LrnDesc& ld, const Shape& s, const std::vector<double>& x) {
  const std::vector<double> scale = ref_scale(ld, s, x);
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * std::pow(scale[i], -ld.beta);
  return y;
}

// The gradient by scattering each output's partial derivatives onto its inputs (the library
// gathers instead): d y_p / d x_q = [p == q] s_p^-beta - 2 beta a x_p s_p^(-beta-1) x_q.
std::vector<double> ref_bwd(const LrnDesc& ld, const Shape& s, const std::vector<double>& x,
                            const std::vector<double>& dy) {
  const std::vector<double> scale = ref_scale(ld, s, x);
  std::vector<double> dx(x.size(), 0.0);
  for_each_index(s, [&](int64_t p, int n, int c, int y, int xx) {
    dx[p] += dy[p] * std::pow(scale[p], -ld.beta);
    const double coef =
        -2.0 * ld.beta * alpha_over(ld) * dy[p] * x[p] * std::pow(scale[p], -ld.beta - 1);
    for_window(ld, s, n, c, y, xx, [&](int64_t q) { dx[q] += coef * x[q]; });
  });
  return dx;
}

template <typename T>
std::vector<double> to_double(const std::vector<T>& v) {
  return std::vector<double>(v.begin(), v.end());
}

// ---- cases --------------------------------------------------------------------------------

const std::vector<Shape>& kShapes = test::unit_lrn_shapes();

// CaffeNet's parameters, strong normalization, and exponents off the sqrt fast paths.
std::vector<LrnDesc> descs(LrnMode mode, int local_size) {
  return {{mode, local_size, 1e-4, 0.75, 1.0},
          {mode, local_size, 3.0, 0.75, 1.0},
          {mode, local_size, 2.0, 0.5, 0.5},
          {mode, local_size, 1.5, 1.0, 2.0},
          {mode, local_size, 2.0, 0.6, 1.5}};
}

::testing::Message describe(const LrnDesc& ld, const Shape& s) {
  return ::testing::Message() << (ld.mode == LrnMode::kAcrossChannels ? "across" : "within")
                              << " n=" << ld.local_size << " alpha=" << ld.alpha
                              << " beta=" << ld.beta << " k=" << ld.k << " shape " << s.n << "x"
                              << s.c << "x" << s.h << "x" << s.w;
}

CREMA_FLOAT_TYPED_TEST_SUITE(LrnTest);

template <typename T>
void check_case(Handle& h, const LrnDesc& ld, const Shape& s, uint64_t seed) {
  SCOPED_TRACE(describe(ld, s));
  const auto [d, count, x, dy] = test::nchw_inputs<T>(s, seed, -2.0, 2.0);
  const auto y_ref = ref_fwd(ld, s, to_double(x));
  const auto dx_ref = ref_bwd(ld, s, to_double(x), to_double(dy));

  auto y = poisoned<T>(count);
  lrn_fwd(h, ld, d, x.data(), d, y.data());
  EXPECT_TRUE(all_close(y, y_ref, kTol.of<T>()));
  // Backward takes the reference y so the two checks are independent.
  std::vector<T> y_in(y_ref.begin(), y_ref.end());
  auto dx = poisoned<T>(count);
  lrn_bwd(h, ld, d, y_in.data(), dy.data(), d, x.data(), dx.data());
  EXPECT_TRUE(all_close(dx, dx_ref, kTol.of<T>()));
}

TYPED_TEST(LrnTest, ForwardAndBackwardMatchReference) {
  Handle h;
  uint64_t seed = 100;
  for (LrnMode mode : {LrnMode::kAcrossChannels, LrnMode::kWithinChannel})
    for (int local_size : {1, 3, 5})
      for (const LrnDesc& ld : descs(mode, local_size))
        for (const Shape& s : kShapes) check_case<TypeParam>(h, ld, s, seed += 2);
}

// A window wider than the tensor (7 > C, H, W): every element sees the whole clipped window.
TYPED_TEST(LrnTest, WindowWiderThanTensor) {
  Handle h;
  for (LrnMode mode : {LrnMode::kAcrossChannels, LrnMode::kWithinChannel})
    check_case<TypeParam>(h, {mode, 7, 2.0, 0.75, 1.0}, {2, 3, 2, 4}, 7);
}

// The layer shapes of CaffeNet (norm1 after conv1/pool1, norm2 after conv2/pool2).
TYPED_TEST(LrnTest, CaffeNetShapes) {
  Handle h;
  const LrnDesc caffenet{LrnMode::kAcrossChannels, 5, 1e-4, 0.75, 1.0};
  {
    SCOPED_TRACE("caffenet:norm1");
    check_case<TypeParam>(h, caffenet, {1, 96, 27, 27}, 31);
  }
  {
    SCOPED_TRACE("caffenet:norm2");
    check_case<TypeParam>(h, caffenet, {2, 256, 13, 13}, 33);
  }
}

// beta = 1 accumulates into what the output held; alpha scales the operation only.
TYPED_TEST(LrnTest, BlendAccumulates) {
  using T = TypeParam;
  Handle h;
  const Blend blend{0.5, 1.0};
  const Shape s{2, 5, 3, 4};
  const TensorDesc d = s.desc(dtype_of<T>());
  const size_t count = size_t(s.count());
  for (LrnMode mode : {LrnMode::kAcrossChannels, LrnMode::kWithinChannel}) {
    const LrnDesc ld{mode, 3, 2.0, 0.75, 1.0};
    SCOPED_TRACE(describe(ld, s));
    const auto x = random_vector<T>(count, 41, -2.0, 2.0);
    const auto dy = random_vector<T>(count, 42);
    const auto y0 = random_vector<T>(count, 43);
    const auto dx0 = random_vector<T>(count, 44);
    const auto y_ref = ref_fwd(ld, s, to_double(x));
    const auto dx_ref = ref_bwd(ld, s, to_double(x), to_double(dy));
    std::vector<double> y_want(count), dx_want(count);
    for (size_t i = 0; i < count; ++i) {
      y_want[i] = 0.5 * y_ref[i] + double(y0[i]);
      dx_want[i] = 0.5 * dx_ref[i] + double(dx0[i]);
    }
    auto y = y0;
    lrn_fwd(h, ld, d, x.data(), d, y.data(), blend);
    EXPECT_TRUE(all_close(y, y_want, kTol.of<T>()));
    std::vector<T> y_in(y_ref.begin(), y_ref.end());
    auto dx = dx0;
    lrn_bwd(h, ld, d, y_in.data(), dy.data(), d, x.data(), dx.data(), blend);
    EXPECT_TRUE(all_close(dx, dx_want, kTol.of<T>()));
  }
}

// The gradient may overwrite dy in place (dx == dy).
TYPED_TEST(LrnTest, BackwardInPlaceOnDy) {
  using T = TypeParam;
  Handle h;
  const Shape s{2, 6, 5, 3};
  const TensorDesc d = s.desc(dtype_of<T>());
  const size_t count = size_t(s.count());
  for (LrnMode mode : {LrnMode::kAcrossChannels, LrnMode::kWithinChannel}) {
    const LrnDesc ld{mode, 5, 2.0, 0.75, 1.0};
    SCOPED_TRACE(describe(ld, s));
    const auto x = random_vector<T>(count, 51, -2.0, 2.0);
    const auto dy = random_vector<T>(count, 52);
    const auto y_ref = ref_fwd(ld, s, to_double(x));
    std::vector<T> y_in(y_ref.begin(), y_ref.end());
    auto grad = dy;
    lrn_bwd(h, ld, d, y_in.data(), grad.data(), d, x.data(), grad.data());
    EXPECT_TRUE(all_close(grad, ref_bwd(ld, s, to_double(x), to_double(dy)), kTol.of<T>()));
  }
}

// Across channels, a channels-last pair gives the NCHW results, permuted (lrn.cpp walks it as
// N*H*W images of 1 x 1 pixels); the within-channel mode and a mixed pair are refused.
TYPED_TEST(LrnTest, ChannelsLastAcrossIsNchwPermuted) {
  using T = TypeParam;
  Handle h;
  const Shape s{3, 7, 4, 5};
  const TensorDesc nhwc = TensorDesc::nhwc(dtype_of<T>(), s.n, s.c, s.h, s.w);
  const size_t count = size_t(s.count());
  for (int local_size : {3, 5}) {
    const LrnDesc ld{LrnMode::kAcrossChannels, local_size, 2.0, 0.75, 1.0};
    SCOPED_TRACE(describe(ld, s));
    const auto x = random_vector<T>(count, 81, -2.0, 2.0), dy = random_vector<T>(count, 82);
    const auto y_ref = ref_fwd(ld, s, to_double(x));
    const auto dx_ref = ref_bwd(ld, s, to_double(x), to_double(dy));
    const auto xn = test::laid_out<T>(x, nhwc), dyn = test::laid_out<T>(dy, nhwc);
    const auto yn = test::laid_out<T>(y_ref, nhwc);
    auto y = poisoned<T>(count);
    lrn_fwd(h, ld, nhwc, xn.data(), nhwc, y.data());
    EXPECT_TRUE(all_close(y, test::laid_out(y_ref, nhwc), kTol.of<T>()));
    auto dx = poisoned<T>(count);
    lrn_bwd(h, ld, nhwc, yn.data(), dyn.data(), nhwc, xn.data(), dx.data());
    EXPECT_TRUE(all_close(dx, test::laid_out(dx_ref, nhwc), kTol.of<T>()));
  }
  const TensorDesc nchw = s.desc(dtype_of<T>());
  std::vector<T> a(count, T(1)), b(count);
  const LrnDesc within{LrnMode::kWithinChannel, 3, 2.0, 0.75, 1.0};
  EXPECT_THROW(lrn_fwd(h, within, nhwc, a.data(), nhwc, b.data()), PrimError);
  EXPECT_THROW(lrn_fwd(h, LrnDesc{}, nchw, a.data(), nhwc, b.data()), PrimError);
}

// The oracle's analytic gradient against central differences of the oracle's forward pass, on
// the scalar L = sum(dy * y): the reference is only an oracle if its gradient is right.
TEST(LrnReference, GradientMatchesFiniteDifferences) {
  const Shape s{2, 5, 3, 4};
  for (LrnMode mode : {LrnMode::kAcrossChannels, LrnMode::kWithinChannel}) {
    for (int local_size : {1, 3, 5}) {
      for (const LrnDesc& ld : descs(mode, local_size)) {
        SCOPED_TRACE(describe(ld, s));
        const auto x = random_vector<double>(size_t(s.count()), 61, -2.0, 2.0);
        const auto dy = random_vector<double>(size_t(s.count()), 62);
        const auto dx = ref_bwd(ld, s, x, dy);
        auto loss = [&](const std::vector<double>& xv) {
          const auto y = ref_fwd(ld, s, xv);
          double l = 0;
          for (size_t i = 0; i < y.size(); ++i) l += dy[i] * y[i];
          return l;
        };
        EXPECT_TRUE(all_close(test::numeric_gradient(loss, x, 1e-5), dx, Tolerance{1e-8, 1e-6}));
      }
    }
  }
}

// The CPU's rows run one mode each and say so for the other; docs/primitives.md lists every
// device's rows in the table's order.
TEST(LrnAlgos, ForcedRowsAndDocs) {
  Handle h;
  const TensorDesc d = TensorDesc::nchw(DataType::kFloat32, 1, 3, 2, 2);
  std::vector<float> x(12, 0.5f), y(12);
  LrnDesc ld;
  ld.algo = LrnAlgo::kWithin;
  EXPECT_STREQ(lrn_fwd_unsupported(h, ld, d, x.data(), d, y.data()), "across-channel mode");
  EXPECT_THROW(lrn_fwd(h, ld, d, x.data(), d, y.data()), PrimError);
  ld.algo = LrnAlgo::kAcrossRing;
  EXPECT_STREQ(lrn_fwd_unsupported(h, ld, d, x.data(), d, y.data()), "not a cpu algorithm");
  ld.algo = LrnAlgo::kAcross;
  EXPECT_EQ(lrn_bwd_unsupported(h, ld, d, y.data(), x.data(), d, x.data(), y.data()), nullptr);
  EXPECT_NO_THROW(lrn_fwd(h, ld, d, x.data(), d, y.data()));
  EXPECT_EQ(lrn_algo_of("across_ring"), LrnAlgo::kAcrossRing);
  EXPECT_THROW(lrn_algo_of("ring"), PrimError);

  test::expect_documented("LRN algorithms", lrn_algos, lrn_algo_name);
}

TEST(LrnErrors, BadDescriptorsThrow) {
  Handle h;
  std::vector<float> a(24, 1.f), b(24), c(24);
  const TensorDesc d = TensorDesc::nchw(DataType::kFloat32, 1, 2, 3, 4);
  for (int bad : {0, 2, 4, -1}) {
    const LrnDesc ld{LrnMode::kAcrossChannels, bad, 1.0, 0.75, 1.0};
    EXPECT_THROW(lrn_fwd(h, ld, d, a.data(), d, b.data()), PrimError) << bad;
    EXPECT_THROW(lrn_bwd(h, ld, d, b.data(), c.data(), d, a.data(), b.data()), PrimError) << bad;
  }
  const LrnDesc ld;
  test::expect_mismatched_descriptors_refused(
      [&](const TensorDesc& x, const TensorDesc& y) { lrn_fwd(h, ld, x, a.data(), y, b.data()); });
  // In place forward would read channels it already overwrote.
  EXPECT_THROW(lrn_fwd(h, ld, d, a.data(), d, a.data()), PrimError);
  EXPECT_THROW(lrn_bwd(h, ld, d, b.data(), c.data(), d, a.data(), a.data()), PrimError);
  EXPECT_THROW(lrn_bwd(h, ld, d, b.data(), c.data() + 1, d, a.data(), c.data()), PrimError);
}

}  // namespace
}  // namespace crema::prim
