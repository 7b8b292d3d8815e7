// BLAS-style primitives against plain-loop references: GEMM in all transpose combinations and
// GEMV, with alpha/beta (beta == 0 must not read NaN-poisoned outputs), the level-1 operations,
// and the bias add/reduce, in float and double.
#include "primitives/blas.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "primitives/common/dtype_visit.h"
#include "primitives/handle.h"
#include "test_util.h"

namespace crema::prim {
namespace {

constexpr Tolerance kExact{0.0, 0.0, false};

template <typename T>
std::vector<T> cast(const std::vector<double>& v) {
  return std::vector<T>(v.begin(), v.end());
}

// C = alpha * op(A) * op(B) + beta * C0, with A stored m x k (or k x m when transposed).
std::vector<double> ref_gemm(bool ta, bool tb, int m, int n, int k, double alpha,
                             const std::vector<double>& a, const std::vector<double>& b,
                             double beta, const std::vector<double>& c0) {
  std::vector<double> c(int64_t(m) * n);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double s = 0;
      for (int l = 0; l < k; ++l)
        s += (ta ? a[l * m + i] : a[i * k + l]) * (tb ? b[j * k + l] : b[l * n + j]);
      c[i * n + j] = alpha * s + (beta == 0 ? 0.0 : beta * c0[i * n + j]);
    }
  return c;
}

// Small shapes run unsplit; the large ones (above the split threshold, on 3 threads) split C
// into row bands (m > n) or column bands (n > m), with every transpose.
template <typename T>
void check_gemm(int m, int n, int k) {
  SCOPED_TRACE(std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k));
  Handle h;
  h.set_cpu_threads(3);
  const auto a = test::random_int_vector<double>(m * k, 1);
  const auto b = test::random_int_vector<double>(k * n, 2);
  const auto c0 = test::random_int_vector<double>(m * n, 3);
  const auto bias = test::random_int_vector<double>(n, 4);
  const auto at = cast<T>(a), bt = cast<T>(b), bias_t = cast<T>(bias);
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      SCOPED_TRACE(std::string("ta=") + (ta ? "T" : "N") + " tb=" + (tb ? "T" : "N"));
      const Trans xa = ta ? Trans::kYes : Trans::kNo, xb = tb ? Trans::kYes : Trans::kNo;
      auto c = test::poisoned<T>(m * n);
      gemm(h, dtype_of<T>(), xa, xb, m, n, k, 1.0, at.data(), bt.data(), 0.0, c.data());
      EXPECT_TRUE(all_close(c, ref_gemm(ta, tb, m, n, k, 1.0, a, b, 0.0, c0), kExact));
      c = cast<T>(c0);
      gemm(h, dtype_of<T>(), xa, xb, m, n, k, 2.0, at.data(), bt.data(), 1.0, c.data());
      EXPECT_TRUE(all_close(c, ref_gemm(ta, tb, m, n, k, 2.0, a, b, 1.0, c0), kExact));
      c = cast<T>(c0);
      gemm(h, dtype_of<T>(), xa, xb, m, n, k, -1.0, at.data(), bt.data(), 3.0, c.data());
      EXPECT_TRUE(all_close(c, ref_gemm(ta, tb, m, n, k, -1.0, a, b, 3.0, c0), kExact));
      // A bias adds bias[j] to column j of every row; the ReLU clamps the sum at zero (about half
      // the outputs).
      for (bool relu : {false, true}) {
        c = cast<T>(c0);
        gemm(h, dtype_of<T>(), xa, xb, m, n, k, 2.0, at.data(), bt.data(), 1.0, c.data(),
             MathMode::kFP32, GemmEpilogue{bias_t.data(), relu});
        std::vector<double> want = ref_gemm(ta, tb, m, n, k, 2.0, a, b, 1.0, c0);
        for (size_t i = 0; i < want.size(); ++i) {
          want[i] += bias[i % size_t(n)];
          if (relu) want[i] = std::max(want[i], 0.0);
        }
        EXPECT_TRUE(all_close(c, want, {0.0, 0.0, relu})) << (relu ? "bias, relu" : "bias");
      }
    }
  // An empty product: C = beta * C, and beta == 0 clears poison.
  auto c = test::poisoned<T>(m * n);
  gemm(h, dtype_of<T>(), Trans::kNo, Trans::kNo, m, n, 0, 1.0, at.data(), bt.data(), 0.0, c.data());
  EXPECT_TRUE(all_close(c, std::vector<double>(m * n, 0.0), {0, 0, true}));
  EXPECT_THROW(gemm(h, dtype_of<T>(), Trans::kNo, Trans::kNo, -1, n, k, 1.0, at.data(), bt.data(),
                    0.0, c.data()),
               PrimError);
}

