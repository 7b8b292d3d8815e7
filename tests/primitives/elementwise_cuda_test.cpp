// elt_add_scalar on CUDA against the CPU implementation, f32 and f64, from one element to more
// than a grid-stride's worth. One IEEE-rounded addition per element: bit-identical results.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "primitives/elementwise.h"

namespace crema::prim {
namespace {

template <typename T>
void check(int64_t n) {
  SCOPED_TRACE("n " + std::to_string(n) + (sizeof(T) == 8 ? " f64" : " f32"));
  constexpr DataType t = sizeof(T) == 8 ? DataType::kFloat64 : DataType::kFloat32;
  const size_t un = size_t(n);
  Handle cpu(Device::kCPU), gpu(Device::kCUDA);
  std::vector<T> ref = random_vector<T>(un, 2, -3, 3);
  DeviceBuffer g = to_gpu(ref);
  elt_add_scalar(cpu, t, n, 0.375, ref.data());
  elt_add_scalar(gpu, t, n, 0.375, g.get());
  EXPECT_TRUE(all_close(from_gpu<T>(gpu, g, un), ref, {0, 0, true}));
}

TEST(ElementwiseCuda, MatchesCpu) {
  CREMA_SKIP_WITHOUT_GPU();
  for (int64_t n : {int64_t(1), int64_t(37), int64_t(4099), int64_t(1) << 20, int64_t(17000003)}) {
    check<float>(n);
    check<double>(n);
  }
}

TEST(ElementwiseCuda, EmptyIsANoOp) {
  CREMA_SKIP_WITHOUT_GPU();
  Handle gpu(Device::kCUDA);
  EXPECT_NO_THROW(elt_add_scalar(gpu, DataType::kFloat32, 0, 1.0, nullptr));
  EXPECT_THROW(elt_add_scalar(gpu, DataType::kFloat32, -1, 1.0, nullptr), PrimError);
}

}  // namespace
}  // namespace crema::prim
