// reduce_fwd / reduce_bwd on CUDA against the CPU implementation: every operation, both blends,
// f32 and f64, over views that take both kernels (many short reductions, few long ones): the
// Reduction layer's all-trailing-axes sum, Tile's backward (the tiles axis of a strided view),
// middle and leading axes, a rank-0 result, an empty reduced axis. Integer inputs make kSum,
// kAsum and kSumSq exact.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "primitives/reduce.h"

namespace crema::prim {
namespace {

struct Case {
  std::string name;
  std::vector<int64_t> sizes;
  std::vector<bool> reduced;
};

const Case kCases[] = {
    {"all_trailing", {6, 5, 7, 9}, {false, true, true, true}},
    {"reduction_layer_large", {4, 256, 28, 28}, {false, true, true, true}},
    {"tile_bwd", {3, 4, 6}, {false, true, false}},
    {"tile_bwd_large", {64, 3, 4096}, {false, true, false}},
    {"middle", {5, 300, 3}, {false, true, false}},
    {"leading", {129, 17}, {true, false}},
    {"every_axis", {3, 5, 7}, {true, true, true}},
    {"none", {4, 3}, {false, false}},
    {"last_short", {1000, 3}, {false, true}},
    {"empty_reduced", {4, 0, 3}, {false, true, false}},
};

// y's view: x's rank, size 1 on reduced axes, packed.
ViewDesc reduced_view(DataType t, const Case& c) {
  std::vector<int64_t> s = c.sizes;
  for (size_t i = 0; i < s.size(); ++i)
    if (c.reduced[i]) s[i] = 1;
  return ViewDesc::packed(t, s);
}

template <typename T>
void check(const Case& c, ReduceOp op, Blend blend, bool ints, bool strided) {
  SCOPED_TRACE(c.name + " op " + std::to_string(int(op)) + " beta " + std::to_string(blend.beta) +
               (ints ? " ints" : "") + (strided ? " strided" : "") +
               (sizeof(T) == 8 ? " f64" : " f32"));
  const DataType t = sizeof(T) == 8 ? DataType::kFloat64 : DataType::kFloat32;
  ViewDesc xd = ViewDesc::packed(t, c.sizes);
  size_t xlen = size_t(xd.count());
  if (strided && xd.rank >= 2) {  // a window of a buffer twice as wide in the first axis
    xd.stride[0] *= 2;
    xlen = size_t(xd.stride[0] * xd.size[0]);
  }
  const ViewDesc yd = reduced_view(t, c);
  const size_t ylen = size_t(yd.count());
  const bool exact = ints && op != ReduceOp::kMean;
  const test::Tolerance tol = exact            ? test::Tolerance{0, 0, true}
                              : sizeof(T) == 8 ? test::Tolerance{1e-12, 1e-11, true}
                                               : test::Tolerance{1e-6, 1e-5, true};
  Handle cpu(Device::kCPU), gpu(Device::kCUDA);
  const auto x = ints ? random_int_vector<T>(xlen, 1) : random_vector<T>(xlen, 1);
  const DeviceBuffer gx = to_gpu(x);
  const ReduceDesc rd{op};
  std::vector<T> y = blend.beta == 0 ? test::poisoned<T>(ylen) : random_int_vector<T>(ylen, 2);
  DeviceBuffer gy = to_gpu(y);
  reduce_fwd(cpu, rd, xd, x.data(), yd, y.data(), blend);
  reduce_fwd(gpu, rd, xd, gx.get(), yd, gy.get(), blend);
  EXPECT_TRUE(all_close(from_gpu<T>(gpu, gy, ylen), y, tol)) << "fwd";

  // Backward into a packed dx.
  const ViewDesc dxd = ViewDesc::packed(t, c.sizes);
  const size_t n = size_t(dxd.count());
  const auto dy = ints ? random_int_vector<T>(ylen, 3) : random_vector<T>(ylen, 3);
  const DeviceBuffer gdy = to_gpu(dy);
  std::vector<T> dx = blend.beta == 0 ? test::poisoned<T>(n) : random_int_vector<T>(n, 4);
  DeviceBuffer gdx = to_gpu(dx);
  reduce_bwd(cpu, rd, xd, x.data(), yd, dy.data(), dxd, dx.data(), blend);
  reduce_bwd(gpu, rd, xd, gx.get(), yd, gdy.get(), dxd, gdx.get(), blend);
  EXPECT_TRUE(all_close(from_gpu<T>(gpu, gdx, n), dx, tol)) << "bwd";
}

template <typename T>
void check_all() {
  for (const Case& c : kCases)
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAsum, ReduceOp::kSumSq, ReduceOp::kMean})
      for (Blend b : {Blend{}, Blend{0.5, 2}})
        for (bool ints : {true, false})
          for (bool strided : {false, true}) check<T>(c, op, b, ints, strided);
}

TEST(ReduceCuda, MatchesCpuF32) {
  CREMA_SKIP_WITHOUT_GPU();
  check_all<float>();
}

TEST(ReduceCuda, MatchesCpuF64) {
  CREMA_SKIP_WITHOUT_GPU();
  check_all<double>();
}

TEST(ReduceCuda, RankZero) {
  CREMA_SKIP_WITHOUT_GPU();
  Handle cpu(Device::kCPU), gpu(Device::kCUDA);
  const ViewDesc s = ViewDesc::packed(DataType::kFloat32, {});
  const std::vector<float> x = {2.5f};
  std::vector<float> y = {0};
  reduce_fwd(cpu, ReduceDesc{ReduceOp::kSumSq}, s, x.data(), s, y.data(), {2, 0});
  DeviceBuffer gx = to_gpu(x), gy = to_gpu(test::poisoned<float>(1));
  reduce_fwd(gpu, ReduceDesc{ReduceOp::kSumSq}, s, gx.get(), s, gy.get(), {2, 0});
  EXPECT_EQ(from_gpu<float>(gpu, gy, 1), y);
}

}  // namespace
}  // namespace crema::prim