TEST(BlasGemm, AllTransposesFloat) {
  check_gemm<float>(7, 13, 5);
  check_gemm<float>(301, 97, 80);  // row bands
  check_gemm<float>(64, 500, 80);  // column bands (InnerProduct-like)
  // A * B^T with few rows of A takes the skinny kernel: tails in every tile dimension (m not a
  // multiple of 4, n of 4, k of 16), one row, and the largest m it takes.
  check_gemm<float>(10, 130, 16133);
  check_gemm<float>(1, 67, 31300);
  check_gemm<float>(16, 128, 16400);
}
TEST(BlasGemm, AllTransposesDouble) {
  check_gemm<double>(7, 13, 5);
  check_gemm<double>(97, 301, 80);
}

template <typename T>
void check_gemv() {
  Handle h;
  const int m = 9, n = 6;
  const auto a = test::random_int_vector<double>(m * n, 4);
  const auto at = cast<T>(a);
  for (bool ta : {false, true}) {
    const int xl = ta ? m : n, yl = ta ? n : m;
    const auto x = test::random_int_vector<double>(xl, 5);
    const auto y0 = test::random_int_vector<double>(yl, 6);
    std::vector<double> want(yl);
    for (int i = 0; i < yl; ++i) {
      double s = 0;
      for (int j = 0; j < xl; ++j) s += (ta ? a[j * n + i] : a[i * n + j]) * x[j];
      want[i] = 2.0 * s;
    }
    const auto xt = cast<T>(x);
    auto y = test::poisoned<T>(yl);
    gemv(h, dtype_of<T>(), ta ? Trans::kYes : Trans::kNo, m, n, 2.0, at.data(), xt.data(), 0.0,
         y.data());
    EXPECT_TRUE(all_close(y, want, kExact)) << "ta=" << ta;
    y = cast<T>(y0);
    gemv(h, dtype_of<T>(), ta ? Trans::kYes : Trans::kNo, m, n, 2.0, at.data(), xt.data(), -1.0,
         y.data());
    for (int i = 0; i < yl; ++i) want[i] -= y0[i];
    EXPECT_TRUE(all_close(y, want, kExact)) << "ta=" << ta;
  }
}

TEST(BlasGemv, BothTransposes) {
  check_gemv<float>();
  check_gemv<double>();
}

template <typename T>
void check_level1() {
  Handle h;
  const DataType t = dtype_of<T>();
  const int64_t n = 37;
  const auto x = test::random_int_vector<double>(n, 7);
  const auto y0 = test::random_int_vector<double>(n, 8);
  const auto xt = cast<T>(x);
  auto expect = [&](double a, double b) {
    std::vector<double> r(n);
    for (int64_t i = 0; i < n; ++i) r[i] = a * x[i] + b * y0[i];
    return r;
  };
  auto y = cast<T>(y0);
  axpy(h, t, n, 3.0, xt.data(), y.data());
  EXPECT_TRUE(all_close(y, expect(3.0, 1.0), kExact)) << "axpy";
  y = cast<T>(y0);
  axpby(h, t, n, 2.0, xt.data(), -3.0, y.data());
  EXPECT_TRUE(all_close(y, expect(2.0, -3.0), kExact)) << "axpby";
  y = test::poisoned<T>(n);
  axpby(h, t, n, 2.0, xt.data(), 0.0, y.data());
  EXPECT_TRUE(all_close(y, expect(2.0, 0.0), kExact)) << "axpby beta 0";
  y = cast<T>(y0);
  scal(h, t, n, -2.0, y.data());
  EXPECT_TRUE(all_close(y, expect(0.0, -2.0), kExact)) << "scal";
  y = test::poisoned<T>(n);
  scal(h, t, n, 0.0, y.data());
  EXPECT_TRUE(all_close(y, std::vector<double>(n, 0.0), {0, 0, true})) << "scal by 0";
  fill(h, t, n, 2.5, y.data());
  EXPECT_TRUE(all_close(y, std::vector<double>(n, 2.5), kExact)) << "fill";
  double d = 0, s = 0;
  for (int64_t i = 0; i < n; ++i) {
    d += x[i] * y0[i];
    s += std::fabs(x[i]);
  }
  const auto yt = cast<T>(y0);
  EXPECT_EQ(dot(h, t, n, xt.data(), yt.data()), d);
  EXPECT_EQ(asum(h, t, n, xt.data()), s);
  EXPECT_EQ(dot(h, t, 0, xt.data(), yt.data()), 0.0);
  double sum = std::nan("");  // beta 0 never reads it
  dot_into(h, t, n, xt.data(), yt.data(), 0.5, 0.0, &sum);
  EXPECT_EQ(sum, 0.5 * d) << "dot_into beta 0";
  dot_into(h, t, n, xt.data(), yt.data(), 2.0, 1.0, &sum);
  EXPECT_EQ(sum, 2.0 * d + 0.5 * d) << "dot_into beta 1";
  EXPECT_THROW(axpy(h, t, -1, 1.0, xt.data(), y.data()), PrimError);
}

