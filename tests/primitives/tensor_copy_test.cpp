// tensor_copy on the CPU against a naive double reference that walks every index of the views:
// Concat-style windows, Crop windows, broadcast reads (Tile), blending, rank 0, and bad views.
// Conversions to and from bf16/f16 against bit patterns worked out from the formats' definitions.
#include "primitives/tensor_copy.h"

#include <gtest/gtest.h>

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "primitives/common/dtype_visit.h"
#include "tensor_copy_cases.h"
#include "test_util.h"

namespace crema::prim {
namespace {

// Offsets of every index of the sizes, row-major, for one view's strides.
std::vector<int64_t> offsets(const ViewDesc& d) {
  std::vector<int64_t> out;
  std::vector<int64_t> idx(size_t(d.rank), 0);
  const int64_t n = d.count();
  for (int64_t k = 0; k < n; ++k) {
    int64_t off = 0;
    for (int i = 0; i < d.rank; ++i) off += idx[size_t(i)] * d.stride[i];
    out.push_back(off);
    for (int i = d.rank - 1; i >= 0; --i) {
      if (++idx[size_t(i)] < d.size[i]) break;
      idx[size_t(i)] = 0;
    }
  }
  return out;
}

// y (a buffer of ylen values) after y[view] = alpha * x[view] + beta * y[view], in double.
template <typename T>
std::vector<double> reference(const ViewDesc& xd, const std::vector<T>& x, const ViewDesc& yd,
                              const std::vector<T>& y, Blend b) {
  std::vector<double> out(y.begin(), y.end());
  const auto ox = offsets(xd), oy = offsets(yd);
  for (size_t k = 0; k < ox.size(); ++k)
    out[size_t(oy[k])] = b.alpha * double(x[size_t(ox[k])]) +
                         (b.beta == 0 ? 0.0 : b.beta * double(y[size_t(oy[k])]));
  return out;
}

CREMA_FLOAT_TYPED_TEST_SUITE(TensorCopyTest);

using Case = test::CopyCase;
std::vector<Case> cases(DataType t) { return test::unit_copy_cases(t); }

TYPED_TEST(TensorCopyTest, MatchesReference) {
  using T = TypeParam;
  Handle h;
  const Blend blends[] = {{1, 0}, {-0.5, 0}, {1, 1}, {2, -0.25}};
  int seed = 1;
  for (const Case& c : cases(dtype_of<T>())) {
    for (const Blend& b : blends) {
      SCOPED_TRACE(c.name + " alpha " + std::to_string(b.alpha) + " beta " +
                   std::to_string(b.beta));
      const auto x = random_vector<T>(size_t(c.xlen), ++seed, -2, 2);
      // beta == 0: the viewed part is poisoned and must be overwritten; the rest is untouched.
      auto y = random_vector<T>(size_t(c.ylen), ++seed, -2, 2);
      if (b.beta == 0)
        for (int64_t off : offsets(c.y)) y[size_t(c.yoff + off)] = poisoned<T>(1)[0];
      std::vector<T> ywin(y.begin() + c.yoff, y.end());
      auto ref = reference(c.x, x, c.y, ywin, b);
      ref.insert(ref.begin(), y.begin(), y.begin() + c.yoff);
      tensor_copy(h, c.x, x.data(), c.y, y.data() + c.yoff, b);
      EXPECT_TRUE(all_close(y, ref, Tolerance{1e-6, 1e-6}));
    }
  }
}

TYPED_TEST(TensorCopyTest, RoundTripIsExact) {
  using T = TypeParam;
  Handle h;
  // Concat of (2,3,4) and (2,5,4) along axis 1, then sliced back: bit-identical.
  const DataType t = dtype_of<T>();
  const auto a = random_vector<T>(24, 3), b = random_vector<T>(40, 4);
  std::vector<T> cat(64);
  ViewDesc wa = ViewDesc::packed(t, {2, 3, 4}), wb = ViewDesc::packed(t, {2, 5, 4});
  wa.stride[0] = wb.stride[0] = 32;
  tensor_copy(h, ViewDesc::packed(t, {2, 3, 4}), a.data(), wa, cat.data());
  tensor_copy(h, ViewDesc::packed(t, {2, 5, 4}), b.data(), wb, cat.data() + 12);
  auto a2 = poisoned<T>(24), b2 = poisoned<T>(40);
  tensor_copy(h, wa, cat.data(), ViewDesc::packed(t, {2, 3, 4}), a2.data());
  tensor_copy(h, wb, cat.data() + 12, ViewDesc::packed(t, {2, 5, 4}), b2.data());
  EXPECT_TRUE(all_close(a2, a, Tolerance{0, 0}));
  EXPECT_TRUE(all_close(b2, b, Tolerance{0, 0}));
  EXPECT_EQ(cat[12], b[0]);
  EXPECT_EQ(cat[32], a[12]);
}

TEST(TensorCopy, BadViewsAreErrors) {
  Handle h;
  float x[8] = {}, y[8] = {};
  const DataType t = DataType::kFloat32;
  try {
    tensor_copy(h, ViewDesc::packed(t, {2, 4}), x, ViewDesc::packed(t, {4, 2}), y);
    FAIL() << "no error";
  } catch (const PrimError& e) {
    EXPECT_STREQ(e.what(), "tensor_copy: x is 2x4 but y is 4x2");
  }
  ViewDesc rep = ViewDesc::packed(t, {2, 4});
  rep.stride[0] = 0;
  EXPECT_THROW(tensor_copy(h, ViewDesc::packed(t, {2, 4}), x, rep, y), PrimError);
  EXPECT_THROW(tensor_copy(h, ViewDesc::packed(t, {8}), x, ViewDesc::packed(t, {8}), nullptr),
               PrimError);
  try {
    tensor_copy(h, ViewDesc::packed(t, {8}), x, ViewDesc::packed(DataType(99), {8}), y);
    FAIL() << "no error";
  } catch (const PrimError& e) {
    EXPECT_STREQ(e.what(), "tensor_copy: invalid is not supported on cpu");
  }
  EXPECT_THROW(ViewDesc::packed(t, {1, 1, 1, 1, 1, 1, 1, 1, 1}), PrimError);
}

// ---- conversions between storage types ---------------------------------------------------------
// Expected bits come from the formats, rounding to nearest with ties to even: bf16 is fp32's
// upper half (8 exponent bits, 7 mantissa bits, subnormals down to 2^-133); f16 has 5 exponent
// bits (bias 15) and 10 mantissa bits: 1 ulp is 2^-10 at 1, the largest finite value 65504,
// the smallest subnormal 2^-24. Values at least halfway past the largest finite round to inf.

// y = alpha * x + beta * y over n packed elements of types xt and yt.
template <typename X, typename Y>
std::vector<Y> convert(DataType xt, const std::vector<X>& x, DataType yt, std::vector<Y> y,
                       Blend b = {}) {
  Handle h;
  const int64_t n = int64_t(x.size());
  y.resize(x.size());
  tensor_copy(h, ViewDesc::packed(xt, {n}), x.data(), ViewDesc::packed(yt, {n}), y.data(), b);
  return y;
}

std::vector<uint32_t> bits_of(const std::vector<float>& v) {
  std::vector<uint32_t> out;
  for (float f : v) out.push_back(std::bit_cast<uint32_t>(f));
  return out;
}

TEST(TensorCopyConvert, F32ToBf16AndBack) {
  const std::vector<float> x = {
      1.0f,
      1 + 0x1p-8f,             // halfway between 1 and 1 + 2^-7: ties to the even 1
      1 + 0x3p-8f,             // halfway between 1 + 2^-7 and 1 + 2^-6: ties to the even 1 + 2^-6
      1 + 0x1p-8f + 0x1p-20f,  // just past halfway: up
      1 + 0x1p-9f,             // below halfway: down
      -2.5f,
      0x1.fep127f,  // the largest finite bf16
      FLT_MAX,      // past the largest bf16 by more than half an ulp: inf
      INFINITY,
      -0.0f,
      0x1p-133f,  // the smallest bf16 subnormal
      0x3p-134f,  // 1.5 subnormal ulps: ties to 2
      0x1p-149f,  // far below: +0
      0.1f,       // 0x3dcccccd: 0x3dcc + more than half
  };
  const std::vector<uint16_t> bits = {0x3f80, 0x3f80, 0x3f82, 0x3f81, 0x3f80, 0xc020, 0x7f7f,
                                      0x7f80, 0x7f80, 0x8000, 0x0001, 0x0002, 0x0000, 0x3dcd};
  const std::vector<float> back = {1,         1,           1 + 0x1p-6f, 1 + 0x1p-7f, 1,
                                   -2.5f,     0x1.fep127f, INFINITY,    INFINITY,    -0.0f,
                                   0x1p-133f, 0x1p-132f,   0.0f,        0x1.9ap-4f};
  const auto half = convert(DataType::kFloat32, x, DataType::kBFloat16, std::vector<uint16_t>{});
  EXPECT_EQ(half, bits);
  const auto f = convert(DataType::kBFloat16, half, DataType::kFloat32, std::vector<float>{});
  EXPECT_EQ(bits_of(f), bits_of(back));
}

TEST(TensorCopyConvert, F32ToF16AndBack) {
  const std::vector<float> x = {
      1.0f,
      1 + 0x1p-11f,             // halfway between 1 and 1 + 2^-10: ties to the even 1
      1 + 0x3p-11f,             // halfway between 1 + 2^-10 and 1 + 2^-9: ties to 1 + 2^-9
      1 + 0x1p-11f + 0x1p-20f,  // just past halfway: up
      -2.0f,
      65504.0f,  // the largest finite f16
      65519.0f,  // below the midpoint 65520: down
      65520.0f,  // halfway: ties to the even 65536, which overflows to inf
      1e5f,
      -INFINITY,
      0x1p-14f,             // the smallest normal
      0x1p-24f,             // the smallest subnormal
      0x3p-25f,             // 1.5 subnormal ulps: ties to 2
      0x1p-25f,             // half the smallest subnormal: ties to the even 0
      0x1p-25f + 0x1p-40f,  // just past it: the smallest subnormal
      0.1f,                 // 0x3dcccccd: mantissa 0x266 and 0.4 ulp: down
  };
  const std::vector<uint16_t> bits = {0x3c00, 0x3c00, 0x3c02, 0x3c01, 0xc000, 0x7bff,
                                      0x7bff, 0x7c00, 0x7c00, 0xfc00, 0x0400, 0x0001,
                                      0x0002, 0x0000, 0x0001, 0x2e66};
  const std::vector<float> back = {
      1,        1,         1 + 0x1p-9f, 1 + 0x1p-10f, -2,       65504, 65504,    INFINITY,
      INFINITY, -INFINITY, 0x1p-14f,    0x1p-24f,     0x1p-23f, 0,     0x1p-24f, 0x1.998p-4f};
  const auto half = convert(DataType::kFloat32, x, DataType::kFloat16, std::vector<uint16_t>{});
  EXPECT_EQ(half, bits);
  const auto f = convert(DataType::kFloat16, half, DataType::kFloat32, std::vector<float>{});
  EXPECT_EQ(bits_of(f), bits_of(back));
}

TEST(TensorCopyConvert, NanStaysNan) {
  const std::vector<float> x = {NAN, -NAN};
  for (DataType t : {DataType::kBFloat16, DataType::kFloat16}) {
    const auto f = convert(t, convert(DataType::kFloat32, x, t, std::vector<uint16_t>{}),
                           DataType::kFloat32, std::vector<float>{});
    EXPECT_TRUE(std::isnan(f[0]) && std::isnan(f[1])) << dtype_name(t);
  }
}

// The blend runs in fp32 and rounds once, at the store: 2 * (1 + 2^-8) + 0 = 2 + 2^-7 is a tie
// in bf16 (1 ulp is 2^-6 at 2), broken to the even 2.
TEST(TensorCopyConvert, BlendIntoBf16RoundsOnce) {
  const std::vector<float> x = {1, 0.5f, -3, 1 + 0x1p-8f, 1 + 0x3p-8f};
  const std::vector<uint16_t> y0 = {0x3f80, 0x3e80, 0x4000, 0x0000, 0x0000};    // 1, 0.25, 2, 0, 0
  const std::vector<uint16_t> want = {0x4040, 0x3fa0, 0xc080, 0x4000, 0x4002};  // 3, 1.25, -4, ...
  EXPECT_EQ(convert(DataType::kFloat32, x, DataType::kBFloat16, y0, {2, 1}), want);
}

// f64 to f16, with ties and overflow, rounded once: values just past an f16 tie by less than
// fp32 resolves (1 + 2^-11 + 2^-40, 65520 - 2^-30) must not round to the tie first and then to
// even.
TEST(TensorCopyConvert, F64ToF16) {
  const std::vector<double> x = {
      1,       -2,  65504,   65520, 1 + 0x1p-11,           1 + 0x3p-11,
      0x3p-25, 0.1, 1.0 / 3, 1e-9,  1 + 0x1p-11 + 0x1p-40, 65520 - 0x1p-30};
  const std::vector<uint16_t> want = {0x3c00, 0xc000, 0x7bff, 0x7c00, 0x3c00, 0x3c02,
                                      0x0002, 0x2e66, 0x3555, 0x0000, 0x3c01, 0x7bff};
  EXPECT_EQ(convert(DataType::kFloat64, x, DataType::kFloat16, std::vector<uint16_t>{}), want);
}

}  // namespace
}  // namespace crema::prim
