// Tensor sizes past 2^31 elements: 64-bit counts, the bounds that remain (int64 bytes, the
// device's memory, 32-bit descriptor sizes) and their messages, and the split of a flat count
// into descriptor sizes. Nothing here allocates a large tensor: shapes are checked before memory
// is touched, which is what these tests rely on.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "core/errors.h"
#include "core/tensor.h"
#include "error_util.h"
#include "layers/gradient_checker.h"
#include "layers/layer_registry.h"

namespace crema {
namespace {

constexpr int64_t k2g = int64_t(1) << 31;

// Whether the host could hold `bytes` at all: a reshape checks against its memory.
bool host_holds(int64_t bytes) { return int64_t(prim::device_total_bytes(Device::kCPU)) > bytes; }

TEST(TensorSize, CheckedCountRejectsOverflowAndNegatives) {
  EXPECT_EQ(checked_count({}), 1);
  EXPECT_EQ(checked_count({3, 1000, 1000, 1000}), 3000000000);
  EXPECT_EQ(checked_count({int64_t(1) << 30, int64_t(1) << 29}), int64_t(1) << 59);
  EXPECT_EQ(checked_count({int64_t(1) << 30, int64_t(1) << 30}), -1);  // kMax is 2^60 - 1
  EXPECT_EQ(checked_count({-1, 4}), -1);
  // 2^32 each: the plain product wraps to 0 in 64 bits.
  EXPECT_EQ(checked_count({int64_t(1) << 32, int64_t(1) << 32}), -1);
  EXPECT_EQ(checked_count({int64_t(1) << 32, int64_t(1) << 32, 0}), 0);
  EXPECT_EQ(checked_count({kMaxTensorElements}), kMaxTensorElements);
  EXPECT_EQ(checked_count({kMaxTensorElements, 2}), -1);
}

TEST(TensorSize, DescSizeNamesTheValue) {
  EXPECT_EQ(desc_size(k2g - 1, "w"), int(k2g - 1));
  EXPECT_EQ(test::error_of([] { desc_size(k2g, "the input width"); }),
            "the input width of 2147483648 is more than 2147483647, the largest size of a "
            "primitive descriptor");
}

TEST(TensorSize, FlatDescSplitsLargeCounts) {
  for (const int64_t n :
       {int64_t(0), int64_t(1), int64_t(7), k2g - 1, k2g, int64_t(3000000000), int64_t(1) << 32,
        int64_t(6442450944) + 6, int64_t(1) << 40, int64_t(1) << 60}) {
    const prim::TensorDesc d = flat_desc(prim::DataType::kBFloat16, n);
    EXPECT_EQ(d.count(), n) << n;
    EXPECT_TRUE(d.is_packed_nchw()) << n;
    EXPECT_EQ(d.dtype, prim::DataType::kBFloat16);
    for (const int s : {d.n, d.c, d.h, d.w}) EXPECT_GE(s, n == 0 ? 0 : 1) << n;
  }
  // Below 2^31 the view is one row, as before.
  const prim::TensorDesc small = flat_desc(prim::DataType::kFloat32, k2g - 1);
  EXPECT_EQ(small.w, k2g - 1);
  EXPECT_EQ(small.n * small.c * small.h, 1);
  // 3e9 = 2 x 1.5e9: w takes as much as fits.
  const prim::TensorDesc d = flat_desc(prim::DataType::kFloat32, 3000000000);
  EXPECT_EQ(d.w, 1500000000);
  EXPECT_EQ(int64_t(d.n) * d.c * d.h, 2);
  // 2^32 + 15 is prime: no split into 32-bit sizes exists.
  EXPECT_EQ(test::error_of([] { flat_desc(prim::DataType::kFloat32, 4294967311); }),
            "a flat array of 4294967311 elements has no split into sizes below 2^31");
}

TEST(TensorSize, ShapesPast2To31ElementsAreAccepted) {
  // bf16 storage halves the bytes the memory check counts; nothing is allocated.
  Tensor<float> t;
  t.set_storage(prim::DataType::kBFloat16);
  if (!host_holds(2 * 3000000000)) GTEST_SKIP() << "host memory under 6 GB";
  t.reshape({3, 1000, 1000, 1000});
  EXPECT_EQ(t.count(), 3000000000);
  EXPECT_EQ(t.count(1), 1000000000);
  EXPECT_EQ(t.offset(2, 999, 999, 999), 2999999999);
  EXPECT_EQ(t.shape_string(), "3 1000 1000 1000 (3000000000)");
  EXPECT_EQ(t.bytes(), size_t(6000000000));
  const prim::TensorDesc d = t.desc();
  EXPECT_EQ(d.count(), 3000000000);
  EXPECT_EQ(d.stride_n, 1000000000);
  // One axis of 2^31 or more has no descriptor size.
  t.reshape({1, 3000000000});
  EXPECT_EQ(test::error_of([&] { t.desc(); }),
            "a tensor axis of 3000000000 is more than 2147483647, the largest size of a "
            "primitive descriptor");
}

TEST(TensorSize, BoundsAreInt64BytesAndDeviceMemory) {
  Tensor<float> t;
  EXPECT_EQ(test::error_of([&] {
              t.reshape({int64_t(1) << 40, int64_t(1) << 21});
            }),
            "tensor of shape (1099511627776 2097152) is too large: more than " +
                std::to_string(kMaxTensorElements) + " elements");
  const std::string what = test::error_of([&] { t.reshape({int64_t(1) << 50}); });
  EXPECT_EQ(what.rfind("tensor of shape (1125899906842624) is too large: 4503599627370496 bytes, "
                       "more than the ",
                       0),
            0u)
      << what;
  EXPECT_NE(what.find(" bytes of host memory"), std::string::npos) << what;
  // The refused shape left the tensor as it was.
  EXPECT_EQ(t.count(), 0);
  EXPECT_EQ(t.num_axes(), 0);
}

// Layers narrow sizes to their descriptors with a message, never by a silent cast.
TEST(TensorSize, LayersRefuseAxesTheirDescriptorsCannotHold) {
  if (!host_holds(int64_t(4) * 3000000000)) GTEST_SKIP() << "host memory under 12 GB";
  test::TensorSet<float> bottom, top;
  bottom.add();
  (*bottom)[0]->reshape({1, 1, 1, 3000000000});
  top.add();
  auto pool = test::make_layer<float>(
      "type: 'Pooling' pooling_param { pool: MAX kernel_size: 1 stride: 1 }");
  EXPECT_NE(test::error_of([&] {
              pool->setup(*bottom, *top);
            }).find("the input width of 3000000000 is more than 2147483647"),
            std::string::npos);
  auto ip = test::make_layer<float>("type: 'InnerProduct' inner_product_param { num_output: 1 }");
  (*bottom)[0]->reshape({3000000000, 1});
  EXPECT_NE(test::error_of([&] {
              ip->setup(*bottom, *top);
              ip->reshape(*bottom, *top);
            }).find("the rows of the input of 3000000000 is more than 2147483647"),
            std::string::npos);
}

}  // namespace
}  // namespace crema