TEST(BlasLevel1, AxpyAxpbyScalFillDotAsum) {
  check_level1<float>();
  check_level1<double>();
}

// The large shape is above the size at which bias_bwd splits the channels over the threads.
template <typename T>
void check_bias(int n, int c, int h_, int w) {
  SCOPED_TRACE(std::to_string(n) + "x" + std::to_string(c) + "x" + std::to_string(h_) + "x" +
               std::to_string(w));
  Handle h;
  h.set_cpu_threads(3);
  const DataType t = dtype_of<T>();
  const TensorDesc d = TensorDesc::nchw(t, n, c, h_, w);
  const auto y0 = test::random_int_vector<double>(d.count(), 9);
  const auto b = test::random_int_vector<double>(d.c, 10, 1, 5);
  const auto bt = cast<T>(b);
  std::vector<double> want(d.count()), sums(d.c, 0.0);
  for (int64_t i = 0; i < d.count(); ++i) {
    const int c = int(i / (d.h * d.w) % d.c);
    want[i] = y0[i] + 2.0 * b[c];
    sums[c] += y0[i];
  }
  auto y = cast<T>(y0);
  bias_add(h, d, y.data(), bt.data(), 2.0);
  EXPECT_TRUE(all_close(y, want, kExact)) << "bias_add";

  const auto g = cast<T>(y0);
  auto db = test::poisoned<T>(d.c);
  bias_bwd(h, d, g.data(), db.data());
  EXPECT_TRUE(all_close(db, sums, kExact)) << "bias_bwd";
  db = bt;
  bias_bwd(h, d, g.data(), db.data(), {2.0, 1.0});
  std::vector<double> acc(d.c);
  for (int c = 0; c < d.c; ++c) acc[c] = 2.0 * sums[c] + b[c];
  EXPECT_TRUE(all_close(db, acc, kExact)) << "bias_bwd blend";

  // NHWC strides: the same values in another layout give the same sums.
  TensorDesc nhwc = d;
  nhwc.stride_c = 1;
  nhwc.stride_w = d.c;
  nhwc.stride_h = int64_t(d.w) * d.c;
  nhwc.stride_n = int64_t(d.h) * d.w * d.c;
  std::vector<T> gn(d.count());
  for (int n = 0; n < d.n; ++n)
    for (int c = 0; c < d.c; ++c)
      for (int i = 0; i < d.h; ++i)
        for (int j = 0; j < d.w; ++j)
          gn[n * nhwc.stride_n + c + i * nhwc.stride_h + j * nhwc.stride_w] =
              g[((n * d.c + c) * d.h + i) * d.w + j];
  db = test::poisoned<T>(d.c);
  bias_bwd(h, nhwc, gn.data(), db.data());
  EXPECT_TRUE(all_close(db, sums, kExact)) << "bias_bwd nhwc";
}

TEST(BlasBias, AddAndReduce) {
  check_bias<float>(3, 4, 5, 6);
  check_bias<double>(3, 4, 5, 6);
  check_bias<float>(4, 5, 60, 70);
  check_bias<double>(4, 5, 60, 70);
}

}  // namespace
}  // namespace crema::prim
