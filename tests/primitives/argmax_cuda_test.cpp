// argmax_fwd on CUDA against the CPU implementation: top 1 and top k, with ties (integer values
// repeat, so the channel order of equal values is exercised), separate and interleaved outputs,
// either output null, f32 and f64, up to ImageNet's 1000 classes. Exact.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "primitives/argmax.h"

namespace crema::prim {
namespace {

template <typename T>
void check(int64_t outer, int64_t C, int64_t inner, int k, bool interleaved, bool ties) {
  SCOPED_TRACE(std::to_string(outer) + "x" + std::to_string(C) + "x" + std::to_string(inner) +
               " k " + std::to_string(k) + (interleaved ? " interleaved" : "") +
               (ties ? " ties" : "") + (sizeof(T) == 8 ? " f64" : " f32"));
  ArgMaxDesc ad{sizeof(T) == 8 ? DataType::kFloat64 : DataType::kFloat32, outer, C, inner, k, 0};
  if (interleaved) ad.out_outer_stride = 2 * k * inner;
  const size_t n = size_t(outer * C * inner);
  const size_t out_len = size_t(outer * (interleaved ? 2 : 1) * k * inner);
  const auto x = ties ? random_int_vector<T>(n, 1, 0, 4) : random_vector<T>(n, 1);
  Handle cpu(Device::kCPU), gpu(Device::kCUDA);
  const DeviceBuffer gx = to_gpu(x);
  std::vector<T> idx(out_len, T(-5)), val(out_len, T(-5));
  DeviceBuffer gi = to_gpu(idx), gv = to_gpu(val);
  if (interleaved) {
    argmax_fwd(cpu, ad, x.data(), idx.data(), idx.data() + k * inner);
    argmax_fwd(gpu, ad, gx.get(), gi.get(), static_cast<T*>(gi.get()) + k * inner);
    EXPECT_EQ(from_gpu<T>(gpu, gi, out_len), idx);
    return;
  }
  argmax_fwd(cpu, ad, x.data(), idx.data(), val.data());
  argmax_fwd(gpu, ad, gx.get(), gi.get(), gv.get());
  EXPECT_EQ(from_gpu<T>(gpu, gi, out_len), idx);
  EXPECT_EQ(from_gpu<T>(gpu, gv, out_len), val);
  DeviceBuffer gi2 = to_gpu(std::vector<T>(out_len, T(-5)));
  argmax_fwd(gpu, ad, gx.get(), gi2.get(), nullptr);
  EXPECT_EQ(from_gpu<T>(gpu, gi2, out_len), idx);
}

template <typename T>
void check_all() {
  struct S {
    int64_t outer, C, inner;
  };
  for (const S& s : {S{1, 1, 1}, S{3, 5, 1}, S{2, 7, 4}, S{64, 1000, 1}, S{2, 21, 257}})
    for (int k : {1, 2, 5})
      for (bool inter : {false, true})
        for (bool ties : {false, true})
          if (k <= s.C) check<T>(s.outer, s.C, s.inner, k, inter, ties);
}

TEST(ArgMaxCuda, MatchesCpuF32) {
  CREMA_SKIP_WITHOUT_GPU();
  check_all<float>();
}

TEST(ArgMaxCuda, MatchesCpuF64) {
  CREMA_SKIP_WITHOUT_GPU();
  check_all<double>();
}

}  // namespace
}  // namespace crema::prim
