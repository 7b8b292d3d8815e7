// tensor_copy on the CPU against a naive double reference that walks every index of the views:
// Concat-style windows, Crop windows, broadcast reads (Tile), blending, rank 0, and bad views.
#include "primitives/tensor_copy.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_util.h"

namespace crema::prim {
namespace {

using test::all_close;
using test::poisoned;
using test::random_vector;
using test::Tolerance;

template <typename T>
DataType dtype_of() {
  return sizeof(T) == 8 ? DataType::kFloat64 : DataType::kFloat32;
}

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

template <typename T>
class TensorCopyTest : public ::testing::Test {};
using Types = ::testing::Types<float, double>;
TYPED_TEST_SUITE(TensorCopyTest, Types);

struct Case {
  std::string name;
  ViewDesc x, y;
  int64_t xlen, ylen, yoff;  // buffer lengths; y's view starts at yoff
};

std::vector<Case> cases(DataType t) {
  std::vector<Case> c;
  // Concat: a packed (2, 3, 5) piece into a (2, 7, 5) top at channel 4.
  {
    ViewDesc y = ViewDesc::packed(t, {2, 3, 5});
    y.stride[0] = 7 * 5;
    c.push_back({"concat_window", ViewDesc::packed(t, {2, 3, 5}), y, 30, 70, 4 * 5});
  }
  // Slice: the window read, a packed piece written (outer 1, inner 1 edge cases).
  {
    ViewDesc x = ViewDesc::packed(t, {1, 4, 1});
    x.stride[0] = 9;
    c.push_back({"slice_window", x, ViewDesc::packed(t, {1, 4, 1}), 9, 4, 0});
  }
  // Crop: (outer 2) x 3 x 4 window of a 2 x 5 x 7 input at offset (1, 2), read into packed.
  {
    ViewDesc x = ViewDesc::packed(t, {2, 3, 4});
    x.stride[0] = 35;
    x.stride[1] = 7;
    c.push_back({"crop_window", x, ViewDesc::packed(t, {2, 3, 4}), 70 - (7 + 2), 24, 0});
  }
  // Tile: x (3, 1, 6) read 4 times along the middle axis (stride 0).
  {
    ViewDesc x = ViewDesc::packed(t, {3, 4, 6});
    x.stride[0] = 6;
    x.stride[1] = 0;
    c.push_back({"tile_broadcast", x, ViewDesc::packed(t, {3, 4, 6}), 18, 72, 0});
  }
  // A transpose (NCHW -> NHWC) of 6 axes with odd sizes.
  {
    ViewDesc x = ViewDesc::packed(t, {2, 3, 1, 5, 2, 3});
    ViewDesc y = x;
    // y strides of the permutation (0, 3, 4, 5, 1, 2) of the same sizes.
    const int64_t s[6] = {3 * 1 * 5 * 2 * 3, 1, 1, 2 * 3 * 3, 3 * 3, 3};
    for (int i = 0; i < 6; ++i) y.stride[i] = s[i];
    c.push_back({"permute_6d", x, y, x.count(), x.count(), 0});
  }
  c.push_back({"scalar", ViewDesc::packed(t, {}), ViewDesc::packed(t, {}), 1, 1, 0});
  return c;
}

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
  EXPECT_THROW(ViewDesc::packed(t, {1, 1, 1, 1, 1, 1, 1, 1, 1}), PrimError);
}

}  // namespace
}  // namespace crema::prim
