// elt_sign/mul/div/sqrt/add_scalar on CUDA against the CPU implementation, f32 and f64, out of
// place and in place, from one element to more than a grid-stride's worth. Every operation is a
// single IEEE-rounded step, so the results must be bit-identical.
#include <gtest/gtest.h>

#include <vector>

#include "cuda_test_util.h"
#include "primitives/elementwise.h"

namespace crema::prim {
namespace {

using test::all_close;
using test::from_gpu;
using test::random_int_vector;
using test::random_vector;
using test::to_gpu;

const test::Tolerance kExact{0, 0, true};

template <typename T>
void check(int64_t n) {
  SCOPED_TRACE("n " + std::to_string(n) + (sizeof(T) == 8 ? " f64" : " f32"));
  constexpr DataType t = sizeof(T) == 8 ? DataType::kFloat64 : DataType::kFloat32;
  const size_t un = size_t(n);
  Handle cpu(Device::kCPU), gpu(Device::kCUDA);
  const auto ints = random_int_vector<T>(un, 1);  // zeros included: sign(0) = 0
  const auto a = random_vector<T>(un, 2, -3, 3);
  const auto b = random_vector<T>(un, 3, 0.5, 2);
  const auto pos = random_vector<T>(un, 4, 0, 4);
  const DeviceBuffer g_ints = to_gpu(ints), g_a = to_gpu(a), g_b = to_gpu(b), g_pos = to_gpu(pos);
  auto fresh = [&] { return to_gpu(test::poisoned<T>(un)); };

  std::vector<T> ref(un);
  elt_sign(cpu, t, n, ints.data(), ref.data());
  DeviceBuffer g_y = fresh();
  elt_sign(gpu, t, n, g_ints.get(), g_y.get());
  EXPECT_TRUE(all_close(from_gpu<T>(gpu, g_y, un), ref, kExact)) << "sign";

  elt_mul(cpu, t, n, a.data(), b.data(), ref.data());
  elt_mul(gpu, t, n, g_a.get(), g_b.get(), g_y.get());
  EXPECT_TRUE(all_close(from_gpu<T>(gpu, g_y, un), ref, kExact)) << "mul";

  elt_div(cpu, t, n, a.data(), b.data(), ref.data());
  elt_div(gpu, t, n, g_a.get(), g_b.get(), g_y.get());
  EXPECT_TRUE(all_close(from_gpu<T>(gpu, g_y, un), ref, kExact)) << "div";

  elt_sqrt(cpu, t, n, pos.data(), ref.data());
  elt_sqrt(gpu, t, n, g_pos.get(), g_y.get());
  EXPECT_TRUE(all_close(from_gpu<T>(gpu, g_y, un), ref, kExact)) << "sqrt";

  // In place: y is the first input.
  ref = a;
  elt_div(cpu, t, n, ref.data(), b.data(), ref.data());
  elt_add_scalar(cpu, t, n, 0.375, ref.data());
  DeviceBuffer g_in = to_gpu(a);
  elt_div(gpu, t, n, g_in.get(), g_b.get(), g_in.get());
  elt_add_scalar(gpu, t, n, 0.375, g_in.get());
  EXPECT_TRUE(all_close(from_gpu<T>(gpu, g_in, un), ref, kExact)) << "in place div, add_scalar";
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
  EXPECT_NO_THROW(elt_mul(gpu, DataType::kFloat32, 0, nullptr, nullptr, nullptr));
  EXPECT_THROW(elt_sqrt(gpu, DataType::kFloat32, -1, nullptr, nullptr), PrimError);
}

}  // namespace
}  // namespace crema::prim
