// im2col / col2im on CUDA against the CPU implementation: the CPU test geometries (pads, strides,
// dilation, 1x1, pad close to the kernel) plus real layer geometries, every blend, f32 and f64.
// Integer data makes every sum exact, so the results must agree exactly; real data too, since
// the kernels round each product and sum as the CPU does.
#include <gtest/gtest.h>

#include <vector>

#include "cuda_test_util.h"
#include "primitives/im2col.h"
#include "problems.h"

namespace crema::prim {
namespace {

template <typename T>
void check(Im2colDesc d, bool integer) {
  d.dtype = sizeof(T) == 8 ? DataType::kFloat64 : DataType::kFloat32;
  SCOPED_TRACE(::testing::Message()
               << d.n << "x" << d.c << "x" << d.h << "x" << d.w << " k" << d.kernel_h << "x"
               << d.kernel_w << " pad" << d.pad_h << "," << d.pad_w << " str" << d.stride_h << ","
               << d.stride_w << " dil" << d.dilation_h << "," << d.dilation_w
               << (sizeof(T) == 8 ? " f64" : " f32") << (integer ? " int" : " real"));
  const TensorDesc cd = im2col_col_desc(d);
  const size_t xn = size_t(d.n) * d.c * d.h * d.w, cn = size_t(cd.count());
  auto gen = [&](size_t n, uint64_t seed) {
    return integer ? test::random_int_vector<T>(n, seed, 1, 4) : test::random_vector<T>(n, seed);
  };
  const auto x = gen(xn, 11), dcol = gen(cn, 12), col0 = gen(cn, 13), dx0 = gen(xn, 14);
  const Tolerance tol{0.0, 0.0, true};
  Handle cpu(Device::kCPU), gpu(Device::kCUDA);
  DeviceBuffer gx = to_gpu(x), gdcol = to_gpu(dcol);
  for (Blend blend : {Blend{}, Blend{2.0, 3.0}, Blend{0.5, 0.0}, Blend{1.0, 1.0}}) {
    SCOPED_TRACE(::testing::Message() << "alpha " << blend.alpha << " beta " << blend.beta);
    std::vector<T> col = blend.beta == 0 ? test::poisoned<T>(cn) : col0;
    DeviceBuffer gcol = to_gpu(col);
    im2col(cpu, d, x.data(), col.data(), blend);
    im2col(gpu, d, gx.get(), gcol.get(), blend);
    EXPECT_TRUE(all_close(from_gpu<T>(gpu, gcol, cn), col, tol)) << "im2col";

    std::vector<T> dx = blend.beta == 0 ? test::poisoned<T>(xn) : dx0;
    DeviceBuffer gdx = to_gpu(dx);
    col2im(cpu, d, dcol.data(), dx.data(), blend);
    col2im(gpu, d, gdcol.get(), gdx.get(), blend);
    EXPECT_TRUE(all_close(from_gpu<T>(gpu, gdx, xn), dx, tol)) << "col2im";
  }
}

std::vector<Im2colDesc> descs() {
  std::vector<Im2colDesc> v = {
      {DataType::kFloat32, 1, 1, 5, 5, 3, 3, 0, 0, 1, 1, 1, 1},      // plain
      {DataType::kFloat32, 2, 3, 7, 6, 3, 2, 1, 0, 2, 1, 1, 1},      // odd sizes, pad, stride
      {DataType::kFloat32, 2, 2, 9, 8, 3, 3, 2, 2, 1, 2, 2, 2},      // dilation
      {DataType::kFloat32, 3, 4, 4, 4, 1, 1, 0, 0, 1, 1, 1, 1},      // 1x1
      {DataType::kFloat32, 1, 2, 6, 7, 4, 4, 3, 3, 3, 3, 1, 1},      // pad close to the kernel
      {DataType::kFloat32, 2, 3, 10, 11, 2, 2, 0, 1, 3, 3, 1, 1},    // stride beyond the kernel
      {DataType::kFloat32, 2, 3, 40, 9, 3, 2, 1, 1, 1, 1, 1, 1},     // planes of several blocks
      {DataType::kFloat32, 1, 70000, 3, 3, 2, 2, 0, 0, 1, 1, 1, 1},  // more planes than grid.y
  };
  // The named layers, with the batch cut to keep the CPU reference quick.
  for (const test::ConvProblem& pb : test::named_conv_problems())
    v.push_back({DataType::kFloat32, std::min(pb.n, 4), pb.c / pb.groups, pb.h, pb.w, pb.r, pb.s,
                 pb.pad_h, pb.pad_w, pb.stride_h, pb.stride_w, pb.dilation_h, pb.dilation_w});
  return v;
}

TEST(Im2colCuda, MatchesCpuFloat) {
  CREMA_SKIP_WITHOUT_GPU();
  for (const Im2colDesc& d : descs()) {
    check<float>(d, true);
    check<float>(d, false);
  }
}

TEST(Im2colCuda, MatchesCpuDouble) {
  CREMA_SKIP_WITHOUT_GPU();
  for (const Im2colDesc& d : descs()) check<double>(d, false);
}

}  // namespace
}  // namespace crema::prim
