// im2col / col2im primitives against naive double references (gather for im2col, scatter-add
// for col2im) over batches with pad, stride, dilation and non-square kernels; blending; the
// adjoint identity <im2col(x), c> = <x, col2im(c)>; and geometry errors.
#include "primitives/im2col.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "primitives/handle.h"
#include "test_util.h"

namespace crema::prim {
namespace {

struct Case {
  int n, c, h, w, kh, kw, ph, pw, sh, sw, dh, dw;
};

int out_dim(int in, int k, int pad, int stride, int dil) {
  return (in + 2 * pad - dil * (k - 1) - 1) / stride + 1;
}

// Visits every (col index, x index or -1 for padding) pair of the patch matrix.
template <typename F>
void for_each_tap(const Case& k, F f) {
  const int P = out_dim(k.h, k.kh, k.ph, k.sh, k.dh), Q = out_dim(k.w, k.kw, k.pw, k.sw, k.dw);
  for (int n = 0; n < k.n; ++n)
    for (int c = 0; c < k.c; ++c)
      for (int r = 0; r < k.kh; ++r)
        for (int s = 0; s < k.kw; ++s)
          for (int p = 0; p < P; ++p)
            for (int q = 0; q < Q; ++q) {
              const int row = (c * k.kh + r) * k.kw + s;
              const long ci = ((long(n) * k.c * k.kh * k.kw + row) * P + p) * Q + q;
              const int i = p * k.sh - k.ph + r * k.dh, j = q * k.sw - k.pw + s * k.dw;
              const bool in = i >= 0 && i < k.h && j >= 0 && j < k.w;
              f(ci, in ? ((long(n) * k.c + c) * k.h + i) * k.w + j : -1L);
            }
}

Im2colDesc desc_of(const Case& k, DataType t) {
  return Im2colDesc{t, k.n, k.c, k.h, k.w, k.kh, k.kw, k.ph, k.pw, k.sh, k.sw, k.dh, k.dw};
}

template <typename T>
void check_case(const Case& k) {
  const DataType t = sizeof(T) == 8 ? DataType::kFloat64 : DataType::kFloat32;
  const Im2colDesc d = desc_of(k, t);
  const TensorDesc cd = im2col_col_desc(d);
  const int P = out_dim(k.h, k.kh, k.ph, k.sh, k.dh), Q = out_dim(k.w, k.kw, k.pw, k.sw, k.dw);
  ASSERT_EQ(cd.n, k.n);
  ASSERT_EQ(cd.c, k.c * k.kh * k.kw);
  ASSERT_EQ(cd.h, P);
  ASSERT_EQ(cd.w, Q);
  const size_t xn = size_t(k.n) * k.c * k.h * k.w, cn = size_t(cd.count());
  const auto x = random_int_vector<T>(xn, 11, 1, 4);  // non-zero: zeros only from padding
  const auto dcol = random_int_vector<T>(cn, 12);
  std::vector<double> col_ref(cn, 0.0), dx_ref(xn, 0.0);
  for_each_tap(k, [&](long ci, long xi) {
    if (xi < 0) return;
    col_ref[ci] = double(x[xi]);
    dx_ref[xi] += double(dcol[ci]);
  });
  Handle h;
  std::vector<T> col = poisoned<T>(cn), dx = poisoned<T>(xn);
  im2col(h, d, x.data(), col.data());
  EXPECT_TRUE(all_close(col, col_ref, Tolerance{0, 0, true}));
  col2im(h, d, dcol.data(), dx.data());
  EXPECT_TRUE(all_close(dx, dx_ref, Tolerance{0, 0, true}));

  // Blending: out = 2 * op + 3 * out, on both passes.
  std::vector<T> col2(cn, T(1)), dx2(xn, T(1));
  im2col(h, d, x.data(), col2.data(), Blend{2, 3});
  col2im(h, d, dcol.data(), dx2.data(), Blend{2, 3});
  for (double& v : col_ref) v = 2 * v + 3;
  for (double& v : dx_ref) v = 2 * v + 3;
  EXPECT_TRUE(all_close(col2, col_ref));
  EXPECT_TRUE(all_close(dx2, dx_ref));
}

const Case kCases[] = {
    {1, 1, 5, 5, 3, 3, 0, 0, 1, 1, 1, 1},  // plain
    {2, 3, 7, 6, 3, 2, 1, 0, 2, 1, 1, 1},  // odd sizes, pad, stride, non-square kernel
    {2, 2, 9, 8, 3, 3, 2, 2, 1, 2, 2, 2},  // dilation
    {3, 4, 4, 4, 1, 1, 0, 0, 1, 1, 1, 1},  // 1x1
    {1, 2, 6, 7, 4, 4, 3, 3, 3, 3, 1, 1},  // pad close to the kernel, wide stride
};

TEST(Im2colPrimitive, MatchesReferenceFloat) {
  for (const Case& k : kCases) check_case<float>(k);
}

TEST(Im2colPrimitive, MatchesReferenceDouble) {
  for (const Case& k : kCases) check_case<double>(k);
}

TEST(Im2colPrimitive, ColToImIsTheAdjoint) {
  const Case k = kCases[2];
  const Im2colDesc d = desc_of(k, DataType::kFloat64);
  const size_t xn = size_t(k.n) * k.c * k.h * k.w, cn = size_t(im2col_col_desc(d).count());
  const auto x = test::random_vector<double>(xn, 13), c = test::random_vector<double>(cn, 14);
  std::vector<double> col(cn), dx(xn);
  Handle h;
  im2col(h, d, x.data(), col.data());
  col2im(h, d, c.data(), dx.data());
  double lhs = 0, rhs = 0;
  for (size_t i = 0; i < cn; ++i) lhs += col[i] * c[i];
  for (size_t i = 0; i < xn; ++i) rhs += x[i] * dx[i];
  EXPECT_NEAR(lhs, rhs, 1e-10 * std::abs(lhs));
  EXPECT_GT(std::abs(lhs), 0.1);
}

TEST(Im2colPrimitive, GeometryErrors) {
  Im2colDesc d{DataType::kFloat32, 1, 1, 3, 3, 5, 5, 0, 0, 1, 1, 1, 1};
  try {
    im2col_col_desc(d);
    FAIL() << "no error";
  } catch (const PrimError& e) {
    EXPECT_NE(std::string(e.what()).find("kernel extent 5 is larger than the padded input 3"),
              std::string::npos)
        << e.what();
  }
  d.kernel_h = d.kernel_w = 1;
  d.h = 0;
  EXPECT_THROW(im2col_col_desc(d), PrimError);
  d.h = 3;
  std::vector<float> x(9);
  Handle h;
  EXPECT_THROW(im2col(h, d, x.data(), nullptr), PrimError);
}

}  // namespace
}  // namespace crema::prim
