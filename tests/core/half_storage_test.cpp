// Half-size storage on the CPU side: a tensor stored in bf16 or f16 converts in its host copies
// and refuses typed access; the storage plan keeps uniform layers of one type and stops at the
// layers that cannot store half; the CPU's primitives refuse half data in one line.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/storage_plan.h"
#include "core/tensor.h"
#include "primitives/conv.h"

namespace crema {
namespace {

using prim::DataType;

TEST(HalfStorage, HostCopiesRoundToTheStorageType) {
  Tensor<float> t({4});
  t.set_storage(DataType::kBFloat16);
  EXPECT_EQ(t.bytes(), 8u);
  EXPECT_EQ(t.desc().dtype, DataType::kBFloat16);
  // 1 + 2^-8 is a tie between two bf16 values and rounds to even (1); 1 + 3 * 2^-8 rounds up.
  t.set_data({1.0f + 1.0f / 256, 1.0f + 3.0f / 256, -2.5f, 1e30f});
  const std::vector<float> got = t.data_vector();
  EXPECT_EQ(got[0], 1.0f);
  EXPECT_EQ(got[1], 1.0f + 4.0f / 256);
  EXPECT_EQ(got[2], -2.5f);
  EXPECT_NEAR(got[3], 1e30f, 1e28f);
  t.set_storage(DataType::kFloat16);
  t.set_data({1.0f, 70000.0f, 1e-8f, -0.5f});  // past f16's largest: inf; below its least: 0
  const std::vector<float> h = t.data_vector();
  EXPECT_EQ(h[0], 1.0f);
  EXPECT_TRUE(std::isinf(h[1]));
  EXPECT_EQ(h[2], 0.0f);
  EXPECT_EQ(h[3], -0.5f);
}

TEST(HalfStorage, TypedAccessAndMismatchedSharingAreErrors) {
  Tensor<float> half({2}), f32({2});
  half.set_storage(DataType::kBFloat16);
  EXPECT_THROW(half.data(), Error);
  EXPECT_THROW(half.mutable_diff(), Error);
  EXPECT_NO_THROW(half.raw_data());
  EXPECT_THROW(f32.share_data(half), Error);
  Tensor<double> d({2});
  EXPECT_THROW(d.set_storage(DataType::kBFloat16), Error);
  // Copies between storage types convert.
  f32.set_data({3.0f, -1.0f / 3});
  half.copy_from(f32);
  EXPECT_EQ(half.data_vector()[0], 3.0f);
  f32.copy_from(half);
  EXPECT_NEAR(f32.data_vector()[1], -1.0f / 3, 1e-3f);
}

TEST(HalfStorage, CpuConvolutionRefusesHalfDataInOneLine) {
  prim::Handle h;
  const prim::TensorDesc x = prim::TensorDesc::nchw(DataType::kBFloat16, 1, 1, 3, 3);
  const prim::TensorDesc y = prim::TensorDesc::nchw(DataType::kFloat32, 1, 1, 3, 3);
  prim::FilterDesc w;
  std::vector<float> buf(9, 0.0f), wv(1, 1.0f);
  std::string why;
  try {
    prim::conv_fwd(h, prim::ConvDesc{}, prim::ConvAlgo::kAuto, x, buf.data(), w, wv.data(), y,
                   buf.data());
  } catch (const prim::PrimError& e) {
    why = e.what();
  }
  EXPECT_EQ(why, "conv_fwd: bf16 is not supported on cpu");
}

StorageLayer layer(StorageSupport s, std::vector<int> bottoms, std::vector<int> tops,
                   DataType half = DataType::kBFloat16) {
  return StorageLayer{s, half, std::move(bottoms), std::move(tops)};
}

// data(0) -> conv(1) -> bn+relu in place (1) -> split(1 -> 2, 3) -> conv(4) ; sum(3, 4 -> 5)
// -> pool(6) -> ip(7) -> loss(8)
std::vector<StorageLayer> residual_net(StorageSupport ip) {
  using H = StorageSupport;
  return {layer(H::kNone, {}, {0}),
          layer(H::kMixed, {0}, {1}),
          layer(H::kUniform, {1}, {1}),
          layer(H::kUniform, {1}, {1}),
          layer(H::kUniform, {1}, {2, 3}),
          layer(H::kMixed, {2}, {4}),
          layer(H::kUniform, {3, 4}, {5}),
          layer(H::kUniform, {5}, {6}),
          layer(ip, {6}, {7}),
          layer(H::kNone, {7}, {8})};
}

TEST(HalfStorage, PlanStoresTheRegionBetweenConvertingLayers) {
  const std::vector<bool> keep(9, false);
  const std::vector<DataType> t = plan_storage(residual_net(StorageSupport::kMixed), keep);
  const DataType f = DataType::kFloat32, b = DataType::kBFloat16;
  EXPECT_EQ(t, (std::vector<DataType>{f, b, b, b, b, b, b, f, f}));
  // An inner product that cannot take half turns the pool, the sum, the split and the
  // normalization back to f32, up to the convolutions, which convert.
  const std::vector<DataType> u = plan_storage(residual_net(StorageSupport::kNone), keep);
  EXPECT_EQ(u, (std::vector<DataType>{f, f, f, f, f, f, f, f, f}));
}

TEST(HalfStorage, PlanHonoursTypesAndLossBlobs) {
  using H = StorageSupport;
  const DataType f = DataType::kFloat32, b = DataType::kBFloat16, h = DataType::kFloat16;
  // conv (f16) -> relu (bf16) in place: the writers disagree, f32. conv -> conv: f16.
  std::vector<StorageLayer> net = {layer(H::kMixed, {0}, {1}, h), layer(H::kUniform, {1}, {1}, b),
                                   layer(H::kMixed, {1}, {2}, h), layer(H::kMixed, {2}, {3}, h)};
  EXPECT_EQ(plan_storage(net, std::vector<bool>(4, false)), (std::vector<DataType>{f, f, h, h}));
  // A blob with a loss weight stays f32.
  EXPECT_EQ(plan_storage(net, {false, false, false, true}), (std::vector<DataType>{f, f, h, f}));
  // A layer whose types are f32 writes f32.
  net[2].half = f;
  EXPECT_EQ(plan_storage(net, std::vector<bool>(4, false)), (std::vector<DataType>{f, f, f, h}));
}

}  // namespace
}  // namespace crema
